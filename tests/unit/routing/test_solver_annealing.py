"""Annealing: one seed gives one answer on any machine. Its budget is a number of moves fixed
by the problem size, so a slow clock (here a patched one that races ahead) changes nothing."""
from __future__ import annotations

import itertools
import random
import time

import pytest

from routing import route
from routing.base import lower_bound_link_flows, max_link_flows
from testbed.fabric import FabricSpec, build_fabric
from traffic.collectives import Connection


def case():
    """16 leaves x 8 spines, 8 hosts per leaf: a ring per slot over the leaves plus a shifted
    ring, 256 flows from a random start; improvements go on well past a thousand moves."""
    f = build_fabric(FabricSpec(spines=8, leaves=16, hosts_per_leaf=8, host_link_mbps=100.0,
                                spine_link_mbps=100.0))
    conns = []
    for shift in (1, 3):
        for leaf in range(16):
            for slot in range(1, 9):
                src = leaf * 8 + slot
                dst = ((leaf + shift) % 16) * 8 + (slot % 8) + 1
                conns.append(Connection(len(conns), f"ring{shift}", f"h{src}", f"h{dst}",
                                        20000 + len(conns), 5001))
    return f, conns


@pytest.fixture
def slow_machine(monkeypatch):
    """Every clock read says a further second has passed (a machine ~10^5 times slower)."""
    ticks = itertools.count()
    base = time.perf_counter()
    for name in ("perf_counter", "monotonic", "time"):
        monkeypatch.setattr(time, name, lambda: base + next(ticks))


def test_same_seed_same_routes_on_a_slow_machine(monkeypatch):
    f, conns = case()
    normal = route("annealing", f, conns, seed=7)
    ticks = itertools.count()
    base = time.perf_counter()
    with monkeypatch.context() as m:
        for name in ("perf_counter", "monotonic", "time"):
            m.setattr(time, name, lambda: base + next(ticks))
        slow = route("annealing", f, conns, seed=7)
    assert slow.spine_of == normal.spine_of
    assert max_link_flows(f, conns, slow.spine_of) == max_link_flows(f, conns, normal.spine_of)


def test_repeatable_on_a_slow_machine(slow_machine):
    f, conns = case()
    a = route("annealing", f, conns, seed=1).spine_of
    assert a == route("annealing", f, conns, seed=1).spine_of
    assert max_link_flows(f, conns, a) <= 2 * lower_bound_link_flows(f, conns)


def test_budget_is_fixed_by_the_problem_size():
    from routing.annealing import MAX_ITERS, MIN_ITERS, iteration_budget

    assert iteration_budget(0) == MIN_ITERS
    assert iteration_budget(10) == MIN_ITERS
    assert iteration_budget(1000) == 100_000
    assert iteration_budget(10**6) == MAX_ITERS
    assert [iteration_budget(n) for n in range(0, 5000, 250)] == \
        sorted(iteration_budget(n) for n in range(0, 5000, 250))


def test_explicit_move_budget_is_honoured():
    f, conns = case()
    one = route("annealing", f, conns, seed=2, max_iters=1)
    many = route("annealing", f, conns, seed=2, max_iters=50_000)
    assert max_link_flows(f, conns, many.spine_of) <= max_link_flows(f, conns, one.spine_of)
    with pytest.raises(TypeError):
        route("annealing", f, conns, time_limit_s=2.0)   # no clock-based budget any more


def _small_case(rng):
    """A small leaf-spine, fat-tree or clos3 (cores or spines failed at random) and up to 7
    random inter-leaf flows whose assignments can all be listed."""
    from testbed.fabric import FabricError
    from testbed.topologies import fat_tree_spec
    for _ in range(100):
        kind = rng.randrange(3)
        if kind == 0:
            spec = FabricSpec(spines=rng.randint(2, 4), leaves=rng.randint(2, 4),
                              hosts_per_leaf=3, host_link_mbps=10, spine_link_mbps=10)
        elif kind == 1:
            spec = fat_tree_spec(4, 10, 10)
        else:
            spec = FabricSpec(topology="clos3", pods=2, leaves_per_pod=2,
                              aggs_per_pod=rng.randint(1, 2), cores_per_plane=rng.randint(1, 2),
                              hosts_per_leaf=3, host_link_mbps=10, leaf_agg_mbps=10,
                              agg_core_mbps=5)
        f = build_fabric(spec)
        top = f.cores if kind else f.spines
        try:
            f = build_fabric(spec.with_failures(
                tuple(s for s in top[1:] if rng.random() < 0.3), ()))
        except FabricError:
            continue
        hosts = list(f.hosts)
        conns = []
        for _ in range(rng.randint(2, 7)):
            a, b = rng.sample(hosts, 2)
            if f.leaf_of(a) != f.leaf_of(b):
                conns.append(Connection(len(conns), "j", a, b, 20000 + len(conns), 5001))
        if conns:
            return f, conns
    raise AssertionError("no case")


def test_best_n_bound_never_exceeds_the_fewest_links_at_the_lower_bound():
    """No assignment whose busiest link carries the lower bound has fewer links at it than
    best_n_bound says (checked on every assignment of 60 small cases): stopping the search
    there never stops it short of a better state."""
    import numpy as np

    from routing.annealing import best_n_bound
    from routing.paths import path_link_arrays, path_lower_bound, path_table
    rng = random.Random(5)
    reached, at_lb = 0, 0
    for _ in range(60):
        f, conns = _small_case(rng)
        t = path_table(f, conns)
        arrays = tuple(np.ascontiguousarray(x, dtype=np.int64) for x in path_link_arrays(t))
        lb = path_lower_bound(t, f)
        best = None
        for assign in itertools.product(*t.cand):
            load = [0] * t.n_links
            for p in assign:
                for e in t.path_links[p]:
                    load[e] += 1
            m = max(load)
            if m == lb:
                n = load.count(m)
                best = n if best is None else min(best, n)
        assert best is None or best_n_bound(t, arrays, lb) <= best, (f.spec, conns)
        at_lb += best is not None
        reached += best is not None and best_n_bound(t, arrays, lb) == best
    assert at_lb >= 40 and reached >= at_lb // 3      # and it is often the fewest (28 of 60)


def test_route_hands_annealing_its_previous_routes_as_given():
    """On a leaf-spine, route() gives the path kernel the previous routes (spines as paths) and
    keeps those of connections gone: a previous of only gone connections is still low-churn
    (greedy start, descent), as on three tiers, not a random anneal."""
    from routing.annealing import route_annealing_paths
    f, conns = case()
    gone = {10**9: None, 10**9 + 1: ("leaf1", "spine1", "leaf2")}
    assert route("annealing", f, conns, seed=4, previous=gone).path_of == \
        route_annealing_paths(f, conns, seed=4, previous=gone).path_of
    spines = {c.conn_id: "spine3" for c in conns[:40]}
    as_paths = {c.conn_id: (f.leaf_of(c.src), "spine3", f.leaf_of(c.dst)) for c in conns[:40]}
    assert route("annealing", f, conns, seed=4, previous=spines).path_of == \
        route_annealing_paths(f, conns, seed=4, previous=as_paths).path_of
    assert route("annealing", f, conns, seed=4, previous=gone).path_of != \
        route("annealing", f, conns, seed=4).path_of


def test_on_a_leaf_spine_annealing_reports_the_bound_the_other_kernels_report():
    """Two flows leaf1 -> leaf3 that only spine3 serves: the path bound (2, where the search
    stops) is above the leaf-spine bound (1) that greedy and the rest report; a results
    table shows one bound per fabric (found by test_routing_properties' hypothesis run)."""
    f = build_fabric(FabricSpec(spines=3, leaves=3, hosts_per_leaf=3, host_link_mbps=100,
                                spine_link_mbps=100,
                                failed_links=(("leaf1", "spine1"), ("leaf3", "spine2"))))
    conns = [Connection(i, "job0", "h1", "h7", 20000 + i, 5001) for i in range(2)]
    plan = route("annealing", f, conns)
    assert plan.stats.lower_bound_link_flows == lower_bound_link_flows(f, conns) == 1 == \
        route("greedy", f, conns).stats.lower_bound_link_flows
    assert set(plan.spine_of.values()) == {"spine3"}

"""mmf (2-layered max-min): small mixed cases solve to proven optimality, and the result is the
lexicographic optimum of (job levels, link loads) that brute force finds. No wall-time asserts:
the status must not be a time-limit one, whatever the machine's load."""
from __future__ import annotations

import itertools
import random

import pytest

from experiments.benchmarks.mmf_case_bench import four_jobs
from routing import RoutingError, route
from routing.base import flow_table, lower_bound_link_flows, max_link_flows
from testbed.fabric import FabricError, FabricSpec, build_fabric
from traffic.collectives import Connection


def assignment(t, spine_of):
    idx = {s: i for i, s in enumerate(t.spine_names)}
    return [idx[spine_of[c.conn_id]] for c in t.flows]


def loads(t, a):
    """Flows per directed link, computed here (not by the code under test)."""
    load = {}
    for src, dst, s in zip(t.src, t.dst, a):
        load["up", src, s] = load.get(("up", src, s), 0) + 1
        load["down", dst, s] = load.get(("down", dst, s), 0) + 1
    return load


def level_vector(t, a):
    """Layer 1: each job's level (its worst link's flows), in decreasing order."""
    load = loads(t, a)
    level = {}
    for src, dst, j, s in zip(t.src, t.dst, t.job, a):
        level[j] = max(level.get(j, 0), load["up", src, s], load["down", dst, s])
    return sorted(level.values(), reverse=True)


def load_vector(t, a):
    """Layer 2: the loaded links' flow counts, in decreasing order."""
    return sorted(loads(t, a).values(), reverse=True)


def test_four_jobs_on_8x5_is_solved_to_optimality():
    f, conns = four_jobs()
    t = flow_table(f, conns)
    assert len(t.flows) == 35
    plan = route("mmf", f, conns)
    assert plan.stats.status == "optimal"            # not "feasible" (the time limit)
    assert plan.stats.gap == 0.0
    a = assignment(t, plan.spine_of)
    # layer 1's top level is the min-max optimum
    ilp = route("ilp", f, conns)
    assert ilp.stats.status == "optimal"
    assert max_link_flows(f, conns, plan.spine_of) == max_link_flows(f, conns, ilp.spine_of) == 2
    assert lower_bound_link_flows(f, conns) == 2
    # the optimum: two jobs can keep every link to themselves (4 -> 2 jobs at level 2), and
    # 11 links at 2 flows is the least any routing needs (leaf sides over their 5 links)
    assert level_vector(t, a) == [2, 2, 1, 1]
    assert sum(1 for v in load_vector(t, a) if v == 2) == 11
    # no routing beats those two counts: the bounds the rounds were proven with say so
    from routing.mmf_bounds import Bounds
    b = Bounds(t, 2, top_proven=True)
    assert b.jobs(2, {}) == 2
    assert b.links(2, {2: 2}) == 11


def test_four_jobs_low_churn_keeps_the_optimum():
    f, conns = four_jobs()
    first = route("mmf", f, conns)
    again = route("mmf", f, conns, seed=3, previous=first.spine_of)
    assert again.stats.status == "optimal"
    t = flow_table(f, conns)
    a1, a2 = assignment(t, first.spine_of), assignment(t, again.spine_of)
    assert (level_vector(t, a2), load_vector(t, a2)) == (level_vector(t, a1), load_vector(t, a1))
    moved = sum(first.spine_of[c.conn_id] != again.spine_of[c.conn_id] for c in conns)
    assert moved == 0


def lexmin_by_enumeration(t):
    best = None
    for choice in itertools.product(*t.cand):
        a = list(choice)
        key = (level_vector(t, a), load_vector(t, a))
        if best is None or key < best:
            best = key
    return best


def small_cases(seed: int, n: int):
    rng = random.Random(seed)
    made = 0
    while made < n:
        L, S, H = rng.randint(2, 4), rng.randint(2, 3), rng.randint(2, 4)
        failed = tuple(sorted({(f"leaf{rng.randint(1, L)}", f"spine{rng.randint(1, S)}")
                               for _ in range(rng.choice([0, 0, 1, 2]))}))
        try:
            f = build_fabric(FabricSpec(S, L, H, 100.0, 100.0, (), failed))
        except FabricError:
            continue
        jobs = rng.randint(2, 3)
        conns = []
        for i in range(rng.randint(4, 8)):
            a, b = rng.sample(range(1, L * H + 1), 2)
            conns.append(Connection(i, f"job{i % jobs}", f"h{a}", f"h{b}", 20000 + i, 5001))
        made += 1
        yield f, conns


@pytest.mark.parametrize("seed", [1, 2])
def test_mmf_is_the_lexicographic_optimum_of_brute_force(seed):
    checked = 0
    for f, conns in small_cases(seed, 60):
        try:
            plan = route("mmf", f, conns)
        except RoutingError:
            continue
        t = flow_table(f, conns)
        if not t.flows:
            continue
        a = assignment(t, plan.spine_of)
        assert (level_vector(t, a), load_vector(t, a)) == lexmin_by_enumeration(t), conns
        assert plan.stats.status == "optimal"
        checked += 1
    assert checked >= 40


def test_side_bounds_match_brute_force():
    from .mmf_reference import side_fits, side_hot_links

    rng = random.Random(0)
    for _ in range(300):
        A, U = rng.randint(2, 4), rng.randint(1, 4)
        demand = [0] + [rng.randint(0, 3) for _ in range(A)]
        flows = [c for c in range(1, A + 1) for _ in range(demand[c])]
        if len(flows) > 7:
            continue
        best = {k: U + 1 for k in range(2, A + 1)}
        for links in itertools.product(range(U), repeat=len(flows)):
            load = [0] * U
            for e in links:
                load[e] += 1
            if all(load[e] <= c for e, c in zip(links, flows)):
                for k in best:
                    best[k] = min(best[k], sum(1 for x in load if x >= k))
        for k, want in best.items():
            assert side_hot_links(demand, U, k) == want, (demand, U, k)
        assert side_fits(demand, U) == (best[2] <= U)


def test_symmetry_breaking_keeps_loads_and_is_met_by_the_renamed_start():
    from routing.groups import flow_groups
    from routing.mmf_bounds import first_appearance_limits, relabel_first_appearance, spine_classes

    f, conns = four_jobs()
    t = flow_table(f, conns)
    ilp = route("ilp", f, conns)
    a = assignment(t, ilp.spine_of)
    groups = flow_groups(t, by_job=True)
    order = sorted(groups)
    classes = spine_classes(t)
    assert classes == [[0, 1, 2, 3, 4]]                # no failures: all spines alike
    b = relabel_first_appearance(t, groups, order, classes, a)
    assert sorted(load_vector(t, b)) == sorted(load_vector(t, a))
    assert level_vector(t, b) == level_vector(t, a)
    allowed = first_appearance_limits(t, groups, order, classes)
    for key, ids in groups.items():
        assert all(b[i] in allowed[key] for i in ids)


def test_max_weight_matching_matches_brute_force():
    from routing.mmf_bounds import max_weight_matching

    rng = random.Random(1)
    for _ in range(200):
        n = rng.randint(1, 6)
        w = [[rng.randint(0, 5) for _ in range(n)] for _ in range(n)]
        p = max_weight_matching(w)
        assert sorted(p) == list(range(n))
        best = max(sum(w[i][q[i]] for i in range(n)) for q in itertools.permutations(range(n)))
        assert sum(w[i][p[i]] for i in range(n)) == best

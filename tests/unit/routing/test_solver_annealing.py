"""Annealing: one seed gives one answer on any machine. Its budget is a number of moves fixed
by the problem size, so a slow clock (here a patched one that races ahead) changes nothing."""
from __future__ import annotations

import itertools
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

"""Property tests (hypothesis) of the routing strategies on random demand multigraphs."""
from __future__ import annotations

import itertools
import math

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from routing import STRATEGIES, route
from routing.base import lower_bound_link_flows, max_link_flows
from testbed.fabric import FabricError, FabricSpec, build_fabric
from traffic.collectives import Connection

FAST = ["ecmp", "greedy", "edge-coloring", "annealing"]
SETTINGS = dict(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def cases(draw, max_flows: int = 40, links: bool = True, max_spines: int = 6):
    leaves = draw(st.integers(2, 6))
    spines = draw(st.integers(1, max_spines))
    hpl = draw(st.integers(1, 4))
    n_hosts = leaves * hpl
    failed_spines = draw(st.sets(st.integers(1, spines), max_size=spines - 1))
    failed_links = set()
    if links:
        failed_links = draw(st.sets(st.tuples(st.integers(1, leaves), st.integers(1, spines)),
                                    max_size=leaves))
    pairs = draw(st.lists(st.tuples(st.integers(1, n_hosts), st.integers(1, n_hosts)),
                          min_size=1, max_size=max_flows))
    spec = FabricSpec(spines=spines, leaves=leaves, hosts_per_leaf=hpl, host_link_mbps=100,
                      spine_link_mbps=100,
                      failed_spines=tuple(f"spine{s}" for s in sorted(failed_spines)),
                      failed_links=tuple((f"leaf{l}", f"spine{s}") for l, s in sorted(failed_links)))
    try:
        fabric = build_fabric(spec)
    except FabricError:
        assume(False)
    jobs = draw(st.integers(1, 3))
    conns = [Connection(i, f"job{i % jobs}", f"h{a}", f"h{b}", 20000 + i, 5001)
             for i, (a, b) in enumerate(pairs) if a != b]
    assume(conns)
    return fabric, conns


def routable(fabric, conns) -> bool:
    return all(fabric.leaf_of(c.src) == fabric.leaf_of(c.dst)
               or fabric.usable_spines(fabric.leaf_of(c.src), fabric.leaf_of(c.dst))
               for c in conns)


def check_plan(fabric, conns, plan) -> None:
    assert set(plan.spine_of) == {c.conn_id for c in conns}
    for c in conns:
        s = plan.spine_of[c.conn_id]
        a, b = fabric.leaf_of(c.src), fabric.leaf_of(c.dst)
        if a == b:
            assert s is None
        else:
            assert s in fabric.usable_spines(a, b), (c, s)
            fabric.path(c.src, c.dst, s)  # raises on a failed element
    assert plan.stats.time_s >= 0
    assert plan.stats.lower_bound_link_flows == lower_bound_link_flows(fabric, conns)


@settings(**SETTINGS)
@given(cases(), st.integers(0, 3))
def test_fast_strategies_route_every_flow_on_live_elements(case, seed) -> None:
    fabric, conns = case
    assume(routable(fabric, conns))
    for name in FAST:
        plan = route(name, fabric, conns, seed=seed)
        check_plan(fabric, conns, plan)
        assert max_link_flows(fabric, conns, plan.spine_of) >= lower_bound_link_flows(fabric, conns)


@settings(**{**SETTINGS, "max_examples": 20})
@given(cases(max_flows=16))
def test_solver_strategies_route_every_flow_on_live_elements(case) -> None:
    fabric, conns = case
    assume(routable(fabric, conns))
    for name in ("ilp", "mmf"):
        check_plan(fabric, conns, route(name, fabric, conns))


@settings(**SETTINGS)
@given(cases(links=False, max_flows=80))
def test_edge_coloring_meets_ceil_d_over_live_spines(case) -> None:
    fabric, conns = case
    plan = route("edge-coloring", fabric, conns)
    out, inn = {}, {}
    for c in conns:
        a, b = fabric.leaf_of(c.src), fabric.leaf_of(c.dst)
        if a != b:
            out[a] = out.get(a, 0) + 1
            inn[b] = inn.get(b, 0) + 1
    D = max(list(out.values()) + list(inn.values()), default=0)
    k = len(fabric.live_spines)
    m = max_link_flows(fabric, conns, plan.spine_of)
    assert m <= math.ceil(D / k)
    assert m == lower_bound_link_flows(fabric, conns)   # hence optimal


@settings(**{**SETTINGS, "max_examples": 30})
@given(cases(links=False, max_flows=30), st.integers(0, 5))
def test_greedy_within_twice_the_optimum(case, seed) -> None:
    fabric, conns = case
    g = max_link_flows(fabric, conns, route("greedy", fabric, conns, seed=seed).spine_of)
    opt = max_link_flows(fabric, conns, route("ilp", fabric, conns).spine_of)
    assert g <= 2 * opt


@settings(**{**SETTINGS, "max_examples": 30})
@given(cases(max_flows=7, max_spines=3))
def test_ilp_matches_brute_force(case) -> None:
    fabric, conns = case
    assume(routable(fabric, conns))
    inter = [c for c in conns if fabric.leaf_of(c.src) != fabric.leaf_of(c.dst)]
    options = [fabric.usable_spines(fabric.leaf_of(c.src), fabric.leaf_of(c.dst)) for c in inter]
    best = 0
    if inter:
        best = min(max_link_flows(fabric, inter, {c.conn_id: s for c, s in zip(inter, choice)})
                   for choice in itertools.product(*options))
    plan = route("ilp", fabric, conns)
    assert max_link_flows(fabric, conns, plan.spine_of) == best
    assert plan.stats.status == "optimal" and plan.stats.gap == 0.0


def test_every_strategy_is_registered() -> None:
    assert set(STRATEGIES) == {"ecmp", "greedy", "edge-coloring", "annealing", "ilp", "mmf", "gff",
                               "spray"}

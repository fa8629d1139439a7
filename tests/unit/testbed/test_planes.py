"""Network planes (testbed/planes.py, routing/planes.py): the graph of every kind with P
planes (two and three tiers), one plane being the fabric without planes, each flow's plane as
a routing choice (ECMP's hash as balls into bins, the planners' balance, spray's deal), and
the predictor's rows on them."""
from __future__ import annotations

import dataclasses
import math
import random

import pytest

from experiments.config import ConfigError, parse
from experiments.runner import check_emulable
from routing import route
from routing.planes import choose_planes
from testbed.fabric import FabricError, FabricSpec, build_fabric
from testbed.topologies import fat_tree_spec
from traffic.collectives import Collective, JobSpec, plan_jobs
from traffic.plans import Connection
from traffic.predictor import ideal, predict

LS = FabricSpec(spines=3, leaves=4, hosts_per_leaf=4, host_link_mbps=100, spine_link_mbps=100)


def rail(planes: int, **kw) -> dict:
    return {"topology": "rail-optimized", "nics_per_server": 4, "servers_per_group": 4,
            "spines_per_group": 2, "host_link_mbps": 100, "spine_link_mbps": 100,
            "nvlink_mbps": 1000, "planes": planes, **kw}


@pytest.mark.parametrize("planes", [2, 3, 4])
def test_each_plane_is_a_copy_of_plane_one_with_every_host_on_it(planes):
    f = build_fabric(dataclasses.replace(LS, planes=planes))
    one = build_fabric(LS)
    L, S = LS.leaves, LS.spines
    assert len(f.switches) == planes * (L + S)
    assert len(f.links) == planes * len(one.links)       # every link of plane 1, P times
    assert len({f.dpid_of(s) for s in f.switches}) == len(f.switches)
    for p in range(1, planes + 1):
        leaves = [f"leaf{(p - 1) * L + i}" for i in range(1, L + 1)]
        spines = [f"spine{(p - 1) * S + j}" for j in range(1, S + 1)]
        assert all(f.plane_of(x) == p for x in leaves + spines)
        for leaf in leaves:       # every uplink stays in the plane
            assert sorted(f.uplinks(leaf)) == sorted(spines)
            assert {n for n in f.graph.successors(leaf) if f.role(n) == "spine"} == set(spines)
        for h in f.hosts:         # port p of every host on the same leaf of plane p
            leaf = f.leaf_at(h, p)
            assert leaf == f"leaf{(p - 1) * L + f.index_of(f.leaf_of(h))}"
            assert f.port(h, leaf) == (0 if p == 1 else p)
            assert f.port(leaf, h) == f.port(f.leaf_of(h), h)
            assert f.capacity_mbps(h, leaf) == LS.host_link_mbps
    for h in f.hosts:
        assert f.graph.out_degree(h) == planes
    assert f.switch_paths("leaf5", "leaf6") == [f.in_plane(p, 2) for p in
                                                 one.switch_paths("leaf1", "leaf2")]


def test_one_plane_is_todays_fabric_link_for_link():
    a, b = build_fabric(LS), build_fabric(dataclasses.replace(LS, planes=1))
    assert a.links == b.links and a.switches == b.switches
    exp = parse({"name": "p", "seed": 1, "fabric": rail(1),
                 "jobs": [{"name": "r", "collective": "allreduce", "size_bytes": 10 ** 6,
                           "hosts": [f"h{i}" for i in range(1, 9)]}], "routing": ["ecmp"]})
    assert "planes" not in exp.resolved()["fabric"]


def test_a_plane_alone_keeps_its_own_failures_named_as_plane_one():
    f = build_fabric(dataclasses.replace(LS, planes=2, failed_spines=("spine5",),
                                         failed_links=(("leaf1", "spine1"),)))
    two, one = f.plane_fabric(2), f.plane_fabric(1)
    assert two.spec.failed_spines == ("spine2",) and two.spec.failed_links == ()
    assert one.spec.failed_spines == () and one.spec.failed_links == (("leaf1", "spine1"),)
    assert [p[1] for p in f.switch_paths("leaf5", "leaf6")] == ["spine4", "spine6"]
    assert [p[1] for p in f.switch_paths("leaf1", "leaf2")] == ["spine2", "spine3"]


def test_planes_load_again_and_are_refused_where_they_do_not_exist():
    doc = {"name": "p", "seed": 1, "fabric": rail(2, failed_switches=["spine3"]),
           "jobs": [{"name": "r", "collective": "allreduce", "size_bytes": 10 ** 6,
                     "hosts": [f"h{i}" for i in range(1, 9)]}], "routing": ["ecmp"]}
    exp = parse(doc)
    assert exp.fabric.planes == 2 and exp.fabric.spec.failed == ("spine3",)
    again = parse(exp.resolved())
    assert again.fabric.spec == exp.fabric.spec and again.resolved() == exp.resolved()
    check_emulable(exp)          # the emulator builds planes, but not yet with ..
    for key, value, refused in [("demand", "measured", "demand")]:
        with pytest.raises(ConfigError, match=refused):
            check_emulable(parse({**doc, key: value}))
    with pytest.raises(FabricError, match="fabric.planes: a fat-tree has no planes"):
        build_fabric(dataclasses.replace(fat_tree_spec(4, 1, 1), planes=2))


CLOS3 = FabricSpec(topology="clos3", pods=3, leaves_per_pod=2, aggs_per_pod=2,
                   cores_per_plane=2, hosts_per_leaf=2, host_link_mbps=100,
                   leaf_agg_mbps=100, agg_core_mbps=50)
RAIL3 = FabricSpec(topology="rail-optimized", pods=2, leaves_per_pod=4, aggs_per_pod=2,
                   cores_per_plane=1, hosts_per_leaf=2, host_link_mbps=100, leaf_agg_mbps=100,
                   agg_core_mbps=100, nics_per_server=4, gpus_per_server=4, nvlink_mbps=900)


@pytest.mark.parametrize("spec", [CLOS3, RAIL3], ids=["clos3", "rail-groups"])
@pytest.mark.parametrize("planes", [2, 3])
def test_three_tiers_copy_leaves_aggs_and_cores_per_plane(spec, planes):
    f, one = build_fabric(dataclasses.replace(spec, planes=planes)), build_fabric(spec)
    n_switches = len(one.leaves) + len(one.aggs) + len(one.cores)
    assert len(f.switches) == planes * n_switches + len(one.nvswitches)
    assert len({f.dpid_of(s) for s in f.switches}) == len(f.switches)
    assert (f.leaves, f.aggs, f.cores) == (one.leaves, one.aggs, one.cores)
    for p in range(2, planes + 1):
        for s in one.leaves + one.aggs + one.cores:   # the same switch, ports and links
            copy = f.in_plane((s,), p)[0]
            assert f.plane_of(copy) == p and f.in_plane((copy,), 1) == (s,)
            mine = {f.in_plane((n,), 1)[0] if f.is_switch(n) else n: f.port(copy, n)
                    for n in f.graph.successors(copy)}
            assert mine == {n: one.port(s, n) for n in one.graph.successors(s)
                            if one.role(n) != "nvswitch"}
        for h in f.hosts:
            leaf = f.leaf_at(h, p)
            assert f.plane_of(leaf) == p and f.port(h, leaf) == p
        a, b = one.leaves[0], one.leaves[-1]          # across pods: in the plane only
        assert f.switch_paths(f.in_plane((a,), p)[0], f.in_plane((b,), p)[0]) == \
            [f.in_plane(x, p) for x in one.switch_paths(a, b)]


def conns_between(n: int, src: str = "h1", dst: str = "h5") -> list[Connection]:
    rng = random.Random(7)
    return [Connection(i, "j", src, dst, rng.randrange(1024, 65536), rng.randrange(1, 65536))
            for i in range(n)]


def test_ecmp_hashes_the_plane_per_flow_as_balls_into_bins():
    """n flows over P planes by a hash: each plane's count is Binomial(n, 1/P); over 200 seeds
    the mean busiest plane matches balls into bins' expectation within 5 standard errors."""
    P, n = 2, 16
    f = build_fabric(dataclasses.replace(LS, planes=P))
    conns = conns_between(n)
    busiest = []
    for seed in range(200):
        planes = choose_planes("ecmp", f, conns, seed).values()
        busiest.append(max(sum(1 for p in planes if p == q) for q in range(1, P + 1)))
    # E[max(X, n - X)] for X ~ Binomial(16, 1/2), exactly
    pmf = [math.comb(n, k) / 2 ** n for k in range(n + 1)]
    want = sum(max(k, n - k) * pmf[k] for k in range(n + 1))
    var = sum(max(k, n - k) ** 2 * pmf[k] for k in range(n + 1)) - want ** 2
    mean = sum(busiest) / len(busiest)
    assert abs(mean - want) < 5 * math.sqrt(var / len(busiest))
    assert want > n / P                       # hashing does collide: the planners' room


def test_planners_balance_ports_and_spray_deals_both_planes():
    f = build_fabric(dataclasses.replace(LS, planes=2))
    conns = conns_between(6) + conns_between(2, "h2", "h5")
    for c_i, c in enumerate(conns):
        conns[c_i] = dataclasses.replace(c, conn_id=c_i)
    mine = choose_planes("greedy", f, conns, 0)
    down = [sum(1 for c in conns if c.dst == "h5" and mine[c.conn_id] == p) for p in (1, 2)]
    assert down == [4, 4]                     # h5's two ports carry 8 flows, 4 each
    dealt = choose_planes("spray", f, conns[:6], 3)
    assert [dealt[i] for i in range(6)] in ([1, 2] * 3, [2, 1] * 3)


@pytest.mark.parametrize("kind, failed, split", [
    ("leaf-spine", "spine4", 8),
    ("clos3", "core5", 6),       # plane 2's core1: pods 1-3 keep one core of two
])
@pytest.mark.parametrize("name", ["ecmp", "greedy", "ilp", "spray", "mmf", "annealing",
                                  "edge-coloring", "gff"])
def test_every_strategy_routes_each_flow_inside_one_plane(name, kind, failed, split):
    spec = LS if kind == "leaf-spine" else CLOS3
    f = build_fabric(dataclasses.replace(spec, planes=2, failed_spines=(failed,) * (
        kind == "leaf-spine"), failed_switches=(failed,) * (kind == "clos3")))
    assert f.plane_of(failed) == 2
    plans = plan_jobs([JobSpec("a", Collective.ALLTOALL, [f.hosts[:split]], 10 ** 6),
                       JobSpec("b", Collective.ALLREDUCE, [f.hosts[split:]], 10 ** 6)])
    conns = [c for p in plans for c in p.connections]
    plan = route(name, f, conns, seed=1)
    for c in conns:
        path = plan.path_of[c.conn_id]
        p = f.plane_of(path[0])
        assert path[0] == f.leaf_at(c.src, p) and path[-1] == f.leaf_at(c.dst, p)
        assert all(f.plane_of(s) == p for s in path) and failed not in path
        assert len(path) == 1 or path in f.switch_paths(path[0], path[-1])
    assert {f.plane_of(plan.path_of[c.conn_id][0]) for c in conns} == {1, 2}


def test_one_flow_takes_one_port_and_spraying_or_the_ideal_take_every_port():
    """8 MB from h1 to h5 at 100 Mbit/s per port: one port 0.64 s, two ports 0.32 s."""
    f = build_fabric(dataclasses.replace(LS, planes=2))
    plans = plan_jobs([JobSpec("p", Collective.FLOWS, [["h1", "h5"]], 8_000_000)])
    conns = plans[0].connections
    routed = route("greedy", f, conns).path_of
    assert predict(f, plans, routed).jobs["p"].mean_cct_s == pytest.approx(0.64)
    assert predict(f, plans, routed, spray=True).jobs["p"].mean_cct_s == pytest.approx(0.32)
    assert ideal(f, plans).jobs["p"].mean_cct_s == pytest.approx(0.32)
    one = build_fabric(LS)
    assert ideal(one, plans).jobs["p"].mean_cct_s == pytest.approx(0.64)


@pytest.mark.parametrize("spec", [LS, CLOS3], ids=["leaf-spine", "clos3"])
@pytest.mark.parametrize("name", ["greedy", "ilp", "annealing", "mmf"])
def test_a_re_plan_from_the_routes_it_made_keeps_them_in_every_plane(spec, name):
    """The previous routes reach each plane's solve named as plane 1 (`Fabric.in_plane`),
    so a low-churn re-plan of unchanged flows keeps every route, plane 2's too."""
    f = build_fabric(dataclasses.replace(spec, planes=2))
    conns = plan_jobs([JobSpec("a", Collective.ALLTOALL, [f.hosts[:8]], 10 ** 6)])[0].connections
    first = route(name, f, conns, seed=1).path_of
    again = route(name, f, conns, seed=2, previous=first).path_of
    assert {f.plane_of(first[c.conn_id][0]) for c in conns} == {1, 2}
    assert again == first

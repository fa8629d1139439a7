"""Network planes (testbed/planes.py, routing/planes.py): the graph of every two-tier kind with
P planes, one plane being today's fabric, each flow's plane as a routing choice (ECMP's hash
as balls into bins, the planners' balance, spray's deal), and the predictor's rows on them."""
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
    with pytest.raises(FabricError, match="fabric.planes"):
        build_fabric(FabricSpec(topology="clos3", pods=2, leaves_per_pod=2, aggs_per_pod=2,
                                cores_per_plane=1, hosts_per_leaf=2, host_link_mbps=1,
                                leaf_agg_mbps=1, agg_core_mbps=1, planes=2))


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


@pytest.mark.parametrize("name", ["ecmp", "greedy", "ilp", "spray", "mmf", "annealing",
                                  "edge-coloring", "gff"])
def test_every_strategy_routes_each_flow_inside_one_plane(name):
    f = build_fabric(dataclasses.replace(LS, planes=2, failed_spines=("spine4",)))
    plans = plan_jobs([JobSpec("a", Collective.ALLTOALL, [f.hosts[:8]], 10 ** 6),
                       JobSpec("b", Collective.ALLREDUCE, [f.hosts[8:]], 10 ** 6)])
    conns = [c for p in plans for c in p.connections]
    plan = route(name, f, conns, seed=1)
    for c in conns:
        path = plan.path_of[c.conn_id]
        p = f.plane_of(path[0])
        assert path[0] == f.leaf_at(c.src, p) and path[-1] == f.leaf_at(c.dst, p)
        assert all(f.plane_of(s) == p for s in path) and "spine4" not in path
        assert len(path) == 1 or path in f.switch_paths(path[0], path[-1])


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

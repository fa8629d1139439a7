"""The rail-optimized kind: its structure (counts, degrees, names, DPIDs), that every chosen
path is a live shortest path, that ECMP and pinned flows walk the rules to their planned path,
its config keys, and what it does to a data-parallel job's rings."""
from __future__ import annotations

import itertools

import networkx as nx
import pytest

from experiments.config import ConfigError, parse
from routing import route
from routing.rules import rules_for
from testbed import topologies
from traffic.collectives import Collective, JobSpec, plan_jobs

from ..routing.test_rules_paths import pkt_of, walk


def rail(**kw) -> dict:
    return {"topology": "rail-optimized", "nics_per_server": 4, "servers_per_group": 3,
            "spines_per_group": 2, "host_link_mbps": 10, "spine_link_mbps": 10, **kw}


def fabric_of(section: dict):
    return parse({"name": "r", "fabric": section,
                  "jobs": [{"name": "j", "collective": "allreduce", "hosts": ["h1", "h2"],
                            "size_bytes": 1000}], "routing": ["ecmp"]}).fabric


ONE = rail()
GROUPS = rail(groups=3, cores_per_plane=2, core_link_mbps=10)


@pytest.mark.parametrize("section, hosts, leaves, uppers", [
    (ONE, 12, 4, 2), (GROUPS, 36, 12, 6 + 4)])
def test_structure_counts_degrees_names_and_dpids(section, hosts, leaves, uppers):
    f = fabric_of(section)
    assert (len(f.hosts), len(f.leaves), len(f.upper_switches)) == (hosts, leaves, uppers)
    assert len({f.dpid_of(s) for s in f.switches}) == len(f.switches)
    n = section["nics_per_server"]
    for s, server in enumerate(f.servers):
        assert server == [f"h{s * n + r}" for r in range(1, n + 1)]
        group = s // section["servers_per_group"]
        # NIC r of every server of a group on that group's rail leaf r
        assert [f.leaf_of(h) for h in server] == f.leaves[group * n:(group + 1) * n]
    for leaf in f.leaves:
        assert len(f.hosts_on(leaf)) == section["servers_per_group"]
        assert len(f.uplinks(leaf)) == section["spines_per_group"]
    assert len({f.ip_of(h) for h in f.hosts}) == len(f.hosts)


@pytest.mark.parametrize("section", [ONE, GROUPS], ids=["one-group", "three-groups"])
def test_chosen_paths_are_live_shortest_paths(section):
    f = fabric_of(section)
    g = nx.Graph((u, v) for u, v in f.links if f.role(u) != "host" and f.role(v) != "host")
    for a, b in itertools.permutations(f.leaves, 2):
        paths = f.switch_paths(a, b)
        assert paths and all(len(p) - 1 == nx.shortest_path_length(g, a, b) for p in paths)
    conns = [c for p in plan_jobs([JobSpec("r", Collective.ALLREDUCE, [f.hosts[::5]], 10**6)])
             for c in p.connections]
    for strategy in ("ecmp", "greedy", "ilp"):
        rp = route(strategy, f, conns, seed=1)
        for c in conns:
            p = rp.path_of[c.conn_id]
            a, b = f.leaf_of(c.src), f.leaf_of(c.dst)
            assert (p is None) == (a == b) and (p is None or p in f.switch_paths(a, b))


@pytest.mark.parametrize("section", [ONE, GROUPS], ids=["one-group", "three-groups"])
@pytest.mark.parametrize("strategy", ["ecmp", "ilp"])
def test_rules_walk_every_flow_to_its_planned_path(section, strategy):
    f = fabric_of(section)
    conns = [c for p in plan_jobs([JobSpec("r", Collective.ALLREDUCE, [f.hosts[::3]], 10**6)])
             for c in p.connections]
    rp = route(strategy, f, conns, seed=2)
    rules = rules_for(f, conns, strategy, rp.path_of)
    for c in conns:
        got = {tuple(w[:-1]) for w in walk(f, rules, pkt_of(f, c), c.src)}
        if strategy == "ecmp":
            a, b = f.leaf_of(c.src), f.leaf_of(c.dst)
            assert got <= set(f.switch_paths(a, b)) | {(a,)}
        else:
            want = rp.path_of[c.conn_id] or (f.leaf_of(c.src),)
            assert got == {tuple(want)}


def test_the_resolved_section_loads_again_and_the_picture_says_it():
    for section in (ONE, GROUPS):
        f = fabric_of(section)
        again = fabric_of(topologies.resolved(f.spec))
        assert again.spec == f.spec
        assert "NIC r on rail r" in topologies.draw(f) and "rail-optimized" in topologies.title(f)


@pytest.mark.parametrize("section, names", [
    (rail(core_link_mbps=10), "fabric.core_link_mbps: only with groups > 1"),
    (rail(groups=2), "fabric.core_link_mbps: required with groups > 1"),
    (rail(nics_per_server=0), "fabric.nics_per_server"),
    (rail(servers_per_group=251), "fabric.servers_per_group"),
    (rail(spines=2), "fabric.spines: unknown key"),
    (rail(failed_switches=["leaf1"]), "fabric.failed_switches"),
])
def test_bad_rail_sections(section, names):
    with pytest.raises(ConfigError, match=names.replace(".", r"\.", 1)):
        fabric_of(section)


def test_servers_placement_keeps_each_ring_on_one_rail():
    """GPU i of every copy sits on NIC i mod 8 of its server: ring i stays on one rail leaf
    of a group, so a data-parallel job of whole servers never reaches a spine; on a
    leaf-spine of the same size random-tors rings cross the spines."""
    jobs = [{"name": "llama", "model": "llama2-70b", "dp": 4, "placement": "servers",
             "iterations": 1}]
    exp = parse({"name": "r", "fabric": {"topology": "rail-optimized",
                                         "servers_per_group": 64, "spines_per_group": 4,
                                         "host_link_mbps": 100, "spine_link_mbps": 100},
                 "jobs": jobs, "routing": ["ecmp"]})
    f = exp.fabric
    for ring in exp.jobs[0].groups:
        assert len({f.leaf_of(h) for h in ring}) == 1
    with pytest.raises(ConfigError, match="placement servers needs a fabric of multi-NIC"):
        parse({"name": "l", "fabric": {"spines": 4, "leaves": 8, "hosts_per_leaf": 64,
                                       "host_link_mbps": 100, "spine_link_mbps": 100},
               "jobs": jobs, "routing": ["ecmp"]})

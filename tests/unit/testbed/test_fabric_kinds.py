"""Three-tier fabric kinds: sizes, names, ports, DPIDs, failures and shortest up-down paths."""
import itertools

import networkx as nx
import pytest

from testbed.fabric import FabricError, FabricSpec, build_fabric


from testbed import topologies
from testbed.topologies import fat_tree_spec
def clos3(**kw) -> FabricSpec:
    base = dict(topology="clos3", pods=3, leaves_per_pod=2, aggs_per_pod=2, cores_per_plane=3,
                hosts_per_leaf=2, host_link_mbps=10, leaf_agg_mbps=10, agg_core_mbps=5)
    return FabricSpec(**{**base, **kw})


@pytest.mark.parametrize("k", [2, 4, 6, 8])
def test_fat_tree_has_al_fares_sizes(k):
    f = build_fabric(fat_tree_spec(k, 10, 10))
    assert len(f.hosts) == k ** 3 // 4
    assert len(f.leaves) == len(f.aggs) == k * k // 2
    assert len(f.cores) == (k // 2) ** 2
    # every switch has k ports (a leaf: k/2 hosts + k/2 aggs; a core: one agg per pod)
    for sw in f.switches:
        assert f.graph.out_degree(sw) == k, sw
    assert sorted(f.graph.out_degree(h) for h in f.hosts) == [1] * len(f.hosts)


def test_names_are_leaf_major_and_dpids_and_ports_unique():
    f = build_fabric(clos3())
    assert f.leaves == [f"leaf{i}" for i in range(1, 7)]
    assert [f.pod_of(x) for x in f.leaves] == [1, 1, 2, 2, 3, 3]
    assert [f.leaf_of(h) for h in f.hosts[:4]] == ["leaf1", "leaf1", "leaf2", "leaf2"]
    assert f.aggs == [f"agg{i}" for i in range(1, 7)] and len(f.cores) == 6
    dpids = [f.dpid_of(s) for s in f.switches]
    assert len(set(dpids)) == len(dpids) and all(len(d) == 16 for d in dpids)
    for sw in f.switches:
        ports = [f.port(sw, n) for n in f.graph.successors(sw)]
        assert len(set(ports)) == len(ports) and min(ports) >= 1, sw
    assert len(set(f.ip_of(h) for h in f.hosts)) == len(f.hosts)
    # agg i of each pod connects to exactly the cores of plane i
    for agg in f.aggs:
        plane = f.graph.nodes[agg]["plane"]
        assert {f.graph.nodes[c]["plane"] for c in f.uplinks(agg)} == {plane}


def _live_switch_graph(f):
    g = nx.DiGraph()
    g.add_edges_from((u, v) for u, v in f.links if f.is_live(u, v)
                     and f.role(u) != "host" and f.role(v) != "host")
    return g


@pytest.mark.parametrize("spec", [
    fat_tree_spec(4, 10, 10),
    clos3(),
    clos3(failed_switches=("core2", "agg3"), failed_links=(("leaf1", "agg2"), ("agg6", "core6"))),
    FabricSpec(4, 3, 2, 10, 10, failed_spines=("spine2",), failed_links=(("leaf1", "spine3"),)),
], ids=["fat-tree-4", "clos3", "clos3-failed", "leaf-spine-failed"])
def test_switch_paths_are_the_live_shortest_up_down_paths(spec):
    f = build_fabric(spec)
    g = _live_switch_graph(f)
    for a, b in itertools.permutations(f.leaves, 2):
        paths = f.switch_paths(a, b)
        assert len(set(paths)) == len(paths)
        for p in paths:
            assert p[0] == a and p[-1] == b
            assert all(f.is_live(u, v) for u, v in zip(p, p[1:]))
            tiers = [{"leaf": 0, "agg": 1, "spine": 1, "core": 2}[f.role(n)] for n in p]
            top = tiers.index(max(tiers))   # up, then down: valley-free
            assert tiers[:top + 1] == sorted(tiers[:top + 1])
            assert tiers[top:] == sorted(tiers[top:], reverse=True)
        if paths:   # none shorter exists in the live graph
            assert len(paths[0]) - 1 == nx.shortest_path_length(g, a, b)
            assert len({len(p) for p in paths}) == 1


def test_fat_tree_path_counts():
    f = build_fabric(fat_tree_spec(4, 10, 10))
    assert len(f.switch_paths("leaf1", "leaf2")) == 2          # same pod: k/2 aggs
    assert len(f.switch_paths("leaf1", "leaf3")) == 4          # across pods: (k/2)^2 cores
    assert f.switch_paths("leaf1", "leaf1") == [("leaf1",)]


def test_failures_remove_exactly_their_paths():
    f = build_fabric(clos3(failed_switches=("core1",)))
    assert all("core1" not in p for p in f.switch_paths("leaf1", "leaf3"))
    assert len(f.switch_paths("leaf1", "leaf3")) == 5           # 2 planes x 3 cores - 1
    g = build_fabric(clos3(failed_links=(("leaf1", "agg1"),)))
    assert [p[1] for p in g.switch_paths("leaf1", "leaf2")] == ["agg2"]
    assert all(p[1] == "agg2" for p in g.switch_paths("leaf1", "leaf5"))


@pytest.mark.parametrize("bad, match", [
    (dict(failed_switches=("leaf1",)), "agg or core"),
    (dict(failed_switches=("core99",)), "agg or core"),
    (dict(failed_links=(("leaf1", "core1"),)), "not a link between two switches"),
    (dict(failed_links=(("h1", "leaf1"),)), "not a link between two switches"),
    (dict(failed_links=(("leaf1", "agg1"), ("leaf1", "agg2"))), "isolate leaf1"),
    (dict(leaves_per_pod=0), "leaves_per_pod"),
    (dict(nics_per_server=3), "servers of 3 NICs need 3 leaves per pod"),
])
def test_impossible_three_tier_fabrics_are_refused(bad, match):
    with pytest.raises(FabricError, match=match):
        build_fabric(clos3(**bad))


def test_odd_k_is_refused():
    with pytest.raises(FabricError, match="even k"):
        fat_tree_spec(5, 10, 10)


def test_draw_shows_the_tiers():
    text = topologies.draw(build_fabric(fat_tree_spec(4, 10, 20)))
    assert "fat-tree k=4" in text and "4 cores" in text and "16 hosts" in text
    assert "pod 1: agg1 agg2 / leaf1 leaf2" in text


def test_a_kind_is_looked_up_by_name_in_the_registry():
    assert set(topologies.KINDS) == {"leaf-spine", "fat-tree", "clos3", "rail-optimized"}
    with pytest.raises(KeyError):
        topologies.kind("torus")

"""The leaf-spine model: names, ports, addresses, DPIDs, failures and paths."""
import pytest

from testbed.fabric import FabricError, FabricSpec, build_fabric


def fabric(**kw):
    spec = dict(spines=4, leaves=4, hosts_per_leaf=4, host_link_mbps=10, spine_link_mbps=20)
    spec.update(kw)
    return build_fabric(FabricSpec(**spec))


def test_hosts_are_numbered_leaf_by_leaf():
    f = fabric()
    assert f.hosts[:5] == ["h1", "h2", "h3", "h4", "h5"]
    assert [f.leaf_of(h) for h in ("h1", "h4", "h5", "h16")] == ["leaf1", "leaf1", "leaf2",
                                                                  "leaf4"]
    assert f.ip_of("h6") == "10.0.2.2"


def test_every_link_has_two_directions_with_rates_and_ports():
    f = fabric()
    g = f.graph
    assert len(g.edges) == 2 * (16 + 4 * 4)
    assert f.capacity_mbps("h1", "leaf1") == 10 and f.capacity_mbps("leaf1", "h1") == 10
    assert f.capacity_mbps("leaf2", "spine3") == 20 and f.capacity_mbps("spine3", "leaf2") == 20
    # leaf ports: hosts 1..H, then spines H+1..H+S; spine port l goes to leaf l
    assert f.port("leaf2", "h6") == 2
    assert f.port("leaf2", "spine3") == 4 + 3
    assert f.port("spine3", "leaf2") == 2


def test_dpids_are_explicit_and_distinct():
    f = fabric()
    dpids = [f.dpid_of(s) for s in f.leaves + f.spines]
    assert len(set(dpids)) == len(dpids)
    assert all(len(d) == 16 for d in dpids)
    assert f.dpid_of("leaf1") != f.dpid_of("spine1")


def test_paths_use_a_spine_only_between_leaves():
    f = fabric()
    assert f.path("h1", "h2", None) == ["h1", "leaf1", "h2"]
    assert f.path("h1", "h5", "spine2") == ["h1", "leaf1", "spine2", "leaf2", "h5"]
    with pytest.raises(FabricError):
        f.path("h1", "h5", None)
    with pytest.raises(FabricError):
        f.path("h1", "h2", "spine1")


def test_failures_remove_spines_and_links_in_both_directions():
    f = fabric(failed_spines=("spine2",), failed_links=(("leaf1", "spine3"),))
    assert f.live_spines == ["spine1", "spine3", "spine4"]
    assert f.usable_spines("leaf1", "leaf2") == ["spine1", "spine4"]
    assert f.usable_spines("leaf2", "leaf3") == ["spine1", "spine3", "spine4"]
    assert not f.is_live("spine3", "leaf1")
    with pytest.raises(FabricError):
        f.path("h1", "h5", "spine3")


@pytest.mark.parametrize("kw, msg", [
    (dict(spines=0), "fabric.spines"),
    (dict(host_link_mbps=0), "fabric.host_link_mbps"),
    (dict(failed_spines=("spine9",)), "fabric.failed_spines"),
    (dict(failed_links=(("spine1", "leaf1"),)), "fabric.failed_links"),
    (dict(spines=1, failed_links=(("leaf1", "spine1"),)), "isolate leaf1"),
])
def test_bad_fabrics_name_the_field(kw, msg):
    with pytest.raises(FabricError, match=msg):
        fabric(**kw)


def _failed_variants(seed: int):
    """(intact, variant) per digest fabric (each kind, servers and planes): the fabric
    itself and up to six copies with random switches and links failed."""
    import random

    from tests.unit.testbed.fabric_digest import SPECS
    rng = random.Random(seed)
    for spec in SPECS.values():
        f = build_fabric(spec)
        yield f, f
        for _ in range(6):
            upper = [n for n in f.graph.nodes if f.graph.nodes[n].get("role") in
                     ("spine", "agg", "core")]
            links = [(u, v) for u, v in f.graph.edges if u in upper or v in upper]
            try:
                yield f, build_fabric(spec.with_failures(
                    tuple(n for n in upper if rng.random() < 0.3),
                    tuple(sorted(e) for e in links if rng.random() < 0.1)))
            except FabricError:
                pass


def test_has_live_path_says_whether_switch_paths_lists_one():
    """Every leaf pair of every digest fabric, and of each with random switches and links
    failed: has_live_path(a, b) == bool(switch_paths(a, b))."""
    checked = cut = 0
    for _, g in _failed_variants(3):
            for a in g.leaves:
                for b in g.leaves:
                    fresh = bool(g.has_live_path(a, b))        # before any listing is cached
                    assert fresh == bool(g.switch_paths(a, b)) == g.has_live_path(a, b)
                    checked += 1
                    cut += not fresh
    assert checked > 1000 and cut > 50


def test_first_hops_paths_via_and_route_links_follow_switch_paths():
    """Found without listing a pair's paths (ECMP's hop-by-hop choice, the predictor's
    route check), they say what switch_paths lists, in its order, on every leaf pair of every
    digest fabric and of each with random failures; route_links takes exactly its paths
    (a path of the intact fabric that failures cut is refused)."""
    checked = refused = 0
    for intact, g in _failed_variants(5):
        leaves = [n for n in g.graph.nodes if g.graph.nodes[n].get("role") == "leaf"]
        for a in leaves:                                    # every plane's
            for b in leaves:
                firsts = g.first_hops(a, b)                 # before any listing is cached
                via = {h: g.paths_via(a, b, h) for h in [*g._ups[a], b]}
                candidates = intact.switch_paths(a, b) if a != b else []
                taken = {p: g.route_links(p) for p in candidates}
                if g.plane_of(a) != g.plane_of(b):          # no link joins two planes
                    assert set(taken.values()) <= {None}
                    continue
                paths = g.switch_paths(a, b)
                assert {p for p, ids in taken.items() if ids is not None} == \
                    set(paths) & set(candidates)
                want = tuple(dict.fromkeys(p[1] for p in paths if len(p) > 1))
                assert firsts == want
                for h, got in via.items():
                    assert got == [p for p in paths if len(p) > 1 and p[1] == h]
                    assert g.paths_via(a, b, h) == got           # from the listing
                for p in paths if a != b else ():
                    assert g.route_links(p) == tuple(g.link_index[u, v]
                                                     for u, v in zip(p, p[1:]))
                    assert g.route_links((*p[:-1], a)) is None      # back to its start
                    assert g.route_links((a, b)) is None
                listed = set(paths)
                for p in intact.switch_paths(a, b) if a != b else ():
                    if p not in listed:
                        assert g.route_links(p) is None
                        refused += 1
                checked += 1
    assert checked > 1000 and refused > 100

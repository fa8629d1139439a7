"""Servers of several GPUs on NVLink (testbed/servers.py): the graph per kind, its ports and
counts, and that one GPU per server is the same fabric link for link."""
from __future__ import annotations

import dataclasses

import pytest

from testbed.fabric import FabricError, FabricSpec, build_fabric
from testbed.topologies import fat_tree_spec

LEAF_SPINE = FabricSpec(spines=2, leaves=2, hosts_per_leaf=8, host_link_mbps=100,
                        spine_link_mbps=100)
RAIL = FabricSpec(spines=2, leaves=4, hosts_per_leaf=3, host_link_mbps=100,
                  spine_link_mbps=100, nics_per_server=4, topology="rail-optimized")
CLOS3 = FabricSpec(topology="clos3", pods=2, leaves_per_pod=2, aggs_per_pod=2,
                   cores_per_plane=2, hosts_per_leaf=4, host_link_mbps=100,
                   leaf_agg_mbps=100, agg_core_mbps=100)


def servers(spec: FabricSpec, g: int, rate: float = 3.6e6) -> FabricSpec:
    return dataclasses.replace(spec, gpus_per_server=g, nvlink_mbps=rate)


@pytest.mark.parametrize("spec, g", [(LEAF_SPINE, 4), (RAIL, 4), (CLOS3, 2),
                                     (fat_tree_spec(4, 100.0, 100.0), 2)])
def test_every_kind_gets_one_nvlink_switch_per_server(spec, g):
    plain, f = build_fabric(spec), build_fabric(servers(spec, g))
    nvs = [n for n, r in f.graph.nodes(data="role") if r == "nvswitch"]
    assert len(nvs) == len(f.hosts) // g == len(f.servers)
    for k, name in enumerate(nvs, start=1):
        peers = sorted(f.graph.successors(name), key=lambda h: int(h[1:]))
        assert peers == f.servers[k - 1] == [f"h{(k - 1) * g + i}" for i in range(1, g + 1)]
        assert [f.port(name, h) for h in peers] == list(range(1, g + 1))
        assert all(f.port(h, name) == 1 and f.capacity_mbps(h, name) == 3.6e6 for h in peers)
    # the fabric's own links are the plain fabric's, with the same ports and rates
    fabric_links = [e for e in f.links if "nvswitch" not in (f.role(e[0]), f.role(e[1]))]
    assert sorted(fabric_links) == sorted(plain.links)
    assert all(f.port(*e) == plain.port(*e) for e in plain.links)
    assert len(f.links) == len(plain.links) + 2 * len(f.hosts)
    assert f.switches == plain.switches + nvs and f.nvswitches == nvs
    assert f.leaves == plain.leaves and f.upper_switches == plain.upper_switches
    assert [f.dpid_of(x) for x in nvs] == [f"05{k:014x}" for k in range(1, len(nvs) + 1)]


def test_servers_share_a_leaf_or_sit_on_rails():
    f = build_fabric(servers(LEAF_SPINE, 4))
    assert {f.leaf_of(h) for h in f.servers[0]} == {"leaf1"}
    r = build_fabric(servers(RAIL, 4))
    assert [r.leaf_of(h) for h in r.servers[1]] == ["leaf1", "leaf2", "leaf3", "leaf4"]
    assert r.same_server("h5", "h8") and not r.same_server("h4", "h5")
    assert not r.same_server("h5", "h5")


def test_one_gpu_per_server_is_todays_fabric():
    f = build_fabric(LEAF_SPINE)
    assert not f.server_of and not f.nvlink_ends and f.servers == []
    assert not f.same_server("h1", "h2")


def test_nonblocking_keeps_the_servers():
    f = build_fabric(servers(RAIL, 4)).nonblocking()
    assert f.spec.gpus_per_server == 4 and f.same_server("h1", "h4")
    assert f.leaves == ["leaf1"]


@pytest.mark.parametrize("spec, match", [
    (servers(LEAF_SPINE, 3), "does not divide hosts_per_leaf"),
    (servers(RAIL, 2), "one GPU per NIC"),
    (dataclasses.replace(LEAF_SPINE, nvlink_mbps=100.0), "only with gpus_per_server > 1"),
    (servers(LEAF_SPINE, 4, rate=0.0), "nvlink_mbps"),
    (servers(LEAF_SPINE, 80), "gpus_per_server"),
])
def test_bad_servers_name_their_key(spec, match):
    with pytest.raises(FabricError, match=match):
        build_fabric(spec)

"""NCCL on servers (traffic/nccl.py): rail-aligned ring channels against a hand-listed case,
PXN's relays, and that a transfer inside a server crosses NVLink only."""
from __future__ import annotations

import dataclasses

import numpy as np

from testbed.fabric import FabricSpec, build_fabric
from traffic.collectives import Collective, JobSpec, plan_jobs, split_bytes
from traffic.nccl import ServerMap, channel_groups, on_servers
from traffic.predictor_rows import conn_links

# 2 servers x 4 GPUs on a rail-optimized fabric: GPU i of each server on rail leaf i
RAIL = build_fabric(FabricSpec(spines=2, leaves=4, hosts_per_leaf=2, host_link_mbps=100,
                               spine_link_mbps=100, nics_per_server=4,
                               topology="rail-optimized", gpus_per_server=4,
                               nvlink_mbps=3.6e6))
SERVERS = ServerMap.of(RAIL.servers)


def job(collective: Collective, hosts: list[str], pxn: bool = True, size: int = 8000):
    spec = JobSpec("j", collective, [hosts], size)
    return on_servers(dataclasses.replace(spec, pxn=pxn), SERVERS)


def test_ring_channels_as_listed_by_hand():
    # ranks given out of order: the ring goes server by server (in the order the ranks
    # first name them), by GPU inside each
    spec = job(Collective.ALLREDUCE, ["h5", "h2", "h8", "h1", "h3", "h7", "h4", "h6"])
    assert spec.groups == [["h5", "h6", "h7", "h8", "h1", "h2", "h3", "h4"]]
    spec = job(Collective.ALLREDUCE, ["h2", "h8", "h1", "h3", "h7", "h4", "h6", "h5"])
    assert spec.channels == 4
    assert [channel_groups(spec, c)[0] for c in range(4)] == [
        ["h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8"],
        ["h2", "h3", "h4", "h1", "h6", "h7", "h8", "h5"],
        ["h3", "h4", "h1", "h2", "h7", "h8", "h5", "h6"],
        ["h4", "h1", "h2", "h3", "h8", "h5", "h6", "h7"]]


def test_channels_split_the_bytes_and_hops_between_servers_stay_on_one_rail():
    spec = job(Collective.ALLREDUCE, [f"h{i}" for i in range(1, 9)], size=8003)
    plan = plan_jobs([spec])[0]
    assert len(plan.connections) == 4 * 8
    n = 8      # every hop of channel c moves 2(n-1)/n of its share
    per_conn = np.bincount(plan.transfers.conn, weights=plan.transfers.size)
    for c, share in enumerate(split_bytes(8003, 4)):
        hops = per_conn[8 * c:8 * c + 8]
        assert hops.sum() == 2 * (n - 1) * share
    between = [c for c in plan.connections if not RAIL.same_server(c.src, c.dst)]
    assert len(between) == 8                           # two per channel
    for c in between:                                  # PXN: the same rail on both ends
        assert RAIL.leaf_of(c.src) == RAIL.leaf_of(c.dst)
        assert c.nvlink_from and RAIL.same_server(c.nvlink_from, c.src)


def test_pxn_keeps_all_to_all_on_rails_and_without_it_crosses_spines():
    hosts = [f"h{i}" for i in range(1, 9)]
    for pxn in (True, False):
        conns = plan_jobs([job(Collective.ALLTOALL, hosts, pxn)])[0].connections
        crossing = [c for c in conns if not RAIL.same_server(c.src, c.dst)
                    and RAIL.leaf_of(c.src) != RAIL.leaf_of(c.dst)]
        relayed = [c for c in conns if c.nvlink_from]
        assert (len(crossing), len(relayed)) == ((0, 4 * 3 * 2) if pxn else (4 * 3 * 2, 0))


def test_a_transfer_inside_a_server_crosses_nvlink_only():
    spec = JobSpec("f", Collective.FLOWS, [["h1", "h3"], ["h1", "h6"]], 1000)
    plans = plan_jobs([on_servers(spec, SERVERS)])
    table, row_of = conn_links(RAIL, plans, {1: None}, nonblocking=False,
                               allow_unrouted=True)
    pad = len(RAIL.links)
    inside = {RAIL.links[i] for i in table[0] if i != pad}
    assert inside == {("h1", "nvs1"), ("nvs1", "h3")}
    relayed = {RAIL.links[i] for i in table[1] if i not in (pad, -1)}
    # h1 -> h6 (GPU 1 of server 2): over NVLink to h2 (GPU 1 of server 1), then rail 2
    assert {("h1", "nvs1"), ("nvs1", "h2"), ("h2", "leaf2"), ("leaf2", "h6")} <= relayed

"""NCCL on servers (traffic/nccl.py): rail-aligned ring channels against a hand-listed case,
PXN's relays, and that a transfer inside a server crosses NVLink only."""
from __future__ import annotations

import dataclasses

import re

import numpy as np
import pytest

from testbed.fabric import FabricSpec, build_fabric
from traffic.collectives import Collective, JobSpec, WorkloadError, plan_jobs, split_bytes
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


def test_hierarchical_allreduce_moves_the_closed_form_bytes_in_three_phases():
    spec = dataclasses.replace(job(Collective.ALLREDUCE, [f"h{i}" for i in range(1, 9)],
                                   size=8000), algorithm="hierarchical")
    plan = plan_jobs([spec])[0]
    ts, conns = plan.transfers, {c.conn_id: c for c in plan.connections}
    k, m, size = 4, 2, 8000
    sent = np.bincount(ts.conn, weights=ts.size)
    inside = sum(sent[c] for c, x in conns.items() if RAIL.same_server(x.src, x.dst))
    across = sum(sent[c] for c, x in conns.items() if not RAIL.same_server(x.src, x.dst))
    # reduce-scatter and all-gather inside: (k-1)/k x S per GPU each; rails: 2(m-1)/m x S/k
    assert inside == m * k * 2 * (k - 1) / k * size
    assert across == m * k * 2 * (m - 1) / m * size / k
    assert all(RAIL.leaf_of(x.src) == RAIL.leaf_of(x.dst) and not x.nvlink_from
               for x in conns.values() if not RAIL.same_server(x.src, x.dst))
    # every rail transfer of step 0 waits for its sender's last reduce-scatter receive
    step = dict(zip(ts.tid.tolist(), ts.step.tolist()))
    for i in range(len(ts)):
        deps = ts.dep[ts.dep_ptr[i]:ts.dep_ptr[i + 1]].tolist()
        assert all(step[d] < step[int(ts.tid[i])] for d in deps)
        if step[int(ts.tid[i])] == k - 1:             # the rails' first step
            x = conns[int(ts.conn[i])]
            (d,) = deps
            assert conns[int(ts.conn[ts.tid.tolist().index(d)])].dst == x.src
    assert int(ts.step.max()) == (k - 1) + 2 * (m - 1) + (k - 1) - 1


def test_ring_and_hierarchical_times_against_their_closed_forms():
    from traffic.predictor import predict
    hosts, size, rate = [f"h{i}" for i in range(1, 9)], 8_000_000, 100e6
    n, m, k = 8, 2, 4
    ring = plan_jobs([job(Collective.ALLREDUCE, hosts, size=size)])
    hier = plan_jobs([dataclasses.replace(job(Collective.ALLREDUCE, hosts, size=size),
                                          algorithm="hierarchical")])
    t_ring = predict(RAIL, ring, None).jobs["j"].mean_cct_s
    t_hier = predict(RAIL, hier, None).jobs["j"].mean_cct_s
    # per NIC: a rail-aligned ring sends 2(n-1)/n x S/k, hierarchical 2(m-1)/m x S/k; the
    # NVLink phases add (k-1)/k x S twice at 3.6 Tbit/s
    assert abs(t_ring - 2 * (n - 1) / n * size / k * 8 / rate) < 1e-9
    nvlink = 2 * (k - 1) / k * size * 8 / 3.6e12
    assert abs(t_hier - (2 * (m - 1) / m * size / k * 8 / rate + nvlink)) < 1e-9


def test_ring_hops_equal_the_steps_summed_per_connection():
    from traffic.collectives import ring_flows
    from traffic.rings import ring_allreduce, ring_chain, ring_hops
    hosts = [f"h{i}" for i in range(1, 9)]
    cases = [(c, size, ch) for c in (Collective.ALLREDUCE, Collective.ALLGATHER,
                                     Collective.REDUCE_SCATTER)
             for size in (8, 1001, 7_777_777) for ch in (False, True)]
    for collective, size, on_servers_ in cases:
        spec = JobSpec("r", collective, [hosts, ["h1", "h5"], hosts[:3]], size)
        if on_servers_:
            spec = job(collective, hosts, size=size)
        planner = ring_allreduce if collective is Collective.ALLREDUCE else ring_chain
        for make in (True, False):
            try:
                steps = ring_flows(planner(spec, 3, 17, make))
            except WorkloadError as e:      # too few bytes for a channel's ring: the same
                with pytest.raises(WorkloadError, match=re.escape(str(e))):
                    ring_hops(spec, 3, 17, make)
                continue
            hops = ring_hops(spec, 3, 17, make)
            assert hops.connections == steps.connections
            for name in ("tid", "conn", "size", "step", "dep_ptr", "dep"):
                assert np.array_equal(getattr(hops.transfers, name),
                                      getattr(steps.transfers, name)), (collective, size, name)

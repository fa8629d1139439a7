"""The connections as columns (traffic/connections.py): conn_id -> row as an offset or a
dict, the hosts as indices, and the fabric's one table following the plans it is asked for."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from testbed.fabric import FabricSpec, build_fabric
from traffic.collectives import Collective, JobSpec, plan_jobs, unique_connections
from traffic.connections import ConnTable, RowIndex, conn_table
from traffic.nccl import ServerMap, on_servers

RAIL = build_fabric(FabricSpec(spines=2, leaves=4, hosts_per_leaf=2, host_link_mbps=100,
                               spine_link_mbps=100, nics_per_server=4,
                               topology="rail-optimized", gpus_per_server=4,
                               nvlink_mbps=3.6e6))


@pytest.mark.parametrize("ids", [[7, 8, 9, 10], [3, 9, 4], [5], []])
def test_row_index_maps_like_the_dict_it_replaces(ids):
    rows = RowIndex(np.array(ids, dtype=np.int64))
    want = {c: r for r, c in enumerate(ids)}
    assert dict(rows) == want and len(rows) == len(want)
    assert rows.dense == (ids == list(range(ids[0], ids[0] + len(ids))) if ids else True)
    for c in (2, 6, 11, -1):
        assert (c in rows) == (c in want)
        with pytest.raises(KeyError):
            rows[c]
    if ids:
        assert rows.rows(np.array(ids[::-1])).tolist() == list(range(len(ids)))[::-1]
        with pytest.raises(KeyError, match="11"):
            rows.rows(np.array([ids[0], 11]))


def test_conn_table_holds_hosts_and_relays_as_indices():
    hosts = [f"h{i}" for i in range(1, 9)]
    spec = on_servers(JobSpec("a", Collective.ALLTOALL, [hosts], 8000), ServerMap.of(RAIL.servers))
    plans = plan_jobs([spec])
    conns = unique_connections(plans)
    table = ConnTable(conns, RAIL.hosts)
    index = {h: i for i, h in enumerate(RAIL.hosts)}
    assert table.ids.tolist() == [c.conn_id for c in conns]
    assert table.src.tolist() == [index[c.src] for c in conns]
    assert table.dst.tolist() == [index[c.dst] for c in conns]
    assert table.via.tolist() == [index.get(c.nvlink_from, -1) for c in conns]
    assert (table.via >= 0).sum() == 4 * 3 * 2                      # PXN's relays
    unknown = ConnTable([dataclasses.replace(conns[0], dst="h99")], RAIL.hosts)
    assert unknown.dst.tolist() == [-1]


def test_the_fabric_keeps_one_table_for_the_plans_it_was_made_of():
    fab = build_fabric(RAIL.spec)
    hosts = [f"h{i}" for i in range(1, 9)]
    first = plan_jobs([JobSpec("r", Collective.ALLREDUCE, [hosts], 8000)])
    t1 = conn_table(fab, first, unique_connections(first))
    assert conn_table(fab, list(first), unique_connections(first)) is t1   # same lists
    second = plan_jobs([JobSpec("r", Collective.ALLREDUCE, [hosts[::-1]], 8000)])
    t2 = conn_table(fab, second, unique_connections(second))
    assert t2 is not t1 and t2.src.tolist() == t1.src.tolist()[::-1]     # h8, h7, ...
    assert conn_table(fab, first, unique_connections(first)) is not t2

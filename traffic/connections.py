"""The connections of a prediction as columns: each connection's id and its hosts as indices
into the fabric's hosts (`ConnTable`), and conn_id -> row without a dict when the ids run
consecutively (`RowIndex`), as the planners number them.

Pure code (numpy). The predictor's rows (traffic/predictor_rows.py) and its jobs' DAGs
(traffic/predictor_dag.py) read these instead of the Connection records: on 8-GPU servers
seven of every eight of a ring's connections cross only NVLink, and each pass over the
records (a host lookup per connection) costs about what the whole simulation of them does.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from itertools import repeat
from operator import attrgetter

import numpy as np

from traffic.plans import Connection, JobPlan


class RowIndex(Mapping):
    """conn_id -> row of the connections whose ids are `ids` (row order): an offset when
    they are consecutive and ascending, else a dict. `rows` maps an array of ids at once."""

    def __init__(self, ids: np.ndarray):
        self.ids = ids
        n = int(ids.size)
        self.lo = int(ids[0]) if n else 0
        self.dense = n == 0 or bool(ids[-1] - ids[0] == n - 1 and
                                    (n == 1 or (np.diff(ids) == 1).all()))
        self._dict = None if self.dense else dict(zip(ids.tolist(), range(n)))

    def __getitem__(self, conn_id: int) -> int:
        if self._dict is not None:
            return self._dict[conn_id]
        r = conn_id - self.lo
        if not 0 <= r < self.ids.size:
            raise KeyError(conn_id)
        return int(r)

    def __iter__(self) -> Iterator[int]:
        return iter(self.ids.tolist())

    def __len__(self) -> int:
        return int(self.ids.size)

    def __contains__(self, conn_id: object) -> bool:
        if self._dict is not None:
            return conn_id in self._dict
        return isinstance(conn_id, (int, np.integer)) and 0 <= conn_id - self.lo < self.ids.size

    def rows(self, conn: np.ndarray) -> np.ndarray:
        """The row of every id in `conn`; KeyError naming the first unknown one."""
        if self._dict is not None:
            return np.array([self._dict[c] for c in conn.tolist()], dtype=np.int64)
        r = conn.astype(np.int64) - self.lo
        bad = (r < 0) | (r >= self.ids.size)
        if bad.any():
            raise KeyError(int(conn[np.argmax(bad)]))
        return r


class ConnTable:
    """Connections (in the given order) as columns: `ids` their conn_ids, `src`, `dst` and
    `via` (PXN's nvlink_from) their hosts' indices in `hosts` (-1: not a host of it, or no
    relay)."""

    def __init__(self, conns: list[Connection], hosts: list[str]):
        index = {h: i for i, h in enumerate(hosts)}
        n, no = len(conns), repeat(-1)

        def column(field: str) -> np.ndarray:    # one C-level pass: map, not a generator
            return np.fromiter(map(index.get, map(attrgetter(field), conns), no), np.int64, n)

        self.ids = np.fromiter(map(attrgetter("conn_id"), conns), np.int64, n)
        self.src, self.dst, self.via = column("src"), column("dst"), column("nvlink_from")

    def __len__(self) -> int:
        return int(self.ids.size)


def conn_table(fabric, plans: list[JobPlan], conns: list[Connection]) -> ConnTable:
    """`ConnTable` of `conns` (unique_connections(plans)) on the fabric's hosts: the one made
    last on this fabric when `plans` hold the same connection lists (a prediction's ideal,
    its run and its reroutes), else a new one, kept in its place (the fabric's cache holds
    one, with the lists it was made of, so a sweep on one fabric keeps no more)."""
    cache, key = fabric._path_cache, ("conn-table",)
    hit = cache.get(key)
    if hit is None or len(hit[0]) != len(plans) or len(hit[1]) != len(conns) or any(
            a is not p.connections for a, p in zip(hit[0], plans)):
        hit = ([p.connections for p in plans], ConnTable(conns, fabric.hosts))
        cache[key] = hit
    return hit[1]

"""`spray`: the host-side form of packet spraying. Each connection's subflows are dealt
round-robin over every live shortest path of its leaf pair (Fabric.switch_paths order), the
count running on over the pair's connections in conn_id order, blind to any other traffic;
each pair's deal starts at a path drawn from the seed (a CRC-32 of seed and pair), as each
sender's spraying starts wherever it is::

    subflows: 4, 4 spines, start s1   conn 1: s1 s2 s3 s4     conn 2: s1 s2 s3 s4
    subflows: 2, 4 spines, start s3   conn 1: s3 s4           conn 2: s1 s2

With `subflows` a multiple of the pair's path count every path carries the same share of every
transfer: the even split that per-packet spraying fabrics aim at, without reordering. The
subflows are not coupled: where the paths are loaded unequally, the part on the busiest path
ends last, as a TCP subflow would (fluid spraying would slow all parts to its rate instead).
Re-run at every epoch, it follows failures (only live paths are dealt).
"""
from __future__ import annotations

import time
import zlib

from testbed.fabric import Fabric
from traffic.collectives import Connection

from .base import RoutingPlan, SolveStats
from .paths import Path, path_lower_bound, path_table


def route_spray(fabric: Fabric, conns: list[Connection], seed: int = 0,
                previous: dict[int, Path | None] | None = None, **_) -> RoutingPlan:
    """Deal every leaf pair's connections round-robin over its live paths, from a start the
    seed draws (previous is not used: spraying is oblivious)."""
    start = time.perf_counter()
    table = path_table(fabric, conns)       # raises RoutingError naming a flow with no path
    dealt: dict[tuple[str, str], int] = {}
    out: dict[int, Path | None] = {}
    for c in sorted(conns, key=lambda c: c.conn_id):
        a, b = fabric.leaf_of(c.src), fabric.leaf_of(c.dst)
        if a == b:
            out[c.conn_id] = None
            continue
        paths = fabric.switch_paths(a, b)
        j = dealt.get((a, b))
        if j is None:
            j = zlib.crc32(f"{seed}:{a}:{b}".encode())
        out[c.conn_id] = paths[j % len(paths)]
        dealt[a, b] = j + 1
    lb = path_lower_bound(table, fabric)
    return RoutingPlan("spray", out, SolveStats(time.perf_counter() - start, "oblivious",
                                                None, lb))

"""ECMP as a model: a seeded hash of each connection's 5-tuple at every hop that has a choice.

In the emulator the switches hash for real (OVS select groups at every switch with several
next hops); this model is what the predictor and the optimizers use when they need ECMP's paths
without running the fabric. As a routed fabric does, each switch on the way up picks among the
next hops that still have a live path to the destination leaf (Fabric.switch_paths); the hash
includes the switch for every hop after the first, so that hops do not repeat one another's
choice (hash polarization). In a leaf-spine fabric the only choice is the leaf's: the spine.
"""
from __future__ import annotations

import hashlib
import time

from testbed.fabric import Fabric
from traffic.collectives import Connection

from .base import RoutingError, RoutingPlan, SolveStats
from .paths import Path, path_lower_bound, path_table


def five_tuple_hash(conn: Connection, fabric: Fabric, seed: int, switch: str = "") -> int:
    key = (f"{seed}|{fabric.ip_of(conn.src)}|{fabric.ip_of(conn.dst)}|6|"
           f"{conn.src_port}|{conn.dst_port}" + (f"|{switch}" if switch else "")).encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")


def hashed_path(fabric: Fabric, conn: Connection, seed: int) -> Path | None:
    """The path per-hop hashing gives `conn` (None within one leaf); RoutingError when no
    live path is left."""
    a, b = fabric.leaf_of(conn.src), fabric.leaf_of(conn.dst)
    if a == b:
        return None
    firsts = fabric.first_hops(a, b)          # the leaf's choice, without listing every path
    if not firsts:
        raise RoutingError(f"flow {conn.job}:{conn.src}->{conn.dst} (conn {conn.conn_id}) has "
                           f"no live path between {a} and {b}")
    pick = firsts[five_tuple_hash(conn, fabric, seed) % len(firsts)] if len(firsts) > 1 \
        else firsts[0]
    paths = fabric.paths_via(a, b, pick)
    depth = 2
    while len(paths) > 1:
        nxt = list(dict.fromkeys(p[depth] for p in paths))   # in path order
        if len(nxt) > 1:
            h = five_tuple_hash(conn, fabric, seed, paths[0][depth - 1])
            pick = nxt[h % len(nxt)]
            paths = [p for p in paths if p[depth] == pick]
        depth += 1
    return paths[0]


def route_ecmp(fabric: Fabric, conns: list[Connection], seed: int = 0,
               previous: dict[int, Path | None] | None = None) -> RoutingPlan:
    t0 = time.perf_counter()
    path_of = {c.conn_id: hashed_path(fabric, c, seed) for c in conns}
    bound = (path_lower_bound(path_table(fabric, conns), fabric)
             if len(fabric.choice_points) > 1 else None)
    if bound is None:   # one choice per path: the bound the spine kernels report
        from .base import lower_bound_link_flows
        bound = lower_bound_link_flows(fabric, conns)
    stats = SolveStats(time.perf_counter() - t0, "hash", None, bound)
    return RoutingPlan("ecmp", path_of, stats)

"""ECMP as a model: a seeded hash of each connection's 5-tuple picks one of the live spines.

In the emulator the switches hash for real (OVS select groups); this model is what the
predictor and the optimizers use when they need ECMP's paths without running the fabric.
"""
from __future__ import annotations

import hashlib
import time

from testbed.fabric import Fabric
from traffic.collectives import Connection

from .base import RoutingPlan, SolveStats, candidate_spines, lower_bound_link_flows


def five_tuple_hash(conn: Connection, fabric: Fabric, seed: int) -> int:
    key = (f"{seed}|{fabric.ip_of(conn.src)}|{fabric.ip_of(conn.dst)}|6|"
           f"{conn.src_port}|{conn.dst_port}").encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")


def route_ecmp(fabric: Fabric, conns: list[Connection], seed: int = 0,
               previous: dict[int, str | None] | None = None) -> RoutingPlan:
    t0 = time.perf_counter()
    spine_of: dict[int, str | None] = {}
    for c in conns:
        if fabric.leaf_of(c.src) == fabric.leaf_of(c.dst):
            spine_of[c.conn_id] = None
            continue
        spines = candidate_spines(fabric, c)
        spine_of[c.conn_id] = spines[five_tuple_hash(c, fabric, seed) % len(spines)]
    stats = SolveStats(time.perf_counter() - t0, "hash", None, lower_bound_link_flows(fabric, conns))
    return RoutingPlan("ecmp", spine_of, stats)

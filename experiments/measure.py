"""Step 6 of a run, on the live fabric: which path each flow really took, and what it moved.

Every connection has a counting rule on every spine, agg and core it may cross (routing/rules.py,
cookie per connection). Reading those counters after the run (or between two events) tells, per
flow, the bytes each switch saw: the switches it crossed, and from them its path. Also here:
each connection's measured rate and the per-transfer CSV.
"""
from __future__ import annotations

import csv
from pathlib import Path

from routing.rules import ACK_COOKIE_BASE, COOKIE_BASE
from testbed.fabric import Fabric
from testbed.installer import flow_bytes_by_cookie
from traffic.collectives import Connection, JobPlan
from traffic.driver import JobRecord

Counts = dict[str, dict[int, int]]   # switch -> cookie -> bytes

#: A flow "crossed" a switch when at least this share of its bytes, and at least
#: CROSSED_MIN_BYTES, did. Every connection is opened before any job starts, so its handshake
#: and the pure ACKs and window updates until its job's first epoch pins it (66-byte frames,
#: 132-272 bytes seen for a 4 kB flow) take the ECMP path; a misrouted data segment is larger.
CROSSED_MIN_FRACTION = 0.01
CROSSED_MIN_BYTES = 1000


def counted_switches(fabric: Fabric) -> list[str]:
    """The switches that hold counting rules: every switch above the leaves (every
    plane's)."""
    return fabric.upper_switches + [s for s in fabric.plane_switches
                                    if fabric.role(s) != "leaf"]


def switch_counts(fabric: Fabric) -> Counts:
    """Bytes per counting-rule cookie on every counted switch, now."""
    return {s: flow_bytes_by_cookie(s) for s in counted_switches(fabric)}


def observed_paths(fabric: Fabric, conns: list[Connection], counts: Counts,
                   before: Counts | None = None, planes: dict[int, int] | None = None
                   ) -> dict[int, dict]:
    """Per inter-leaf connection, from the counters (`counts`, minus `before` when given: the
    bytes between two readings): "bytes" per counted switch, "switches_with_bytes" (those with
    at least CROSSED_MIN_FRACTION of the flow's bytes, the flow's bytes being what the first
    tier above its source leaf saw, and at least CROSSED_MIN_BYTES), and "path", the candidate
    path of `fabric` (give the fabric without failures) whose least-counted switch saw most
    (None: no bytes). On several planes, `planes` (conn_id -> plane) says which port each
    connection's host sent it by (the hosts' rules), and a path within one leaf is that
    plane's leaf alone."""
    out: dict[int, dict] = {}
    before = before or {}
    switches = counted_switches(fabric)
    for c in conns:
        plane = (planes or {}).get(c.conn_id, 1)
        a, b = fabric.leaf_at(c.src, plane), fabric.leaf_at(c.dst, plane)
        if a == b:
            if fabric.planes > 1:
                out[c.conn_id] = {"path": (a,), "switches_with_bytes": [], "bytes": {}}
            continue
        k = COOKIE_BASE + c.conn_id
        per = {s: counts[s].get(k, 0) - before.get(s, {}).get(k, 0) for s in switches}
        total = sum(per[u] for u in fabric.uplinks(a))
        floor = max(CROSSED_MIN_FRACTION * total, CROSSED_MIN_BYTES)
        crossed = [s for s, n in per.items() if n > 0 and n >= floor]
        path = None
        if crossed:
            best = -1
            for p in fabric.switch_paths(a, b):
                n = min(per[s] for s in p[1:-1])
                if n > best:
                    best, path = n, p
        out[c.conn_id] = {"path": path, "switches_with_bytes": crossed, "bytes": per}
    return out


def ack_plane_bytes(fabric: Fabric, conns: list[Connection]) -> dict[int, dict[int, int]]:
    """On several planes, per connection: the bytes of its reverse direction (ACKs) that
    entered each plane, from the counters at its leaves (routing/rules.py
    ack_counting_rules); {} on one plane."""
    if fabric.planes == 1:
        return {}
    leaves = [s for s in fabric.leaves + fabric.plane_switches if fabric.role(s) == "leaf"]
    counts = {s: flow_bytes_by_cookie(s) for s in leaves}
    out: dict[int, dict[int, int]] = {}
    for c in conns:
        k = ACK_COOKIE_BASE + c.conn_id
        per: dict[int, int] = {}
        for s in leaves:
            if counts[s].get(k):
                per[fabric.plane_of(s)] = per.get(fabric.plane_of(s), 0) + counts[s][k]
        if per:
            out[c.conn_id] = per
    return out


def phase_paths(fabric: Fabric, conns: list[Connection], readings: list[Counts],
                planes: dict[int, int] | None = None
                ) -> list[dict[int, tuple[str, ...] | None]]:
    """Per phase between two consecutive counter readings, the path each connection's bytes
    took in it (None: no bytes then; `planes` as observed_paths')."""
    return [{cid: o["path"] for cid, o in observed_paths(fabric, conns, b, a, planes).items()}
            for a, b in zip(readings, readings[1:])]


def measured_conn_rates(plan: JobPlan, record: JobRecord) -> dict[int, float]:
    """Per connection: bytes received / time a transfer was in flight (Mbit/s), all iterations."""
    conn_of = {t.tid: t.conn_id for t in plan.transfers}
    bits: dict[int, float] = {}
    busy: dict[int, float] = {}
    for it in record.iterations:
        for tid, first, last, carried in it.transfers:
            c = conn_of[tid]
            bits[c] = bits.get(c, 0.0) + carried * 8
            busy[c] = busy.get(c, 0.0) + (last - first)
    return {c: bits[c] / busy[c] / 1e6 for c in bits if busy[c] > 0}


def write_transfers_csv(path: Path, plans: list[JobPlan], records: dict[str, JobRecord]) -> None:
    """Every transfer's first and last byte, in seconds from its iteration's start."""
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["job", "iteration", "tid", "step", "conn_id", "size_bytes",
                    "first_byte_s", "last_byte_s"])
        for p in plans:
            by_tid = {t.tid: t for t in p.transfers}
            for it in records[p.name].iterations:
                for tid, first, last, carried in it.transfers:
                    t = by_tid[tid]
                    w.writerow([p.name, it.iteration, tid, t.step, t.conn_id, carried,
                                f"{first - it.start_s:.6f}", f"{last - it.start_s:.6f}"])

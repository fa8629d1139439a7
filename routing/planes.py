"""Routing over network planes (testbed/planes.py): which plane each flow takes, then each
plane routed on its own.

A flow stays in one plane end to end, so routing is two choices: the plane, then the path in
it. The plane is chosen as each strategy's kind of fabric would:
Only planes with a live path between the two hosts are chosen from.
- `ecmp`: the NIC hashes the 5-tuple onto a port (balls into bins, with the seed);
- `spray`: every host pair deals its connections (subflows) round-robin over the planes from a
  start the seed draws, as a sprayer deals over paths;
- the planners (greedy, ILP, mmf, annealing, edge-coloring, gff): least loaded first, in
  conn_id order, the plane whose busier port of the two (the source's up, the destination's
  down) carries fewest flows, then the fewest flows between the two leaves in that plane.
Then the strategy routes each plane's flows on that plane alone (`Fabric.plane_fabric`), and
the paths are named in the plane. A route within one leaf is the plane's leaf alone, (leafP,),
so that every route says its plane. The planners' optimality (status, bound) is that of each
plane given the plane choice: the status says "per plane", and no lower bound is reported
(each plane's holds only for that choice).
"""
from __future__ import annotations

import zlib
from collections import Counter
from typing import Callable

from testbed.fabric import Fabric
from traffic.collectives import Connection

from .base import RoutingError, RoutingPlan, SolveStats
from .ecmp import five_tuple_hash
from .paths import Path

Router = Callable[..., RoutingPlan]


def choose_planes(name: str, fabric: Fabric, conns: list[Connection], seed: int) -> dict[int, int]:
    """conn_id -> plane (1-based) as strategy `name` picks it (see the module docstring)."""
    live = _live_planes(fabric, conns)
    if name == "ecmp":
        return {c.conn_id: _pick(live[c.conn_id], five_tuple_hash(c, fabric, seed, "plane"))
                for c in conns}
    ordered = sorted(conns, key=lambda c: c.conn_id)
    if name == "spray":
        dealt: dict[tuple[str, str], int] = {}
        out = {}
        for c in ordered:
            j = dealt.get((c.src, c.dst))
            if j is None:
                j = zlib.crc32(f"{seed}:{c.src}:{c.dst}:plane".encode())
            out[c.conn_id], dealt[c.src, c.dst] = _pick(live[c.conn_id], j), j + 1
        return out
    return _least_loaded(fabric, ordered, live)


def _pick(planes: list[int], h: int) -> int:
    return planes[h % len(planes)]


def _live_planes(fabric: Fabric, conns: list[Connection]) -> dict[int, list[int]]:
    """conn_id -> the planes with a live path between its hosts (as a routed fabric, no
    choice falls on a plane that failures cut); RoutingError when there is none."""
    out = {}
    for c in conns:
        ok = fabric.live_planes(c.src, c.dst)
        if not ok:
            raise RoutingError(f"flow {c.job}:{c.src}->{c.dst} (conn {c.conn_id}) has no live "
                               f"path in any plane")
        out[c.conn_id] = ok
    return out


def _least_loaded(fabric: Fabric, conns: list[Connection], live: dict[int, list[int]]
                  ) -> dict[int, int]:
    up: Counter = Counter()
    down: Counter = Counter()
    pair: Counter = Counter()
    out = {}
    for c in conns:
        a, b = fabric.leaf_of(c.src), fabric.leaf_of(c.dst)
        p = min(live[c.conn_id],
                key=lambda p: (max(up[c.src, p], down[c.dst, p]), up[c.src, p] + down[c.dst, p],
                               pair[a, b, p], p))
        up[c.src, p] += 1
        down[c.dst, p] += 1
        pair[a, b, p] += 1
        out[c.conn_id] = p
    return out


def route_planes(name: str, route: Router, fabric: Fabric, conns: list[Connection],
                 seed: int = 0, previous: dict[int, Path | None] | None = None,
                 **options) -> RoutingPlan:
    """Strategy `name` on a fabric of several planes: the plane per flow, then `route` (the
    one-plane entry point) on each plane's fabric; paths named in their plane."""
    plane_of = choose_planes(name, fabric, conns, seed)
    path_of: dict[int, Path | None] = {}
    stats = []
    for p in range(1, fabric.planes + 1):
        mine = [c for c in conns if plane_of[c.conn_id] == p]
        if not mine and p > 1:          # plane 1 always (its status when nothing is routed)
            continue
        before = None if previous is None else {
            c.conn_id: _back(fabric, previous.get(c.conn_id)) for c in mine}
        plan = route(name, fabric.plane_fabric(p), mine, seed, before, **options)
        stats.append(plan.stats)
        for c in mine:
            r = plan.path_of.get(c.conn_id)
            path_of[c.conn_id] = fabric.in_plane(r if r else (fabric.leaf_of(c.src),), p)
    return RoutingPlan(name, path_of, _merged(stats))


def _back(fabric: Fabric, path: Path | None) -> Path | None:
    """A route named in its plane, named as plane 1 (None for a route within one leaf)."""
    if path is None or len(path) < 2:
        return None
    return fabric.in_plane(tuple(path), 1) if not isinstance(path, str) else path


def _merged(stats: list[SolveStats]) -> SolveStats:
    """One SolveStats for the planes' solves: times and solver calls added, every status,
    the worst gap, no bound (a plane's holds only for the plane choice made)."""
    if not stats:
        return SolveStats(0.0, "per plane")
    statuses = list(dict.fromkeys(s.status for s in stats))
    gaps = [s.gap for s in stats if s.gap is not None]
    calls = [s.solver_calls for s in stats if s.solver_calls is not None]
    ran = [s.solver_ran for s in stats if s.solver_ran is not None]
    solvers = [s.solver for s in stats if s.solver]
    return SolveStats(sum(s.time_s for s in stats), ", ".join(statuses) + " per plane",
                      max(gaps) if gaps else None, None,
                      any(ran) if ran else None, sum(calls) if calls else None,
                      ", ".join(dict.fromkeys(solvers)) or None)

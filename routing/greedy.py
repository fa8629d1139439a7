"""The paper's greedy routing (Cohen et al. 2025), on flat integer arrays.

Flows are grouped twice: by source leaf (the flows sharing that leaf's uplinks) and by
destination leaf (the flows sharing its downlinks). Groups are visited largest first; each
still-unassigned flow of the visited group gets the usable spine s minimizing
max(load(src_leaf -> s), load(s -> dst_leaf)); ties go to the smaller load sum, then to a
seeded spine order. Within a group the flows of one leaf pair are placed together: since
placing a flow on s raises both of its links by one, sequential placement of a pair's flows is
exactly water-filling on the per-spine cost, done with a small heap (O(log S) per flow).

Bound: with only whole spines failed (every pair sees the same k spines) the greedy is a
2-approximation of the min-max link load: when flow a->b is placed, min_s max(up, down) <=
floor((out(a) - 1 + in(b) - 1) / k), and out(a), in(b) <= k * OPT, so every link ends <= 2 * OPT.

Low-churn mode (`previous` given): flows keep their previous spine when it is still usable,
new flows are placed greedily, then flows on the busiest links are moved while that helps; if
the result is still worse than a fresh greedy solve, the fresh solve is returned instead.
"""
from __future__ import annotations

import heapq
import random
import time
from collections import defaultdict

from testbed.fabric import Fabric
from traffic.collectives import Connection

from .base import (FlowTable, RoutingPlan, SolveStats, assignment_from_spine_of,
                   assignment_loads, flow_table, spine_of_from_assignment, table_lower_bound)


def spine_rank(n_spines: int, seed: int) -> list[int]:
    """Seeded tie-break rank per spine (rank[s] smaller = preferred on ties)."""
    order = list(range(n_spines))
    if seed:
        random.Random(seed).shuffle(order)
    rank = [0] * n_spines
    for r, s in enumerate(order):
        rank[s] = r
    return rank


def place_batch(flow_ids: list[int], a: int, b: int, cand: tuple[int, ...], assign: list[int],
                up: list[int], down: list[int], S: int, rank: list[int]) -> None:
    """Greedily place flows a->b (all unassigned) one by one on the cheapest usable spine."""
    ao, bo = a * S, b * S
    if len(flow_ids) == 1:
        best = None
        bs = -1
        for s in cand:
            u, d = up[ao + s], down[bo + s]
            key = (u if u > d else d, u + d, rank[s])
            if best is None or key < best:
                best, bs = key, s
        assign[flow_ids[0]] = bs
        up[ao + bs] += 1
        down[bo + bs] += 1
        return
    heap = []
    for s in cand:
        u, d = up[ao + s], down[bo + s]
        heap.append((u if u > d else d, u + d, rank[s], s))
    heapq.heapify(heap)
    for f in flow_ids:
        c, sm, r, s = heap[0]
        assign[f] = s
        up[ao + s] += 1
        down[bo + s] += 1
        heapq.heapreplace(heap, (c + 1, sm + 2, r, s))


def greedy_fill(t: FlowTable, assign: list[int], up: list[int], down: list[int],
                seed: int = 0) -> list[int]:
    """Assign every flow with assign[i] == -1 by the paper's greedy; updates the arrays in place."""
    S = t.n_spines
    rank = spine_rank(S, seed)
    src, dst = t.src, t.dst
    # group sizes count every flow (the link side's whole demand); visit largest first
    by_src: dict[int, list[int]] = defaultdict(list)
    by_dst: dict[int, list[int]] = defaultdict(list)
    for i, (a, b) in enumerate(zip(src, dst)):
        by_src[a].append(i)
        by_dst[b].append(i)
    groups = [(len(v), 0, a, v) for a, v in by_src.items()]
    groups += [(len(v), 1, b, v) for b, v in by_dst.items()]
    groups.sort(key=lambda g: (-g[0], g[1], g[2]))
    pair_cand = t.pair_cand
    for _, _, _, members in groups:
        batches: dict[tuple[int, int], list[int]] = {}
        for i in members:
            if assign[i] < 0:
                key = (src[i], dst[i])
                lst = batches.get(key)
                if lst is None:
                    batches[key] = [i]
                else:
                    lst.append(i)
        # larger leaf-pair batches first inside a group (deterministic order)
        for (a, b), ids in sorted(batches.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            place_batch(ids, a, b, pair_cand[a, b], assign, up, down, S, rank)
    return assign


def improve_max(t: FlowTable, assign: list[int], up: list[int], down: list[int],
                max_moves: int = 10_000) -> int:
    """Move flows off the busiest links while a move lowers that flow's worse link; returns moves."""
    S = t.n_spines
    moves = 0
    n = len(assign)
    while moves < max_moves:
        m = max(max(up, default=0), max(down, default=0))
        if m <= 1:
            return moves
        moved = False
        for i in range(n):
            a, b, s = t.src[i], t.dst[i], assign[i]
            ao, bo = a * S, b * S
            if up[ao + s] != m and down[bo + s] != m:
                continue
            for s2 in t.cand[i]:
                if s2 != s and up[ao + s2] + 1 < m and down[bo + s2] + 1 < m:
                    up[ao + s] -= 1
                    down[bo + s] -= 1
                    up[ao + s2] += 1
                    down[bo + s2] += 1
                    assign[i] = s2
                    moves += 1
                    moved = True
                    break
            if moves >= max_moves:
                return moves
        if not moved:
            return moves
    return moves


def greedy_assignment(t: FlowTable, seed: int = 0) -> list[int]:
    """A fresh greedy assignment (spine index per flow of `t`)."""
    assign = [-1] * len(t.flows)
    up, down = assignment_loads(t, assign)
    return greedy_fill(t, assign, up, down, seed)


def route_greedy(fabric: Fabric, conns: list[Connection], seed: int = 0,
                 previous: dict[int, str | None] | None = None) -> RoutingPlan:
    """The paper's greedy; `previous` (conn_id -> spine) turns on the low-churn mode."""
    t0 = time.perf_counter()
    t = flow_table(fabric, conns)
    assign = greedy_assignment(t, seed)
    status = "heuristic"
    if previous:
        fresh_up, fresh_down = assignment_loads(t, assign)
        fresh_max = max(max(fresh_up, default=0), max(fresh_down, default=0))
        sticky = assignment_from_spine_of(t, previous)
        up, down = assignment_loads(t, sticky)
        greedy_fill(t, sticky, up, down, seed)
        improve_max(t, sticky, up, down)
        if max(max(up, default=0), max(down, default=0)) <= fresh_max:
            assign, status = sticky, "heuristic-sticky"
    lb = table_lower_bound(t)
    stats = SolveStats(time.perf_counter() - t0, status, None, lb)
    return RoutingPlan("greedy", spine_of_from_assignment(t, assign), stats)

"""The paper's greedy routing (Cohen et al. 2025), on flat integer arrays.

Flows are grouped twice: by source leaf (the flows sharing that leaf's uplinks) and by
destination leaf (the flows sharing its downlinks). Groups are visited largest first; each
still-unassigned flow of the visited group gets the usable spine s minimizing
max(load(src_leaf -> s), load(s -> dst_leaf)). The paper leaves the visiting order among equal
groups and the tie-breaks open; ours are:

* Visiting order: group size (the side's whole demand) first, as in the paper; among equal
  sizes, the group with the most flows already placed goes next (a priority queue, re-keyed as
  flows are placed), then source groups before destination groups, then leaf index. So after a
  source group the destination groups of its flows follow (and vice versa): the assignment grows
  along the demand graph, every new pair meets links that already carry load and its choice is
  forced, instead of far-apart pairs fixing spines independently that later clash where their
  flows meet (the old fixed order, all source groups first, landed at 2 on the paper's
  ring-of-leaves workloads whose optimum is 1). Inside a group, pairs whose other leaf's group
  has the most flows placed go first (the most constrained), then larger pairs.
* Ties on max(up, down) go to (1) the smaller load sum up + down; (2) the larger *far load*:
  for the still-unassigned flows that share a link with this pair (same source leaf, other
  destination; or same destination leaf, other source), the summed load of their other link
  through s. Such a spine is already busy where those flows end, so they could not use it
  cheaply anyway, and taking it keeps the spines they can use free (least harm / best fit; the
  opposite preference, lowest far load, does worse than no lookahead); (3) a seeded spine order.
  The far loads are kept incrementally per leaf, so the lookahead costs O(S) per leaf pair plus
  O(pairs sharing a leaf) per placed flow.

Within a group the flows of one leaf pair are placed together: since placing a flow on s raises
both of its links by one (and no far load of this pair), sequential placement of a pair's flows
is exactly water-filling on the per-spine key, done with a small heap (O(log S) per flow).

Bound: with only whole spines failed (every pair sees the same k spines) the greedy is a
2-approximation of the min-max link load, whatever the visiting order and tie-breaks, since
each flow takes a spine minimizing max(up, down): when flow a->b is placed,
min_s max(up, down) <= min_s (up + down) <= floor((out(a) - 1 + in(b) - 1) / k), and
out(a), in(b) <= k * OPT, so every link ends <= floor((2k * OPT - 2) / k) + 1 <= 2 * OPT.

The visiting order depends on flow counts only, never on the spines or paths chosen, so
visit_order computes it first; it and the placement on paths (place_flows) are loops that numba
compiles on first use (warm_kernels), with the same integer keys and tie-breaks as the Python
they replaced (tests/unit/routing/test_greedy_paths_equivalence.py, test_greedy_kernel.py).

Low-churn mode (`previous` given): flows keep their previous spine when it is still usable,
new flows are placed greedily (groups touching kept flows first), then flows on the busiest
links are moved while that helps; if the result is still worse than a fresh greedy solve, the
fresh solve is returned instead.
"""
from __future__ import annotations

import heapq
import random
import time
from typing import Callable

import numpy as np

from testbed.fabric import Fabric
from traffic.jit import Loops
from traffic.collectives import Connection

from .base import (FlowTable, RoutingPlan, SolveStats, assignment_from_spine_of,
                   assignment_loads, flow_table, spine_of_from_assignment, table_lower_bound)
from .path_blocks import LinkBlocks, padded_link_array, pair_blocks
from .paths import (PairLinks, Path, PathTable, assignment_of_paths, leaf_pairs, loads_of,
                    max_load, no_path, pairs_lower_bound, path_link_arrays, path_lower_bound,
                    path_of_assignment, path_table)


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
                up: list[int], down: list[int], S: int, rank: list[int],
                far: list[int] | None = None) -> None:
    """Greedily place flows a->b (all unassigned) one by one on the cheapest usable spine.

    Key per spine: (max(up, down), up + down, -far[s], rank[s]); `far` (per spine, may be None)
    is the far load of the flows sharing a link with this pair (module docstring)."""
    ao, bo = a * S, b * S
    if len(flow_ids) == 1:
        best = None
        bs = -1
        for s in cand:
            u, d = up[ao + s], down[bo + s]
            key = (u if u > d else d, u + d, -far[s] if far else 0, rank[s])
            if best is None or key < best:
                best, bs = key, s
        assign[flow_ids[0]] = bs
        up[ao + bs] += 1
        down[bo + bs] += 1
        return
    heap = []
    for s in cand:
        u, d = up[ao + s], down[bo + s]
        heap.append((u if u > d else d, u + d, -far[s] if far else 0, rank[s], s))
    heapq.heapify(heap)
    for f in flow_ids:
        c, sm, o, r, s = heap[0]
        assign[f] = s
        up[ao + s] += 1
        down[bo + s] += 1
        heapq.heapreplace(heap, (c + 1, sm + 2, o, r, s))


def visit_pairs(src: list[int], dst: list[int], n_leaves: int, assign: list[int],
                place) -> None:
    """The paper's visiting order (module docstring) over the unassigned flows' leaf pairs:
    calls `place(a, b, ids, outs, ins)` for each pair, where `ids` are the pair's unassigned
    flows and `outs` / `ins` the leaves still waiting for flows from a / towards b (dicts,
    read-only). `place` must assign every flow of `ids`. The order depends on flow counts
    only, never on where `place` puts a flow: visit_order computes it first."""
    L = n_leaves
    pairs, start, flows = visit_order(src, dst, L, assign)
    # unassigned leaf pairs per group: rem[0][a] = {b: None}, rem[1][b] = {a: None}
    rem: tuple[list[dict[int, None]], list[dict[int, None]]] = (
        [{} for _ in range(L)], [{} for _ in range(L)])
    for q in sorted(pairs.tolist()):
        a, b = divmod(q, L)
        rem[0][a][b] = None
        rem[1][b][a] = None
    start, flows = start.tolist(), flows.tolist()
    for k, q in enumerate(pairs.tolist()):
        a, b = divmod(q, L)
        del rem[0][a][b]
        del rem[1][b][a]
        place(a, b, flows[start[k]:start[k + 1]], rem[0][a], rem[1][b])


def visit_order(src: list[int], dst: list[int], n_leaves: int, assign: list[int]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The visiting order of the unassigned flows (assign[i] < 0) as int64 arrays: `pairs`,
    the leaf pairs a * n_leaves + b in the order visited; `flows`, their flows (ascending
    within a pair), pair k's at flows[start[k]:start[k + 1]]."""
    n = len(src)
    if (n + 1) * (n + 1) * 2 * max(1, n_leaves) >= 1 << 62:
        raise ValueError(f"visit_order: {n} flows over {n_leaves} leaves overflow its keys")
    i64 = np.int64
    return compiled(order_kernel)(
        np.array(src, dtype=i64), np.array(dst, dtype=i64),
        np.array([x < 0 for x in assign], dtype=np.bool_), n_leaves)


def order_kernel(src: np.ndarray, dst: np.ndarray, free: np.ndarray, L: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """visit_order's loop, plain Python that numba compiles. Per side k (0: source-leaf
    groups / uplinks, 1: destination-leaf groups / downlinks) and leaf g: size[k, g], the
    side's whole demand; placed[k, g], its flows already assigned; nrem[k, g], its leaf pairs
    still waiting. The heap's keys pack (-size, -placed, k, g) and a group's pairs are sorted
    on (-placed of the other leaf, -flows of the pair, other leaf), both into one int64 each
    (visit_order checks that they fit), so that an int's order is the tuple's."""
    n = src.shape[0]                               # >= any size, placed or pair count
    B = n + 1                                      # the packing's base
    size = np.zeros((2, L), dtype=np.int64)
    placed = np.zeros((2, L), dtype=np.int64)
    cnt = np.zeros(L * L, dtype=np.int64)         # unassigned flows per pair a * L + b
    for i in range(n):
        a, b = src[i], dst[i]
        size[0, a] += 1
        size[1, b] += 1
        if free[i]:
            cnt[a * L + b] += 1
        else:
            placed[0, a] += 1
            placed[1, b] += 1
    first = np.zeros(L * L + 1, dtype=np.int64)    # pair q's flows: ids[first[q]:first[q + 1]]
    nrem = np.zeros((2, L), dtype=np.int64)
    for q in range(L * L):
        first[q + 1] = first[q] + cnt[q]
        if cnt[q]:
            nrem[0, q // L] += 1
            nrem[1, q % L] += 1
    ids = np.empty(first[L * L], dtype=np.int64)
    fill = first[:L * L].copy()
    for i in range(n):
        if free[i]:
            q = src[i] * L + dst[i]
            ids[fill[q]] = i
            fill[q] += 1
    n_pairs = np.count_nonzero(cnt)
    pairs = np.empty(n_pairs, dtype=np.int64)
    start = np.zeros(n_pairs + 1, dtype=np.int64)
    flows = np.empty(first[L * L], dtype=np.int64)
    heap = [((n - size[k, g]) * B + n - placed[k, g]) * 2 * L + k * L + g
            for k in range(2) for g in range(L) if nrem[k, g]]
    heapq.heapify(heap)
    todo = np.empty(L, dtype=np.int64)
    done = 0
    while heap:
        key = heapq.heappop(heap)
        kg = key % (2 * L)
        k, g = kg // L, kg % L
        if not nrem[k, g] or n - (key // (2 * L)) % B != placed[k, g]:
            continue                    # done, or a stale entry (a newer one is queued)
        ok = 1 - k
        m = 0
        for h in range(L):
            q = g * L + h if k == 0 else h * L + g
            if cnt[q] > 0:
                todo[m] = ((n - placed[ok, h]) * B + n - cnt[q]) * L + h
                m += 1
        mine = np.sort(todo[:m])
        for j in range(m):
            h = mine[j] % L
            a, b = (g, h) if k == 0 else (h, g)
            q = a * L + b
            c = cnt[q]
            cnt[q] = 0                  # visited
            pairs[done] = q
            start[done + 1] = start[done] + c
            flows[start[done]:start[done + 1]] = ids[first[q]:first[q + 1]]
            done += 1
            nrem[0, a] -= 1
            nrem[1, b] -= 1
            placed[0, a] += c
            placed[1, b] += c
            if nrem[ok, h]:
                heapq.heappush(heap, ((n - size[ok, h]) * B + n - placed[ok, h]) * 2 * L
                               + ok * L + h)
    return pairs, start, flows


def greedy_fill(t: FlowTable, assign: list[int], up: list[int], down: list[int],
                seed: int = 0) -> list[int]:
    """Assign every flow with assign[i] == -1 by the paper's greedy; updates the arrays in place.
    The leaf-spine kernel: a path is its spine, with the far-load tie-break."""
    S, L = t.n_spines, t.n_leaves
    rank = spine_rank(S, seed)
    # far loads: far_out[a][s] = sum over unassigned pairs a->b' of down(s -> b');
    #            far_in[b][s]  = sum over unassigned pairs a'->b of up(a' -> s)
    far_out = [[0] * S for _ in range(L)]
    far_in = [[0] * S for _ in range(L)]
    for a, b in {(a, b) for i, (a, b) in enumerate(zip(t.src, t.dst)) if assign[i] < 0}:
        fo, fi, ao, bo = far_out[a], far_in[b], a * S, b * S
        for s in range(S):
            fo[s] += down[bo + s]
            fi[s] += up[ao + s]
    pair_cand = t.pair_cand

    def place(a: int, b: int, ids: list[int], outs: dict, ins: dict) -> None:
        ao, bo = a * S, b * S
        fo, fi = far_out[a], far_in[b]
        for s in range(S):              # this pair leaves the far loads of its own leaves
            fo[s] -= down[bo + s]
            fi[s] -= up[ao + s]
        far = [fo[s] + fi[s] for s in range(S)] if outs or ins else None
        place_batch(ids, a, b, pair_cand[a, b], assign, up, down, S, rank, far)
        if outs or ins:
            # up(a -> s) is a far load of the pairs a -> b2 seen from b2, and down(s -> b)
            # one of the pairs a2 -> b seen from a2
            fis = [far_in[b2] for b2 in outs]
            fos = [far_out[a2] for a2 in ins]
            for f in ids:
                s = assign[f]
                for row in fis:
                    row[s] += 1
                for row in fos:
                    row[s] += 1

    visit_pairs(t.src, t.dst, L, assign, place)
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


# -- three tiers: the same rule on paths ---------------------------------------------------------
def path_rank(n: int, seed: int) -> list[int]:
    """Seeded tie-break rank per candidate position (as spine_rank)."""
    return spine_rank(n, seed)


def greedy_fill_paths(t: PathTable, assign: list[int], load: list[int],
                      seed: int = 0) -> list[int]:
    """The paper's rule on paths: every unassigned flow takes the candidate path minimizing the
    largest load on its links (ties: the smaller load sum over its links, then a seeded order),
    pairs in the paper's visiting order (visit_order). No far-load lookahead here: it is
    defined for two-link paths. Updates `assign` and `load` in place; every flow is placed by
    one compiled loop (place_in_order) over the pairs' (hops, paths) link arrays."""
    width = max((len(c) for c in t.cand), default=0)
    pairs, start, flows = visit_order(t.src, t.dst, len(t.leaf_names), assign)
    L = len(t.leaf_names)
    loads = np.array(load, dtype=np.int64)
    if isinstance(t.pair_links, PairLinks):
        blocks = t.pair_links.of_pairs(pairs.tolist())
    else:
        blocks = LinkBlocks.of([_table_links(t, *divmod(q, L)) for q in pairs.tolist()])
    pos = place_in_order(blocks, start, path_rank(width, seed), loads)
    cand = t.cand
    for f, p in zip(flows.tolist(), pos.tolist()):
        assign[f] = cand[f][p]
    load[:] = loads.tolist()
    return assign


def _table_links(t: PathTable, a: int, b: int) -> np.ndarray:
    """The (hops, paths) link array of pair a->b in `t`."""
    arr = t.pair_links.get((a, b))
    if arr is None:
        return padded_link_array([t.path_links[p] for p in t.pair_paths[a, b]])
    return arr


def place_in_order(blocks: LinkBlocks, start: np.ndarray, rank: list[int], loads: np.ndarray,
                   kernel: Callable[..., None] | None = None) -> np.ndarray:
    """Place flows pair after pair (pair k's start[k + 1] - start[k] flows, as visit_order
    gives them), flow after flow, each on the position (path of its pair's link block k) with
    the smallest (max load, load sum, rank[position]) over its links; updates `loads` (int64
    per link id) and returns the chosen position per flow. `kernel` (tests): the loop to run
    instead of the compiled place_flows."""
    out = np.zeros(int(start[-1]), dtype=np.int64)
    if len(out):
        (kernel or compiled(place_flows))(
            blocks.links, blocks.off, blocks.hops, blocks.width, np.diff(start),
            np.array(rank, dtype=np.int64), loads, out)
    return out


def place_flows(links: np.ndarray, off: np.ndarray, hops: np.ndarray, width: np.ndarray,
                count: np.ndarray, rank: np.ndarray, loads: np.ndarray, out: np.ndarray) -> None:
    """The placement loop of place_in_order, plain Python that numba compiles (ints only).
    Pair k's link array is links[off[k]:off[k] + hops[k] * width[k]] (hop-major: link x of
    path p at x * width[k] + p; -1 pads shorter paths); its count[k] flows come next in
    `out`. The key is compared field by field and the first smallest wins, as in the per-link
    loop this replaces (tests/unit/routing/test_greedy_paths_equivalence.py)."""
    j = 0
    for k in range(off.shape[0]):
        o, h, w = off[k], hops[k], width[k]
        for _ in range(count[k]):
            pos = 0
            if w > 1:
                bm = bs = br = -1
                for p in range(w):
                    m = 0
                    s = 0
                    for x in range(h):
                        e = links[o + x * w + p]
                        if e >= 0:
                            v = loads[e]
                            s += v
                            if v > m:
                                m = v
                    r = rank[p]
                    if bm < 0 or m < bm or (m == bm and (s < bs or (s == bs and r < br))):
                        bm, bs, br, pos = m, s, r, p
            for x in range(h):
                e = links[o + x * w + pos]
                if e >= 0:
                    loads[e] += 1
            out[j] = pos
            j += 1


def warm_kernels() -> tuple[float, str]:
    """Make the compiled loops ready (import numba, then compile or load from its on-disk
    cache) by ordering and placing one flow. Returns (seconds taken, which happened)."""
    t0 = time.perf_counter()
    kernels = (compiled(order_kernel), compiled(place_flows))   # numba's light start-up too
    _, start, _ = visit_order([0], [1], 2, [-1])
    place_in_order(LinkBlocks.of([np.zeros((1, 2), dtype=np.int64)]), start, [0, 1],
                   np.zeros(1, dtype=np.int64))
    took = time.perf_counter() - t0
    if all(getattr(k, "ahead_of_time", False) for k in kernels):
        return took, "built ahead of time (no numba)"
    stats = [getattr(f, "stats", None) for f in compiled.made.values()]
    if None in stats:
        return took, "plain Python (no numba)"
    if any(x.cache_misses for x in stats):
        return took, "numba import + compile (now in numba's cache)"
    return took, "numba import + load from numba's cache"


def improve_max_paths(t: PathTable, assign: list[int], load: list[int],
                      max_moves: int = 10_000, kernel: Callable[..., int] | None = None) -> int:
    """Move flows off the busiest links while a move relieves a link at the max and keeps every
    link it adds below it; updates `assign` and `load` in place and returns the moves made.
    One compiled loop (improve_kernel); `kernel` (tests): the loop to run instead."""
    if not assign:
        return 0
    a = np.array(assign, dtype=np.int64)
    loads = np.array(load, dtype=np.int64)
    lo = np.array([c.start for c in t.cand], dtype=np.int64)
    hi = np.array([c.stop for c in t.cand], dtype=np.int64)
    buf, start, hops, step = path_link_arrays(t)
    moves = (kernel or compiled(improve_kernel))(
        buf, start, hops, step, lo, hi, a, loads, max_moves)
    assign[:] = a.tolist()
    load[:] = loads.tolist()
    return int(moves)


def improve_kernel(buf: np.ndarray, start: np.ndarray, hops: np.ndarray, step: np.ndarray,
                   lo: np.ndarray, hi: np.ndarray, assign: np.ndarray, load: np.ndarray,
                   max_moves: int) -> int:
    """improve_max_paths's loop, plain Python that numba compiles (ints only). Path p's link
    x is buf[start[p] + x * step[p]] for x < hops[p]. Each round takes m, the max load, and
    the flows on a link at m (in flow order); each of them moves to its first candidate path
    q that takes it off a link at m that q does not share and adds no link reaching m. Rounds
    repeat while one moves a flow."""
    n = assign.shape[0]
    moves = 0
    hot = np.empty(n, np.int64)
    while moves < max_moves:
        m = 0
        for e in range(load.shape[0]):
            m = max(m, load[e])
        if m <= 1:
            return moves
        n_hot = 0
        for i in range(n):
            p = assign[i]
            for x in range(hops[p]):
                if load[buf[start[p] + x * step[p]]] == m:
                    hot[n_hot] = i
                    n_hot += 1
                    break
        moved = False
        for k in range(n_hot):
            i = hot[k]
            p = assign[i]
            at_max = False
            for x in range(hops[p]):
                at_max = at_max or load[buf[start[p] + x * step[p]]] == m
            if not at_max:
                continue
            for q in range(lo[i], hi[i]):
                if q == p:
                    continue
                relieves = False
                for x in range(hops[p]):
                    e = buf[start[p] + x * step[p]]
                    if load[e] == m:
                        shared = False
                        for y in range(hops[q]):
                            shared = shared or buf[start[q] + y * step[q]] == e
                        relieves = relieves or not shared
                fits = True
                for x in range(hops[q]):
                    e = buf[start[q] + x * step[q]]
                    if load[e] + 1 >= m:
                        shared = False
                        for y in range(hops[p]):
                            shared = shared or buf[start[p] + y * step[p]] == e
                        fits = fits and shared
                if relieves and fits:
                    for x in range(hops[p]):
                        load[buf[start[p] + x * step[p]]] -= 1
                    for x in range(hops[q]):
                        load[buf[start[q] + x * step[q]]] += 1
                    assign[i] = q
                    moves += 1
                    moved = True
                    break
            if moves >= max_moves:
                return moves
        if not moved:
            return moves
    return moves


def route_greedy_paths(fabric: Fabric, conns: list[Connection], seed: int = 0,
                       previous: dict[int, Path | None] | None = None) -> RoutingPlan:
    """The paper's greedy on paths; `previous` (conn_id -> path) turns on the low-churn mode.
    The solve time covers the routes, not the lower bound computed after them."""
    t0 = time.perf_counter()
    if not previous:
        path_of, src, dst = fresh_greedy_paths(fabric, conns, seed)
        stats = SolveStats(time.perf_counter() - t0, "heuristic", None,
                           pairs_lower_bound(fabric, src, dst))
        return RoutingPlan("greedy", path_of, stats)
    t = path_table(fabric, conns)
    assign = greedy_fill_paths(t, [-1] * len(t.flows), [0] * t.n_links, seed)
    status = "heuristic"
    fresh_max = max_load(loads_of(t, assign))
    sticky = assignment_of_paths(t, previous)
    load = loads_of(t, sticky)
    greedy_fill_paths(t, sticky, load, seed)
    improve_max_paths(t, sticky, load)
    if max_load(load) <= fresh_max:
        assign, status = sticky, "heuristic-sticky"
    stats = SolveStats(time.perf_counter() - t0, status, None, path_lower_bound(t, fabric))
    return RoutingPlan("greedy", path_of_assignment(t, assign), stats)


def fresh_greedy_paths(fabric: Fabric, conns: list[Connection], seed: int = 0
                       ) -> tuple[dict[int, Path | None], list[int], list[int]]:
    """greedy_fill_paths from scratch without building a PathTable (whose per-call lists of
    every candidate path and its links cost more than the greedy itself on 2,048 NICs): the
    pairs' paths and link blocks come from the fabric's cache (pair_blocks). Returns conn_id
    -> path (None for intra-leaf connections) and the inter-leaf flows' source and
    destination leaves (as leaf_pairs, for pairs_lower_bound)."""
    flows, src, dst = leaf_pairs(fabric, conns, check=False)
    pairs, start, order = visit_order(src, dst, len(fabric.leaves), [-1] * len(flows))
    cache = pair_blocks(fabric)
    blocks = cache.select(fabric, pairs)
    if len(pairs) and not blocks.width.min():       # a pair with no live path: its first flow
        L = len(fabric.leaves)
        cut = set(pairs[blocks.width == 0].tolist())
        raise no_path(fabric, next(c for c, a, b in zip(flows, src, dst) if a * L + b in cut))
    width = int(blocks.width.max()) if len(pairs) else 0
    pos = place_in_order(blocks, start, path_rank(width, seed),
                         np.zeros(len(fabric.links), dtype=np.int64)).tolist()
    path_of: dict[int, Path | None] = {c.conn_id: None for c in conns}
    order, start = order.tolist(), start.tolist()
    for k, q in enumerate(pairs.tolist()):
        for j in range(start[k], start[k + 1]):
            path_of[flows[order[j]].conn_id] = cache.path(q, pos[j])
    return path_of, src, dst


#: compiled(fn): order_kernel, place_flows or improve_kernel built ahead of time (traffic/aot.py:
#: no numba), else compiled by numba on first use (numba's light start-up, then compiled or
#: loaded from its on-disk cache; see warm_kernels); plain Python, with a warning, without
#: numba. Integers only: no fastmath; error_model "numpy" drops the division checks.
compiled = Loops("greedy runs its order and placement loops",
                 (order_kernel, place_flows, improve_kernel), ())

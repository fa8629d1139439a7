"""Edge-colouring routing: an exact proper D-edge-colouring of the leaf-to-leaf demand.

The demand is a bipartite multigraph: one side the leaves as senders, the other the leaves as
receivers, one edge per inter-leaf flow; D is its maximum degree. By Konig's theorem it has a
proper colouring with exactly D colours, which we build edge by edge with alternating-path
(Kempe chain) recolouring: for edge a->b, if some colour is free at both ends use it; else take
alpha free at a and beta free at b, swap alpha/beta along the alternating path that starts at b
(it cannot reach a in a bipartite graph), and use alpha. Free colours are bitmasks, so a step
is O(1) plus the path length. Each colour class is a matching: every leaf sends at most one and
receives at most one flow of each colour.

Spine = colour. When D exceeds the k live spines, colours are grouped onto spines, at most
ceil(D / k) colours per spine, so no directed link carries more than ceil(D / k) flows, which
equals the lower bound ceil(max leaf degree / k): the result is optimal when only whole spines
fail. With `previous`, the colour -> spine grouping is chosen to agree with the previous
assignment as much as possible (greedy on overlap counts), which keeps churn low.

Failed links (not whole spines): the colouring ignores them (spines with at least one live
link count as live); every flow whose colour's spine is unusable for its leaf pair is then
re-placed by the paper's greedy rule (min max(up, down) over its usable spines), on top of the
loads left by the colouring. The status is then "coloring+repair" and the ceil(D / k) bound no
longer holds for those leaves.
"""
from __future__ import annotations

import math
import time
from collections import Counter

import numpy as np

from testbed.fabric import Fabric
from traffic.collectives import Connection

from .base import (FlowTable, RoutingError, RoutingPlan, SolveStats, assignment_from_spine_of,
                   assignment_loads, flow_table, spine_of_from_assignment, table_lower_bound)
from .greedy import greedy_fill, greedy_fill_paths
from .paths import Path, loads_of, path_lower_bound, path_of_assignment, path_table


def proper_edge_colouring(src: list[int], dst: list[int], n_nodes: int) -> tuple[list[int], int]:
    """Colour edges src[e] -> dst[e] (bipartite: senders vs receivers) with D colours.

    Returns (colour per edge, D). Raises RoutingError if an internal invariant breaks.
    """
    E = len(src)
    if E == 0:
        return [], 0
    D = max(max(Counter(src).values()), max(Counter(dst).values()))
    full = (1 << D) - 1
    free_s = [full] * n_nodes
    free_r = [full] * n_nodes
    at_s = [[-1] * D for _ in range(n_nodes)]   # at_s[a][c]: edge of colour c leaving a
    at_r = [[-1] * D for _ in range(n_nodes)]   # at_r[b][c]: edge of colour c entering b
    col = [-1] * E
    for e in range(E):
        a, b = src[e], dst[e]
        common = free_s[a] & free_r[b]
        if common:
            c = (common & -common).bit_length() - 1
        else:
            fa, fb = free_s[a], free_r[b]
            alpha = (fa & -fa).bit_length() - 1      # free at a, used at b
            beta = (fb & -fb).bit_length() - 1       # free at b, used at a
            path: list[int] = []
            recv, node, want = True, b, alpha
            while True:
                eid = at_r[node][want] if recv else at_s[node][want]
                if eid < 0:
                    break
                path.append(eid)
                node = src[eid] if recv else dst[eid]
                recv = not recv
                want = beta if want == alpha else alpha
            for eid in path:
                old = col[eid]
                u, v = src[eid], dst[eid]
                at_s[u][old] = -1
                at_r[v][old] = -1
                free_s[u] |= 1 << old
                free_r[v] |= 1 << old
            for eid in path:
                new = beta if col[eid] == alpha else alpha
                u, v = src[eid], dst[eid]
                col[eid] = new
                at_s[u][new] = eid
                at_r[v][new] = eid
                free_s[u] &= ~(1 << new)
                free_r[v] &= ~(1 << new)
            c = alpha
            if not (free_s[a] >> c) & 1 or not (free_r[b] >> c) & 1:
                raise RoutingError("edge-coloring: internal error, Kempe swap left no free colour")
        col[e] = c
        at_s[a][c] = e
        at_r[b][c] = e
        free_s[a] &= ~(1 << c)
        free_r[b] &= ~(1 << c)
    return col, D


def group_colours(col: list[int], D: int, live: list[int],
                  prev: list[int] | None = None) -> list[int]:
    """Map each of D colours to one of the `live` spines, at most ceil(D / k) colours per spine.

    With `prev` (previous spine index per edge, -1 unknown) colours go where most of their
    edges already were (greedy on overlap counts), within the same capacity.
    """
    k = len(live)
    cap = math.ceil(D / k) if D else 0
    spine_of_colour = [-1] * D
    if prev is not None:
        overlap = Counter((c, p) for c, p in zip(col, prev) if p >= 0 and p in live)
        used = Counter()
        for (c, s), _n in sorted(overlap.items(), key=lambda kv: (-kv[1], kv[0])):
            if spine_of_colour[c] < 0 and used[s] < cap:
                spine_of_colour[c] = s
                used[s] += 1
        free = [s for s in live for _ in range(cap - used[s])]
        for c in range(D):
            if spine_of_colour[c] < 0:
                spine_of_colour[c] = free.pop(0)
        return spine_of_colour
    # no history: spread colours round-robin (group sizes differ by at most one)
    for c in range(D):
        spine_of_colour[c] = live[c % k]
    return spine_of_colour


def route_edge_coloring(fabric: Fabric, conns: list[Connection], seed: int = 0,
                        previous: dict[int, str | None] | None = None) -> RoutingPlan:
    """Konig colouring of the leaf demand multigraph, spine = (grouped) colour; see module doc."""
    t0 = time.perf_counter()
    t: FlowTable = flow_table(fabric, conns)
    S = t.n_spines
    n = len(t.flows)
    assign = [-1] * n
    status = "optimal-coloring"
    if n:
        col, D = proper_edge_colouring(t.src, t.dst, t.n_leaves)
        live = [s for s in range(S)
                if any(row[s] for row in t.up_live) or any(row[s] for row in t.down_live)]
        if seed and not previous:
            # a seeded rotation of the spines used, so seeds give different (equally good) plans
            r = seed % len(live)
            live = live[r:] + live[:r]
        prev = assignment_from_spine_of(t, previous) if previous else None
        mapping = group_colours(col, D, live, prev)
        repair = False
        for i in range(n):
            s = mapping[col[i]]
            if s in t.cand[i]:
                assign[i] = s
            else:
                repair = True
        if repair:
            up, down = assignment_loads(t, assign)
            greedy_fill(t, assign, up, down, seed)
            status = "coloring+repair"
    lb = table_lower_bound(t)
    stats = SolveStats(time.perf_counter() - t0, status, None, lb)
    return RoutingPlan("edge-coloring", spine_of_from_assignment(t, assign), stats)


# -- three tiers: a staged colouring -------------------------------------------------------------
def route_edge_coloring_paths(fabric: Fabric, conns: list[Connection], seed: int = 0,
                              previous: dict[int, Path | None] | None = None) -> RoutingPlan:
    """Staged Konig colouring for clos3 and fat-tree fabrics.

    Stage 1 colours the leaf -> leaf demand (bipartite: senders vs receivers) with D colours and
    maps colours to planes (aggregation switch index), at most ceil(D / A) per plane: every
    leaf's up- and downlinks then carry at most ceil(D / A) flows, the leaf cut's bound, so the
    leaf tier is optimal (exact for traffic within a pod). Stage 2, per plane, colours the
    pod -> pod demand of that plane's inter-pod flows with D_i colours and maps them to the
    plane's C cores, at most ceil(D_i / C) per core: each agg->core and core->agg link carries
    at most ceil(D_i / C) flows, optimal for that plane assignment (stage 1 does not look at
    the pods, so the core tier is optimal given the planes, not overall). Flows whose coloured
    path is failed are re-placed by the greedy rule ("coloring+repair")."""
    t0 = time.perf_counter()
    t = path_table(fabric, conns)
    n = len(t.flows)
    assign = [-1] * n
    status = "staged-coloring"
    if n:
        A = fabric.spec.aggs_per_pod
        col, D = proper_edge_colouring(t.src, t.dst, len(t.leaf_names))
        planes = list(range(1, A + 1))
        if seed:
            r = seed % A
            planes = planes[r:] + planes[:r]
        plane_of = [planes[c % A] for c in range(D)]     # round robin: ceil(D / A) per plane
        plane_flows: dict[int, list[int]] = {}
        want: list[tuple] = [()] * n
        for i in range(n):
            p = plane_of[col[i]]
            if fabric.pod_of(t.leaf_names[t.src[i]]) == fabric.pod_of(t.leaf_names[t.dst[i]]):
                want[i] = (p,)
            else:
                plane_flows.setdefault(p, []).append(i)
        pods = fabric.spec.pods
        C = fabric.spec.cores_per_plane
        for p, ids in plane_flows.items():
            src = [fabric.pod_of(t.leaf_names[t.src[i]]) - 1 for i in ids]
            dst = [fabric.pod_of(t.leaf_names[t.dst[i]]) - 1 for i in ids]
            col2, _ = proper_edge_colouring(src, dst, pods)
            for i, c in zip(ids, col2):
                want[i] = (p, c % C + 1)                  # (plane, core within the plane)
        assign = pick_paths(fabric, t, want)
        repair = -1 in assign
        if repair:
            greedy_fill_paths(t, assign, loads_of(t, assign), seed)
            status = "staged-coloring+repair"
    stats = SolveStats(time.perf_counter() - t0, status, None, path_lower_bound(t, fabric))
    return RoutingPlan("edge-coloring", path_of_assignment(t, assign), stats)


def _path_key_of_links(fabric: Fabric) -> tuple[np.ndarray, np.ndarray]:
    """Per link id of `fabric.links`: its head's plane (an agg's; -1 for other switches) and
    its head's core number within its plane ((index - 1) % C + 1; 0 without an index),
    cached on the fabric."""
    cache = fabric._path_cache
    key = ("edge-coloring-heads",)
    if key not in cache:
        nodes = fabric.graph.nodes
        C = fabric.spec.cores_per_plane
        heads = [nodes[v] for _, v in fabric.links]
        plane = np.array([d.get("plane", -1) for d in heads], dtype=np.int64)
        core = np.array([(d["index"] - 1) % C + 1 if "index" in d and C else 0
                         for d in heads], dtype=np.int64)
        cache[key] = (plane, core)
    return cache[key]


def pick_paths(fabric: Fabric, t, want: list[tuple]) -> list[int]:
    """Each flow's first candidate path (in t.cand order) through its wanted plane (a path's
    first agg) and, across pods, its wanted core within that plane (-1: none), by numpy over
    every candidate at once; the same picks as pick_paths_reference."""
    if not t.flows:
        return []
    if not hasattr(t.path_links, "arrays"):      # a table built pair by pair
        return pick_paths_reference(fabric, t, want)
    head_plane, head_core = _path_key_of_links(fabric)
    start, hops, step = t.path_links.arrays
    links = t.path_links.links
    C1 = fabric.spec.cores_per_plane + 1
    # a path's key: plane x (C + 1) + core (0 within a pod, where a path has no core)
    path_key = head_plane[links[start]] * C1 + np.where(
        hops == 4, head_core[links[np.where(hops >= 2, start + step, start)]], 0)
    flow_key = np.array([w[0] * C1 + (w[1] if len(w) > 1 else 0) for w in want],
                        dtype=np.int64)
    lo = np.array([r.start for r in t.cand], dtype=np.int64)
    blocks = np.unique(lo)                 # a pair's candidates: consecutive ids from lo
    ids = np.arange(path_key.size, dtype=np.int64)
    scale = int(max(path_key.max(), flow_key.max())) + 1
    path_bk = (np.searchsorted(blocks, ids, side="right") - 1) * scale + path_key
    order = np.argsort(path_bk, kind="stable")   # by (block, key), then id: the first first
    sorted_bk = path_bk[order]
    first = np.ones(order.size, dtype=np.bool_)
    first[1:] = sorted_bk[1:] != sorted_bk[:-1]
    uniq, first_path = sorted_bk[first], order[first]
    flow_bk = np.searchsorted(blocks, lo) * scale + flow_key
    at = np.minimum(np.searchsorted(uniq, flow_bk), uniq.size - 1)
    return np.where(uniq[at] == flow_bk, first_path[at], -1).tolist()


def pick_paths_reference(fabric: Fabric, t, want: list[tuple]) -> list[int]:
    """pick_paths as a loop over each flow's candidates (the code it replaced)."""
    C = fabric.spec.cores_per_plane
    nodes = fabric.graph.nodes
    assign = [-1] * len(t.flows)
    for i in range(len(t.flows)):
        for q in t.cand[i]:
            path = t.paths[q]
            if nodes[path[1]]["plane"] != want[i][0]:
                continue
            if len(path) == 5 and (nodes[path[2]]["index"] - 1) % C + 1 != want[i][1]:
                continue
            assign[i] = q
            break
    return assign

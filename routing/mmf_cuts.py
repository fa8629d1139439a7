"""mmf on paths, combinatorially: the cuts that bound each round, and a descent that meets them.

Pure code (numba for the descent). routing/mmf_paths.py solves; this module proves.

Cuts. Every hop of a shortest up-down path crosses one tier in one direction (leaf->agg,
agg->core, core->agg, agg->leaf; leaf->spine, spine->leaf), and a flow may take any of its
pair's paths. Group the links that some flow may take at the same hop (union over flows of
their candidate links at that hop, joined when they share a link): each group is a *cut*, a
set of links of which every flow crossing it uses exactly one, and the cuts partition the
links that flows can use (a leaf's uplinks, its downlinks, a pod's links to the cores, the
cores' links into a pod). A cut with d flows over U links, whatever the routing, is a side
in the sense of routing/mmf_bounds.py: the job relaxation (Bounds) applies to it unchanged,
and so do the restricted sides of failed links (flows limited to a subset T of the cut).

Balanced bound (layer 2). In one cut of d flows over U links the most even loads (d mod U
links at ceil(d / U), the rest at floor) have the lexicographically smallest sorted load
vector, so no routing has fewer links at >= k in that cut than the balanced one once it has
exactly the balanced counts at every level above k. Summed over the cuts (disjoint), while
every count fixed so far equals its balanced sum, G_k >= the balanced sum at k.

Descent. Single-flow moves, each taking a flow off a link at load m and putting it only on
links that stay below m (the sorted load vector then strictly decreases: the count at >= m
falls and none above changes), never above the level of any job on those links (no job's
level rises, so layer 1 never gets worse). It stops when no flow has such a move; the rounds
then compare its counts with the bounds.
"""
from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from .mmf_bounds import Bounds
from .paths import PathTable, path_link_matrix

Side = tuple[dict[int, int], int]       # flows per job index, links


def cut_sides(t: PathTable) -> tuple[list[Side], list[Side]]:
    """(cuts, restricted sides): per cut its flows per job and links; per cut and per set T
    of its links that some flows are limited to, the flows whose links there are within T,
    and |T|. From the pairs' (hops, paths) link blocks: the links at one hop of one pair are
    joined by label propagation in numpy (cut_sides_reference: the same sides, by a
    union-find over every path's link tuple; cuts ordered by their smallest link id)."""
    blocks = [t.pair_links.get(pair) for pair in t.pair_paths]
    if not blocks or any(b is None or (b < 0).any() for b in blocks):
        return cut_sides_reference(t)
    groups = Counter(zip(t.src, t.dst, t.job))         # flows per (pair, job)
    with_flows = {(a, b) for a, b, _ in groups}
    by_shape: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
    for pair, block in zip(t.pair_paths, blocks):
        by_shape[block.shape].append(pair)
    rows = dict(zip(t.pair_paths, blocks))
    stacks, us, vs = [], [], []
    for pairs in by_shape.values():                    # each hop's distinct links, joined
        srt = np.sort(np.stack([rows[pair] for pair in pairs]), axis=2)
        new = np.ones(srt.shape, dtype=bool)
        new[:, :, 1:] = srt[:, :, 1:] != srt[:, :, :-1]
        stacks.append((pairs, srt, new))
        us.append(srt[new])
        vs.append(np.repeat(srt[:, :, 0].ravel(), new.sum(axis=2).ravel()))
    u, v = np.concatenate(us), np.concatenate(vs)
    label = np.arange(t.n_links, dtype=np.int64)
    while True:
        m = np.minimum(label[u], label[v])
        nxt = label.copy()
        np.minimum.at(nxt, u, m)
        np.minimum.at(nxt, v, m)
        nxt = nxt[nxt]
        if np.array_equal(nxt, label):
            break
        label = nxt
    used = np.zeros(t.n_links, dtype=bool)
    for pairs, srt, _ in stacks:
        used[srt[np.array([pair in with_flows for pair in pairs])].ravel()] = True
    size = np.bincount(label[used], minlength=t.n_links)
    J = max(1, len(t.job_names))
    where = {pair: (n, x) for n, (pairs, _, _) in enumerate(stacks) for x, pair in enumerate(pairs)}
    in_stack: list[list[tuple[int, int]]] = [[] for _ in stacks]      # (group, row) per stack
    keys = list(groups)
    for g, (a, b, _) in enumerate(keys):
        n, x = where[a, b]
        in_stack[n].append((g, x))
    gj = np.array([j for _, _, j in keys], dtype=np.int64)
    gn = np.array(list(groups.values()), dtype=np.int64)
    codes, weights = [], []
    subsets: dict[int, dict[frozenset[int], dict[int, int]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(int)))
    for (pairs, srt, new), members in zip(stacks, in_stack):
        if not members:
            continue
        gs, xs = np.array(members, dtype=np.int64).T
        roots = label[srt[xs, :, 0]]                   # (groups, hops): each hop's cut
        part = new[xs].sum(axis=2) < size[roots]       # a hop limited to part of its cut
        codes.append((roots * J + gj[gs][:, None]).ravel())
        weights.append(np.repeat(gn[gs], roots.shape[1]))
        for y in np.flatnonzero(part.any(axis=1)).tolist():
            g, x = int(gs[y]), int(xs[y])
            for h in np.flatnonzero(part[y]).tolist():
                T = frozenset(srt[x, h][new[x, h]].tolist())
                subsets[int(roots[y, h])][T][keys[g][2]] += int(gn[g])
    code, inverse = np.unique(np.concatenate(codes), return_inverse=True)
    total = np.bincount(inverse.ravel(), weights=np.concatenate(weights)).astype(np.int64)
    root, job = (code // J).tolist(), (code % J).tolist()
    per_job: dict[int, dict[int, int]] = defaultdict(dict)
    for r, j, n in zip(root, job, total.tolist()):
        per_job[r][j] = n
    cuts = [(per_job[r], int(size[r])) for r in sorted(per_job)]
    restricted = []
    for r in sorted(subsets):
        for T in sorted(subsets[r], key=sorted):
            dj: dict[int, int] = defaultdict(int)
            for T2, d in subsets[r].items():
                if T2 <= T:
                    for j, n in d.items():
                        dj[j] += n
            restricted.append((dict(dj), len(T)))
    return cuts, restricted


def cut_sides_reference(t: PathTable) -> tuple[list[Side], list[Side]]:
    """cut_sides by a union-find over every path's links (the plain form; also the fallback
    when a pair's paths differ in length)."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    hop_sets: dict[tuple[int, int], list[frozenset[int]]] = {}
    for pair, paths in t.pair_paths.items():
        links = [t.path_links[p] for p in paths]
        sets = [frozenset(x[h] for x in links) for h in range(len(links[0]))]
        hop_sets[pair] = sets
        for s in sets:
            first = min(s)
            for e in s:
                parent[find(e)] = find(first)
    per_job: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    links: dict[int, set[int]] = defaultdict(set)
    subsets: dict[int, dict[frozenset[int], dict[int, int]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(int)))
    for a, b, j in zip(t.src, t.dst, t.job):
        for s in hop_sets[a, b]:
            r = find(min(s))
            per_job[r][j] += 1
            links[r] |= s
            subsets[r][s][j] += 1
    cuts = [(dict(per_job[r]), len(links[r])) for r in sorted(per_job)]
    restricted = []
    for r in sorted(per_job):
        for T in sorted((T for T in subsets[r] if len(T) < len(links[r])), key=sorted):
            dj: dict[int, int] = defaultdict(int)
            for T2, d in subsets[r].items():
                if T2 <= T:
                    for j, n in d.items():
                        dj[j] += n
            restricted.append((dict(dj), len(T)))
    return cuts, restricted


def balanced_at_least(d: int, U: int, k: int) -> int:
    """Links at >= k flows when d flows sit as evenly as possible on U links."""
    q, r = divmod(d, U)
    return U if q >= k else (r if k == q + 1 else 0)


class CutBounds(Bounds):
    """Bounds (routing/mmf_bounds.py) over a PathTable's cuts, plus the balanced bound."""

    def __init__(self, t: PathTable, A: int, top_proven: bool, work: int = 2_000_000):
        cuts, restricted = cut_sides(t)
        flows = [0] * len(t.job_names)
        for j in t.job:
            flows[j] += 1
        self.setup(A, top_proven, cuts, restricted, flows, work)
        self.balanced = {k: sum(balanced_at_least(sum(dj.values()), U, k) for dj, U in cuts)
                         for k in range(2, A + 1)}

    def links_after(self, k: int, job_fixes: dict[int, int], link_fixes: dict[int, int]) -> int:
        """Lower bound on G_k given layer 1's counts and the link counts fixed above k."""
        bound = self.links(k, job_fixes)
        if all(link_fixes.get(h) == self.balanced[h] for h in range(k + 1, self.A + 1)):
            bound = max(bound, self.balanced[k])
        return bound


# -- the descent ---------------------------------------------------------------------------------
def descend(t: PathTable, assign: list[int], max_moves: int = 1_000_000) -> tuple[list[int], int]:
    """The descent of the module docstring from `assign` (every flow placed): the new
    assignment and how many moves it made. Deterministic (flows in order, first best path)."""
    if not t.flows:
        return list(assign), 0
    pl, lo, hi, job = descent_arrays(t)
    out = np.array(assign, dtype=np.int64)
    from .mmf_descent import descend_kernel      # numba: imported when mmf first needs it
    moves = descend_kernel(pl, lo, hi, job, len(t.job_names), t.n_links, out, max_moves)
    return out.tolist(), int(moves)


def descent_arrays(t: PathTable) -> tuple[np.ndarray, ...]:
    """The descent's inputs (path links, candidate ranges, jobs), made once per PathTable
    (kept on it: an epoch descends several times, 0.3 s each at 10,000 flows)."""
    cached = t.__dict__.get("_descent_arrays")
    if cached is None:
        lo = np.array([c.start for c in t.cand], dtype=np.int64)
        hi = np.array([c.stop for c in t.cand], dtype=np.int64)
        cached = (path_link_matrix(t), lo, hi, np.array(t.job, dtype=np.int64))
        t.__dict__["_descent_arrays"] = cached
    return cached

"""mmf on paths, combinatorially: the cuts that bound each round, and a descent that meets them.

Pure code (the descent compiled: routing/mmf_descent.py). routing/mmf_paths.py solves; this
module proves.

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
from weakref import WeakKeyDictionary

import numpy as np

from .mmf_bounds import Bounds
from .mmf_descent import descend_kernel, kernel, link_matrix_kernel
from .path_blocks import PairBlocks
from .paths import PairLinks, PathTable, path_link_arrays

Side = tuple[dict[int, int], int]       # flows per job index, links


def cut_sides(t: PathTable) -> tuple[list[Side], list[Side]]:
    """(cuts, restricted sides): per cut its flows per job and links; per cut and per set T
    of its links that some flows are limited to, the flows whose links there are within T,
    and |T|. From each pair's hop sets (HopSets, kept per fabric): the sets met by this
    table's pairs are joined in numpy (cut_sides_reference: the same sides, by a union-find
    over every path's link tuple; cuts ordered by their smallest link id)."""
    hop, qs = hop_sets(t)
    pairs = list(t.pair_paths)
    rows = hop.rows(t, qs) if pairs else None
    if rows is None:
        return cut_sides_reference(t)
    sids = np.unique(rows[rows >= 0])
    root = np.full(len(hop.sets), -1, dtype=np.int64)
    root[sids] = _join(t.n_links, [hop.sets[s] for s in sids.tolist()])
    groups = Counter(zip(t.src, t.dst, t.job))         # flows per (pair, job)
    where = {pair: x for x, pair in enumerate(pairs)}
    with_flows = np.unique(np.array([where[a, b] for a, b, _ in groups], dtype=np.int64))
    used_sets = np.unique(rows[with_flows][rows[with_flows] >= 0])
    used = np.zeros(t.n_links, dtype=bool)
    for s in used_sets.tolist():
        used[hop.sets[s]] = True
    label = np.full(t.n_links, -1, dtype=np.int64)
    for s in sids.tolist():
        label[hop.sets[s]] = root[s]
    size = np.bincount(label[used], minlength=t.n_links)
    J = max(1, len(t.job_names))
    keys = list(groups)
    gs = rows[[where[a, b] for a, b, _ in keys]]       # (groups, hops): each hop's set
    ok = gs >= 0
    roots = np.where(ok, root[np.where(ok, gs, 0)], 0)
    gj = np.array([j for _, _, j in keys], dtype=np.int64)
    gn = np.array(list(groups.values()), dtype=np.int64)
    code, inverse = np.unique((roots * J + gj[:, None])[ok], return_inverse=True)
    total = np.bincount(inverse.ravel(), weights=np.broadcast_to(gn[:, None], gs.shape)[ok]
                        ).astype(np.int64)
    per_job: dict[int, dict[int, int]] = defaultdict(dict)
    for r, j, n in zip((code // J).tolist(), (code % J).tolist(), total.tolist()):
        per_job[r][j] = n
    cuts = [(per_job[r], int(size[r])) for r in sorted(per_job)]
    subsets: dict[int, dict[frozenset[int], dict[int, int]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(int)))
    part = ok & (hop.size[np.where(ok, gs, 0)] < size[roots])   # limited to part of its cut
    for g, h in zip(*np.nonzero(part)):
        subsets[int(roots[g, h])][hop.frozen(int(gs[g, h]))][keys[g][2]] += int(gn[g])
    return cuts, _restricted(subsets)


class HopSets:
    """Per leaf pair met so far (by id), the id of each hop's link set (the distinct links at
    that hop over the pair's paths; -1 past the pair's hops), and the sets by id: a property
    of the fabric's paths, kept per fabric (hop_sets) and filled as pairs are met."""

    def __init__(self):
        self.slot: dict[int, int] = {}                 # pair id -> row of `table`
        self.table = np.full((0, 0), -1, dtype=np.int64)
        self.bad: list[bool] = []                      # a pair whose paths differ in length
        self.sets: list[np.ndarray] = []               # set id -> its links, ascending
        self.size = np.zeros(0, dtype=np.int64)        # set id -> how many links
        self._ids: dict[bytes, int] = {}
        self._frozen: dict[int, frozenset[int]] = {}

    def rows(self, t: PathTable, qs: list[int]) -> np.ndarray | None:
        """(pairs, hops) set ids of t's pairs (ids qs, in t.pair_paths's order); None when
        some pair's paths differ in length."""
        new = [(q, pair) for q, pair in zip(qs, t.pair_paths) if q not in self.slot]
        if new:
            self._add([q for q, _ in new], [t.pair_links[pair] for _, pair in new])
        slots = [self.slot[q] for q in qs]
        if any(self.bad[s] for s in slots):
            return None
        return self.table[slots]

    def frozen(self, sid: int) -> frozenset[int]:
        """Set sid's links as a frozenset (made once)."""
        if sid not in self._frozen:
            self._frozen[sid] = frozenset(self.sets[sid].tolist())
        return self._frozen[sid]

    def _add(self, qs: list[int], blocks: list) -> None:
        H = max(b.shape[0] if b is not None else 0 for b in blocks)
        n0 = len(self.bad)
        table = np.full((n0 + len(qs), max(H, self.table.shape[1])), -1, dtype=np.int64)
        table[:n0, :self.table.shape[1]] = self.table
        self.table = table
        by_shape: dict[tuple, list[int]] = defaultdict(list)
        for x, (q, b) in enumerate(zip(qs, blocks)):
            self.slot[q] = n0 + x
            bad = b is None or (b < 0).any()
            self.bad.append(bool(bad))
            if not bad:
                by_shape[b.shape].append(x)
        for (h, _), xs in by_shape.items():
            rows = np.stack([blocks[x] for x in xs]).reshape(len(xs) * h, -1)
            local: dict[bytes, int] = {}
            idx = [local.setdefault(r.tobytes(), len(local)) for r in rows]
            first = [0] * len(local)
            for r, i in enumerate(idx):
                first[i] = r
            sid = np.array([self._intern(rows[r]) for r in first], dtype=np.int64)
            table[n0 + np.array(xs), :h] = sid[np.array(idx)].reshape(len(xs), h)

    def _intern(self, row: np.ndarray) -> int:
        links = np.unique(row)
        key = links.tobytes()
        if key not in self._ids:
            self._ids[key] = len(self.sets)
            self.sets.append(links)
            self.size = np.append(self.size, len(links))
        return self._ids[key]


_HOP_SETS: WeakKeyDictionary = WeakKeyDictionary()     # PairBlocks (one per fabric) -> HopSets


def hop_sets(t: PathTable) -> tuple[HopSets, list[int]]:
    """t's fabric's HopSets and t's pair ids in it (a fresh one, by t's pair order, when t
    was not made from the fabric's pair blocks)."""
    cache = getattr(t.paths, "cache", None)
    if isinstance(t.pair_links, PairLinks) and isinstance(cache, PairBlocks):
        hop = _HOP_SETS.get(cache)
        if hop is None:
            hop = _HOP_SETS[cache] = HopSets()
        L = t.pair_links.L
        return hop, [a * L + b for a, b in t.pair_paths]
    return HopSets(), list(range(len(t.pair_paths)))


def _join(n_links: int, sets: list[np.ndarray]) -> np.ndarray:
    """Per set, the smallest link id of its component when sets sharing a link are joined
    (label propagation with pointer jumping)."""
    u = np.concatenate(sets)
    v = np.repeat([s[0] for s in sets], [len(s) for s in sets])
    label = np.arange(n_links, dtype=np.int64)
    while True:
        m = np.minimum(label[u], label[v])
        nxt = label.copy()
        np.minimum.at(nxt, u, m)
        np.minimum.at(nxt, v, m)
        nxt = nxt[nxt]
        if np.array_equal(nxt, label):
            return label[[s[0] for s in sets]]
        label = nxt


def _restricted(subsets: dict[int, dict[frozenset[int], dict[int, int]]]) -> list[Side]:
    """Per cut (by root) and per set T some flows there are limited to: the flows of every
    set within T, per job, and |T|."""
    out = []
    for r in sorted(subsets):
        for T in sorted(subsets[r], key=sorted):
            dj: dict[int, int] = defaultdict(int)
            for T2, d in subsets[r].items():
                if T2 <= T:
                    for j, n in d.items():
                        dj[j] += n
            out.append((dict(dj), len(T)))
    return out


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
    moves = kernel(descend_kernel)(pl, lo, hi, job, len(t.job_names), t.n_links, out, max_moves)
    return out.tolist(), int(moves)


def descent_arrays(t: PathTable) -> tuple:
    """The descent's inputs ((paths, hops) link ids made from the pairs' blocks by a compiled
    pass, candidate ranges, jobs), made once per PathTable (kept on it: an epoch descends
    several times)."""
    cached = t.__dict__.get("_descent_arrays")
    if cached is None:
        lo = np.array([c.start for c in t.cand], dtype=np.int64)
        hi = np.array([c.stop for c in t.cand], dtype=np.int64)
        buf, start, hops, step = (np.ascontiguousarray(x, dtype=np.int64)
                                  for x in path_link_arrays(t))
        pl = kernel(link_matrix_kernel)(buf, start, hops, step, int(hops.max()) if len(hops) else 1)
        cached = (pl, lo, hi, np.array(t.job, dtype=np.int64))
        t.__dict__["_descent_arrays"] = cached
    return cached

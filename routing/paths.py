"""Routes as paths: inter-leaf flows, their candidate switch paths and link loads as flat integers.

Pure code. A route is a tuple of switches from the source leaf to the destination leaf, one of
`Fabric.switch_paths` (the live shortest up-down paths): (leafA, spine, leafB) in a leaf-spine,
(leafA, agg, leafB) within a pod and (leafA, agg, core, agg', leafB) across pods of a clos3 or
fat-tree. `PathTable` numbers every candidate path of every leaf pair and every directed
switch-to-switch link those paths use, so that the strategies' inner loops touch only ints:
`path_links[p]` are the link ids of path p, `cand[i]` the path ids flow i may take (shared by
the flows of a leaf pair), and a load vector has one count per link id.

The lower bound on the busiest link (`path_lower_bound`) takes the best of these cuts, each a
set of links every flow of some set must cross, so that max load >= ceil(flows / links):
- a leaf's live uplinks (its flows out) and downlinks (its flows in);
- in a clos3, a pod's live agg->core links (flows leaving the pod) and core->agg links
  (entering it);
- every link that all paths of some leaf pairs share (e.g. the one agg->leaf link left when
  failures leave a single agg): the flows of all those pairs.
Any routing's max link load is at least each of them, so the ILP's optimum is too.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from testbed.fabric import Fabric
from traffic.collectives import Connection

from .base import RoutingError

Path = tuple[str, ...]


@dataclass
class PathTable:
    conns: list[Connection]                 # every connection, input order
    flows: list[Connection]                 # inter-leaf connections only
    src: list[int]                          # source leaf index per flow
    dst: list[int]                          # destination leaf index per flow
    job: list[int]                          # job index per flow
    job_names: list[str]
    leaf_names: list[str]
    links: list[tuple[str, str]]            # link id -> (u, v)
    paths: Sequence[Path]                   # path id -> switches
    path_links: Sequence[tuple[int, ...]]   # path id -> link ids
    pair_paths: dict[tuple[int, int], range]   # a pair's paths have consecutive ids
    cand: list[range]                       # flow -> candidate path ids
    uplinks: dict[int, list[int]]           # leaf index -> its live uplink ids (on any path)
    downlinks: dict[int, list[int]]         # leaf index -> its live downlink ids
    # leaf pair -> (hops, paths) array of its paths' link ids (column i: path
    # pair_paths[pair][i]); None when the pair's paths differ in length (never for shortest
    # up-down paths)
    pair_links: Mapping[tuple[int, int], np.ndarray | None] = field(default_factory=dict)

    @property
    def n_links(self) -> int:
        return len(self.links)

    def flow_name(self, i: int) -> str:
        c = self.flows[i]
        return f"{c.job}:{c.src}->{c.dst} (conn {c.conn_id})"


def no_path(fabric: Fabric, c: Connection) -> RoutingError:
    a, b = fabric.leaf_of(c.src), fabric.leaf_of(c.dst)
    return RoutingError(f"flow {c.job}:{c.src}->{c.dst} (conn {c.conn_id}) has no live path "
                        f"between {a} and {b}")


def leaf_pairs(fabric: Fabric, conns: list[Connection], check: bool = True
               ) -> tuple[list[Connection], list[int], list[int]]:
    """The inter-leaf connections of `conns` (input order) with their source and destination
    leaf indices (into `fabric.leaves`); raises RoutingError naming the first flow with no live
    path (`check` False: the caller checks)."""
    leaf_of = leaf_index(fabric)
    leaves = fabric.leaves
    flows, src, dst = [], [], []
    seen: set[tuple[int, int]] = set()
    for c in conns:
        a, b = leaf_of[c.src], leaf_of[c.dst]
        if a == b:
            continue
        if check and (a, b) not in seen:
            if not fabric.switch_paths(leaves[a], leaves[b]):
                raise no_path(fabric, c)
            seen.add((a, b))
        flows.append(c)
        src.append(a)
        dst.append(b)
    return flows, src, dst


def leaf_index(fabric: Fabric) -> dict[str, int]:
    """host -> index of its leaf in `fabric.leaves` (cached on the fabric)."""
    cache = fabric._path_cache
    key = ("leaf-index",)
    if key not in cache:
        idx = {name: i for i, name in enumerate(fabric.leaves)}
        cache[key] = {h: idx[fabric.leaf_of(h)] for h in fabric.hosts}
    return cache[key]


def path_table(fabric: Fabric, conns: list[Connection]) -> PathTable:
    """Build the PathTable of `conns`; raises RoutingError naming a flow with no live path.
    Link ids are indices into `fabric.links`; the fabric caches each leaf pair's links
    (pair_blocks; paths are named from them when asked for: _Paths)."""
    cache = pair_blocks(fabric)
    if not cache.index.ok:
        return _path_table_per_pair(fabric, conns)
    flows, src, dst = leaf_pairs(fabric, conns, check=False)
    L = len(fabric.leaves)
    order = list(dict.fromkeys(a * L + b for a, b in zip(src, dst)))
    qs = np.array(order, dtype=np.int64)
    blocks = cache.select(fabric, qs)
    if len(qs) and not blocks.width.min():
        cut = set(qs[blocks.width == 0].tolist())
        raise no_path(fabric, next(c for c, a, b in zip(flows, src, dst) if a * L + b in cut))
    pair_paths: dict[tuple[int, int], range] = {}
    width = blocks.width.tolist()
    n0 = 0
    for q, w in zip(order, width):
        pair_paths[divmod(q, L)] = range(n0, n0 + w)
        n0 += w
    pair_links = PairLinks(blocks, L, order)
    keys = _path_keys(order, width)
    path_links = _PathLinks(blocks.links, np.repeat(blocks.off, blocks.width) + keys[1],
                            np.repeat(blocks.hops, blocks.width),
                            np.repeat(blocks.width, blocks.width))
    cand = [pair_paths[a, b] for a, b in zip(src, dst)]
    job_idx: dict[str, int] = {}
    job = [job_idx.setdefault(c.job, len(job_idx)) for c in flows]
    paths = _Paths(cache, keys)
    up, down = _leaf_links(fabric, src, dst)
    return PathTable(list(conns), flows, src, dst, job, list(job_idx), list(fabric.leaves),
                     fabric.links, paths, path_links, pair_paths, cand, up, down, pair_links)


def _path_keys(order: list[int], width: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Per path id of a PathTable: its pair id and its column in the pair's block."""
    w = np.array(width, dtype=np.int64)
    pair = np.repeat(np.array(order, dtype=np.int64), w)
    col = np.arange(int(w.sum()), dtype=np.int64) - np.repeat(np.cumsum(w) - w, w)
    return pair, col


class _Paths:
    """A PathTable's paths as switch names, each made when first asked for."""

    def __init__(self, cache: "PairBlocks", keys: tuple[np.ndarray, np.ndarray]):
        self.cache, self.pairs, self.cols = cache, keys[0], keys[1]     # numpy, per path id
        self.made: dict[int, Path] = {}

    def __len__(self) -> int:
        return len(self.pairs)

    def pair(self, p: int) -> int:
        """Path p's pair id."""
        return int(self.pairs[p])

    def __getitem__(self, p: int) -> Path:
        path = self.made.get(p)
        if path is None:
            path = self.made[p] = self.cache.path(int(self.pairs[p]), int(self.cols[p]))
        return path


class PairLinks(Mapping):
    """A PathTable's pair_links from its pairs' blocks: pair -> its (hops, paths) array of
    link ids, a view of the block made when first asked for."""

    def __init__(self, blocks: LinkBlocks, n_leaves: int, order: list[int]):
        self.blocks, self.L = blocks, n_leaves
        self.kq = {q: k for k, q in enumerate(order)}
        self.k = {divmod(q, n_leaves): k for k, q in enumerate(order)}
        self.made: dict[tuple[int, int], np.ndarray] = {}

    def of_pairs(self, qs: list[int]) -> LinkBlocks:
        """The blocks of pair ids qs (a * n_leaves + b), in that order, sharing the buffer:
        what LinkBlocks.of of their arrays holds, nothing copied."""
        kq = self.kq
        return self.blocks.select(np.array([kq[q] for q in qs], dtype=np.int64))

    def __getitem__(self, pair: tuple[int, int]) -> np.ndarray:
        x = self.made.get(pair)
        if x is None:
            k, b = self.k[pair], self.blocks
            o, h, w = int(b.off[k]), int(b.hops[k]), int(b.width[k])
            x = self.made[pair] = b.links[o:o + h * w].reshape(h, w)
        return x

    def __iter__(self):
        return iter(self.k)

    def __len__(self) -> int:
        return len(self.k)


class _PathLinks:
    """A PathTable's path_links from its pairs' blocks: path p's link ids are
    links[start[p] + x * step[p]] for x < hops[p], made into a tuple when first asked for."""

    def __init__(self, links: np.ndarray, start: np.ndarray, hops: np.ndarray,
                 step: np.ndarray):
        self.links, self.arrays = links, (start, hops, step)
        self.made: dict[int, tuple[int, ...]] = {}

    def matrix(self, paths: np.ndarray | None = None) -> np.ndarray:
        """(paths, hops) link ids of `paths` (default: every path), -1 past a path's end."""
        start, hops, step = self.arrays
        if paths is not None:
            start, hops, step = start[paths], hops[paths], step[paths]
        H = int(hops.max()) if len(hops) else 1
        x = np.arange(H, dtype=np.int64)
        ok = x[None, :] < hops[:, None]
        idx = np.where(ok, start[:, None] + x[None, :] * step[:, None], 0)
        return np.where(ok, self.links[idx], -1)

    def __len__(self) -> int:
        return len(self.arrays[0])

    def __getitem__(self, p: int) -> tuple[int, ...]:
        x = self.made.get(p)
        if x is None:
            start, hops, step = self.arrays
            o, w = int(start[p]), int(step[p])
            x = self.made[p] = tuple(self.links[o:o + int(hops[p]) * w:w].tolist())
        return x

    def __iter__(self):
        return (self[p] for p in range(len(self)))


def path_link_arrays(t: PathTable) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A PathTable's path links as (buf, start, hops, step): path p's link x is
    buf[start[p] + x * step[p]] for x < hops[p] (from its pairs' blocks, nothing copied)."""
    pl = t.path_links
    if isinstance(pl, _PathLinks):
        return (pl.links, *pl.arrays)
    m = path_link_matrix(t)
    P, H = m.shape
    return (m.ravel(), np.arange(P, dtype=np.int64) * H, (m >= 0).sum(axis=1).astype(np.int64),
            np.ones(P, dtype=np.int64))


def path_link_matrix(t: PathTable) -> np.ndarray:
    """(paths, hops) int64 link ids of a PathTable's paths, -1 past a shorter path's end."""
    pl = t.path_links
    if isinstance(pl, _PathLinks) and len(pl):
        return pl.matrix()
    H = max((len(x) for x in pl), default=1)
    out = np.full((len(pl), H), -1, dtype=np.int64)
    for p, links in enumerate(pl):
        out[p, :len(links)] = links
    return out


def _leaf_links(fabric: Fabric, src: list[int], dst: list[int]
                ) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """Per source leaf its live uplink ids, per destination leaf its live downlink ids."""
    li, leaves = fabric.link_index, fabric.leaves
    up = {a: [li[leaves[a], u] for u in fabric.uplinks(leaves[a]) if fabric.is_live(leaves[a], u)]
          for a in set(src)}
    down = {b: [li[u, leaves[b]] for u in fabric.uplinks(leaves[b])
                if fabric.is_live(u, leaves[b])] for b in set(dst)}
    return up, down


def _path_table_per_pair(fabric: Fabric, conns: list[Connection]) -> PathTable:
    """path_table from Fabric.switch_paths pair by pair (fabrics whose leaves do not share
    one uplink order per pod)."""
    flows, src, dst = leaf_pairs(fabric, conns)
    paths: list[Path] = []
    path_links: list[tuple[int, ...]] = []
    pair_paths: dict[tuple[int, int], range] = {}
    pair_links: dict[tuple[int, int], np.ndarray | None] = {}
    job, cand = [], []
    job_idx: dict[str, int] = {}
    leaves = fabric.leaves
    for c, a, b in zip(flows, src, dst):
        pc = pair_paths.get((a, b))
        if pc is None:
            ps = fabric.switch_paths(leaves[a], leaves[b])
            n0 = len(paths)
            paths += ps
            path_links += fabric.switch_path_links(leaves[a], leaves[b])
            pc = pair_paths[a, b] = range(n0, len(paths))    # no int objects to make
            pair_links[a, b] = link_array(fabric, leaves[a], leaves[b])
        job.append(job_idx.setdefault(c.job, len(job_idx)))
        cand.append(pc)
    up, down = _leaf_links(fabric, src, dst)
    return PathTable(list(conns), flows, src, dst, job, list(job_idx), list(leaves),
                     fabric.links, paths, path_links, pair_paths, cand, up, down, pair_links)


def link_array(fabric: Fabric, a: str, b: str) -> np.ndarray | None:
    """The link ids of every path from leaf a to leaf b as a read-only (hops, paths) int array
    (hop-major, so that reductions over hops run along paths), cached on the fabric beside
    its paths; None when the paths differ in length."""
    cache = fabric._path_cache
    key = (a, b, "link-array")
    if key not in cache:
        links = fabric.switch_path_links(a, b)
        arr = None
        if links and len({len(x) for x in links}) == 1:
            arr = np.ascontiguousarray(np.array(links, dtype=np.intp).T)
            arr.flags.writeable = False
        cache[key] = arr
    return cache[key]


def padded_link_array(links: list[tuple[int, ...]]) -> np.ndarray:
    """Paths' link ids as a (hops, paths) int64 array, paths shorter than the longest padded
    with -1 (what link_array leaves as None; never the case for shortest up-down paths)."""
    hops = max(len(x) for x in links)
    return np.array([list(x) + [-1] * (hops - len(x)) for x in links], dtype=np.int64).T


@dataclass
class LinkBlocks:
    """Leaf pairs' (hops, paths) link arrays in one flat int64 buffer: block k is
    links[off[k]:off[k] + hops[k] * width[k]], hop-major (link x of path p at
    off[k] + x * width[k] + p; -1 pads paths shorter than hops[k])."""
    links: np.ndarray
    off: np.ndarray
    hops: np.ndarray
    width: np.ndarray

    @classmethod
    def of(cls, arrays: list[np.ndarray]) -> LinkBlocks:
        shape = np.array([a.shape for a in arrays], dtype=np.int64).reshape(-1, 2)
        size = shape[:, 0] * shape[:, 1]
        off = np.cumsum(size) - size
        links = (np.concatenate([a.ravel() for a in arrays]) if arrays
                 else np.zeros(0, dtype=np.int64))
        return cls(links.astype(np.int64, copy=False), off, shape[:, 0].copy(),
                   shape[:, 1].copy())

    def select(self, ks: np.ndarray) -> LinkBlocks:
        """Blocks ks (an int array), sharing the buffer."""
        return LinkBlocks(self.links, self.off[ks], self.hops[ks], self.width[ks])


class PairBlocks:
    """One fabric's leaf pairs met so far, by pair id a * n_leaves + b: their link arrays
    (block q of `blocks`, off -1 until met; the buffer doubles as it fills), so that a solve
    picks its pairs' blocks with one numpy index, and `path(q, p)` names path p of pair q
    (Fabric.switch_paths's order). Made by numpy for many pairs at once (_UpDown); a fabric
    small enough (PREFILL_LINKS) gets every pair on first use, so no solve pays for pairs it
    meets first. Cached on the fabric (pair_blocks)."""

    #: every pair's blocks at once when they hold at most this many link ids (8 bytes each):
    #: the 2,048-NIC clos3 has 1.0 M, the k=16 fat-tree 4.2 M
    PREFILL_LINKS = 5_000_000

    def __init__(self, fabric: Fabric):
        L = self.L = len(fabric.leaves)
        n = L * L
        self.links = fabric.links
        self.blocks = LinkBlocks(np.zeros(1024, dtype=np.int64), np.full(n, -1, dtype=np.int64),
                                 np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64))
        self.used = 0                            # of blocks.links
        self._names: dict[int, list[Path]] = {}
        self._columns: dict[int, dict[Path, int]] = {}
        self._named: dict[int, dict[Path, int]] = {}   # paths `path` named, by pair: column
        self._made: dict[tuple[int, int], Path] = {}    # the same by (pair, column)
        self.index = _UpDown(fabric)
        if self.index.ok and L > 1:
            hops, width = 2 * len(fabric.choice_points), 1
            for _, ways in fabric.choice_points:
                width *= ways
            if L * (L - 1) * hops * width <= self.PREFILL_LINKS:
                q = np.arange(n, dtype=np.int64)
                self._add(fabric, q[q // L != q % L])

    def select(self, fabric: Fabric, pairs: np.ndarray) -> LinkBlocks:
        """The blocks of `pairs` (distinct pair ids, int64), adding the pairs not met yet."""
        new = pairs[self.blocks.off[pairs] < 0]
        if len(new):
            self._add(fabric, new)
        return self.blocks.select(pairs)

    def path(self, q: int, p: int) -> Path:
        """Path p (a column of its block) of pair q, as switch names."""
        named = self._names.get(q)
        if named is not None:
            return named[p]
        x = self._made.get((q, p))
        if x is not None:
            return x
        b, links = self.blocks, self.links
        o, w = int(b.off[q]), int(b.width[q])
        ids = b.links[o + p:o + int(b.hops[q]) * w:w].tolist()
        x = self._made[q, p] = (links[ids[0]][0], *(links[e][1] for e in ids if e >= 0))
        self._named.setdefault(q, {})[x] = p
        return x

    def column(self, q: int, path: Path) -> int | None:
        """The column of `path` among pair q's paths, or None: from the paths `path` named
        (a flow's previous path was named there), else from every path of the pair."""
        named = self._named.get(q)
        col = None if named is None else named.get(path)
        return self.column_of(q).get(path) if col is None else col

    def names(self, q: int) -> list[Path]:
        """Every path of pair q as switch names (made once per pair, then kept)."""
        out = self._names.get(q)
        if out is None:
            b, links = self.blocks, self.links
            o, h, w = int(b.off[q]), int(b.hops[q]), int(b.width[q])
            cols = b.links[o:o + h * w].reshape(h, w).T.tolist()
            out = self._names[q] = [(links[ids[0]][0], *(links[e][1] for e in ids if e >= 0))
                                    for ids in cols]
        return out

    def column_of(self, q: int) -> dict[Path, int]:
        """Pair q's paths -> their columns (made once per pair, then kept)."""
        out = self._columns.get(q)
        if out is None:
            out = self._columns[q] = {x: c for c, x in enumerate(self.names(q))}
        return out

    def _add(self, fabric: Fabric, new: np.ndarray) -> None:
        if self.index.ok:
            arrays = self.index.blocks(new, self.L)
        else:
            leaves, L = fabric.leaves, self.L
            arrays = []
            for a, b in ((leaves[q // L], leaves[q % L]) for q in new.tolist()):
                arr = link_array(fabric, a, b)
                arrays.append(padded_link_array(fabric.switch_path_links(a, b))
                              if arr is None else arr)
        add, b = LinkBlocks.of(arrays), self.blocks
        end = self.used + len(add.links)
        if end > len(b.links):      # a new buffer: blocks selected before keep the old one
            grown = np.zeros(max(end, 2 * len(b.links)), dtype=np.int64)
            grown[:self.used] = b.links[:self.used]
            b.links = grown
        b.links[self.used:end] = add.links
        b.off[new] = add.off + self.used
        b.hops[new] = add.hops
        b.width[new] = add.width
        self.used = end


class _UpDown:
    """A fabric's shortest up-down paths as arrays, so that many leaf pairs' link blocks are
    made by numpy at once: per leaf its uplinks (up_id, up_ok: link id and liveness, by the
    position of the switch above in `uplinks`) and the matching downlinks (down_id, down_ok);
    per pair of pods (or the one group of a leaf-spine) the middle hops (agg -> core -> agg'),
    by plane and core, in Fabric.switch_paths's order. `ok` False: the fabric's leaves do not
    share one uplink order per pod (then PairBlocks asks Fabric.switch_path_links per pair)."""

    def __init__(self, fabric: Fabric):
        leaves, li = fabric.leaves, fabric.link_index
        ups = [fabric.uplinks(x) for x in leaves]
        self.pod = np.array([fabric.pod_of(x) if fabric.has_pods else 0 for x in leaves])
        first = {}
        self.ok = len({len(u) for u in ups}) == 1
        for x, u in zip(self.pod.tolist(), ups):
            self.ok = self.ok and first.setdefault(x, u) == u
        if not self.ok:
            return
        self.first = first
        self.up_id = np.array([[li[x, g] for g in u] for x, u in zip(leaves, ups)])
        self.up_ok = np.array([[fabric.is_live(x, g) for g in u] for x, u in zip(leaves, ups)])
        self.down_id = np.array([[li[g, x] for g in u] for x, u in zip(leaves, ups)])
        self.down_ok = np.array([[fabric.is_live(g, x) for g in u] for x, u in zip(leaves, ups)])
        self.fabric = fabric
        self.middle: dict[tuple[int, int], tuple[np.ndarray, ...]] = {}

    def mid(self, A: int, B: int) -> tuple[np.ndarray, ...]:
        """Pods A -> B: per middle path (position of its agg in A's uplinks, the same plane's
        position in B's, agg -> core link, core -> agg' link), live ones only."""
        if (A, B) not in self.middle:
            f = self.fabric
            plane_b = {f.graph.nodes[g]["plane"]: i for i, g in enumerate(self.first[B])}
            rows = []
            for i, g in enumerate(self.first[A]):
                j = plane_b[f.graph.nodes[g]["plane"]]
                g2 = self.first[B][j]
                rows += [(i, j, f.link_index[g, c], f.link_index[c, g2]) for c in f.uplinks(g)
                         if f.is_live(g, c) and f.is_live(c, g2)]
            arr = np.array(rows, dtype=np.int64).reshape(-1, 4)
            self.middle[A, B] = tuple(arr[:, k].copy() for k in range(4))
        return self.middle[A, B]

    def blocks(self, pairs: np.ndarray, L: int) -> list[np.ndarray]:
        """The (hops, paths) link arrays of `pairs` (ids a * L + b, a != b), in order."""
        a, b = pairs // L, pairs % L
        out: list[np.ndarray | None] = [None] * len(pairs)
        same = self.pod[a] == self.pod[b]
        if same.any():                      # leaf -> switch above -> leaf
            k = np.flatnonzero(same)
            ids = np.stack([self.up_id[a[k]], self.down_id[b[k]]], axis=1)
            self._fill(out, k, ids, self.up_ok[a[k]] & self.down_ok[b[k]])
        cross = np.flatnonzero(~same)
        if len(cross):
            key = self.pod[a[cross]] * (self.pod.max() + 1) + self.pod[b[cross]]
            for kk in np.unique(key).tolist():
                k = cross[key == kk]
                i, j, l1, l2 = self.mid(*divmod(kk, int(self.pod.max()) + 1))
                n = len(k)
                ids = np.stack([self.up_id[a[k]][:, i], np.broadcast_to(l1, (n, len(l1))),
                                np.broadcast_to(l2, (n, len(l2))), self.down_id[b[k]][:, j]],
                               axis=1)
                self._fill(out, k, ids, self.up_ok[a[k]][:, i] & self.down_ok[b[k]][:, j])
        return out

    @staticmethod
    def _fill(out: list, k: np.ndarray, ids: np.ndarray, live: np.ndarray) -> None:
        """ids (pairs, hops, paths) with live (pairs, paths): each pair's live columns."""
        if live.all():
            for r, q in enumerate(k.tolist()):
                out[q] = ids[r]
            return
        for r, q in enumerate(k.tolist()):
            out[q] = ids[r][:, live[r]]


def pair_blocks(fabric: Fabric) -> PairBlocks:
    """The fabric's PairBlocks (cached on it)."""
    return _cached(fabric, ("pair-blocks",), lambda: PairBlocks(fabric))


# -- loads --------------------------------------------------------------------------------------
def loads_of(t: PathTable, assign: list[int]) -> list[int]:
    """Flows per link id of a (possibly partial: -1 = unassigned) path assignment."""
    if isinstance(t.path_links, _PathLinks):
        a = np.array(assign, dtype=np.int64)
        ids = t.path_links.matrix(a[a >= 0])
        return np.bincount(ids[ids >= 0], minlength=t.n_links).tolist()
    load = [0] * t.n_links
    pl = t.path_links
    for p in assign:
        if p >= 0:
            for e in pl[p]:
                load[e] += 1
    return load


def path_of_assignment(t: PathTable, assign: list[int]) -> dict[int, Path | None]:
    """conn_id -> switch path for every connection (None for intra-leaf ones)."""
    out: dict[int, Path | None] = {c.conn_id: None for c in t.conns}
    for c, p in zip(t.flows, assign):
        out[c.conn_id] = t.paths[p]
    return out


def assignment_of_paths(t: PathTable, path_of: dict[int, Path | None] | None) -> list[int]:
    """Per flow: the id of its path in `path_of` while still a candidate, else -1."""
    if not path_of:
        return [-1] * len(t.flows)
    out = []
    ids: dict[int, dict[Path, int]] = {}          # per candidate range: path -> id
    for c, cand in zip(t.flows, t.cand):
        want = path_of.get(c.conn_id)
        if not want or not isinstance(want, tuple):
            out.append(-1)                            # (a list never equals a path tuple)
            continue
        if isinstance(t.paths, _Paths) and len(cand):
            col = t.paths.cache.column(t.paths.pair(cand.start), want)
            out.append(-1 if col is None else cand.start + col)
            continue
        by_path = ids.get(cand.start)
        if by_path is None:
            by_path = ids[cand.start] = {t.paths[p]: p for p in cand}
        out.append(by_path.get(want, -1))
    return out


def link_loads(fabric: Fabric, conns: list[Connection],
               path_of: dict[int, Path | None]) -> Counter:
    """Flows per directed switch-to-switch link, every tier."""
    load: Counter = Counter()
    for c in conns:
        p = path_of.get(c.conn_id)
        if p:
            for e in zip(p, p[1:]):
                load[e] += 1
    return load


def path_lower_bound(t: PathTable, fabric: Fabric) -> int:
    """No routing's busiest link carries fewer flows (the cuts of the module docstring).
    `t` must come from path_table(fabric, ...)."""
    return pairs_lower_bound(fabric, t.src, t.dst)


def pairs_lower_bound(fabric: Fabric, src: list[int], dst: list[int]) -> int:
    """path_lower_bound of the flows src[i] -> dst[i] (leaf indices into `fabric.leaves`, as
    leaf_pairs returns them); what it needs per leaf, pod and leaf pair is cached on the
    fabric."""
    bound = 0
    for up, deg in ((True, Counter(src)), (False, Counter(dst))):
        for leaf, n in deg.items():
            bound = max(bound, math.ceil(n / max(1, _live_leaf_links(fabric, leaf, up))))
    pairs = Counter(zip(src, dst))
    if fabric.has_pods:
        pod_of = _leaf_pods(fabric)
        out_pod: Counter = Counter()
        in_pod: Counter = Counter()
        for (a, b), n in pairs.items():
            if pod_of[a] != pod_of[b]:
                out_pod[pod_of[a]] += n
                in_pod[pod_of[b]] += n
        for pod, n in out_pod.items():
            bound = max(bound, math.ceil(n / max(1, _pod_core_links(fabric, pod, up=True))))
        for pod, n in in_pod.items():
            bound = max(bound, math.ceil(n / max(1, _pod_core_links(fabric, pod, up=False))))
    forced: Counter = Counter()      # links on every path of a pair carry all its flows
    leaves = fabric.leaves
    _forced_batch(fabric, list(pairs))
    for (a, b), n in pairs.items():
        for e in _forced_links(fabric, leaves[a], leaves[b]):
            forced[e] += n
    return max(bound, max(forced.values(), default=0))


def _cached(fabric: Fabric, key: tuple, make):
    cache = fabric._path_cache
    if key not in cache:
        cache[key] = make()
    return cache[key]


def _live_leaf_links(fabric: Fabric, leaf: int, up: bool) -> int:
    """How many of leaf `leaf`'s uplinks (up) or downlinks are live."""
    def count() -> int:
        name = fabric.leaves[leaf]
        return sum(1 for u in fabric.uplinks(name)
                   if (fabric.is_live(name, u) if up else fabric.is_live(u, name)))
    return _cached(fabric, ("live-leaf-links", leaf, up), count)


def _leaf_pods(fabric: Fabric) -> list[int | None]:
    return _cached(fabric, ("leaf-pods",), lambda: [fabric.pod_of(x) for x in fabric.leaves])


def _forced_links(fabric: Fabric, a: str, b: str) -> tuple[int, ...]:
    """The link ids on every live path from leaf a to leaf b."""
    def common() -> tuple[int, ...]:
        cache = pair_blocks(fabric)
        if cache.index.ok:
            L, idx = len(fabric.leaves), leaf_number(fabric)
            q = idx[a] * L + idx[b]
            blk = cache.select(fabric, np.array([q], dtype=np.int64))
            o, h, w = int(blk.off[0]), int(blk.hops[0]), int(blk.width[0])
            if not w:
                return ()
            arr = blk.links[o:o + h * w].reshape(h, w)
            return tuple(sorted(arr[(arr == arr[:, :1]).all(axis=1), 0].tolist()))
        links = fabric.switch_path_links(a, b)
        return tuple(sorted(set(links[0]).intersection(*links[1:]))) if links else ()
    return _cached(fabric, (a, b, "forced"), common)


def _forced_batch(fabric: Fabric, pairs: list[tuple[int, int]]) -> None:
    """_forced_links of the leaf pairs (a, b) (indices) not cached yet, by numpy at once."""
    cache, leaves, L = pair_blocks(fabric), fabric.leaves, len(fabric.leaves)
    todo = [(a, b) for a, b in pairs if (leaves[a], leaves[b], "forced") not in
            fabric._path_cache]
    if not cache.index.ok or not todo:
        return
    qs = np.array([a * L + b for a, b in todo], dtype=np.int64)
    blk = cache.select(fabric, qs)
    for h, w in set(zip(blk.hops.tolist(), blk.width.tolist())):
        k = np.flatnonzero((blk.hops == h) & (blk.width == w))
        if not w:
            found = [()] * len(k)
        else:
            arr = blk.links[blk.off[k][:, None] + np.arange(h * w)].reshape(len(k), h, w)
            same = (arr == arr[:, :, :1]).all(axis=2)
            found = [tuple(sorted(arr[r, same[r], 0].tolist())) for r in range(len(k))]
        for r, kk in enumerate(k.tolist()):
            a, b = todo[kk]
            fabric._path_cache[leaves[a], leaves[b], "forced"] = found[r]


def leaf_number(fabric: Fabric) -> dict[str, int]:
    """leaf name -> its index in `fabric.leaves` (cached on the fabric)."""
    return _cached(fabric, ("leaf-number",),
                   lambda: {name: i for i, name in enumerate(fabric.leaves)})


def _pod_core_links(fabric: Fabric, pod: int, up: bool) -> int:
    def count() -> int:
        n = 0
        for g in fabric.aggs:
            if fabric.pod_of(g) == pod:
                n += sum(1 for c in fabric.uplinks(g)
                         if (fabric.is_live(g, c) if up else fabric.is_live(c, g)))
        return n
    return _cached(fabric, ("pod-core-links", pod, up), count)


def max_load(load: list[int]) -> int:
    return max(load, default=0)

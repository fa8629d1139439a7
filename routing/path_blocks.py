"""Leaf pairs' paths as blocks of link ids: each pair's (hops, paths) int array, every pair met
so far in one flat buffer (`PairBlocks`, cached on the fabric), made by numpy for many pairs
at once where the fabric's leaves share one uplink order per pod (`_UpDown`). What the
strategies' compiled loops (routing/greedy.py) and the path tables (routing/paths.py) read.

Pure code (numpy).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from testbed.fabric import Fabric

Path = tuple[str, ...]


#: The model's path table keeps every shortest path of each leaf pair the jobs connect, as
#: link ids; a prediction's peak memory measured ~66 bytes per id (fat-tree k=48,
#: random-bijective, ECMP: 63.1 M ids, 4.2 GB; clos3 with 1,024 paths a pod pair: 133.7 M,
#: 9.0 GB). Past this many, config loading refuses the workload (about 8.4 GB).
MAX_PATH_LINK_IDS = 128_000_000
#: bytes of a prediction's peak memory per link id of the path table (measured, above)
BYTES_PER_PATH_LINK_ID = 66
#: ... with per-packet spraying (spray@packet), which also keeps every path's links per leaf
#: pair as Python lists (Fabric.spray_shares), twice: ~140 bytes per id (clos3 of 4,096
#: NICs, random-bijective: 3.5 M ids, 562 MB against ECMP's 209 MB; fat-tree k=48: 62.0 M
#: ids, 8.4 GB); the bound in ids is then MAX_PATH_LINK_IDS x 66 / 140 (60.3 M), the same
#: memory
BYTES_PER_SPRAYED_LINK_ID = 140


def path_link_ids(fabric: Fabric, pairs: Mapping[tuple[str, str], int]) -> int:
    """The link ids the path tables hold for leaf pairs (a != b) -> copies (the planes whose
    table holds the pair: 1 on one plane) on an intact `fabric` (failures only lower it): a
    pair in one pod climbs one choice point (2 links per path, its leaf's uplinks), any other
    pair every one (Fabric.choice_points)."""
    ways = [k for _, k in fabric.choice_points]
    full = 2 * len(ways) * math.prod(ways)
    if not fabric.has_pods:
        return full * sum(pairs.values())
    pod, near = fabric.pod_of, 2 * ways[0]
    return sum(n * (near if pod(a) == pod(b) else full) for (a, b), n in pairs.items())


def cached_on(fabric: Fabric, key: tuple, make):
    """make(), once per fabric and key (kept in the fabric's path cache)."""
    cache = fabric._path_cache
    if key not in cache:
        cache[key] = make()
    return cache[key]


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
    return cached_on(fabric, ("pair-blocks",), lambda: PairBlocks(fabric))

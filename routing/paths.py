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
    paths: list[Path]                       # path id -> switches
    path_links: list[tuple[int, ...]]       # path id -> link ids
    pair_paths: dict[tuple[int, int], range]   # a pair's paths have consecutive ids
    cand: list[range]                       # flow -> candidate path ids
    uplinks: dict[int, list[int]]           # leaf index -> its live uplink ids (on any path)
    downlinks: dict[int, list[int]]         # leaf index -> its live downlink ids
    # leaf pair -> (hops, paths) array of its paths' link ids (column i: path
    # pair_paths[pair][i]); None when the pair's paths differ in length (never for shortest
    # up-down paths)
    pair_links: dict[tuple[int, int], np.ndarray | None] = field(default_factory=dict)

    @property
    def n_links(self) -> int:
        return len(self.links)

    def flow_name(self, i: int) -> str:
        c = self.flows[i]
        return f"{c.job}:{c.src}->{c.dst} (conn {c.conn_id})"


def leaf_pairs(fabric: Fabric, conns: list[Connection]
               ) -> tuple[list[Connection], list[int], list[int]]:
    """The inter-leaf connections of `conns` (input order) with their source and destination
    leaf indices (into `fabric.leaves`); raises RoutingError naming the first flow with no live
    path."""
    leaf_of = leaf_index(fabric)
    leaves = fabric.leaves
    flows, src, dst = [], [], []
    seen: set[tuple[int, int]] = set()
    for c in conns:
        a, b = leaf_of[c.src], leaf_of[c.dst]
        if a == b:
            continue
        if (a, b) not in seen:
            if not fabric.switch_paths(leaves[a], leaves[b]):
                raise RoutingError(
                    f"flow {c.job}:{c.src}->{c.dst} (conn {c.conn_id}) has no live path "
                    f"between {leaves[a]} and {leaves[b]}")
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
    Link ids are indices into `fabric.links`; the fabric caches each leaf pair's paths."""
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
    li = fabric.link_index
    up = {a: [li[leaves[a], u] for u in fabric.uplinks(leaves[a]) if fabric.is_live(leaves[a], u)]
          for a in set(src)}
    down = {b: [li[u, leaves[b]] for u in fabric.uplinks(leaves[b])
                if fabric.is_live(u, leaves[b])] for b in set(dst)}
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
    """One fabric's leaf pairs met so far, by pair id a * n_leaves + b: their live paths
    (`paths[q]`, as Fabric.switch_paths) and link arrays (block q of `blocks`, off -1 until
    met; the buffer doubles as it fills), so that a solve picks its pairs' blocks with one
    numpy index. Cached on the fabric (pair_blocks)."""

    def __init__(self, n_leaves: int):
        n = n_leaves * n_leaves
        self.paths: list[list[Path] | None] = [None] * n
        self.blocks = LinkBlocks(np.zeros(1024, dtype=np.int64), np.full(n, -1, dtype=np.int64),
                                 np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64))
        self.used = 0                            # of blocks.links

    def select(self, fabric: Fabric, pairs: np.ndarray) -> LinkBlocks:
        """The blocks of `pairs` (distinct pair ids, int64), adding the pairs not met yet."""
        new = pairs[self.blocks.off[pairs] < 0].tolist()
        if new:
            self._add(fabric, new)
        return self.blocks.select(pairs)

    def _add(self, fabric: Fabric, new: list[int]) -> None:
        leaves, L = fabric.leaves, len(fabric.leaves)
        ends = [(leaves[q // L], leaves[q % L]) for q in new]
        arrays = []
        for a, b in ends:
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
        for q, (x, y) in zip(new, ends):
            self.paths[q] = fabric.switch_paths(x, y)


def pair_blocks(fabric: Fabric) -> PairBlocks:
    """The fabric's PairBlocks (cached on it)."""
    return _cached(fabric, ("pair-blocks",), lambda: PairBlocks(len(fabric.leaves)))


# -- loads --------------------------------------------------------------------------------------
def loads_of(t: PathTable, assign: list[int]) -> list[int]:
    """Flows per link id of a (possibly partial: -1 = unassigned) path assignment."""
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
    for c, cand in zip(t.flows, t.cand):
        want = path_of.get(c.conn_id)
        out.append(next((p for p in cand if t.paths[p] == want), -1) if want else -1)
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
        links = fabric.switch_path_links(a, b)
        return tuple(sorted(set(links[0]).intersection(*links[1:]))) if links else ()
    return _cached(fabric, (a, b, "forced"), common)


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

"""Routes as paths: inter-leaf flows, their candidate switch paths and link loads as flat integers.

Pure code. A route is a tuple of switches from the source leaf to the destination leaf, one of
`Fabric.switch_paths` (the live shortest up-down paths): (leafA, spine, leafB) in a leaf-spine,
(leafA, agg, leafB) within a pod and (leafA, agg, core, agg', leafB) across pods of a clos3 or
fat-tree. `PathTable` numbers every candidate path of every leaf pair and every directed
switch-to-switch link those paths use, so that the strategies' inner loops touch only ints:
`path_links[p]` are the link ids of path p, `cand[i]` the path ids flow i may take (shared by
the flows of a leaf pair), and a load vector has one count per link id. A leaf pair's paths
as blocks of link ids, for the compiled loops: routing/path_blocks.py.

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
from .path_blocks import LinkBlocks, PairBlocks, Path, cached_on, link_array, pair_blocks


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


def _live_leaf_links(fabric: Fabric, leaf: int, up: bool) -> int:
    """How many of leaf `leaf`'s uplinks (up) or downlinks are live."""
    def count() -> int:
        name = fabric.leaves[leaf]
        return sum(1 for u in fabric.uplinks(name)
                   if (fabric.is_live(name, u) if up else fabric.is_live(u, name)))
    return cached_on(fabric, ("live-leaf-links", leaf, up), count)


def _leaf_pods(fabric: Fabric) -> list[int | None]:
    return cached_on(fabric, ("leaf-pods",), lambda: [fabric.pod_of(x) for x in fabric.leaves])


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
    return cached_on(fabric, (a, b, "forced"), common)


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
    return cached_on(fabric, ("leaf-number",),
                   lambda: {name: i for i, name in enumerate(fabric.leaves)})


def _pod_core_links(fabric: Fabric, pod: int, up: bool) -> int:
    def count() -> int:
        n = 0
        for g in fabric.aggs:
            if fabric.pod_of(g) == pod:
                n += sum(1 for c in fabric.uplinks(g)
                         if (fabric.is_live(g, c) if up else fabric.is_live(c, g)))
        return n
    return cached_on(fabric, ("pod-core-links", pod, up), count)


def max_load(load: list[int]) -> int:
    return max(load, default=0)

"""mmf's combinatorics: the two layers' objective vectors, the per-side bounds on how many
links must carry k flows (Bounds; its side rules in plain Python, side_fits and
side_hot_links, are the tests' reference: tests/unit/routing/mmf_reference.py), the
symmetry of spines with the same live links (classes, first-appearance limits and
relabelling) and the assignment that renames spines towards a reference
(max_weight_matching). Pure code; routing/mmf.py solves.
"""
from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from .base import FlowTable, assignment_loads
from .groups import Groups
from .mmf_search import JOBS, LINKS, fits_kernel, hot_kernel, kernel, search_kernel


def job_levels(t: FlowTable, assign: list[int]) -> dict[int, int]:
    """L_j per job index: the most flows on any link one of its flows uses."""
    S = t.n_spines
    up, down = assignment_loads(t, assign)
    out: dict[int, int] = defaultdict(int)
    for a, b, j, s in zip(t.src, t.dst, t.job, assign):
        m = max(up[a * S + s], down[b * S + s])
        if m > out[j]:
            out[j] = m
    return dict(out)


def _at_least(values, k: int) -> int:
    return sum(1 for v in values if v >= k)


def round_value(t: FlowTable, layer: str, k: int, assign: list[int]) -> int:
    """n_k (layer "jobs": jobs at level >= k) or G_k ("links": links at >= k flows)."""
    if layer == "jobs":
        return _at_least(job_levels(t, assign).values(), k)
    up, down = assignment_loads(t, assign)
    return _at_least(up, k) + _at_least(down, k)


# -- lower bounds --------------------------------------------------------------------------------
def leaf_sides(t: FlowTable) -> list[tuple[dict[int, int], int]]:
    """Per leaf side (uplinks of a source leaf, downlinks of a destination leaf):
    (flows per job index, usable links)."""
    out = []
    for ends in (t.src, t.dst):
        per_job: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
        links: dict[int, set[int]] = defaultdict(set)
        for i, leaf in enumerate(ends):
            per_job[leaf][t.job[i]] += 1
            links[leaf].update(t.cand[i])
        out += [(dict(per_job[leaf]), len(links[leaf])) for leaf in sorted(per_job)]
    return out


def restricted_sides(t: FlowTable) -> list[tuple[dict[int, int], int]]:
    """Per leaf side and per set T of spines some of its leaf pairs are limited to (failed
    links at the far end): (flows per job index of the pairs limited to T, |T|)."""
    out = []
    for ends in (t.src, t.dst):
        by_leaf: dict[int, list[int]] = defaultdict(list)
        for i, leaf in enumerate(ends):
            by_leaf[leaf].append(i)
        for leaf in sorted(by_leaf):
            ids = by_leaf[leaf]
            full = frozenset().union(*(t.cand[i] for i in ids))
            for T in sorted({frozenset(t.cand[i]) for i in ids} - {full}, key=sorted):
                dj: dict[int, int] = defaultdict(int)
                for i in ids:
                    if T.issuperset(t.cand[i]):
                        dj[t.job[i]] += 1
                out.append((dict(dj), len(T)))
    return out


def hot_links(d: int, U: int, A: int, k: int) -> int:
    """m_k: the fewest of U links at >= k flows when they carry d flows, each at most A."""
    if A < k:
        return 0 if d <= A * U else U + 1          # (U + 1: impossible)
    return max(0, math.ceil((d - (k - 1) * U) / (A - k + 1)))


def clean_capacity(d: int, U: int, A: int, k: int) -> int:
    """Most flows of jobs below level k that a side of d flows over U links can carry."""
    return (k - 1) * (U - hot_links(d, U, A, k))


def side_arrays(sides: list[tuple[dict[int, int], int]]) -> tuple[np.ndarray, ...]:
    """The sides in the layout of mmf_search.fits_kernel: (starts, jobs, ns, Us)."""
    starts = np.zeros(len(sides) + 1, np.int64)
    jobs, ns = [], []
    for i, (dj, _) in enumerate(sides):
        for j, n in dj.items():
            jobs.append(j)
            ns.append(n)
        starts[i + 1] = len(jobs)
    return (starts, np.array(jobs, np.int64), np.array(ns, np.int64),
            np.array([U for _, U in sides], np.int64))


def side_ids_of_jobs(arrays: tuple[np.ndarray, ...], J: int) -> tuple[np.ndarray, ...]:
    """Per job index, the ids of the sides of `arrays` that hold its flows, ascending, and
    its flows there, as (ptr, ids, flows): job j's are at ptr[j]:ptr[j + 1]."""
    starts, jobs, ns, Us = arrays
    S = max(1, len(Us))
    side = np.repeat(np.arange(len(Us), dtype=np.int64), np.diff(starts))
    key = jobs * S + side
    order = np.argsort(key, kind="stable")
    ptr = np.zeros(J + 1, np.int64)
    ptr[1:] = np.cumsum(np.bincount(jobs, minlength=J)[:J]) if len(jobs) else 0
    return ptr, (key[order] % S).astype(np.int64), ns[order].astype(np.int64)


def sides_of_jobs(arrays: tuple[np.ndarray, ...], J: int) -> list[tuple[np.ndarray, ...]]:
    """Per job index, the sides of `arrays` (side_arrays' layout) that hold its flows, in
    the same layout and order."""
    starts, jobs, ns, Us = arrays
    size = np.diff(starts)
    side = np.repeat(np.arange(len(Us)), size)
    out = []
    for j in range(J):
        on = np.zeros(len(Us), dtype=bool)
        on[side[jobs == j]] = True
        keep = on[side]
        out.append((np.concatenate([[0], np.cumsum(size[on])]).astype(np.int64),
                    jobs[keep], ns[keep], Us[on]))
    return out


class Bounds:
    """Lower bounds on n_k and G_k from a relaxation: each job gets a level, and every leaf
    side (and every subset of its spines some pairs are limited to) must be able to carry its
    flows on links no fuller than their jobs' levels, ignoring that a flow's uplink and
    downlink share a spine. Searched exactly (depth first, jobs with the most flows first)
    within a budget of `work` side checks; past it, the bounds fall back to the per-side
    ones (a job alone over a side's clean capacity; the sum of the m_k). Deterministic:
    nothing here depends on the clock."""

    def __init__(self, t: FlowTable, A: int, top_proven: bool, work: int = 2_000_000):
        flows = [0] * len(t.job_names)
        for j in t.job:
            flows[j] += 1
        self.setup(A, top_proven, leaf_sides(t), restricted_sides(t), flows, work)

    def setup(self, A: int, top_proven: bool, full: list, restricted: list,
              flows: list[int], work: int) -> None:
        """`full` sides (disjoint links: the hot-link sums add up), `restricted` ones, and
        each job's flow count."""
        self.A, self.top_proven = A, top_proven
        self.full = full
        self.sides = full + restricted
        self.node_budget = max(100, work // max(1, len(self.sides)))
        J = self.J = len(flows)
        self.order = sorted(range(J), key=lambda j: (-flows[j], j))
        self.on_side = [[(j, n) for j, n in dj.items()] for dj, _ in self.sides]
        self._all = side_arrays(self.sides)
        self._full = side_arrays(full)
        # per job, the sides it is on (a search step that sets one job's level checks these)
        self._all_of = sides_of_jobs(self._all, J)
        self._full_of = sides_of_jobs(self._full, J)
        self._ids = side_ids_of_jobs(self._all, J)       # (the full sides come first)
        self._memo: dict[tuple, int] = {}
        self._fits_k, self._hot_k = kernel(fits_kernel), kernel(hot_kernel)

    def _floor(self, k: int) -> int:
        return 1 if self.top_proven and k <= self.A else 0

    def _fits(self, levels: list[int]) -> bool:
        """Every side can carry its flows (unassigned jobs, level 0, count as level A):
        mmf_search.fits_kernel (the plain loop: tests/unit/routing/mmf_reference.py)."""
        return bool(self._fits_k(np.asarray(levels, np.int64), self.A, *self._all))

    def _hot(self, levels: list[int], k: int) -> int:
        """Sum over full sides of the fewest links at >= k flows (unassigned: level A):
        mmf_search.hot_kernel (the plain loop: tests/unit/routing/mmf_reference.py)."""
        return int(self._hot_k(np.asarray(levels, np.int64), self.A, k, *self._full))

    def _fits_of(self, levels: np.ndarray, j: int) -> bool:
        """_fits over the sides job j is on only."""
        return bool(self._fits_k(levels, self.A, *self._all_of[j]))

    def _hot_of(self, levels: np.ndarray, k: int, j: int) -> int:
        """_hot over the full sides job j is on only."""
        return int(self._hot_k(levels, self.A, k, *self._full_of[j]))

    def _search_compiled(self, layer: str, k: int, fixes: dict[int, int]) -> int | None:
        """The bound search for layer "jobs" (jobs at >= k) or "links" (hot links at >= k),
        compiled (routing/mmf_search.py; the same search in Python, the tests' reference:
        tests/unit/routing/mmf_reference.py)."""
        done, best = kernel(search_kernel)(
            JOBS if layer == "jobs" else LINKS, k, self.A, np.array(self.order, np.int64),
            np.array(list(fixes), np.int64), np.array(list(fixes.values()), np.int64),
            self.node_budget, *self._all, len(self.full), *self._ids)
        return int(best) if done and best >= 0 else None

    def jobs(self, k: int, fixes: dict[int, int]) -> int:
        """Lower bound on n_k given the counts fixed so far (computed once per k and fixes)."""
        key = ("jobs", k, tuple(sorted(fixes.items())))
        if key not in self._memo:
            self._memo[key] = self._jobs(k, fixes)
        return self._memo[key]

    def _jobs(self, k: int, fixes: dict[int, int]) -> int:
        # unassigned jobs count as below k: the count can only rise as they are assigned
        found = self._search_compiled("jobs", k, fixes)
        if found is None:
            found = self._clean_bound(k)
        return max(found, self._floor(k))

    def links(self, k: int, fixes: dict[int, int]) -> int:
        """Lower bound on G_k given the job counts fixed by layer 1 (computed once per k and
        fixes)."""
        key = ("links", k, tuple(sorted(fixes.items())))
        if key not in self._memo:
            self._memo[key] = self._links(k, fixes)
        return self._memo[key]

    def _links(self, k: int, fixes: dict[int, int]) -> int:
        found = self._search_compiled("links", k, fixes)
        if found is None:
            found = sum(hot_links(sum(dj.values()), U, self.A, k) for dj, U in self.full)
        return max(found, self._floor(k))

    def _clean_bound(self, k: int) -> int:
        forced = set()
        for dj, U in self.sides:
            cap = clean_capacity(sum(dj.values()), U, self.A, k)
            forced |= {j for j, n in dj.items() if n > cap}
        return len(forced)


# -- symmetry ------------------------------------------------------------------------------------
def spine_classes(t: FlowTable) -> list[list[int]]:
    """Spines with the same live links (interchangeable in every solution), ascending."""
    by_sig: dict[tuple, list[int]] = defaultdict(list)
    for s in range(t.n_spines):
        sig = (tuple(row[s] for row in t.up_live), tuple(row[s] for row in t.down_live))
        by_sig[sig].append(s)
    return [c for c in by_sig.values() if len(c) > 1]


def first_appearance_limits(t: FlowTable, groups: Groups, order: list[tuple],
                            classes: list[list[int]]) -> dict[tuple, set[int]]:
    """Usable spines per group once each class's spines are named in order of first use along
    `order`: the m-th flow (0-based) that can use a class takes one of its first m + 1 spines,
    so a group's flows use only the class's first (flows before it + its own) spines."""
    allowed = {key: set(t.pair_cand[key[1], key[2]]) for key in groups}
    for cls in classes:
        members = set(cls)
        before = 0
        for key in order:
            cand = allowed[key]
            if not members & cand:
                continue
            n = len(groups[key])
            for r in range(before + n, len(cls)):
                cand.discard(cls[r])
            before += n
            if before >= len(cls):
                break
    return allowed


def relabel_first_appearance(t: FlowTable, groups: Groups, order: list[tuple],
                             classes: list[list[int]], assign: list[int]) -> list[int]:
    """The same solution with each class's spines renamed in order of first use along
    `order` (so that it meets `first_appearance_limits`); no load changes."""
    perm = list(range(t.n_spines))
    for cls in classes:
        members = set(cls)
        seen: list[int] = []
        for key in order:
            for i in groups[key]:
                s = assign[i]
                if s in members and s not in seen:
                    seen.append(s)
        rest = [s for s in cls if s not in seen]
        for old, new in zip(seen + rest, cls):
            perm[old] = new
    return [perm[s] for s in assign]


def max_weight_matching(w: list[list[int]]) -> list[int]:
    """Square assignment problem: p[r] = column of row r maximizing sum w[r][p[r]]
    (Hungarian algorithm, O(n^3))."""
    n = len(w)
    INF = float("inf")
    u = [0.0] * (n + 1)
    v = [0.0] * (n + 1)
    p = [0] * (n + 1)          # p[col] = row matched to col (1-based, 0 = none)
    way = [0] * (n + 1)
    for r in range(1, n + 1):
        p[0] = r
        c0 = 0
        minv = [INF] * (n + 1)
        used = [False] * (n + 1)
        while True:
            used[c0] = True
            r0, delta, c1 = p[c0], INF, 0
            for c in range(1, n + 1):
                if not used[c]:
                    cur = -w[r0 - 1][c - 1] - u[r0] - v[c]
                    if cur < minv[c]:
                        minv[c], way[c] = cur, c0
                    if minv[c] < delta:
                        delta, c1 = minv[c], c
            for c in range(n + 1):
                if used[c]:
                    u[p[c]] += delta
                    v[c] -= delta
                else:
                    minv[c] -= delta
            c0 = c1
            if p[c0] == 0:
                break
        while c0:
            c1 = way[c0]
            p[c0] = p[c1]
            c0 = c1
    out = [0] * n
    for c in range(1, n + 1):
        if p[c]:
            out[p[c] - 1] = c - 1
    return out


def rename_towards(t: FlowTable, classes: list[list[int]], assign: list[int],
                   prefer: list[int]) -> list[int]:
    """Rename spines within each class so that as many flows as possible are on their
    `prefer` spine (loads are unchanged)."""
    perm = list(range(t.n_spines))
    for cls in classes:
        pos = {s: r for r, s in enumerate(cls)}
        w = [[0] * len(cls) for _ in cls]
        for s, p in zip(assign, prefer):
            if s in pos and p in pos:
                w[pos[s]][pos[p]] += 1
        for r, c in enumerate(max_weight_matching(w)):
            perm[cls[r]] = cls[c]
    return [perm[s] for s in assign]

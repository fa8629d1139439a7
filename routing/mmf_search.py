"""mmf's bound search (routing/mmf_bounds.py's Bounds), compiled (`kernel`: built ahead of
time, else by numba on first use, cached beside this file): a depth-first search over job
levels with its order, pruning and node budget. The same search and side rules (side_fits,
side_hot_links) in plain Python are the tests' reference (tests/unit/routing/mmf_reference.py).

Sides are in the layout of fits_kernel below (starts, jobs, ns, Us), the full sides
first; per job, the sides it is on (CSR: ptr, ids) and its flows there. Each side's flows
per level are kept as a row and moved when a search step sets a job's level, so a step
checks only the rows of that job's sides. Mode JOBS minimizes the jobs at level >= k, mode
LINKS the sum over full sides of the fewest links at >= k flows. In mode JOBS a job tries only
the levels no higher one dominates (_undominated): a higher level fits wherever a lower one
does, so a level counts only where the objective or a fix changes above it.
"""
from __future__ import annotations

import numpy as np

from traffic.jit import Loops

JOBS, LINKS = 0, 1


def _side_fits(d, A, U) -> bool:
    """side_fits of a side with demand d (flows per level) over U links."""
    used = cap = total = 0
    for c in range(1, A + 1):
        total += d[c]
        if total > cap:
            n = (total - cap + c - 1) // c
            used += n
            cap += c * n
    return used <= U


def _side_hot(d, A, k, U) -> int:
    """side_hot_links of a side with demand d over U links."""
    for h in range(U + 1):
        cool, spare, hot, ok = U - h, 0, 0, True
        for c in range(1, A + 1):
            need = d[c] - spare
            if need <= 0:
                spare = -need
                continue
            if c < k - 1:
                n = (need + c - 1) // c
                if n > cool:
                    ok = False
                    break
                cool -= n
                spare = c * n - need
            else:
                if c == k - 1 or cool != 0:
                    spare += (k - 1) * cool
                    cool = 0
                    need = d[c] - spare
                    if need <= 0:
                        spare = -need
                        continue
                if c < k:
                    ok = False
                    break
                n = (need + c - 1) // c
                hot += n
                spare = c * n - need
        if ok and hot <= h:
            return h
    return U + 1


def _demand(levels, A, starts, jobs, ns, s, demand) -> None:
    """Side s's flows per level into demand (a job at level 0, unassigned, counts at A)."""
    demand[:] = 0
    for x in range(starts[s], starts[s + 1]):
        lv = levels[jobs[x]]
        demand[lv if lv > 0 else A] += ns[x]


def fits_kernel(levels, A, starts, jobs, ns, Us) -> bool:
    """side_fits over every side at once: side s holds ns[x] flows of job
    jobs[x] for x in starts[s]:starts[s + 1], over Us[s] links."""
    demand = np.zeros(A + 1, np.int64)
    for s in range(Us.shape[0]):
        _demand(levels, A, starts, jobs, ns, s, demand)
        if not _side_fits(demand, A, Us[s]):
            return False
    return True


def hot_kernel(levels, A, k, starts, jobs, ns, Us) -> int:
    """side_hot_links summed over every side (the layout of fits_kernel)."""
    demand = np.zeros(A + 1, np.int64)
    total = 0
    for s in range(Us.shape[0]):
        _demand(levels, A, starts, jobs, ns, s, demand)
        total += _side_hot(demand, A, k, Us[s])
    return total


def _set_level(j, new, levels, A, D, ptr, ids, nj) -> None:
    """Job j to level `new` (0: unassigned, counted at A), moving its flows between the
    levels of the demand rows of its sides."""
    old = levels[j]
    if old == new:
        return
    a, b = (old if old > 0 else A), (new if new > 0 else A)
    for y in range(ptr[j], ptr[j + 1]):
        D[ids[y], a] -= nj[y]
        D[ids[y], b] += nj[y]
    levels[j] = new


def _part(mode, levels, A, k, j, D, Us, n_full, ptr, ids) -> int:
    """The objective's terms that job j's level changes."""
    if mode == JOBS:
        return 1 if levels[j] >= k else 0
    total = 0
    for y in range(ptr[j], ptr[j + 1]):
        s = ids[y]
        if s < n_full:
            total += _side_hot(D[s], A, k, Us[s])
    return total


def _root(mode, k, A, D, Us, levels, n_full) -> tuple[bool, int]:
    """The root node: (every side fits with no level set, its objective)."""
    for s in range(Us.shape[0]):
        if not _side_fits(D[s], A, Us[s]):
            return False, 0
    value = 0
    if mode == JOBS:
        for x in range(levels.shape[0]):
            value += 1 if levels[x] >= k else 0
    else:
        for s in range(n_full):
            value += _side_hot(D[s], A, k, Us[s])
    return True, value


def _top_level(levels, fix_k, fix_n, A) -> int:
    """The highest level the fixes still allow the next job: below fix_k[f] once fix_n[f]
    jobs are at fix_k[f] or above."""
    hi = A
    for f in range(fix_k.shape[0]):
        at = 0
        for x in range(levels.shape[0]):
            if levels[x] >= fix_k[f]:
                at += 1
        if fix_n[f] - at < 1 and fix_k[f] - 1 < hi:
            hi = fix_k[f] - 1
    return hi


def _undominated(lv, top, k, fix_k, fix_n, J) -> int:
    """The first level from lv up to top that no higher one dominates when minimizing the
    jobs at >= k: a job's level lv + 1 fits wherever lv does (its flows may sit on fuller
    links) and counts the same unless lv + 1 is k or the level of a fix that can bind (at
    most fix_n < J jobs at >= fix_k), so only such lv, and top, need trying."""
    while lv < top:
        if lv + 1 == k:
            return lv
        for f in range(fix_k.shape[0]):
            if fix_k[f] == lv + 1 and fix_n[f] < J:
                return lv
        lv += 1
    return lv


def search_kernel(mode, k, A, order, fix_k, fix_n, budget, starts, jobs, ns, Us, n_full,
                  ptr, ids, nj) -> tuple[bool, int]:
    """Bounds._search with the objective of `mode` at k: (finished within `budget` nodes,
    the minimum found or -1 when nothing fits). Sides in fits_kernel's layout, the full
    ones (summed by the hot-link objective) first, n_full of them; per job its sides
    (ptr, ids, ascending) and its flows there (nj). Each side's flows per level are kept
    as rows D[side] and moved when a job's level is set."""
    J = order.shape[0]
    S = Us.shape[0]
    levels = np.zeros(J, np.int64)
    D = np.zeros((S, A + 1), np.int64)
    for s in range(S):
        for x in range(starts[s], starts[s + 1]):
            D[s, A] += ns[x]
    nxt = np.zeros(J + 1, np.int64)          # per depth: the next level to try
    top = np.zeros(J + 1, np.int64)          # per depth: the highest level the fixes allow
    rest = np.zeros(J + 1, np.int64)         # per depth: the objective without its job
    best, nodes = -1, 0
    idx, entering, parent_rest = 0, True, 0
    while True:
        if entering:                         # a new node at depth idx
            nodes += 1
            if nodes > budget:
                return False, best
            keep = True
            value = 0
            if idx == 0:
                keep, value = _root(mode, k, A, D, Us, levels, n_full)
            else:
                jp = order[idx - 1]
                for y in range(ptr[jp], ptr[jp + 1]):
                    if not _side_fits(D[ids[y]], A, Us[ids[y]]):
                        keep = False
                        break
                if keep:
                    value = parent_rest + _part(mode, levels, A, k, jp, D, Us, n_full, ptr, ids)
            if keep and best >= 0 and value >= best:
                keep = False
            if keep and idx == J:
                best = value
                keep = False
            if keep:
                j = order[idx]
                rest[idx] = value - _part(mode, levels, A, k, j, D, Us, n_full, ptr, ids)
                top[idx] = _top_level(levels, fix_k, fix_n, A)
                nxt[idx] = 1
            else:                            # back to the parent's next level
                if idx == 0:
                    return True, best
                idx -= 1
                _set_level(order[idx], 0, levels, A, D, ptr, ids, nj)
        entering = False
        j = order[idx]
        if nxt[idx] <= top[idx]:             # the next child of the node at depth idx
            lv = nxt[idx]
            if mode == JOBS:
                lv = _undominated(lv, top[idx], k, fix_k, fix_n, J)
            _set_level(j, lv, levels, A, D, ptr, ids, nj)
            nxt[idx] = lv + 1
            parent_rest = rest[idx]
            idx += 1
            entering = True
        else:
            _set_level(j, 0, levels, A, D, ptr, ids, nj)
            if idx == 0:
                return True, best
            idx -= 1
            _set_level(order[idx], 0, levels, A, D, ptr, ids, nj)


#: kernel(fn): fits_kernel, hot_kernel or search_kernel built ahead of time (traffic/aot.py: no
#: numba), else numba's with its helpers, numba's default options (division checks, the GIL
#: held); numba_kernel(name): numba's (traffic/aot.py's maker)
kernel = Loops("mmf searches its bounds", (fits_kernel, hot_kernel, search_kernel),
               ("_side_fits", "_side_hot", "_demand", "_set_level", "_part", "_root",
                "_top_level", "_undominated"), nogil=False, error_model="python")
numba_kernel = kernel.numba


def warm() -> None:
    """Make the kernels routing/mmf_bounds.py calls ready (`kernel`: numba compiles them, or
    loads them from its cache, with the argument types it passes) on one side of one job
    (run before mmf's timed solve)."""
    starts, jobs, ns, Us = (np.array([0, 1], np.int64), np.zeros(1, np.int64),
                            np.array([2], np.int64), np.ones(1, np.int64))
    ptr, ids, nj = np.array([0, 1], np.int64), np.zeros(1, np.int64), np.array([2], np.int64)
    levels, none = np.zeros(1, np.int64), np.zeros(0, np.int64)
    kernel(fits_kernel)(levels, 2, starts, jobs, ns, Us)
    kernel(hot_kernel)(levels, 2, 1, starts, jobs, ns, Us)
    for mode in (JOBS, LINKS):
        kernel(search_kernel)(mode, 1, 2, np.zeros(1, np.int64), none, none, 100, starts, jobs,
                              ns, Us, 1, ptr, ids, nj)

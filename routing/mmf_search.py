"""mmf's bound search (routing/mmf_bounds.py, Bounds._search), compiled (numba, cached beside
this file): the same depth-first search over job levels, the same order, pruning and node
budget, without a Python call per step.

Sides are in the layout of mmf_bounds.fits_kernel (starts, jobs, ns, Us); per job, the sides
it is on are given as index lists (CSR: ptr, ids), one for every side (the fit check) and one
for the full sides (the hot-link sum). Mode JOBS minimizes the jobs at level >= k, mode LINKS
the sum over full sides of the fewest links at >= k flows.
"""
from __future__ import annotations

import numba
import numpy as np

JOBS, LINKS = 0, 1


@numba.njit(cache=True)
def _side_fits(levels, A, s, starts, jobs, ns, Us, demand) -> bool:
    """mmf_bounds.side_fits of side s (unassigned jobs, level 0, count as level A)."""
    demand[:] = 0
    for x in range(starts[s], starts[s + 1]):
        lv = levels[jobs[x]]
        demand[lv if lv > 0 else A] += ns[x]
    used = cap = total = 0
    for c in range(1, A + 1):
        total += demand[c]
        if total > cap:
            n = (total - cap + c - 1) // c
            used += n
            cap += c * n
    return used <= Us[s]


@numba.njit(cache=True)
def _side_hot(levels, A, k, s, starts, jobs, ns, Us, demand) -> int:
    """mmf_bounds.side_hot_links of side s (as hot_kernel, for one side)."""
    demand[:] = 0
    for x in range(starts[s], starts[s + 1]):
        lv = levels[jobs[x]]
        demand[lv if lv > 0 else A] += ns[x]
    U = Us[s]
    for h in range(U + 1):
        cool, spare, hot, ok = U - h, 0, 0, True
        for c in range(1, A + 1):
            need = demand[c] - spare
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
                    need = demand[c] - spare
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


@numba.njit(cache=True)
def _part(mode, levels, A, k, j, full_ptr, full_ids, fstarts, fjobs, fns, fUs, demand) -> int:
    """The objective's terms that job j's level changes."""
    if mode == JOBS:
        return 1 if levels[j] >= k else 0
    total = 0
    for y in range(full_ptr[j], full_ptr[j + 1]):
        total += _side_hot(levels, A, k, full_ids[y], fstarts, fjobs, fns, fUs, demand)
    return total


@numba.njit(cache=True)
def search_kernel(mode, k, A, order, fix_k, fix_n, budget,
                  starts, jobs, ns, Us, all_ptr, all_ids,
                  fstarts, fjobs, fns, fUs, full_ptr, full_ids) -> tuple[bool, int]:
    """Bounds._search with the objective of `mode` at k: (finished within `budget` nodes,
    the minimum found or -1 when nothing fits)."""
    J = order.shape[0]
    levels = np.zeros(J, np.int64)
    demand = np.zeros(A + 1, np.int64)
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
            if idx == 0:
                for s in range(Us.shape[0]):
                    if not _side_fits(levels, A, s, starts, jobs, ns, Us, demand):
                        keep = False
                        break
                value = 0
                if keep:
                    if mode == JOBS:
                        for x in range(J):
                            value += 1 if levels[x] >= k else 0
                    else:
                        for s in range(fUs.shape[0]):
                            value += _side_hot(levels, A, k, s, fstarts, fjobs, fns, fUs,
                                               demand)
            else:
                jp = order[idx - 1]
                for y in range(all_ptr[jp], all_ptr[jp + 1]):
                    if not _side_fits(levels, A, all_ids[y], starts, jobs, ns, Us, demand):
                        keep = False
                        break
                value = 0
                if keep:
                    value = parent_rest + _part(mode, levels, A, k, jp, full_ptr, full_ids,
                                                fstarts, fjobs, fns, fUs, demand)
            if keep and best >= 0 and value >= best:
                keep = False
            if keep and idx == J:
                best = value
                keep = False
            if keep:
                j = order[idx]
                rest[idx] = value - _part(mode, levels, A, k, j, full_ptr, full_ids,
                                          fstarts, fjobs, fns, fUs, demand)
                hi = A
                for f in range(fix_k.shape[0]):
                    at = 0
                    for x in range(J):
                        if levels[x] >= fix_k[f]:
                            at += 1
                    if fix_n[f] - at < 1 and fix_k[f] - 1 < hi:
                        hi = fix_k[f] - 1
                top[idx] = hi
                nxt[idx] = 1
            else:                            # back to the parent's next level
                if idx == 0:
                    return True, best
                idx -= 1
                levels[order[idx]] = 0
        entering = False
        j = order[idx]
        if nxt[idx] <= top[idx]:             # the next child of the node at depth idx
            levels[j] = nxt[idx]
            nxt[idx] += 1
            parent_rest = rest[idx]
            idx += 1
            entering = True
        else:
            levels[j] = 0
            if idx == 0:
                return True, best
            idx -= 1
            levels[order[idx]] = 0


def csr(groups: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Index lists as (ptr, ids): group g is ids[ptr[g]:ptr[g + 1]]."""
    ptr = np.zeros(len(groups) + 1, np.int64)
    ptr[1:] = np.cumsum([len(g) for g in groups])
    ids = np.concatenate(groups).astype(np.int64) if groups else np.zeros(0, np.int64)
    return ptr, ids

"""mmf's descent on paths, compiled (`kernel`: built ahead of time, else by numba on first use,
cached beside this file): see routing/mmf_cuts.py.

State: load[e] (flows on link e), on[e, j] (job j's flows on it), hist[j, v] (links of job j
at load v: its level is the top v) and, per link, the flows on it as linked lists of
(flow, hop) slots, so that a chain finds the flows of one link without a scan.

A move takes flow i from path p to q. It *improves* when every link it adds stays below the
most loaded link it leaves (rem): the sorted load vector falls. It is *level* when exactly one
added link reaches rem (the vector is unchanged). A chain is a level move followed by an
improving move of another flow off the link that reached rem; together they improve. No move
puts a link above the level of a job on it (or of the flow's own job), so no job's level
rises. Flows are visited in order and ties go to the first path: deterministic.
"""
from __future__ import annotations

import numpy as np

from traffic.jit import Loops

IMPROVING, LEVEL = 0, 1


def _levels(hist: np.ndarray, level: np.ndarray) -> None:
    for k in range(hist.shape[0]):
        level[k] = 0
        for v in range(hist.shape[1] - 1, 0, -1):
            if hist[k, v]:
                level[k] = v
                break


def _shared(pl: np.ndarray, p: int, e: int) -> bool:
    for y in range(pl.shape[1]):
        if pl[p, y] == e:
            return True
    return False


def _best(i: int, kind: int, pl, lo, hi, job, assign, load, on, level) -> tuple[int, int]:
    """Flow i's best move of `kind` (the smallest (largest new load, sum of new loads), first
    path on ties): (path, the link that reaches rem for a level move), or (-1, -1). The
    check of the other jobs' levels on the added links, the costly one, is made only for a
    path that would be the best so far."""
    p, j, H = assign[i], job[i], pl.shape[1]
    best, best_m, best_s, best_e = -1, 0, 0, -1
    for q in range(lo[i], hi[i]):
        if q == p:
            continue
        rem = 0                                  # the most loaded link the flow leaves
        for x in range(H):
            e = pl[p, x]
            if e >= 0 and load[e] > rem and not _shared(pl, q, e):
                rem = load[e]
        if rem == 0:
            continue
        m, s, at, hot = 0, 0, 0, -1
        ok = True
        for x in range(H):
            e = pl[q, x]
            if e < 0 or _shared(pl, p, e):
                continue
            nv = load[e] + 1
            if nv > rem or nv > level[j]:
                ok = False
                break
            if nv == rem:
                at += 1
                hot = e
            m = max(m, nv)
            s += nv
        if not ok or (at != 0 if kind == IMPROVING else at != 1):
            continue
        if best >= 0 and not (m < best_m or (m == best_m and s < best_s)):
            continue
        if _jobs_allow(pl, p, q, load, on, level):
            best, best_m, best_s, best_e = q, m, s, hot
    return best, best_e


def _jobs_allow(pl, p: int, q: int, load, on, level) -> bool:
    """No link that path q adds (not on p) rises above the level of a job on it (a job on
    a link has level >= its load, so only loads reaching 2 and more need the check)."""
    for x in range(pl.shape[1]):
        e = pl[q, x]
        if e < 0 or _shared(pl, p, e):
            continue
        nv = load[e] + 1
        if nv > 1:
            for k in range(on.shape[1]):
                if on[e, k] != 0 and nv > level[k]:
                    return False
    return True


def _move(i: int, q: int, pl, job, assign, load, on, hist, head, nxt, prv) -> None:
    """Flow i to path q: loads, job counts and histograms, and the per-link flow lists."""
    p, j, H = assign[i], job[i], pl.shape[1]
    for x in range(H):                           # leave p's links
        e = pl[p, x]
        if e < 0:
            continue
        node = i * H + x
        if prv[node] >= 0:
            nxt[prv[node]] = nxt[node]
        else:
            head[e] = nxt[node]
        if nxt[node] >= 0:
            prv[nxt[node]] = prv[node]
        on[e, j] -= 1
        if on[e, j] == 0:
            hist[j, load[e]] -= 1
        for k in range(on.shape[1]):
            if on[e, k]:
                hist[k, load[e]] -= 1
                hist[k, load[e] - 1] += 1
        load[e] -= 1
    for x in range(H):                           # take q's
        e = pl[q, x]
        if e < 0:
            continue
        node = i * H + x
        nxt[node], prv[node] = head[e], -1
        if head[e] >= 0:
            prv[head[e]] = node
        head[e] = node
        for k in range(on.shape[1]):
            if on[e, k]:
                hist[k, load[e]] -= 1
                hist[k, load[e] + 1] += 1
        load[e] += 1
        on[e, j] += 1
        if on[e, j] == 1:
            hist[j, load[e]] += 1
    assign[i] = q


def descend_kernel(pl: np.ndarray, lo: np.ndarray, hi: np.ndarray, job: np.ndarray, J: int,
                   E: int, assign: np.ndarray, max_moves: int) -> int:
    """Improving moves and chains (module docstring) until none is left or max_moves were
    made; updates `assign` (path id per flow) and returns the moves made."""
    n, H = assign.shape[0], pl.shape[1]
    load = np.zeros(E, np.int64)
    on = np.zeros((E, J), np.int64)
    head = np.full(E, -1, np.int64)
    nxt = np.full(n * H, -1, np.int64)
    prv = np.full(n * H, -1, np.int64)
    for i in range(n):
        for x in range(H):
            e = pl[assign[i], x]
            if e >= 0:
                load[e] += 1
                on[e, job[i]] += 1
                node = i * H + x
                nxt[node] = head[e]
                if head[e] >= 0:
                    prv[head[e]] = node
                head[e] = node
    top = 1
    for e in range(E):
        top = max(top, load[e])
    hist = np.zeros((J, top + 2), np.int64)
    for e in range(E):
        for j in range(J):
            if on[e, j]:
                hist[j, load[e]] += 1
    level = np.zeros(J, np.int64)
    moves = 0
    moved = True
    stale = True                                 # `level` no longer that of `hist`
    while moved and moves < max_moves:
        moved = False
        for i in range(n):
            if stale:
                _levels(hist, level)
                stale = False
            q, _ = _best(i, IMPROVING, pl, lo, hi, job, assign, load, on, level)
            if q >= 0:
                _move(i, q, pl, job, assign, load, on, hist, head, nxt, prv)
                moves += 1
                moved = stale = True
                continue
            chain = _chain(i, pl, lo, hi, job, assign, load, on, hist, level, head, nxt, prv)
            stale = chain >= 0
            if chain > 0:
                moves += 2
                moved = True
            if moves >= max_moves:
                break
    return moves


def _chain(i, pl, lo, hi, job, assign, load, on, hist, level, head, nxt, prv) -> int:
    """Flow i's level move, then an improving move of another flow off the link it filled;
    undone when there is none. 1 when the pair was made, 0 when undone (`level` then is that
    after the level move), -1 when flow i has no level move (nothing changed)."""
    q, hot = _best(i, LEVEL, pl, lo, hi, job, assign, load, on, level)
    if q < 0:
        return -1
    p, H = assign[i], pl.shape[1]
    _move(i, q, pl, job, assign, load, on, hist, head, nxt, prv)
    _levels(hist, level)
    node = head[hot]
    while node >= 0:
        k = node // H
        node = nxt[node]
        if k == i:
            continue
        q2, _ = _best(k, IMPROVING, pl, lo, hi, job, assign, load, on, level)
        if q2 >= 0:
            _move(k, q2, pl, job, assign, load, on, hist, head, nxt, prv)
            return 1
    _move(i, p, pl, job, assign, load, on, hist, head, nxt, prv)
    return 0


def link_matrix_kernel(buf: np.ndarray, start: np.ndarray, hops: np.ndarray, step: np.ndarray,
                       H: int) -> np.ndarray:
    """(paths, H) link ids, -1 past a path's end, of paths whose link x is
    buf[start[p] + x * step[p]] for x < hops[p] (routing/paths.py's path_link_arrays): the
    descent's `pl`, in one pass with no temporaries."""
    out = np.empty((start.shape[0], H), np.int64)
    for p in range(start.shape[0]):
        for x in range(H):
            out[p, x] = buf[start[p] + x * step[p]] if x < hops[p] else -1
    return out


#: kernel(fn): descend_kernel or link_matrix_kernel built ahead of time (traffic/aot.py: no
#: numba), else numba's with its helpers, numba's default options (division checks, the GIL
#: held); numba_kernel(name): numba's (traffic/aot.py's maker)
kernel = Loops("mmf descends", (descend_kernel, link_matrix_kernel),
               ("_levels", "_shared", "_best", "_jobs_allow", "_move", "_chain"),
               nogil=False, error_model="python")
numba_kernel = kernel.numba


def warm() -> None:
    """Make link_matrix_kernel and descend_kernel ready (`kernel`: numba compiles them, or
    loads them from its cache, with the argument types routing/mmf_cuts.py passes) on one
    flow with two paths (run before mmf's timed solve)."""
    one = np.zeros(1, np.int64)
    two = np.full(2, 2, np.int64)
    pl = kernel(link_matrix_kernel)(np.array([0, 2, 1, 3], np.int64),
                                    np.arange(2, dtype=np.int64), two, two, 2)
    kernel(descend_kernel)(pl, one, one + 2, one, 1, 4, one.copy(), 10)

"""The annealing's move loop (routing/annealing.py) as plain Python that numba compiles, with
the random draws of Python's `random.Random` reproduced bit for bit, so the compiled search
takes the same moves, and returns the same routes, as the Python one it replaces.

Random numbers: `random.Random` is MT19937; its state (`getstate()[1]`: 624 words and the
position) goes in as one int64 array `st` and mt_word draws the next 32-bit output from it.
`random()` is mt_random (two words, 53 bits), `randrange(n)` is mt_below (the top
`n.bit_length()` bits of a word, drawn again while >= n), as CPython 3 computes them.

Paths: path p's link x is buf[start[p] + x * step[p]] for x < hops[p] (routing/paths.py's
path_link_arrays); flow i's candidate paths are lo[i] .. hi[i] - 1.
"""
from __future__ import annotations

import math
import random
import time

import numpy as np

from traffic.jit import Loops

_N, _M = 624, 397


def mt_state(rng: random.Random) -> np.ndarray:
    """The MT19937 state of `rng` as int64[625] (the 624 words, then the position)."""
    return np.array(rng.getstate()[1], dtype=np.int64)


def set_mt_state(rng: random.Random, st: np.ndarray) -> None:
    """Put the state `st` (mt_state's layout, advanced by the kernel) back into `rng`."""
    rng.setstate((3, tuple(int(x) for x in st), None))


def mt_word(st: np.ndarray) -> int:
    """The next 32-bit output of the MT19937 state `st` (regenerating the 624 words when
    used up), as CPython's genrand_uint32."""
    k = st[_N]
    if k >= _N:
        for j in range(_N):
            y = (st[j] & 0x80000000) | (st[(j + 1) % _N] & 0x7fffffff)
            v = st[(j + _M) % _N] ^ (y >> 1)
            if y & 1:
                v ^= 0x9908b0df
            st[j] = v
        k = 0
    y = st[k]
    st[_N] = k + 1
    y ^= y >> 11
    y ^= (y << 7) & 0x9d2c5680
    y ^= (y << 15) & 0xefc60000
    y ^= y >> 18
    return y


def mt_random(st: np.ndarray) -> float:
    """random.Random.random(): a float in [0, 1) from two words."""
    a = mt_word(st) >> 5
    b = mt_word(st) >> 6
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)


def mt_below(st: np.ndarray, n: int) -> int:
    """random.Random.randrange(n) for 0 < n < 2**32: n.bit_length() top bits of a word,
    drawn again while >= n."""
    k = 0
    m = n
    while m > 0:
        k += 1
        m >>= 1
    r = mt_word(st) >> (32 - k)
    while r >= n:
        r = mt_word(st) >> (32 - k)
    return r


def _pick_path(st, focus, movable, lo, hi, buf, start, hops, step, assign, load, M, mine):
    """One move of the path search (annealing.py's _pick_path): (flow, path, new path)."""
    n_mov = movable.shape[0]
    i = movable[mt_below(st, n_mov)]
    if mt_random(st) < focus:
        for _ in range(64):
            if _on_load(buf, start, hops, step, load, assign[i], M, -1):
                break                              # a flow on a link at the maximum
            i = movable[mt_below(st, n_mov)]
    p = assign[i]
    if mt_random(st) < focus:
        q, bestv = p, -1
        for y in range(hops[p]):                  # p's links: a flow moved off p keeps them
            mine[buf[start[p] + y * step[p]]] = True
        for c in range(lo[i], hi[i]):
            if c == p:
                continue
            v = 0
            for x in range(hops[c]):
                e = buf[start[c] + x * step[c]]
                v = max(v, load[e] + 1 - mine[e])
                if 0 <= bestv < v:                # c can neither win nor tie: no draw
                    break
            if bestv < 0 or v < bestv or (v == bestv and mt_random(st) < 0.5):
                q, bestv = c, v
        for y in range(hops[p]):
            mine[buf[start[p] + y * step[p]]] = False
    else:
        q = lo[i] + mt_below(st, hi[i] - lo[i])
    return i, p, q


#: In a descent (low-churn: only moves that lower the energy are taken), after this many moves
#: in a row that lowered nothing, _stuck checks every move; when none lowers the energy the
#: state can no longer change, and the loop stops: the routes of the whole budget, sooner.
STUCK_CHECK_MOVES = 4096


def _on(buf, start, hops, step, p, e):
    """Whether path p holds link e."""
    for x in range(hops[p]):
        if buf[start[p] + x * step[p]] == e:
            return True
    return False


def _stuck(movable, lo, hi, buf, start, hops, step, assign, load, M):
    """True when no move of one flow to another of its paths lowers the energy (M, the most
    flows on a link; N, the links at M): moving flow i from p to q lowers it exactly when
    every link of q not on p carries at most M - 1 flows and more of p's links not on q
    carry M than q's links not on p carry M - 1."""
    for i in movable:
        p = assign[i]
        if not _on_load(buf, start, hops, step, load, p, M, -1):
            continue                           # on no link at M: no move of it can help
        for q in range(lo[i], hi[i]):
            if q == p or _on_load(buf, start, hops, step, load, q, M, p):
                continue                       # a link of q alone would go past M
            fall = 0                           # links at M that the move leaves, net
            for y in range(hops[q]):
                e = buf[start[q] + y * step[q]]
                if load[e] == M - 1 and not _on(buf, start, hops, step, p, e):
                    fall -= 1
            for x in range(hops[p]):
                e = buf[start[p] + x * step[p]]
                if load[e] == M and not _on(buf, start, hops, step, q, e):
                    fall += 1
            if fall > 0:
                return False
    return True


def _on_load(buf, start, hops, step, load, p, M, skip):
    """Whether a link of path p carries at least M flows and is not on path `skip` (-1:
    none)."""
    for x in range(hops[p]):
        e = buf[start[p] + x * step[p]]
        if load[e] >= M and (skip < 0 or not _on(buf, start, hops, step, skip, e)):
            return True
    return False


def _shift(buf, start, hops, step, load, hist, p, q):
    """One flow from path p to path q (links both share keep their load), histogram kept."""
    _move(buf, start, hops, step, load, hist, p, q, -1)
    _move(buf, start, hops, step, load, hist, q, p, 1)


def _move(buf, start, hops, step, load, hist, a, b, delta):
    """Add `delta` to the load of each link of path a that path b does not hold."""
    for x in range(hops[a]):
        e = buf[start[a] + x * step[a]]
        if not _on(buf, start, hops, step, b, e):
            hist[load[e]] -= 1
            load[e] += delta
            hist[load[e]] += 1


def anneal_paths_kernel(st, movable, lo, hi, buf, start, hops, step, assign, load, hist, best,
                        M, K1, sticky, target_m, target_n, max_iters, t0, alpha, focus):
    """route_annealing_paths's loop: updates assign, load, hist and st in place, copies the
    best state seen ((M, N) lexicographic) into `best`; returns the moves tried."""
    best_m, best_n = M, hist[M]
    mine = np.zeros(load.shape[0], np.bool_)        # the links of the flow's path, marked
    T = t0
    it = 0
    idle = 0                                        # moves in a row that lowered nothing
    while movable.shape[0] > 0 and it < max_iters:
        it += 1
        idle += 1
        if sticky and idle > STUCK_CHECK_MOVES:
            if _stuck(movable, lo, hi, buf, start, hops, step, assign, load, M):
                break
            idle = 1
        i, p, q = _pick_path(st, focus, movable, lo, hi, buf, start, hops, step, assign,
                             load, M, mine)
        if q == p:
            continue
        old_e = M * K1 + hist[M]
        _shift(buf, start, hops, step, load, hist, p, q)
        newM = M
        for x in range(hops[q]):
            newM = max(newM, load[buf[start[q] + x * step[q]]])
        while hist[newM] == 0 and newM > 0:
            newM -= 1
        dE = newM * K1 + hist[newM] - old_e
        if dE < 0 or (not sticky and (dE == 0 or mt_random(st) < math.exp(-dE / T))):
            assign[i] = q
            M = newM
            idle = 0
            if M < best_m or (M == best_m and hist[M] < best_n):
                best_m, best_n = M, hist[M]
                best[:] = assign
                if best_m < target_m or (best_m == target_m and best_n <= target_n):
                    break
        else:
            _shift(buf, start, hops, step, load, hist, q, p)
        T *= alpha
    return it


#: kernel(anneal_paths_kernel): the loop built ahead of time (traffic/aot.py: no numba), else
#: compiled by numba on first use with the helpers it calls (or loaded from its on-disk
#: cache); plain Python, with a warning, without numba. No fastmath: the floats (exp,
#: cooling) match Python's. numba_kernel(name): numba's (traffic/aot.py's maker).
kernel = Loops("annealing runs its loop", (anneal_paths_kernel,),
               ("mt_word", "mt_random", "mt_below", "_pick_path", "_move", "_shift", "_on",
                "_on_load", "_stuck"))
numba_kernel = kernel.numba


def warm() -> float:
    """Make the compiled loop ready (compile, or load from numba's cache) on a one-flow
    problem; returns the seconds taken."""
    t0 = time.perf_counter()
    i64 = np.int64
    one, two = np.zeros(1, dtype=i64), np.array([0, 1], dtype=i64)
    kernel(anneal_paths_kernel)(
        mt_state(random.Random(0)), one, one, one + 2, two, two, one + [1, 1], one + [1, 1],
        one.copy(), np.array([1, 0], dtype=i64), np.array([1, 1, 0, 0], dtype=i64),
        one.copy(), 1, 3, False, 0, 0, 10, 2.0, 0.5, 0.7)
    return time.perf_counter() - t0

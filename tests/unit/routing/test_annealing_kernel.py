"""The annealing's compiled loop draws Python's random numbers: the same state gives the same
draws as random.Random, in plain Python and compiled, so the moves (and routes) stay the same."""
from __future__ import annotations

import random

import pytest

from routing import annealing_kernel as ak


@pytest.mark.parametrize("compiled", [False, True])
def test_draws_match_random_random(compiled):
    if compiled:
        ak.numba_kernel("anneal_paths_kernel")   # puts numba's compiled helpers in place
    rng = random.Random(11)
    rng.random()
    st = ak.mt_state(rng)
    for k in range(1500):                  # > 624 words: the state is regenerated twice
        n = (k * 7919) % 70_000 + 1
        assert ak.mt_below(st, n) == rng.randrange(n)
        assert ak.mt_random(st) == rng.random()
    other = random.Random()
    ak.set_mt_state(other, st)
    assert other.random() == rng.random()
    if compiled:
        assert hasattr(ak.mt_word, "py_func")   # the numba-compiled draws were checked


def test_warm_runs_the_loop():
    assert ak.warm() >= 0.0


def _case(rng: random.Random, n_links: int = 10, n_flows: int = 9):
    """A random path search state: each flow 2-4 candidate paths of 1-4 distinct links,
    laid out as path_link_arrays gives them (step 1), and a random assignment."""
    import numpy as np
    links, start, hops, lo, hi = [], [], [], [], []
    for _ in range(n_flows):
        lo.append(len(hops))
        for _ in range(rng.randint(2, 4)):
            path = rng.sample(range(n_links), rng.randint(1, 4))
            start.append(len(links))
            hops.append(len(path))
            links += path
        hi.append(len(hops))
    assign = [rng.randrange(a, b) for a, b in zip(lo, hi)]
    load = [0] * n_links
    for p in assign:
        for e in links[start[p]:start[p] + hops[p]]:
            load[e] += 1
    hist = [0] * (n_flows + 2)
    for v in load:
        hist[v] += 1
    as_array = lambda x: np.array(x, dtype=np.int64)          # noqa: E731
    return (as_array(links), as_array(start), as_array(hops), np.ones(len(hops), np.int64),
            as_array(lo), as_array(hi), as_array(assign), as_array(load), as_array(hist))


def _lowering_move(buf, start, hops, step, lo, hi, assign, load, hist, K1):
    """A move of one flow (i, new path) that lowers the energy, as the loop computes it (the
    move made, its energy taken, the move undone); None when there is none."""
    M = int(load.max())
    old_e = M * K1 + hist[M]
    for i in range(len(assign)):
        p = assign[i]
        for q in range(lo[i], hi[i]):
            if q == p:
                continue
            ak._shift(buf, start, hops, step, load, hist, p, q)
            new_m = max([M] + [load[buf[start[q] + x]] for x in range(hops[q])])
            while hist[new_m] == 0 and new_m > 0:
                new_m -= 1
            d_e = new_m * K1 + hist[new_m] - old_e
            ak._shift(buf, start, hops, step, load, hist, q, p)
            if d_e < 0:
                return i, q
    return None


def test_stuck_says_exactly_when_no_move_lowers_the_energy():
    """_stuck (the descent's stop) against every move made and undone, on random states and
    along a descent from each to where no move lowers the energy."""
    import numpy as np
    rng = random.Random(5)
    seen = {True: 0, False: 0}
    for _ in range(150):
        buf, start, hops, step, lo, hi, assign, load, hist = _case(rng)
        movable = np.arange(len(assign), dtype=np.int64)
        while True:
            move = _lowering_move(buf, start, hops, step, lo, hi, assign, load, hist,
                                  len(load) + 1)
            stuck = ak._stuck(movable, lo, hi, buf, start, hops, step, assign, load,
                              int(load.max()))
            assert stuck == (move is None)
            seen[stuck] += 1
            if move is None:
                break
            i, q = move
            ak._shift(buf, start, hops, step, load, hist, assign[i], q)
            assign[i] = q
    assert min(seen.values()) >= 150, seen         # every descent ended stuck


def test_a_descent_stopped_when_stuck_ends_where_the_whole_budget_does(monkeypatch):
    """Low-churn: the loop that checks for a local minimum every few idle moves and stops
    there leaves the best state, the assignment and the loads the whole budget leaves."""
    import numpy as np
    rng = random.Random(8)
    stops = 0
    for case in range(25):
        buf, start, hops, step, lo, hi, assign, load, hist = _case(rng, 14, 12)
        M = int(load.max())
        out = {}
        for check in (8, 10 ** 9):                 # every 8 idle moves, or never
            monkeypatch.setattr(ak, "STUCK_CHECK_MOVES", check)
            st = ak.mt_state(random.Random(case))
            a, lo_, hist_, best = assign.copy(), load.copy(), hist.copy(), assign.copy()
            tried = ak.anneal_paths_kernel(st, np.arange(len(assign), dtype=np.int64), lo, hi,
                                           buf, start, hops, step, a, lo_, hist_, best, M,
                                           len(load) + 1, True, 0, 0, 3000, 2.0, 0.998, 0.7)
            out[check] = (tried, best, a, lo_)
        assert all(np.array_equal(x, y) for x, y in zip(out[8][1:], out[10 ** 9][1:]))
        assert out[10 ** 9][0] == 3000
        stops += out[8][0] < 3000
    assert stops > 15                              # the check stopped most descents early

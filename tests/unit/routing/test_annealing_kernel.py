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

"""What the predictor's three kernel sets share (traffic/waterfill.py and traffic/dag_kernel.py
by numba at run time, the same built ahead of time by traffic/aot.py, traffic/waterfill_np.py
in numpy): their return codes, the no-weights argument and the compiled water-filling's
per-link scratch. Imports numpy only.
"""
from __future__ import annotations

import numpy as np

#: fill()'s and fill_with()'s return codes
OK, NO_FINITE_LINK = 0, 1
#: fill()'s and advance()'s weights when every flow uses each of its links fully
NO_WEIGHTS = np.zeros((0, 0))
#: complete()'s return codes: every done flow handled; job j's iteration ended with the flow
#: before `f`; flow `f` is Python's (a tail step); the new-flow buffer is full at flow `f`
SCANNED, ITERATION_ENDED, PYTHON, FULL = 0, 1, 2, 3


def scratch(n_links: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The compiled fill_with's per-link scratch for n_links links (capacity_mbps.size):
    reused across calls, it spares each call three arrays of the fabric's size (on the
    16,384-NIC clos3, 81,921 links: ~1 ms a call, thousands of calls per prediction)."""
    return np.zeros(n_links, np.int64), np.zeros(n_links), np.full(n_links, -1, np.int64)

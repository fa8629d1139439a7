"""The predictor's per-completion DAG step, compiled: flows that completed release their
successors.

Pure code (numba, no root). With K subflows every transfer is K parts, and a prediction
completes (transfers x iterations) flows: 912,384 on the 2,048-NIC clos3 with 5 jobs and
K = 8, where the Python loop (finish / release / admit per flow) was most of the time.

The jobs' DAGs are flat arrays over every job's transfers (global index = the job's offset +
the transfer's index in its job): successors and barrier groups as CSR, in-degrees, start
times and FCTs. `complete` does what `_Simulation.finish` does for one flow, in the same
order, and hands back to Python what only Python does: an iteration that ended (its record,
timers, the controller's epochs) and the completions of a job in its unrecorded tail step.
The float operation (FCT = now - start) is the one Python did, so results are bit-identical
(tests/unit/traffic/test_dag_kernel.py runs both, and the kernel as plain Python).
"""
from __future__ import annotations

import numba
import numpy as np

from .kernel_abi import FULL, ITERATION_ENDED, PYTHON, SCANNED  # noqa: F401 (this API's)



@numba.njit(cache=True)
def _push(j: int, s: int, t: float, off: np.ndarray, indeg: np.ndarray,
          started_at: np.ndarray, new_job: np.ndarray, new_tid: np.ndarray, n_new: int) -> int:
    """Transfer s (global) lost one dependency; when none is left it starts at t."""
    indeg[s] -= 1
    if indeg[s] == 0:
        started_at[s] = t
        new_job[n_new] = j
        new_tid[n_new] = s - off[j]
        n_new += 1
    return n_new


@numba.njit(cache=True)
def complete(f: int, done: np.ndarray, act_job: np.ndarray, act_tid: np.ndarray, t: float,
             off: np.ndarray, succ_ptr: np.ndarray, succ_idx: np.ndarray, grp_of: np.ndarray,
             grp_left: np.ndarray, grp_ptr: np.ndarray, grp_idx: np.ndarray,
             indeg: np.ndarray, started_at: np.ndarray, fct_cur: np.ndarray,
             job_done: np.ndarray, job_n: np.ndarray, python: np.ndarray,
             new_job: np.ndarray, new_tid: np.ndarray, n_new: int):
    """Complete the done flows from position f on, in order, at time t (s): each one's FCT,
    its successors (then its barrier group's, when it was the group's last) appended to
    new_job / new_tid when their last dependency completed. Stops after a flow that ended its
    job's iteration, and before a flow of a job flagged `python` or one whose releases might
    not fit the buffer. Returns (code, next f, n_new, completions, job)."""
    cap = new_job.size
    count = 0
    for f in range(f, done.size):
        if not done[f]:
            continue
        j = act_job[f]
        if python[j]:
            return PYTHON, f, n_new, count, j
        g = off[j] + act_tid[f]
        most = succ_ptr[g + 1] - succ_ptr[g]
        if grp_of[g] >= 0:
            most += grp_ptr[grp_of[g] + 1] - grp_ptr[grp_of[g]]
        if n_new + most > cap:
            return FULL, f, n_new, count, j
        fct_cur[g] = t - started_at[g]
        for k in range(succ_ptr[g], succ_ptr[g + 1]):
            n_new = _push(j, succ_idx[k], t, off, indeg, started_at, new_job, new_tid, n_new)
        b = grp_of[g]
        if b >= 0:
            grp_left[b] -= 1
            if grp_left[b] == 0:
                for k in range(grp_ptr[b], grp_ptr[b + 1]):
                    n_new = _push(j, grp_idx[k], t, off, indeg, started_at, new_job, new_tid,
                                  n_new)
        count += 1
        job_done[j] += 1
        if job_done[j] == job_n[j]:
            return ITERATION_ENDED, f + 1, n_new, count, j
    return SCANNED, done.size, n_new, count, -1


def warm() -> None:
    """Compile the kernel, or load it from numba's cache, on a one-flow DAG (once per
    process), so that a prediction's first batch does not pay for it."""
    one = np.zeros(1, np.int64)
    two = np.zeros(2, np.int64)
    complete(0, np.ones(1, np.bool_), one, one.copy(), 0.0, two, two.copy(), one.copy(),
             np.full(1, -1, np.int64), one.copy(), two.copy(), one.copy(), one.copy(),
             np.zeros(1), np.zeros(1), one.copy(), np.ones(1, np.int64),
             np.zeros(1, np.bool_), one.copy(), one.copy(), 0)

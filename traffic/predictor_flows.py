"""The predictor's flow buffers: the transfers that start in a batch (`Starting`) and the
flows in flight (`Active`), parallel arrays in buffers that grow by doubling; and how the
parts of a transfer split "adaptive" share its bytes in flight (`enter_tails`, `share_pools`).

Pure code (numpy). Bytes left in bytes, rates in Mbit/s.
"""
from __future__ import annotations

import numpy as np


class Starting:
    """The transfers that start in this batch, in order: (job, transfer index) pairs in
    buffers that grow by doubling (traffic/dag_kernel.py's complete appends to them)."""

    def __init__(self, capacity: int = 256):
        self.job = np.zeros(max(1, capacity), dtype=np.int64)
        self.tid = np.zeros(max(1, capacity), dtype=np.int64)
        self.n = 0

    def __len__(self) -> int:
        return self.n

    def grow(self, need: int = 0) -> None:
        cap = max(2 * self.job.size, need)
        for name in ("job", "tid"):
            old = getattr(self, name)
            new = np.zeros(cap, dtype=np.int64)
            new[:self.n] = old[:self.n]
            setattr(self, name, new)

    def append(self, j: int, i: int) -> None:
        if self.n == self.job.size:
            self.grow()
        self.job[self.n], self.tid[self.n] = j, i
        self.n += 1

    def extend(self, j: int, tids: np.ndarray) -> None:
        hi = self.n + tids.size
        if hi > self.job.size:
            self.grow(hi)
        self.job[self.n:hi], self.tid[self.n:hi] = j, tids
        self.n = hi

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Views of the (job, transfer) pairs."""
        return self.job[:self.n], self.tid[:self.n]

    def keep(self, mask: np.ndarray) -> None:
        """Keep only the pairs where mask (over the pairs) holds, in order."""
        job, tid = self.job[:self.n][mask], self.tid[:self.n][mask]
        self.n = job.size
        self.job[:self.n], self.tid[:self.n] = job, tid

    def clear(self) -> None:
        self.n = 0


class Active:
    """The flows in flight as parallel arrays in admission order: views [:n] of buffers that
    grow by doubling, so admitting and completing flows copies nothing else."""

    def __init__(self, width: int, kernels, capacity: int = 256):
        self.kernels = kernels                                # traffic.waterfill
        self.n = 0
        self._job = np.zeros(capacity, dtype=np.int64)        # job index
        self._tid = np.zeros(capacity, dtype=np.int64)        # transfer index in the job
        self._rem = np.zeros(capacity)                        # bytes left
        self._row = np.zeros(capacity, dtype=np.int64)        # connection row
        self._links = np.zeros((capacity, width), dtype=np.int64)
        self._rates = np.zeros(capacity)                      # Mbit/s
        self._done = np.zeros(capacity, dtype=np.bool_)
        self._view()

    def _view(self) -> None:
        n = self.n
        self.job, self.tid, self.rem = self._job[:n], self._tid[:n], self._rem[:n]
        self.row, self.links, self.rates = self._row[:n], self._links[:n], self._rates[:n]
        self.done = self._done[:n]

    def _grow(self, need: int) -> None:
        cap = self._rem.size
        while cap < need:
            cap *= 2
        for name in ("_job", "_tid", "_rem", "_row", "_links", "_rates", "_done"):
            old = getattr(self, name)
            new = np.zeros((cap,) + old.shape[1:], dtype=old.dtype)
            new[:self.n] = old[:self.n]
            setattr(self, name, new)

    def add(self, job: np.ndarray, tid: np.ndarray, rem: np.ndarray, row: np.ndarray,
            table: np.ndarray) -> None:
        """Admit flows: their job, transfer, bytes left and connection row; their links are
        table[row], copied straight into the buffer (the rows of 65,536 flows are 4 MB)."""
        lo, hi = self.n, self.n + job.size
        if hi > self._rem.size:
            self._grow(hi)
        self._job[lo:hi], self._tid[lo:hi], self._rem[lo:hi] = job, tid, rem
        self._row[lo:hi] = row
        np.take(table, row, axis=0, out=self._links[lo:hi], mode="clip")   # unbuffered
        self.n = hi
        self._view()

    def drop_done(self) -> None:
        """Remove the flows marked in `done` (remaining bytes clipped at 0)."""
        self.n = self.kernels.compact(self.done, self.job, self.tid, self.rem, self.row,
                                   self.links)
        self._view()


# -- split "adaptive": pools of bytes shared by a transfer's parts ----------------------------
def enter_tails(a: Active, jobs: list) -> None:
    """The parts marked done whose shared bytes are gone go on with the tail each held back
    (Job.held), at its own rate: what every subflow is still sending when the last piece has
    been taken (on average half a piece whatever the subflow's rate, and its unsent bytes)."""
    for f in np.flatnonzero(a.done).tolist():
        job, i = jobs[int(a.job[f])], int(a.tid[f])
        if job.pooled and job.pool[i] >= 0 and not job.in_tail[i]:
            job.in_tail[i] = True
            a.rem[f], a.done[f] = job.held[i], False


def share_pools(a: Active, jobs: list, job_offset: np.ndarray) -> None:
    """The parts of one transfer in flight hold its shared bytes in proportion to their rates,
    so they reach their tails together, when their summed rates have moved those bytes (the
    fluid limit of taking pieces as each subflow is free; a part with no rate keeps what it
    holds); each job's `carried` bytes follow."""
    pool = np.full(a.n, -1, dtype=np.int64)
    mine = {j: a.job == j for j, job in enumerate(jobs) if job.pooled}
    for j, m in mine.items():
        job = jobs[j]
        p = np.where(job.in_tail[a.tid[m]], -1, job.pool[a.tid[m]])
        pool[m] = np.where(p >= 0, job_offset[j] + p, -1)
    m = (pool >= 0) & (a.rates > 0)
    if not m.any():
        return
    _, inv = np.unique(pool[m], return_inverse=True)
    rem, rate = a.rem[m], a.rates[m]
    share = np.bincount(inv, rem)[inv] * rate / np.bincount(inv, rate)[inv]
    moved = np.zeros(a.n)
    moved[m] = share - rem
    a.rem[m] = share
    for j, mj in mine.items():
        jobs[j].carried[a.tid[mj]] += moved[mj]

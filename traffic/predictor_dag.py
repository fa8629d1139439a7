"""The predictor's job DAG state: each job's transfer DAG and per-iteration state (`Job`,
built whole or lazily when the job starts) and every job's DAG as flat arrays (`Dag`, the
state traffic/dag_kernel.py's `complete` reads and writes).

Pure code (numpy). A transfer's index is its position in plan.transfers; its global index in
a `Dag` is its job's offset + that index. Sizes in bytes, times in seconds.
"""
from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numpy as np

from traffic.collectives import ADAPTIVE_UNSENT_BYTES, JobPlan, Transfers
from traffic.connections import RowIndex
from traffic.prediction import JobResult, PredictorError

#: A lazy run's Dag keeps room for this many transfers (groups, edges) more than twice what
#: it holds when built whole.
SPARE_MIN = 1024


class Job:
    """Static DAG of one job (indices = positions in plan.transfers) and its per-iteration state.

    With ring_sync="step", transfers are grouped by (dependency component, step): a transfer
    of step k waits for its component's whole step k-1 through one barrier count (O(n) per
    step, not n^2 edges), which replaces its deps and connection predecessor in step k-1."""

    def __init__(self, plan: JobPlan, row_of_conn: dict[int, int], keep_fcts: bool,
                 ring_sync: str = "rank", lazy: bool = False):
        self.plan = plan
        spec = plan.spec
        self.name = spec.name
        self.iterations = int(spec.iterations)
        self.compute_s = float(spec.compute_s)
        self.start_s = float(spec.start_s)
        if self.iterations < 1:
            raise PredictorError(f"jobs.{self.name}.iterations: must be at least 1")
        if self.compute_s < 0 or self.start_s < 0:
            raise PredictorError(f"jobs.{self.name}: start_s and compute_s must be >= 0")
        self.iteration = 0
        self.communicating = False   # in an iteration, or past the last one (floodns's view)
        self.ccts: list[float] = []
        self.starts: list[float] = []
        self.ends: list[float] = []
        self._dag: Dag | None = None
        self._j = 0
        self.final: JobResult | None = None       # lazy: the result, kept once freed
        self._args = (row_of_conn, keep_fcts, ring_sync)
        self.built = False
        self.n = 0                                # transfers whose state is held
        if lazy:
            self._empty()
        else:
            self.build()

    def build(self) -> None:
        """The DAG's arrays and this job's per-iteration state (lazy jobs: when the job is
        about to start its first iteration)."""
        row_of_conn, keep_fcts, ring_sync = self._args
        plan, spec = self.plan, self.plan.spec
        self.built = True
        ts = plan.transfers
        n = len(ts)
        self.n = n
        tid, self.size, conn = _field(ts, "tid"), _field(ts, "size").astype(float), \
            _field(ts, "conn")
        pos = None                            # tid -> position, when tids are not 0..n-1
        if not np.array_equal(tid, np.arange(n)):
            pos = dict(zip(tid.tolist(), range(n)))
            if len(pos) != n:
                raise PredictorError(f"jobs.{self.name}: transfer ids are not unique")
        try:
            self.row = (row_of_conn.rows(conn) if isinstance(row_of_conn, RowIndex) else
                        np.array([row_of_conn[c] for c in conn.tolist()], dtype=np.int64))
        except KeyError as e:
            raise PredictorError(f"jobs.{self.name}: transfer on unknown connection {e}") from None
        self._pools(ts, pos, spec.split_piece_bytes)
        self.carried = self.size.copy()       # bytes each part carried this iteration
        self.carried_sum = np.zeros(n)
        src, dst = self._edges(ts, pos, tid, conn)
        # barrier groups (ring_sync "step"): each transfer's group, or -1; each group's size;
        # the transfers waiting on a group's barrier as CSR (group_ptr, group_next)
        self.group_of = np.full(n, -1, dtype=np.int64)
        self.group_size = np.zeros(0, dtype=np.int64)
        self.group_ptr = np.zeros(1, dtype=np.int64)
        self.group_next = np.zeros(0, dtype=np.int64)
        waits = np.zeros(n, dtype=np.int64)
        if ring_sync == "step" and n:
            src, dst, waits = self._barriers(ts, src, dst)
        # successors as CSR: succ_idx[succ_ptr[i]:succ_ptr[i + 1]], ascending
        self.succ_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=self.succ_ptr[1:])
        self.succ_idx = dst
        self.indeg0 = np.bincount(dst, minlength=n).astype(np.int64) + waits
        self.roots = np.flatnonzero(self.indeg0 == 0)
        if n and not self.roots.size:
            raise PredictorError(f"jobs.{self.name}: the transfer DAG has a cycle")
        # dynamic state: views of the Dag's flat arrays once bound (bind)
        self.indeg = self.indeg0.copy()
        self.group_left = np.array(self.group_size, dtype=np.int64)
        self.started_at = np.zeros(n)
        self.fct_cur = np.zeros(n)
        self.iter_start = 0.0
        self.fct_sum = np.zeros(n)
        self.fct_max = np.zeros(n)
        self.fct_all = np.zeros((self.iterations, n)) if keep_fcts else None

    def free(self) -> None:
        """Lazy jobs, once past their last iteration: keep the result, drop the DAG's arrays
        (the Dag is then rebuilt without them)."""
        self.final = self.result()
        self._empty()

    def _empty(self) -> None:
        """No DAG held (a lazy job not started yet, or freed)."""
        self.n = 0
        self.pooled = False
        empty_i, empty_f = np.zeros(0, np.int64), np.zeros(0)
        for name in ("size", "carried", "carried_sum", "fct_sum", "fct_max", "started_at",
                     "fct_cur", "held"):
            setattr(self, name, empty_f)
        for name in ("row", "pool", "group_of", "group_size", "group_next", "succ_idx",
                     "indeg0", "indeg", "group_left", "roots"):
            setattr(self, name, empty_i)
        self.succ_ptr = self.group_ptr = np.zeros(1, np.int64)
        self.in_tail = np.zeros(0, np.bool_)
        self.fct_all = None

    def bind(self, dag: Dag, j: int, carry: bool = False) -> None:
        """Keep the dynamic state in dag's flat arrays (job j's slices); carry: copy the
        state held so far into them first (a lazy run's rebuilt Dag)."""
        self._dag, self._j = dag, j
        lo, glo = dag.off[j], dag.grp_off[j]
        hi, ghi = lo + self.n, glo + len(self.group_size)
        if carry:
            dag.indeg[lo:hi], dag.started_at[lo:hi] = self.indeg, self.started_at
            dag.fct_cur[lo:hi], dag.grp_left[glo:ghi] = self.fct_cur, self.group_left
        self.indeg, self.started_at, self.fct_cur = (dag.indeg[lo:hi], dag.started_at[lo:hi],
                                                     dag.fct_cur[lo:hi])
        self.group_left = dag.grp_left[glo:ghi]

    @property
    def done(self) -> int:
        """Transfers complete in this iteration (tail step: its roots)."""
        return int(self._dag.job_done[self._j])

    @done.setter
    def done(self, value: int) -> None:
        self._dag.job_done[self._j] = value

    @property
    def tail(self) -> bool:
        """Running the unrecorded tail step (Semantics.tail_step): its completions are
        Python's (the compiled DAG step hands them back)."""
        return bool(self._dag.python[self._j])

    @tail.setter
    def tail(self, value: bool) -> None:
        self._dag.python[self._j] = value

    def _edges(self, ts: Sequence, pos: dict[int, int] | None, tid: np.ndarray,
               conn: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The DAG's edges (predecessor, transfer), each once, sorted: a transfer's deps and
        the transfer before it on its connection (list order). pos None: tids are 0..n-1."""
        n = len(ts)
        if not n:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        if isinstance(ts, Transfers):
            n_deps, dep = np.diff(ts.dep_ptr), ts.dep.copy()
        else:
            n_deps = np.fromiter((len(t.deps) for t in ts), np.int64, n)
            dep = np.fromiter(chain.from_iterable(t.deps for t in ts), np.int64,
                              int(n_deps.sum()))
        if pos is None:                                  # tids 0..n-1 in order: no lookup
            dep[(dep < 0) | (dep >= n)] = -1
        else:
            dep = np.array([pos.get(d, -1) for d in dep.tolist()], dtype=np.int64)
        if (dep < 0).any():
            k = int(np.flatnonzero(dep < 0)[0])
            t = ts[int(np.searchsorted(np.cumsum(n_deps), k, side="right"))]
            d = [d for d in t.deps if (d not in pos if pos is not None
                                       else not 0 <= d < n)][0]
            raise PredictorError(f"jobs.{self.name}: transfer {t.tid} depends on "
                                 f"unknown transfer {d}")
        order = np.argsort(conn, kind="stable")
        same = conn[order[1:]] == conn[order[:-1]]
        src = np.concatenate([dep, order[:-1][same]])
        dst = np.concatenate([np.repeat(np.arange(n, dtype=np.int64), n_deps), order[1:][same]])
        key = np.sort(src * n + dst)
        first = np.ones(key.size, dtype=np.bool_)
        first[1:] = key[1:] != key[:-1]
        key = key[first]                                            # each edge once
        return key // n, key % n

    def _pools(self, ts: Sequence, pos: dict[int, int] | None, piece_bytes: int) -> None:
        """split "adaptive": `pool`, the position of each part's first part (-1: a fixed part),
        and `held`, the tail (bytes) each part keeps back: half a piece, the mean of what a
        subflow is still sending when the last piece is taken, plus what its socket may hold
        unsent (ADAPTIVE_UNSENT_BYTES). A pool of S bytes in K parts is shared only while more
        than K tails are left; a pool too small for that stays K even parts."""
        n = len(ts)
        if isinstance(ts, Transfers):                 # the array planners: no pools
            pool = np.full(n, -1, dtype=np.int64)
        elif pos is None:
            pool = np.fromiter((t.pool for t in ts), np.int64, n)
            pool[(pool < 0) | (pool >= n)] = -1
        else:
            pool = np.array([pos.get(t.pool, -1) for t in ts], dtype=np.int64)
        total = np.bincount(pool[pool >= 0], self.size[pool >= 0], minlength=len(ts))
        parts = np.bincount(pool[pool >= 0], minlength=len(ts))
        tail = piece_bytes / 2 + ADAPTIVE_UNSENT_BYTES
        small = (pool >= 0) & (total[np.maximum(pool, 0)] < parts[np.maximum(pool, 0)]
                               * (tail + 1))
        pool[small] = -1
        self.pool = pool
        self.pooled = bool((pool >= 0).any())
        self.held = np.where(pool >= 0, tail, 0.0)
        self.in_tail = np.zeros(len(ts), dtype=np.bool_)   # sending only its tail

    def _barriers(self, ts: Sequence, src: np.ndarray, dst: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Step sync: one barrier per (component, step), numbered in order of first
        appearance; edges from the previous step of the same component are replaced by that
        step's barrier. Returns the edges left and each transfer's barrier count (0 or 1)."""
        n = len(ts)
        parent = list(range(n))

        def root(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i
        for p, i in zip(src.tolist(), dst.tolist()):
            parent[root(p)] = root(i)
        comp = np.array([root(i) for i in range(n)], dtype=np.int64)
        step = _field(ts, "step")
        lo = int(step.min())
        span = int(step.max()) - lo + 2               # keys of (component, step - 1) stay apart
        keys, first, inverse = np.unique(comp * span + step - lo, return_index=True,
                                         return_inverse=True)
        rank = np.empty(keys.size, dtype=np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(keys.size)
        self.group_of = rank[inverse]
        self.group_size = np.bincount(self.group_of, minlength=keys.size).astype(np.int64)
        prev_key = comp * span + step - 1 - lo
        at = np.minimum(np.searchsorted(keys, prev_key), keys.size - 1)
        g_prev = np.where(keys[at] == prev_key, rank[at], -1)
        keep = (g_prev[dst] < 0) | (self.group_of[src] != g_prev[dst])
        waiting = np.flatnonzero(g_prev >= 0)
        by_group = waiting[np.argsort(g_prev[waiting], kind="stable")]
        self.group_next = by_group
        self.group_ptr = np.zeros(keys.size + 1, dtype=np.int64)
        np.cumsum(np.bincount(g_prev[waiting], minlength=keys.size), out=self.group_ptr[1:])
        return src[keep], dst[keep], (g_prev >= 0).astype(np.int64)

    # -- one iteration ------------------------------------------------------------------------
    def begin(self, t: float) -> None:
        self.indeg[:] = self.indeg0
        self.group_left[:] = self.group_size
        self.done = 0
        self.iter_start = t
        self.started_at[:] = t
        self.communicating = True
        if self.pooled:
            self.carried[:] = self.size
            self.in_tail[:] = False

    def release(self, i: int) -> list[int]:
        """Transfer i completed: the transfers that may start now (the reference of
        traffic/dag_kernel.py's complete)."""
        out = []
        indeg = self.indeg
        for s in self.succ_idx[self.succ_ptr[i]:self.succ_ptr[i + 1]].tolist():
            indeg[s] -= 1
            if indeg[s] == 0:
                out.append(s)
        g = int(self.group_of[i])
        if g >= 0:
            self.group_left[g] -= 1
            if self.group_left[g] == 0:
                for s in self.group_next[self.group_ptr[g]:self.group_ptr[g + 1]].tolist():
                    indeg[s] -= 1
                    if indeg[s] == 0:
                        out.append(s)
        return out

    def record(self, t: float) -> None:
        """The iteration ended at t."""
        self.ccts.append(t - self.iter_start)
        self.starts.append(self.iter_start)
        self.ends.append(t)
        self.fct_sum += self.fct_cur
        self.carried_sum += self.carried
        np.maximum(self.fct_max, self.fct_cur, out=self.fct_max)
        if self.fct_all is not None:
            self.fct_all[self.iteration] = self.fct_cur
        self.iteration += 1
        self.communicating = False

    def result(self) -> JobResult:
        if self.final is not None:
            return self.final
        runs = max(self.iteration, 1)
        return JobResult(
            name=self.name, cct_s=self.ccts, iteration_start_s=self.starts,
            iteration_end_s=self.ends,
            # the plan's own arrays where they are the values (16 B per transfer less each)
            transfer_bytes=self.carried_sum / runs if self.pooled
            else _field(self.plan.transfers, "size"),
            transfer_conn=_field(self.plan.transfers, "conn"),
            fct_mean_s=self.fct_sum / runs, fct_max_s=self.fct_max.copy(), fct_s=self.fct_all)


_FIELDS = {"tid": "tid", "size": "size_bytes", "conn": "conn_id", "step": "step"}


def _field(ts: Sequence, name: str) -> np.ndarray:
    """One int64 field of every transfer (Transfers: its array itself; do not write it)."""
    if isinstance(ts, Transfers):
        return getattr(ts, name)
    attr = _FIELDS[name]
    return np.fromiter((getattr(t, attr) for t in ts), np.int64, len(ts))


def _stack_csr(ptrs: list[np.ndarray], idxs: list[np.ndarray], off: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per-job CSR arrays (ptr, idx with job-local indices) as one: rows in job order,
    indices shifted by each job's offset."""
    ptr, idx, base = [np.zeros(1, np.int64)], [np.zeros(0, np.int64)], 0
    for p, x, lo in zip(ptrs, idxs, off):
        ptr.append(p[1:] + base)
        idx.append(x + lo)
        base += x.size
    return np.concatenate(ptr), np.concatenate(idx)


class Dag:
    """Every job's DAG as flat arrays (a transfer's global index: its job's offset + its
    index in the job), the state traffic/dag_kernel.py's complete reads and writes: successors
    and barrier groups as CSR with global indices, in-degrees, start times, FCTs, each job's
    completions in its iteration and its size, and the jobs whose completions are Python's."""

    def __init__(self, jobs: list[Job], prev: Dag | None = None, spare: bool = False):
        """prev: the Dag this one replaces (a lazy run's, full): every job's state so far
        is carried over. spare: room for as much again (`add` appends jobs there)."""
        sizes = [job.n for job in jobs]
        self.off = np.cumsum([0] + sizes).astype(np.int64)
        self.grp_off = np.cumsum([0] + [len(job.group_size) for job in jobs]).astype(np.int64)
        n = int(self.off[-1])
        self.succ_ptr, self.succ_idx = _stack_csr([job.succ_ptr for job in jobs],
                                                   [job.succ_idx for job in jobs], self.off)
        self.grp_ptr, self.grp_idx = _stack_csr([job.group_ptr for job in jobs],
                                                [job.group_next for job in jobs], self.off)
        self.grp_of = np.concatenate(
            [np.where(job.group_of >= 0, job.group_of + glo, -1)
             for job, glo in zip(jobs, self.grp_off)] + [np.zeros(0, np.int64)])
        self.grp_left = np.zeros(int(self.grp_off[-1]), dtype=np.int64)
        self.indeg = np.zeros(n, dtype=np.int64)
        self.started_at = np.zeros(n)
        self.fct_cur = np.zeros(n)
        self.job_done = np.zeros(len(jobs), dtype=np.int64) if prev is None \
            else prev.job_done.copy()
        self.job_n = np.array(sizes, dtype=np.int64)
        self.python = np.zeros(len(jobs), dtype=np.bool_) if prev is None \
            else prev.python.copy()
        # what admitting a transfer needs: its bytes to send now and its connection row
        self.size = np.concatenate([job.size for job in jobs]) if jobs else np.zeros(0)
        self.any_zero = bool((self.size <= 0).any())      # zero-byte transfers to complete
        self.admit_bytes = np.concatenate(
            [job.size - job.held if job.pooled else job.size for job in jobs]) \
            if jobs else np.zeros(0)
        self.row = np.concatenate([job.row for job in jobs]) if jobs else \
            np.zeros(0, dtype=np.int64)
        self.top, self.gtop = n, int(self.grp_off[-1])      # used: transfers, groups
        self.itop, self.gitop = self.succ_idx.size, self.grp_idx.size   # used: CSR indices
        self.held = n                                       # transfers of jobs not freed
        if spare:
            self._spare()
        for j, job in enumerate(jobs):
            job.bind(self, j, carry=prev is not None)

    def _spare(self) -> None:
        """Every array twice its used length (+SPARE_MIN): room for `add`."""
        def pad(names: tuple[str, ...], used: int) -> None:
            for name in names:
                a = getattr(self, name)
                b = np.zeros(2 * used + SPARE_MIN + (a.size - used), dtype=a.dtype)
                b[:a.size] = a
                setattr(self, name, b)
        pad(("succ_ptr", "grp_of", "indeg", "started_at", "fct_cur", "size", "admit_bytes",
             "row"), self.top)
        pad(("succ_idx",), self.itop)
        pad(("grp_ptr", "grp_left"), self.gtop)
        pad(("grp_idx",), self.gitop)

    def add(self, j: int, job: Job) -> bool:
        """A lazy run's job j, just built, appended in the spare room (its state carried);
        False when it does not fit (then build a new Dag with spare room)."""
        n, g = job.n, len(job.group_size)
        e, ge = job.succ_idx.size, job.group_next.size
        lo, glo, ilo, gilo = self.top, self.gtop, self.itop, self.gitop
        if (lo + n >= self.size.size or ilo + e > self.succ_idx.size
                or glo + g >= self.grp_left.size or gilo + ge > self.grp_idx.size):
            return False
        self.off[j], self.grp_off[j] = lo, glo
        self.succ_ptr[lo + 1:lo + n + 1] = job.succ_ptr[1:] + ilo
        self.succ_idx[ilo:ilo + e] = job.succ_idx + lo
        self.grp_ptr[glo + 1:glo + g + 1] = job.group_ptr[1:] + gilo
        self.grp_idx[gilo:gilo + ge] = job.group_next + lo
        self.grp_of[lo:lo + n] = np.where(job.group_of >= 0, job.group_of + glo, -1)
        self.size[lo:lo + n] = job.size
        self.admit_bytes[lo:lo + n] = job.size - job.held if job.pooled else job.size
        self.row[lo:lo + n] = job.row
        self.any_zero |= bool((job.size <= 0).any())
        self.job_n[j] = n
        job.bind(self, j, carry=True)
        self.top, self.gtop, self.itop, self.gitop = lo + n, glo + g, ilo + e, gilo + ge
        self.held += n
        return True

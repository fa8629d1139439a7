"""Flow-level predictor: an event-driven fluid simulation of the jobs' transfer DAGs.

Pure code (numpy), no root. Between two events every active transfer moves at a constant rate:
the max-min fair allocation over the directed link capacities (progressive filling, vectorized
over an active-flows x links incidence given as index arrays). Events are transfer completions,
iteration starts and, with a `router`, fabric events (failures, repairs); every event within
`batch_tol_s` of the earliest is processed in the same batch, and rates are recomputed once per
batch. With a router, routes also change when jobs start or finish (the controller's epochs).

Semantics (exactly those of traffic/collectives.py and the emulated agents):

* a transfer starts when every transfer in its `deps` is complete AND the previous transfer on
  the same connection (list order) is complete; it then carries `size_bytes` over its
  connection's path (host -> leaf [-> switches ... -> leaf] -> host: the route from
  `spine_of`, or from the router's latest routes; a route is a switch path from
  Fabric.switch_paths, or in a leaf-spine fabric simply its spine's name);
* a job's first iteration starts at `start_s`; an iteration ends when all of its transfers are
  complete (CCT = end - start); the job then computes for `compute_s` and starts the next one.

Rates are in Mbit/s, sizes in bytes, times in seconds. Link capacities are
`Fabric.capacity_mbps(u, v) x goodput_factor` (goodput_factor models TCP/IP overhead).
Memory: the simulation keeps one iteration's state per job (the DAG, start times, remaining
bytes of active flows); outputs are per-iteration CCTs, per-transfer FCT summaries (mean and
max over iterations; every iteration's FCTs only with keep_fcts=True) and per-link utilization
(time-weighted mean and max, optionally a series in bins of `util_bin_s`).

The run is a `_Simulation`: `step()` processes one batch (advance the fluid, complete flows,
fire timers, zero-byte transfers, epochs, admit new flows, recompute rates). Entry points:
`predict(fabric, plans, spine_of, goodput_factor=1.0, *, router=None, util_bin_s=None,
keep_fcts=False, batch_tol_s=1e-9, semantics=OURS) -> Prediction` and `ideal(...)` (the same
workload where only the host links limit). Records and `Semantics` (ours, or floodns's):
traffic/prediction.py; the numpy water-filling reference `max_min_rates`: traffic/rates.py.
"""
from __future__ import annotations

import heapq
import time
from collections.abc import Sequence
from itertools import chain

import numpy as np

from testbed.fabric import Fabric
from traffic import jit
from traffic.collectives import ADAPTIVE_UNSENT_BYTES, JobPlan, Transfers, unique_connections
from .prediction import (OURS, RECOMPUTES, RING_SYNCS, JobResult, Prediction,  # noqa: F401
                         PredictorError, Router, Semantics)
from .rates import max_min_rates  # noqa: F401

#: The per-completion DAG step compiled (traffic/dag_kernel.py), or the Python reference
#: (_Simulation.finish per flow): the same results bit for bit (tests/unit/test_dag_kernel.py).
COMPILED_DAG = True


#: Past this many transfers in all plans, `predict` and `ideal` build each job's DAG when it
#: starts and drop it after its last iteration (lazy): below it, the whole DAG at once.
LAZY_TRANSFERS = 1_000_000


#: A lazy run's _Dag keeps room for this many transfers (groups, edges) more than twice what
#: it holds when built whole.
SPARE_MIN = 1024


def path_width(fabric: Fabric) -> int:
    """Link slots per connection row: the longest host-to-host path's links (shorter paths
    are padded with a dummy link of infinite capacity)."""
    return fabric.max_path_links


class _Job:
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
        self._dag: _Dag | None = None
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
            self.row = np.array([row_of_conn[c] for c in conn.tolist()], dtype=np.int64)
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
        # dynamic state: views of the _Dag's flat arrays once bound (bind)
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
        (the _Dag is then rebuilt without them)."""
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

    def bind(self, dag: _Dag, j: int, carry: bool = False) -> None:
        """Keep the dynamic state in dag's flat arrays (job j's slices); carry: copy the
        state held so far into them first (a lazy run's rebuilt _Dag)."""
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


class _Dag:
    """Every job's DAG as flat arrays (a transfer's global index: its job's offset + its
    index in the job), the state traffic/dag_kernel.py's complete reads and writes: successors
    and barrier groups as CSR with global indices, in-degrees, start times, FCTs, each job's
    completions in its iteration and its size, and the jobs whose completions are Python's."""

    def __init__(self, jobs: list[_Job], prev: _Dag | None = None, spare: bool = False):
        """prev: the _Dag this one replaces (a lazy run's, full): every job's state so far
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
        # what _admit needs per transfer: its bytes to send now and its connection row
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

    def add(self, j: int, job: _Job) -> bool:
        """A lazy run's job j, just built, appended in the spare room (its state carried);
        False when it does not fit (then build a new _Dag with spare room)."""
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


class _New:
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


UNROUTED = -1   # link index of a connection that crosses leaves but has no spine (yet)


def _conn_links(fabric: Fabric, plans: list[JobPlan], spine_of: dict[int, str | None] | None,
                nonblocking: bool, allow_unrouted: bool = False
                ) -> tuple[np.ndarray, dict[int, int]]:
    """(C, path_width) link indices per connection (pad = len(fabric.links)) and conn_id -> row.
    allow_unrouted: an inter-leaf connection without a route gets UNROUTED instead of an error
    (a router gives it one when its job starts). Each row is `_conn_row`'s, built per distinct
    (leaf pair, route) rather than per connection; the first bad connection in row order
    raises `_conn_row`'s error."""
    width, pad = path_width(fabric), len(fabric.links)
    conns = unique_connections(plans)
    host_of, per_host = fabric.host_ends
    route_of: dict = {None: 0}
    n = len(conns)
    ends = np.empty((n, 2), dtype=np.int64)         # host index of src, dst (-1: unknown)
    code = np.zeros(n, dtype=np.int64)              # route_of's index of the route
    routes = spine_of or {}
    row_of: dict[int, int] = {}
    dup = n
    for r, c in enumerate(conns):
        if c.conn_id in row_of:
            dup = r
            break
        row_of[c.conn_id] = r
        ends[r] = host_of.get(c.src, -1), host_of.get(c.dst, -1)
        code[r] = route_of.setdefault(routes.get(c.conn_id), len(route_of))
    ends, code = ends[:dup], code[:dup]
    hosts = np.array(per_host + [(-1, 0, 0)], dtype=np.int64).reshape(-1, 3)  # [-1]: unknown
    src, dst = hosts[ends[:, 0]], hosts[ends[:, 1]]
    table = np.full((dup, width), pad, dtype=np.int64)
    table[:, 0], table[:, -1] = src[:, 1], dst[:, 2]
    bad = (ends < 0).any(axis=1)
    cross = ~bad & (src[:, 0] != dst[:, 0]) & (not nonblocking)
    if cross.any():
        bad |= _route_middles(fabric, table, cross, src[:, 0], dst[:, 0], code,
                              list(route_of), allow_unrouted)
    if bad.any():
        r = int(np.argmax(bad))
        _conn_row(fabric, conns[r], routes.get(conns[r].conn_id), width, nonblocking,
                  allow_unrouted)
        raise AssertionError(f"row {r} is bad but _conn_row built it")  # pragma: no cover
    if dup < n:
        raise PredictorError(f"connection id {conns[dup].conn_id} appears twice")
    return table, row_of


def _route_middles(fabric: Fabric, table: np.ndarray, cross: np.ndarray, a: np.ndarray,
                   b: np.ndarray, code: np.ndarray, route: list, allow_unrouted: bool
                   ) -> np.ndarray:
    """Fill the switch links of the rows `cross` (leaves a != b; route[code] a spine's name, a
    switch path or None) into table; return the rows whose route is failed, unknown or
    missing (missing: only unless allow_unrouted)."""
    width, pad = table.shape[1], len(fabric.links)
    leaves, n_leaves, n_routes = fabric.leaves, len(fabric.leaves), len(route)
    rows = np.flatnonzero(cross)
    uniq, inv = np.unique((a[rows] * n_leaves + b[rows]) * n_routes + code[rows],
                          return_inverse=True)
    middle = np.full((len(uniq), width - 2), pad, dtype=np.int64)
    ok = np.ones(len(uniq), dtype=bool)
    for k, key in enumerate(uniq.tolist()):
        pair, ic = divmod(key, n_routes)
        s, la, lb = route[ic], leaves[pair // n_leaves], leaves[pair % n_leaves]
        if s is None:
            middle[k], ok[k] = UNROUTED, allow_unrouted
            continue
        path = (la, s, lb) if isinstance(s, str) else tuple(s)
        ids = fabric.route_links(path) if path[0] == la and path[-1] == lb else None
        if ids is None:
            ok[k] = False
        else:
            middle[k, :len(ids)] = ids
    table[rows, 1:-1] = middle[inv.reshape(-1)]
    bad = np.zeros(len(table), dtype=bool)
    bad[rows] = ~ok[inv.reshape(-1)]
    return bad


def _conn_row(fabric: Fabric, c, s: str | tuple | None, width: int, nonblocking: bool,
              allow_unrouted: bool) -> list[int]:
    """Connection c's link indices when routed via s (a spine's name, a switch path, or
    None): _conn_links's row."""
    li = fabric.link_index
    try:
        a, b = fabric.leaf_of(c.src), fabric.leaf_of(c.dst)
    except KeyError as e:
        raise PredictorError(f"jobs.{c.job}: host {e} is not in the fabric") from None
    ends = (li[(c.src, a)], li[(b, c.dst)])
    if nonblocking or a == b:
        return [ends[0], *[len(fabric.links)] * (width - 2), ends[1]]
    if s is None:
        if allow_unrouted:
            return [ends[0], *[UNROUTED] * (width - 2), ends[1]]
        raise PredictorError(f"flow {c.job}:{c.src}->{c.dst} (conn {c.conn_id}) crosses "
                             f"{a}->{b} but has no route")
    path = (a, s, b) if isinstance(s, str) else tuple(s)
    ids = fabric.route_links(path) if path[0] == a and path[-1] == b else None
    if ids is None:
        raise PredictorError(f"flow {c.job}:{c.src}->{c.dst} (conn {c.conn_id}) is routed "
                             f"via {'/'.join(path[1:-1]) or s}, which is failed or unknown "
                             f"between {a} and {b}")
    return [ends[0], *ids, *[len(fabric.links)] * (width - 2 - len(ids)), ends[1]]


def _spray_links(fabric: Fabric, plans: list[JobPlan], width: int
                 ) -> tuple[np.ndarray, np.ndarray, dict[int, int]]:
    """Per-packet spraying: each connection's host links (weight 1) and every link of its leaf
    pair's live shortest paths, weighted by the share of those paths crossing it
    (Fabric.spray_shares); (C, width) link indices, their weights, conn_id -> row."""
    pad = len(fabric.links)
    conns = unique_connections(plans)
    table = np.full((len(conns), width), pad, dtype=np.int64)
    weights = np.ones((len(conns), width))
    li = fabric.link_index
    row_of: dict[int, int] = {}
    for r, c in enumerate(conns):
        row_of[c.conn_id] = r
        a, b = fabric.leaf_of(c.src), fabric.leaf_of(c.dst)
        table[r, 0], table[r, width - 1] = li[(c.src, a)], li[(b, c.dst)]
        if a == b:
            continue
        shares = fabric.spray_shares(a, b)
        if not shares:
            raise PredictorError(f"flow {c.job}:{c.src}->{c.dst} (conn {c.conn_id}): no live "
                                 f"path between {a} and {b} to spray over")
        for k, (i, w) in enumerate(shares):
            table[r, 1 + k], weights[r, 1 + k] = i, w
    return table, weights, row_of


def spray_width(fabric: Fabric, plans: list[JobPlan]) -> int:
    """Link slots per connection row under per-packet spraying: its two host links and the
    links of every shortest path of its leaf pair with nothing failed (so that repairs fit)."""
    from testbed.fabric import build_fabric
    whole = build_fabric(fabric.spec.with_failures((), ()))
    pairs = {(fabric.leaf_of(c.src), fabric.leaf_of(c.dst)) for c in unique_connections(plans)}
    return 2 + max((len(whole.spray_shares(a, b)) for a, b in pairs if a != b), default=0)


class _Active:
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
            links: np.ndarray) -> None:
        lo, hi = self.n, self.n + job.size
        if hi > self._rem.size:
            self._grow(hi)
        self._job[lo:hi], self._tid[lo:hi], self._rem[lo:hi] = job, tid, rem
        self._row[lo:hi], self._links[lo:hi] = row, links
        self.n = hi
        self._view()

    def drop_done(self) -> None:
        """Remove the flows marked in `done` (remaining bytes clipped at 0)."""
        self.n = self.kernels.compact(self.done, self.job, self.tid, self.rem, self.row,
                                   self.links)
        self._view()


class _Simulation:
    """One run of the fluid model: the state `predict` advances from event batch to batch.

    Active flows are parallel arrays (job index, transfer index, remaining bytes, connection
    row, link rows); timers are iteration starts (job index >= 0) and fabric events
    (negative); `step()` advances to the next batch and returns False when nothing is left."""

    def __init__(self, fabric: Fabric, plans: list[JobPlan],
                 spine_of: dict[int, str | None] | None, goodput_factor: float,
                 nonblocking: bool, batch_tol_s: float, util_bin_s: float | None,
                 keep_fcts: bool, router: Router | None, semantics: Semantics,
                 spray: bool = False, lazy: bool = False):
        # compiled (numba's import, compiling or loading them is not the prediction's time)
        # or numpy, by size (traffic/jit.py); bit for bit the same results
        self.kernels, self.dag_kernel = jit.kernels(
            sum(len(p.transfers) * p.spec.iterations for p in plans), spray and not nonblocking,
            len(fabric.links))
        self.compiled_dag = COMPILED_DAG and self.dag_kernel is not None
        self.wall0 = time.perf_counter()
        if not goodput_factor > 0:
            raise PredictorError("goodput_factor must be positive")
        if util_bin_s is not None and not util_bin_s > 0:
            raise PredictorError("util_bin_s must be positive")
        semantics.check()
        names = [p.name for p in plans]
        if len(set(names)) != len(names):
            raise PredictorError("job names must be unique")
        self.fabric, self.plans, self.router, self.sem = fabric, plans, router, semantics
        self.goodput_factor, self.nonblocking = goodput_factor, nonblocking
        self.batch_tol_s, self.util_bin_s = batch_tol_s, util_bin_s
        self.links = list(fabric.links)
        self.n_links = len(self.links)
        self.nominal = np.array(fabric.capacities_mbps, dtype=float)
        self.cap = np.append(self.nominal * goodput_factor, np.inf)     # + the pad link
        self.scratch = self.kernels.scratch(self.cap.size)           # the water-filling's
        self.spray = spray and not nonblocking
        self.width = spray_width(fabric, plans) if self.spray else path_width(fabric)
        self.conn_weights = None                  # per-packet spraying's link shares
        if self.spray:
            self.conn_table, self.conn_weights, row_of = _spray_links(fabric, plans,
                                                                      self.width)
        else:
            self.conn_table, row_of = _conn_links(fabric, plans, spine_of, nonblocking,
                                                  allow_unrouted=router is not None)
        self.conn_of_row = np.array(sorted(row_of, key=row_of.get), dtype=np.int64)
        self.row_of = row_of
        self.unrouted = bool((self.conn_table == UNROUTED).any())   # some row has no route
        self.conns = unique_connections(plans)     # by row
        # lazy: a job's DAG is built when it starts its first iteration and dropped after
        # its last, so memory follows the jobs in flight (the _Dag is rebuilt each time)
        self.lazy = lazy
        self.jobs = [_Job(p, row_of, keep_fcts, semantics.ring_sync, lazy) for p in plans]
        self.dag = _Dag(self.jobs, spare=lazy)
        self.new = _New()                         # the transfers starting in this batch
        self.pooled = any(job.pooled for job in self.jobs) or (lazy and any(
            p.spec.split == "adaptive" and p.spec.subflows > 1 for p in plans))
        self.job_offset = np.cumsum([0] + [len(p.transfers) for p in plans])[:-1]
        self.fabric_now = fabric
        self.last_routes: dict | None = None       # the router's latest routes
        self.n_reroutes = 0
        self.active = _Active(self.width, self.kernels)
        self.util_integral = np.zeros(self.n_links + 1)
        self.load = np.zeros(self.n_links + 1)                    # Mbit/s, at current rates
        self.util_max = np.zeros(self.n_links + 1)
        self.series: dict[int, np.ndarray] = {}
        self.timers: list[tuple[float, int, int]] = []            # (time, seq, job)
        self.seq = 0
        self._streams(plans)
        for j, job in enumerate(self.jobs):
            if not self.waiting[j]:
                self._push(job.start_s, j)
        if router is not None:
            for k, t in enumerate(router.event_times()):
                self._push(float(t), -1 - k)
        self.jobs_left = len(self.jobs)
        self.started: list[str] = []          # first iterations begun in this batch
        self.finished: list[str] = []         # jobs that ended their last iteration
        self.iteration_bounds = 0             # later iterations begun or ended (recompute)
        # recompute="flows": re-plan when the flows in flight changed, at most once per gap
        self.replans_flows = router is not None and semantics.recompute == "flows"
        self.replan_gap_s = semantics.replan_min_interval_s or 0.0
        self.flows_dirty = False
        self.last_replan_s = -np.inf
        self.now = 0.0
        self.batches = self.completions = self.n_rounds = 0

    def _streams(self, plans: list[JobPlan]) -> None:
        """JobSpec.after: job j starts once every job it waits for has ended (+ its gap)."""
        index = {p.name: j for j, p in enumerate(plans)}
        self.waiting = [len(p.spec.after) for p in plans]
        self.ready_at = [float(p.spec.start_s) for p in plans]
        self.then: list[list[tuple[int, float]]] = [[] for _ in plans]
        for j, p in enumerate(plans):
            for name, gap in p.spec.after:
                if name not in index:
                    raise PredictorError(f"jobs.{p.name}.after: no job named {name!r}")
                self.then[index[name]].append((j, float(gap)))

    def _release(self, j: int, t: float) -> None:
        """Job j ended its last iteration at t: the jobs waiting for it may be due."""
        for k, gap in self.then[j]:
            self.ready_at[k] = max(self.ready_at[k], t + gap)
            self.waiting[k] -= 1
            if not self.waiting[k]:
                self._push(self.ready_at[k], k)

    def _push(self, t: float, j: int) -> None:
        heapq.heappush(self.timers, (t, self.seq, j))
        self.seq += 1

    # -- routes --------------------------------------------------------------------------------
    def reroute(self, spines: dict[int, str | None], new_fabric: Fabric) -> None:
        """New routes from the router: every flow in flight follows them from now."""
        self.n_reroutes += 1
        if new_fabric is self.fabric_now and (spines is self.last_routes
                                              or spines == self.last_routes):
            return                        # nothing moved (ECMP's one hash: the same object)
        if list(new_fabric.links) != self.links:
            raise PredictorError("a router's fabric must have the same links as the original")
        old, self.last_routes = self.last_routes, spines
        same_fabric, self.fabric_now = new_fabric is self.fabric_now, new_fabric
        if self.spray:                     # the live paths of the new fabric, whatever routes
            self.conn_table, self.conn_weights, _ = _spray_links(new_fabric, self.plans,
                                                                 self.width)
        elif same_fabric and old is not None:
            self._moved_rows(old, self.last_routes)
        else:
            self.conn_table, _ = _conn_links(new_fabric, self.plans, spines,
                                             self.nonblocking, allow_unrouted=True)
        a = self.active
        a.links[:] = self.conn_table[a.row]
        self.unrouted = bool((self.conn_table == UNROUTED).any())

    def _moved_rows(self, old: dict, new: dict) -> None:
        """On the same fabric, only the connections whose route changed get a new row (in
        row order, so that a bad route is named as _conn_links would name it)."""
        row_of = self.row_of
        moved = sorted((row_of[c] for c in old.keys() | new.keys()
                        if c in row_of and old.get(c) != new.get(c)))
        for r in moved:
            c = self.conns[r]
            self.conn_table[r] = _conn_row(self.fabric_now, c, new.get(c.conn_id), self.width,
                                           self.nonblocking, True)

    # -- the jobs' DAGs ------------------------------------------------------------------------
    def _job_over(self, j: int) -> None:
        """Job j is past its last iteration (and its tail step): no longer counted; a lazy
        run keeps its result and drops its DAG (its slots in the _Dag stay unused until the
        _Dag is next built whole)."""
        job = self.jobs[j]
        self.jobs_left -= 1
        self.finished.append(job.name)
        if self.lazy:
            self.dag.held -= job.n
            job.free()

    def start_iteration(self, j: int, t: float, new: _New) -> None:
        job = self.jobs[j]
        if not job.built:                 # lazy: appended, or the _Dag built whole again
            job.build()
            if not self.dag.add(j, job):
                self.dag = _Dag(self.jobs, self.dag, spare=True)
        if job.iteration == 0:
            self.started.append(job.name)
        elif self.sem.recompute == "iterations":
            self.iteration_bounds += 1
        job.begin(t)
        new.extend(j, job.roots)

    def finish(self, j: int, i: int, t: float, new: _New) -> None:
        """Transfer i of job j completes at t: release successors, maybe end the iteration
        (the reference of traffic/dag_kernel.py's complete, and its tail steps)."""
        self.completions += 1
        job = self.jobs[j]
        if job.tail:
            job.done += 1
            if job.done == len(job.roots):
                self._job_over(j)
            return
        job.fct_cur[i] = t - job.started_at[i]
        for s in job.release(i):
            job.started_at[s] = t
            new.append(j, s)
        job.done += 1
        if job.done == job.n:
            self.end_iteration(j, t)

    def end_iteration(self, j: int, t: float) -> None:
        job = self.jobs[j]
        job.record(t)
        if (self.sem.recompute == "iterations"
                and any(o.communicating for o in self.jobs if o is not job)):
            self.iteration_bounds += 1
        if job.iteration < job.iterations:
            self._push(t + job.compute_s, j)
            return
        self._release(j, t)
        if self.sem.tail_step and job.roots.size:
            job.tail = True
            self._push(t + job.compute_s, j)
        else:
            self._job_over(j)

    # -- one batch -----------------------------------------------------------------------------
    def _advance(self, t_next: float, done_by_s: float) -> None:
        """Move the fluid from now to t_next at the current rates (utilization integrals, bytes
        left); mark the flows with at most done_by_s seconds left as done."""
        dt = t_next - self.now
        a = self.active
        if a.n:
            self.kernels.advance(a.rem, a.rates, a.links, dt, done_by_s, self.util_integral,
                                 self.util_max, self.load, a.done, self._weights())
            if self.util_bin_s is not None and dt > 0:
                self._bin(self.load, t_next)
        self.now = t_next

    def _bin(self, load: np.ndarray, t_next: float) -> None:
        w = self.util_bin_s
        for b in range(int(self.now // w), int(t_next // w) + 1):
            lo, hi = max(self.now, b * w), min(t_next, (b + 1) * w)
            if hi > lo:
                if b not in self.series:
                    self.series[b] = np.zeros(self.n_links + 1)
                self.series[b] += load * (hi - lo)

    def _complete(self, new: _New) -> None:
        """The flows marked done complete now, in admission order."""
        a = self.active
        if self.pooled:
            self._enter_tails()
        if self.compiled_dag:
            self._complete_compiled(new)
        else:
            for f in np.flatnonzero(a.done).tolist():
                self.finish(int(a.job[f]), int(a.tid[f]), self.now, new)
        a.drop_done()

    def _complete_compiled(self, new: _New) -> None:
        """_complete's loop by traffic/dag_kernel.py's complete; Python does what it hands
        back (an iteration's end, a tail step's completion, a larger buffer)."""
        a, k = self.active, self.dag_kernel
        f = 0
        while True:
            d = self.dag                    # a lazy run rebuilds it as jobs end
            code, f, new.n, count, j = k.complete(
                f, a.done, a.job, a.tid, self.now, d.off, d.succ_ptr, d.succ_idx, d.grp_of,
                d.grp_left, d.grp_ptr, d.grp_idx, d.indeg, d.started_at, d.fct_cur,
                d.job_done, d.job_n, d.python, new.job, new.tid, new.n)
            self.completions += count
            if code == k.SCANNED:
                return
            if code == k.ITERATION_ENDED:
                self.end_iteration(j, self.now)
            elif code == k.PYTHON:
                self.finish(j, int(a.tid[f]), self.now, new)
                f += 1
            else:
                new.grow()

    def _enter_tails(self) -> None:
        """split "adaptive": parts whose shared bytes are gone go on with the tail each held
        back, at its own rate: what every subflow is still sending when the last piece has
        been taken (on average half a piece whatever the subflow's rate, and its unsent
        bytes)."""
        a = self.active
        for f in np.flatnonzero(a.done).tolist():
            job, i = self.jobs[int(a.job[f])], int(a.tid[f])
            if job.pooled and job.pool[i] >= 0 and not job.in_tail[i]:
                job.in_tail[i] = True
                a.rem[f], a.done[f] = job.held[i], False

    def _fire_timers(self, new: _New) -> None:
        """Iteration starts and fabric events due now."""
        while self.timers and self.timers[0][0] <= self.now + self.batch_tol_s:
            _, _, j = heapq.heappop(self.timers)
            if j < 0:
                reroute_fabric, spines = self.router.fire(-1 - j, self.now)
                self.reroute(spines, reroute_fabric)
                continue
            self.start_iteration(j, self.now, new)
            if self.jobs[j].n == 0:
                self.end_iteration(j, self.now)

    def _epochs(self) -> None:
        """The controller's epochs: jobs that start, then jobs that finished; with
        recompute=iterations also every later iteration's start and end (floodns)."""
        r = self.router
        if r is not None:
            if self.started:
                self.reroute(r.jobs_started(self.started, self.now), self.fabric_now)
            for name in self.finished:
                self.reroute(r.job_finished(name, self.now), self.fabric_now)
            if self.iteration_bounds:
                self.reroute(r.recompute(self.now), self.fabric_now)
        self.finished.clear()
        self.started.clear()
        self.iteration_bounds = 0

    def _weights(self) -> np.ndarray:
        """The active flows' link weights (per-packet spraying), or the kernels' 'all 1'."""
        if self.conn_weights is None:
            return self.kernels.NO_WEIGHTS
        return self.conn_weights[self.active.row]

    def _replan_flows(self, changed: bool) -> None:
        """recompute="flows": the router re-plans the connections in flight whenever they
        changed, or when a re-plan held back by the minimum interval falls due."""
        self.flows_dirty |= changed
        if not self.flows_dirty:
            return
        if self.now < self.last_replan_s + self.replan_gap_s - self.batch_tol_s:
            return                        # held: step() wakes at last + gap
        self.flows_dirty = False
        self.last_replan_s = self.now
        in_flight = np.unique(self.conn_of_row[self.active.row]).tolist()
        self.reroute(self.router.flows_changed(in_flight, self.now), self.fabric_now)

    def _admit(self, new: _New) -> None:
        job, tid = new.pairs()
        g = self.dag.off[job] + tid
        rows = self.dag.row[g]
        self.active.add(job, tid, self.dag.admit_bytes[g], rows, self.conn_table[rows])

    def _check_routed(self) -> None:
        a = self.active
        if self.router is None or not a.n or not self.unrouted:
            return
        unrouted = (a.links == UNROUTED).any(axis=1)
        if unrouted.any():
            f = int(np.nonzero(unrouted)[0][0])
            job = self.jobs[int(a.job[f])]
            t = job.plan.transfers[int(a.tid[f])]
            raise PredictorError(f"jobs.{job.name}: connection {t.conn_id} carries a transfer "
                                 f"at t={self.now:.6g} s but the router gave it no spine")

    def step(self) -> bool:
        """Process the next batch of events; False when the run is over."""
        a = self.active
        dt_flow = float(self.kernels.horizon(a.rem, a.rates)) if a.n else np.inf
        t_timer = self.timers[0][0] if self.timers else np.inf
        if self.flows_dirty:            # a re-plan held back by replan_min_interval_s
            t_timer = min(t_timer, self.last_replan_s + self.replan_gap_s)
        t_next = min(self.now + dt_flow, t_timer)
        if not np.isfinite(t_next) or self.jobs_left == 0:
            return False
        dt = t_next - self.now
        self._advance(t_next, dt + self.batch_tol_s)
        self.batches += 1
        new = self.new
        new.clear()
        completions = self.completions
        if a.n:
            self._complete(new)
        self._fire_timers(new)
        self._zero_bytes(new)
        self._epochs()
        if len(new):
            self._admit(new)
        if self.replans_flows:
            self._replan_flows(self.completions > completions or len(new) > 0)
        self._check_routed()
        max_min_rates(a.links, self.cap, out=a.rates,
                      weights=self._weights() if self.spray else None, scratch=self.scratch,
                      kernels=self.kernels)
        if self.pooled:
            self._share_pools()
        self.n_rounds += 1
        return True

    def _zero_bytes(self, new: _New) -> None:
        """Zero-byte transfers complete at once (in order; what they release too)."""
        while len(new) and self.dag.any_zero:
            job, tid = new.pairs()
            zero = self.dag.size[self.dag.off[job] + tid] <= 0
            if not zero.any():
                return
            done = list(zip(job[zero].tolist(), tid[zero].tolist()))
            new.keep(~zero)
            for j, i in done:
                self.finish(j, i, self.now, new)

    def _share_pools(self) -> None:
        """split "adaptive": the parts of one transfer in flight hold its shared bytes in
        proportion to their rates, so they reach their tails together, when their summed rates
        have moved those bytes (the fluid limit of taking pieces as each subflow is free; a
        part with no rate keeps what it holds)."""
        a = self.active
        pool = np.full(a.n, -1, dtype=np.int64)
        mine = {j: a.job == j for j, job in enumerate(self.jobs) if job.pooled}
        for j, m in mine.items():
            job = self.jobs[j]
            p = np.where(job.in_tail[a.tid[m]], -1, job.pool[a.tid[m]])
            pool[m] = np.where(p >= 0, self.job_offset[j] + p, -1)
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
            self.jobs[j].carried[a.tid[mj]] += moved[mj]

    # -- results -------------------------------------------------------------------------------
    def result(self) -> Prediction:
        makespan = self.now
        results: dict[str, JobResult] = {}
        for job in self.jobs:
            if job.iteration < job.iterations:
                raise PredictorError(
                    f"jobs.{job.name}: stalled after {job.iteration} of {job.iterations} "
                    f"iterations at t={self.now:.6g} s (a flow with no capacity on its path?)")
            results[job.name] = job.result()
        n_links, nominal = self.n_links, self.nominal
        nominal_pad = np.append(nominal, np.inf)
        mean_util = (self.util_integral / makespan / nominal_pad)[:n_links] if makespan > 0 \
            else np.zeros(n_links)
        series_arr = None
        if self.util_bin_s is not None:
            n_bins = int(np.ceil(makespan / self.util_bin_s)) if makespan > 0 else 0
            series_arr = np.zeros((n_bins, n_links), dtype=np.float32)
            for b, v in self.series.items():
                if b < n_bins:
                    series_arr[b] = (v[:n_links] / self.util_bin_s / nominal)
        return Prediction(
            jobs=results, links=self.links, link_capacity_mbps=nominal,
            link_mean_util=mean_util, link_max_util=(self.util_max / nominal_pad)[:n_links],
            makespan_s=makespan, goodput_factor=self.goodput_factor,
            nonblocking=self.nonblocking, util_bin_s=self.util_bin_s,
            link_util_series=series_arr, event_batches=self.batches,
            completions=self.completions, wall_s=time.perf_counter() - self.wall0,
            stats={"rate_recomputations": self.n_rounds, "reroutes": self.n_reroutes,
                   "kernels": "compiled" if self.dag_kernel is not None else "numpy"})


def _simulate(fabric: Fabric, plans: list[JobPlan], spine_of: dict[int, str | None] | None,
              goodput_factor: float, nonblocking: bool, batch_tol_s: float,
              util_bin_s: float | None, keep_fcts: bool,
              router: Router | None = None, semantics: Semantics = OURS,
              spray: bool = False, lazy: bool | None = None) -> Prediction:
    if lazy is None:
        lazy = sum(len(p.transfers) for p in plans) > LAZY_TRANSFERS
    sim = _Simulation(fabric, plans, spine_of, goodput_factor, nonblocking, batch_tol_s,
                      util_bin_s, keep_fcts, router, semantics, spray, lazy)
    while sim.step():
        pass
    return sim.result()


def predict(fabric: Fabric, plans: list[JobPlan], spine_of: dict[int, str | None] | None,
            goodput_factor: float = 1.0, *, batch_tol_s: float = 1e-9,
            util_bin_s: float | None = None, keep_fcts: bool = False,
            router: Router | None = None, semantics: Semantics = OURS,
            spray: bool = False, lazy: bool | None = None) -> Prediction:
    """Predict every job's per-iteration CCT when connection c is routed via spine_of[c].

    With a `router`, routes change as the controller changes them: spine_of then holds the
    routes before the first epoch (may be None or empty), the router is asked again whenever
    jobs start or finish and at each of its fabric events, and flows in flight move at once.

    spine_of maps conn_id -> spine name (None for connections within one leaf), as in
    RoutingPlan.spine_of (a spine given for a connection within one leaf is ignored: such a
    flow never leaves its leaf). goodput_factor multiplies every link capacity. Completions within
    batch_tol_s (s) of each other are processed as one batch. util_bin_s: also record link
    utilization per time bin of that width. keep_fcts: keep every iteration's FCTs.
    semantics: ours (default) or floodns's ring steps, recomputations and tail step.
    spray: per-packet spraying, fluid: every connection's traffic splits evenly over every
    live shortest path of its leaf pair, one rate for all its packets, so it moves at most
    as fast as its busiest path allows (spine_of and the router's routes are not used; its
    fabric events are). lazy: build each job's DAG when it starts and drop it after its
    last iteration (the same results; None: when the plans hold more than LAZY_TRANSFERS).
    Raises PredictorError for a missing or failed route."""
    return _simulate(fabric, plans, spine_of, goodput_factor, False, batch_tol_s,
                     util_bin_s, keep_fcts, router, semantics, spray, lazy)


def ideal(fabric: Fabric, plans: list[JobPlan], goodput_factor: float = 1.0, *,
          batch_tol_s: float = 1e-9, util_bin_s: float | None = None,
          keep_fcts: bool = False, semantics: Semantics = OURS,
          lazy: bool | None = None) -> Prediction:
    """The same workload on a non-blocking fabric: every flow crosses only its two host links
    (sender's uplink, receiver's downlink), so only the hosts' NICs limit."""
    return _simulate(fabric, plans, None, goodput_factor, True, batch_tol_s,
                     util_bin_s, keep_fcts, None, semantics, lazy=lazy)

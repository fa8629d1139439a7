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

The run is a `_Simulation` (this module, the event loop): `step()` processes one batch
(advance the fluid, complete flows, fire timers, zero-byte transfers, epochs, admit new flows,
recompute rates). Its parts: the job DAG state (traffic/predictor_dag.py: `Job`, `Dag`, lazy
building), the flow buffers (traffic/predictor_flows.py), the connection rows under the routes
(traffic/predictor_rows.py) and the results (traffic/predictor_results.py). Entry points:
`predict(fabric, plans, spine_of, goodput_factor=1.0, *, router=None, util_bin_s=None,
keep_fcts=False, batch_tol_s=1e-9, semantics=OURS) -> Prediction` and `ideal(...)` (the same
workload where only the host links limit). Records and `Semantics` (ours, or floodns's):
traffic/prediction.py; the numpy water-filling reference `max_min_rates`: traffic/rates.py.
"""
from __future__ import annotations
from __future__ import annotations

import heapq
import time
from typing import Callable

import numpy as np

from testbed.fabric import Fabric
from traffic import jit
from traffic.collectives import JobPlan
from .prediction import (OURS, RECOMPUTES, RING_SYNCS, JobResult, Prediction,  # noqa: F401
                         PredictorError, Router, Semantics)
from .predictor_dag import Dag, Job
from .predictor_replay import Replays, eligible
from .predictor_flows import Active, Starting, enter_tails, share_pools
from .predictor_results import LinkUsage, job_results
from .predictor_rows import UNROUTED, ConnRows, path_width  # noqa: F401
from .rates import max_min_rates

#: The per-completion DAG step compiled (traffic/dag_kernel.py), or the Python reference
#: (_Simulation.finish per flow): the same results bit for bit (tests/unit/traffic/test_dag_kernel.py).
COMPILED_DAG = True


#: Lazy runs replay a job that runs alone again on the same routes from its first solo run
#: (traffic/predictor_replay.py); False: simulate every run (the same results up to float
#: rounding of the clock).
REPLAY = True
#: Past this many transfers in all plans, `predict` and `ideal` build each job's DAG when it
#: starts and drop it after its last iteration (lazy): below it, the whole DAG at once.
LAZY_TRANSFERS = 1_000_000
#: `progress` is called at most this often (s of wall time), checked every PROGRESS_BATCHES.
PROGRESS_EVERY_S = 1.0
PROGRESS_BATCHES = 64
#: progress(simulated_s, transfers_done, transfers_total)
Progress = Callable[[float, int, int], None]


class _Simulation:
    """One run of the fluid model: the state `predict` advances from event batch to batch.

    The jobs' DAGs (`Job`, flat in a `Dag`), the flows in flight (`Active`), the connection
    rows under the latest routes (`ConnRows`) and the links' usage (`LinkUsage`); timers are
    iteration starts (job index >= 0) and fabric events (negative); `step()` advances to the
    next batch and returns False when nothing is left."""

    def __init__(self, fabric: Fabric, plans: list[JobPlan],
                 spine_of: dict[int, str | None] | None, goodput_factor: float,
                 nonblocking: bool, batch_tol_s: float, util_bin_s: float | None,
                 keep_fcts: bool, router: Router | None, semantics: Semantics,
                 spray: bool = False, lazy: bool = False):
        # compiled (numba's import, compiling or loading them is not the prediction's time)
        # or numpy, by size (traffic/jit.py); bit for bit the same results
        # weighted rows: per-packet spraying, or the ideal on several planes (every NIC port)
        weighted = (spray and not nonblocking) or (nonblocking and fabric.planes > 1)
        self.kernels, self.dag_kernel = jit.kernels(
            sum(len(p.transfers) * p.spec.iterations for p in plans), weighted,
            len(fabric.links))
        self.compiled_dag = COMPILED_DAG and self.dag_kernel is not None
        self.wall0 = time.perf_counter()
        _check(plans, goodput_factor, util_bin_s, semantics)
        self.fabric, self.plans, self.router, self.sem = fabric, plans, router, semantics
        self.goodput_factor, self.nonblocking = goodput_factor, nonblocking
        self.batch_tol_s = batch_tol_s
        self.links = list(fabric.links)
        self.nominal = np.array(fabric.capacities_mbps, dtype=float)
        self.cap = np.append(self.nominal * goodput_factor, np.inf)     # + the pad link
        self.scratch = self.kernels.scratch(self.cap.size)           # the water-filling's
        self.spray = weighted
        self.rows = ConnRows(fabric, plans, spine_of, nonblocking, self.spray,
                             routed_later=router is not None)
        # lazy: a job's DAG is built when it starts its first iteration and dropped after
        # its last, so memory follows the jobs in flight (the Dag is rebuilt each time)
        self.lazy = lazy
        self.jobs = [Job(p, self.rows.row_of, keep_fcts, semantics.ring_sync, lazy)
                     for p in plans]
        self.dag = Dag(self.jobs, spare=lazy)
        self.new = Starting()                     # the transfers starting in this batch
        self.pooled = any(job.pooled for job in self.jobs) or (lazy and any(
            p.spec.split == "adaptive" and p.spec.subflows > 1 for p in plans))
        self.job_offset = np.cumsum([0] + [len(p.transfers) for p in plans])[:-1]
        self.active = Active(self.rows.width, self.kernels)
        self.usage = LinkUsage(len(self.links), util_bin_s)
        self._timers(plans)
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
        self.routes_version = 0               # routes changed this often (replays' key)
        # solo jobs replayed (traffic/predictor_replay.py): lazy runs with fixed routes
        self.replays = Replays(batch_tol_s) if REPLAY and eligible(
            lazy, router, self.spray, util_bin_s, keep_fcts, semantics, self.pooled) else None

    def _timers(self, plans: list[JobPlan]) -> None:
        """The first iterations of the jobs waiting for none, and the router's fabric events;
        JobSpec.after: job j starts once every job it waits for has ended (+ its gap)."""
        self.timers: list[tuple[float, int, int]] = []            # (time, seq, job)
        self.seq = 0
        index = {p.name: j for j, p in enumerate(plans)}
        self.waiting = [len(p.spec.after) for p in plans]
        self.ready_at = [float(p.spec.start_s) for p in plans]
        self.then: list[list[tuple[int, float]]] = [[] for _ in plans]
        for j, p in enumerate(plans):
            for name, gap in p.spec.after:
                if name not in index:
                    raise PredictorError(f"jobs.{p.name}.after: no job named {name!r}")
                self.then[index[name]].append((j, float(gap)))
        for j, job in enumerate(self.jobs):
            if not self.waiting[j]:
                self._push(job.start_s, j)
        if self.router is not None:
            for k, t in enumerate(self.router.event_times()):
                self._push(float(t), -1 - k)
        self.jobs_left = len(self.jobs)

    def _push(self, t: float, j: int) -> None:
        heapq.heappush(self.timers, (t, self.seq, j))
        self.seq += 1

    # -- one batch -----------------------------------------------------------------------------
    def step(self) -> bool:
        """Process the next batch of events; False when the run is over."""
        a = self.active
        dt_flow = float(self.kernels.horizon(a.rem, a.rates)) if a.n else np.inf
        t_timer = self.timers[0][0] if self.timers else np.inf
        if self.flows_dirty:            # a re-plan held back by replan_min_interval_s
            t_timer = min(t_timer, self.last_replan_s + self.replan_gap_s)
        t_next = min(self.now + dt_flow, t_timer)
        replaying = self.replays is not None and self.replays.pending is not None
        if replaying:
            t_next = min(t_next, self.replays.end_s)
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
        if replaying and t_next == self.replays.end_s:
            self.replays.finish(self)
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
            share_pools(a, self.jobs, self.job_offset)
        self.n_rounds += 1
        if self.dag_kernel is None and jit.outgrown(self.scratch):
            self._to_compiled()
        return True

    def _to_compiled(self) -> None:
        """From the next batch on, the compiled kernels (traffic/jit.py's `outgrown`): they
        read and write the same state, with the same results bit for bit."""
        self.kernels, self.dag_kernel = jit.compiled()
        self.compiled_dag = COMPILED_DAG
        self.scratch = self.kernels.scratch(self.cap.size)
        self.active.kernels = self.kernels

    def _advance(self, t_next: float, done_by_s: float) -> None:
        """Move the fluid from now to t_next at the current rates (utilization integrals, bytes
        left); mark the flows with at most done_by_s seconds left as done."""
        dt = t_next - self.now
        a, u = self.active, self.usage
        if a.n:
            self.kernels.advance(a.rem, a.rates, a.links, dt, done_by_s, u.integral, u.max,
                                 u.load, a.done, self._weights())
            if u.bin_s is not None and dt > 0:
                u.bin(self.now, t_next)
        self.now = t_next

    def _complete(self, new: Starting) -> None:
        """The flows marked done complete now, in admission order."""
        a = self.active
        if self.pooled:
            enter_tails(a, self.jobs)
        if self.compiled_dag:
            self._complete_compiled(new)
        else:
            for f in np.flatnonzero(a.done).tolist():
                self.finish(int(a.job[f]), int(a.tid[f]), self.now, new)
        a.drop_done()

    def _complete_compiled(self, new: Starting) -> None:
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

    def _fire_timers(self, new: Starting) -> None:
        """Iteration starts and fabric events due now."""
        while self.timers and self.timers[0][0] <= self.now + self.batch_tol_s:
            _, _, j = heapq.heappop(self.timers)
            if j < 0:
                if self.replays is not None:
                    self.replays.abort()
                reroute_fabric, spines = self.router.fire(-1 - j, self.now)
                self.reroute(spines, reroute_fabric)
                continue
            if self.start_iteration(j, self.now, new) and self.jobs[j].n == 0:
                self.end_iteration(j, self.now)

    def _zero_bytes(self, new: Starting) -> None:
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

    def _epochs(self) -> None:
        """The controller's epochs: jobs that start, then jobs that finished; with
        recompute=iterations also every later iteration's start and end (floodns)."""
        r = self.router
        if r is not None:
            if self.started:
                self.reroute(r.jobs_started(self.started, self.now), self.rows.fabric)
            for name in self.finished:
                self.reroute(r.job_finished(name, self.now), self.rows.fabric)
            if self.iteration_bounds:
                self.reroute(r.recompute(self.now), self.rows.fabric)
        self.finished.clear()
        self.started.clear()
        self.iteration_bounds = 0

    def _admit(self, new: Starting) -> None:
        job, tid = new.pairs()
        g = self.dag.off[job] + tid
        rows = self.dag.row[g]
        self.active.add(job, tid, self.dag.admit_bytes[g], rows, self.rows.table)

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
        in_flight = np.unique(self.rows.conn_of_row[self.active.row]).tolist()
        self.reroute(self.router.flows_changed(in_flight, self.now), self.rows.fabric)

    def _check_routed(self) -> None:
        a = self.active
        if self.router is None or not a.n or not self.rows.unrouted:
            return
        if a.links.min() > UNROUTED:      # the only negative entry: one pass, no mask
            return
        unrouted = (a.links == UNROUTED).any(axis=1)
        if unrouted.any():
            f = int(np.nonzero(unrouted)[0][0])
            job = self.jobs[int(a.job[f])]
            t = job.plan.transfers[int(a.tid[f])]
            raise PredictorError(f"jobs.{job.name}: connection {t.conn_id} carries a transfer "
                                 f"at t={self.now:.6g} s but the router gave it no spine")

    def _weights(self) -> np.ndarray:
        """The active flows' link weights (per-packet spraying), or the kernels' 'all 1'."""
        if self.rows.weights is None:
            return self.kernels.NO_WEIGHTS
        return self.rows.weights[self.active.row]

    def reroute(self, spines: dict[int, str | None], new_fabric: Fabric) -> None:
        """New routes from the router: every flow in flight follows them from now."""
        if self.rows.reroute(spines, new_fabric):
            self.routes_version += 1
            a = self.active
            np.take(self.rows.table, a.row, axis=0, out=a.links, mode="clip")

    # -- the jobs' DAGs ------------------------------------------------------------------------
    def start_iteration(self, j: int, t: float, new: Starting) -> bool:
        """Job j begins an iteration at t: its roots into `new`; False when it is replayed
        instead (traffic/predictor_replay.py: it ends at self.replays.end_s)."""
        job = self.jobs[j]
        if self.replays is not None and self.replays.starting(self, j, t, new):
            return False
        if not job.built:                 # lazy: appended, or the Dag built whole again
            job.build()
            if not self.dag.add(j, job):
                self.dag = Dag(self.jobs, self.dag, spare=True)
        if job.iteration == 0:
            self.started.append(job.name)
        elif self.sem.recompute == "iterations":
            self.iteration_bounds += 1
        job.begin(t)
        new.extend(j, job.roots)
        return True

    def finish(self, j: int, i: int, t: float, new: Starting) -> None:
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
        if self.replays is not None:
            self.replays.ended(self, j, t)
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

    def _release(self, j: int, t: float) -> None:
        """Job j ended its last iteration at t: the jobs waiting for it may be due."""
        for k, gap in self.then[j]:
            self.ready_at[k] = max(self.ready_at[k], t + gap)
            self.waiting[k] -= 1
            if not self.waiting[k]:
                self._push(self.ready_at[k], k)

    def _job_over(self, j: int) -> None:
        """Job j is past its last iteration (and its tail step): no longer counted; a lazy
        run keeps its result and drops its DAG (its slots in the Dag stay unused until the
        Dag is next built whole)."""
        job = self.jobs[j]
        self.jobs_left -= 1
        self.finished.append(job.name)
        if self.lazy:
            self.dag.held -= job.n
            job.free()

    # -- results -------------------------------------------------------------------------------
    def result(self) -> Prediction:
        makespan, nominal, u = self.now, self.nominal, self.usage
        return Prediction(
            jobs=job_results(self.jobs, self.now), links=self.links,
            link_capacity_mbps=nominal, link_mean_util=u.mean_util(makespan, nominal),
            link_max_util=u.max_util(nominal), makespan_s=makespan,
            goodput_factor=self.goodput_factor, nonblocking=self.nonblocking,
            util_bin_s=u.bin_s, link_util_series=u.util_series(makespan, nominal),
            event_batches=self.batches, completions=self.completions,
            wall_s=time.perf_counter() - self.wall0,
            stats={"rate_recomputations": self.n_rounds, "reroutes": self.rows.n_reroutes,
                   "kernels": "compiled" if self.dag_kernel is not None else "numpy",
                   "replayed_jobs": self.replays.replayed if self.replays is not None else 0})


def _check(plans: list[JobPlan], goodput_factor: float, util_bin_s: float | None,
           semantics: Semantics) -> None:
    """The run's arguments, before anything is built: PredictorError naming the bad one."""
    if not goodput_factor > 0:
        raise PredictorError("goodput_factor must be positive")
    if util_bin_s is not None and not util_bin_s > 0:
        raise PredictorError("util_bin_s must be positive")
    semantics.check()
    names = [p.name for p in plans]
    if len(set(names)) != len(names):
        raise PredictorError("job names must be unique")


def _simulate(fabric: Fabric, plans: list[JobPlan], spine_of: dict[int, str | None] | None,
              goodput_factor: float, nonblocking: bool, batch_tol_s: float,
              util_bin_s: float | None, keep_fcts: bool,
              router: Router | None = None, semantics: Semantics = OURS,
              spray: bool = False, lazy: bool | None = None,
              progress: Progress | None = None) -> Prediction:
    if lazy is None:
        lazy = sum(len(p.transfers) for p in plans) > LAZY_TRANSFERS
    sim = _Simulation(fabric, plans, spine_of, goodput_factor, nonblocking, batch_tol_s,
                      util_bin_s, keep_fcts, router, semantics, spray, lazy)
    if progress is None:
        while sim.step():
            pass
        return sim.result()
    total = sum(len(p.transfers) * p.spec.iterations for p in plans)
    due = time.monotonic() + PROGRESS_EVERY_S
    while sim.step():
        if sim.batches % PROGRESS_BATCHES == 0 and time.monotonic() >= due:
            progress(sim.now, sim.completions, total)
            due = time.monotonic() + PROGRESS_EVERY_S
    return sim.result()


def predict(fabric: Fabric, plans: list[JobPlan], spine_of: dict[int, str | None] | None,
            goodput_factor: float = 1.0, *, batch_tol_s: float = 1e-9,
            util_bin_s: float | None = None, keep_fcts: bool = False,
            router: Router | None = None, semantics: Semantics = OURS,
            spray: bool = False, lazy: bool | None = None,
            progress: Progress | None = None) -> Prediction:
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
    progress(simulated_s, transfers_done, transfers_total) is called about every
    PROGRESS_EVERY_S of wall time while it runs. Raises PredictorError for a missing or
    failed route."""
    return _simulate(fabric, plans, spine_of, goodput_factor, False, batch_tol_s,
                     util_bin_s, keep_fcts, router, semantics, spray, lazy, progress)


def ideal(fabric: Fabric, plans: list[JobPlan], goodput_factor: float = 1.0, *,
          batch_tol_s: float = 1e-9, util_bin_s: float | None = None,
          keep_fcts: bool = False, semantics: Semantics = OURS,
          lazy: bool | None = None) -> Prediction:
    """The same workload on a non-blocking fabric: every flow crosses only its two host links
    (sender's uplink, receiver's downlink), so only the hosts' NICs limit."""
    return _simulate(fabric, plans, None, goodput_factor, True, batch_tol_s,
                     util_bin_s, keep_fcts, None, semantics, lazy=lazy)

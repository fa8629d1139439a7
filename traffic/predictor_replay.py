"""Solo jobs replayed: a job that runs alone is predicted once and its run reused.

Pure code (numpy). A job whose single iteration starts while no flow is in flight, and
during which no other job starts and no fabric event fires, moves alone: its rates, batches
and completions depend only on its own transfers and their routes. The first such run of a
job's transfers (the same read-only `Transfers` object: traffic/collectives.plan_jobs gives
equal jobs on shared connections the same one) on the same routes is recorded: its duration,
its transfers' FCTs, its links' load integral and maximum and its event batches. A later run
of the same transfers on the same routes that would again run alone (nothing in flight and
the next timer past its recorded end) is not simulated: it ends at its start + the recorded
duration, with the recorded FCTs, and adds the recorded integrals to the links'. Recording
changes nothing in the run it watches (it copies the links' usage at the start and takes
the difference at the end).

Times are absolute in the simulation, so a replay equals a simulated run up to float
rounding (a few ulps of the run's clock and of the links' integrals); its CCT and FCTs are
those of the recorded run. Used only in lazy runs (traffic/predictor.py LAZY_TRANSFERS),
without a router that may move routes, spraying, time bins, kept FCTs, adaptive splits or
floodns's recomputations and tail step (`eligible`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from traffic.collectives import Transfers
from traffic.prediction import JobResult


@dataclass
class _Recording:
    """A solo run in progress: job j from t0 (s); the batches and copies of the links' load
    integral and maximum before it."""

    j: int
    key: tuple
    t0: float
    batches: int
    integral: np.ndarray
    max: np.ndarray


@dataclass
class _Memo:
    """A recorded solo run: its duration (s), its transfers' FCTs (s, read-only), its links'
    load integral (Mbit) and maximum (Mbit/s; 0 where it did not pass the run's maximum
    before it, which a later replay's run maximum covers: maxima only grow), and the batches
    it took beyond the two a replay takes (its start's and its end's)."""

    duration_s: float
    fct_s: np.ndarray
    integral: np.ndarray
    max: np.ndarray
    extra_batches: int


class Replays:
    """The recorded solo runs of one simulation and the replay in progress (at most one:
    a replayed job runs alone until its end)."""

    def __init__(self, batch_tol_s: float):
        self.tol = batch_tol_s
        self.memos: dict[tuple, _Memo] = {}
        self.rec: _Recording | None = None
        self.pending: tuple[int, float, _Memo] | None = None    # (job, end s, memo)
        self.replayed = 0

    @property
    def end_s(self) -> float:
        """When the replay in progress ends (inf: none)."""
        return self.pending[1] if self.pending is not None else np.inf

    def starting(self, sim, j: int, t: float, new) -> bool:
        """Job j starts an iteration at t: True when it is replayed (sim then only books its
        start), False when it is simulated (recorded, when it may run alone)."""
        self.rec = None                  # a recording in progress: no longer alone
        job = sim.jobs[j]
        ts = job.plan.transfers
        if (job.iteration != 0 or job.iterations != 1 or not isinstance(ts, Transfers)
                or not len(ts) or sim.active.n or len(new)):
            return False
        key = (id(ts), sim.routes_version)
        memo = self.memos.get(key)
        if memo is None:
            u = sim.usage
            self.rec = _Recording(j, key, t, sim.batches, u.integral.copy(), u.max.copy())
            return False
        end = t + memo.duration_s
        if sim.timers and not sim.timers[0][0] > end + 2 * self.tol:
            return False                 # something starts before it would end
        self.pending = (j, end, memo)
        job.iter_start = t
        job.communicating = True
        sim.started.append(job.name)
        return True

    def abort(self) -> None:
        """The recording in progress is not a solo run (a fabric event)."""
        self.rec = None

    def ended(self, sim, j: int, t: float) -> None:
        """Job j ended its iteration at t (before sim.end_iteration books it): the end of
        the recording in progress, if it is j's."""
        rec = self.rec
        if rec is None or rec.j != j:
            return
        self.rec = None
        u, job = sim.usage, sim.jobs[j]
        fct = job.fct_cur.copy()
        fct.flags.writeable = False
        self.memos[rec.key] = _Memo(t - rec.t0, fct, u.integral - rec.integral,
                                    np.where(u.max > rec.max, u.max, 0.0),
                                    sim.batches - rec.batches - 1)

    def finish(self, sim) -> None:
        """The replay in progress ends now (sim.now): the job's result and the links' usage
        as recorded, then its iteration's end as a simulated run books it."""
        j, _, memo = self.pending
        self.pending = None
        self.replayed += 1
        job = sim.jobs[j]
        ts = job.plan.transfers
        sim.completions += len(ts)
        sim.batches += memo.extra_batches
        sim.n_rounds += memo.extra_batches
        u = sim.usage
        u.integral += memo.integral
        np.maximum(u.max, memo.max, out=u.max)
        job.final = JobResult(
            name=job.name, cct_s=job.ccts, iteration_start_s=job.starts,
            iteration_end_s=job.ends, transfer_bytes=ts.size, transfer_conn=ts.conn,
            fct_mean_s=memo.fct_s, fct_max_s=memo.fct_s)
        sim.end_iteration(j, sim.now)


def eligible(lazy: bool, router, spray: bool, util_bin_s: float | None, keep_fcts: bool,
             semantics, pooled: bool) -> bool:
    """Whether a run may replay solo jobs: lazy, routes that never move (no router, or one
    with `fixed_routes`), no spraying, bins, kept FCTs, adaptive pools or floodns's
    per-iteration recomputation and tail step."""
    fixed = router is None or bool(getattr(router, "fixed_routes", False))
    return (lazy and fixed and not spray and util_bin_s is None and not keep_fcts
            and not pooled and semantics.recompute == "epochs" and not semantics.tail_step)

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

Entry points: `predict(fabric, plans, spine_of, goodput_factor=1.0, *, router=None,
util_bin_s=None, keep_fcts=False, batch_tol_s=1e-9) -> Prediction` and
`ideal(fabric, plans, goodput_factor=1.0) -> Prediction` (the same workload on a non-blocking
fabric, where only the host links limit). `max_min_rates` is the water-filling kernel.
"""
from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from testbed.fabric import Fabric
from traffic.collectives import JobPlan

#: Links per flow path in a leaf-spine fabric: host->leaf, leaf->spine, spine->leaf, leaf->host
#: (shorter paths are padded with a dummy link of infinite capacity); three tiers: 6.
PATH_LINKS = 4


def path_width(fabric: Fabric) -> int:
    """Link slots per connection row: two host links and the longest switch path's links."""
    return PATH_LINKS if fabric.tiers == 2 else PATH_LINKS + 2


class PredictorError(ValueError):
    """Input the predictor cannot simulate: a missing or unusable route, a malformed DAG."""


# --------------------------------------------------------------------------------------------
# water-filling
# --------------------------------------------------------------------------------------------
def max_min_rates(flow_links: np.ndarray, capacity_mbps: np.ndarray,
                  rel_tol: float = 1e-9) -> np.ndarray:
    """Max-min fair rates (Mbit/s) by progressive filling.

    flow_links: (F, K) int array, row f = indices into capacity_mbps of the links flow f
    crosses (pad with the index of an entry whose capacity is inf). capacity_mbps: (L,) floats.
    Every round raises all unfrozen flows equally until the tightest link saturates, then
    freezes every flow crossing a link whose fair share is within rel_tol of that minimum.
    """
    n_flows = flow_links.shape[0]
    rates = np.zeros(n_flows)
    if n_flows == 0:
        return rates
    n_links = capacity_mbps.shape[0]
    remaining = np.array(capacity_mbps, dtype=float)
    count = np.bincount(flow_links.ravel(), minlength=n_links).astype(float)
    idx = np.arange(n_flows)
    fl = flow_links
    share = np.empty(n_links)
    while idx.size:
        share.fill(np.inf)
        np.divide(remaining, count, out=share, where=count > 0)
        m = share.min()
        if not np.isfinite(m):
            raise PredictorError("a flow crosses no link of finite capacity")
        hit = (share <= m * (1.0 + rel_tol))[fl].any(axis=1)
        rates[idx[hit]] = m
        dec = np.bincount(fl[hit].ravel(), minlength=n_links)
        remaining -= dec * m
        np.maximum(remaining, 0.0, out=remaining)
        count -= dec
        keep = ~hit
        fl = fl[keep]
        idx = idx[keep]
    return rates


# --------------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------------
@dataclass
class JobResult:
    """One job's predicted behaviour; arrays over transfers follow `plan.transfers` order."""

    name: str
    cct_s: list[float]                       # per iteration: last completion - iteration start
    iteration_start_s: list[float]
    iteration_end_s: list[float]
    transfer_bytes: np.ndarray               # (T,) size of each transfer
    transfer_conn: np.ndarray                # (T,) conn_id of each transfer
    fct_mean_s: np.ndarray                   # (T,) mean FCT over the iterations run
    fct_max_s: np.ndarray                    # (T,) max FCT over the iterations run
    fct_s: np.ndarray | None = None          # (iterations, T), only with keep_fcts=True

    @property
    def mean_cct_s(self) -> float:
        return float(np.mean(self.cct_s)) if self.cct_s else float("nan")

    def conn_rates_mbps(self) -> dict[int, float]:
        """Per connection: bytes carried / time it had a transfer in flight (Mbit/s),
        averaged over iterations; the "flow rate" of the fairness metric."""
        out: dict[int, float] = {}
        conns, inv = np.unique(self.transfer_conn, return_inverse=True)
        bits = np.bincount(inv, weights=self.transfer_bytes * 8.0)
        busy = np.bincount(inv, weights=self.fct_mean_s)
        for c, b, t in zip(conns.tolist(), bits.tolist(), busy.tolist()):
            out[c] = b / t / 1e6 if t > 0 else float("inf")
        return out


@dataclass
class Prediction:
    """Output of `predict` / `ideal`. Link arrays follow `links` (= Fabric.links order)."""

    jobs: dict[str, JobResult]
    links: list[tuple[str, str]]
    link_capacity_mbps: np.ndarray           # nominal (without goodput_factor)
    link_mean_util: np.ndarray               # time-weighted mean of load / nominal capacity
    link_max_util: np.ndarray                # max of load / nominal capacity
    makespan_s: float                        # time of the last completion
    goodput_factor: float = 1.0
    nonblocking: bool = False
    util_bin_s: float | None = None
    link_util_series: np.ndarray | None = None   # (bins, links) mean utilization per bin
    event_batches: int = 0                   # rate recomputations
    completions: int = 0                     # transfers completed
    wall_s: float = 0.0
    stats: dict = field(default_factory=dict)

    def cct_s(self) -> dict[str, list[float]]:
        return {name: list(j.cct_s) for name, j in self.jobs.items()}

    def link_utilization(self, min_mean: float = 0.0) -> dict[tuple[str, str], dict[str, float]]:
        """{link: {"mean": .., "max": ..}} for links whose mean utilization exceeds min_mean
        (links never used are left out when min_mean >= 0)."""
        out = {}
        for i in np.nonzero(self.link_max_util > 0)[0].tolist():
            if self.link_mean_util[i] >= min_mean:
                out[self.links[i]] = {"mean": float(self.link_mean_util[i]),
                                      "max": float(self.link_max_util[i])}
        return out


# --------------------------------------------------------------------------------------------
# the simulation
# --------------------------------------------------------------------------------------------
class _Job:
    """Static DAG of one job (indices = positions in plan.transfers) and its per-iteration state."""

    def __init__(self, plan: JobPlan, row_of_conn: dict[int, int], keep_fcts: bool):
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
        ts = plan.transfers
        pos = {t.tid: i for i, t in enumerate(ts)}
        if len(pos) != len(ts):
            raise PredictorError(f"jobs.{self.name}: transfer ids are not unique")
        n = len(ts)
        self.n = n
        self.size = np.array([t.size_bytes for t in ts], dtype=float)
        try:
            self.row = np.array([row_of_conn[t.conn_id] for t in ts], dtype=np.int64)
        except KeyError as e:
            raise PredictorError(f"jobs.{self.name}: transfer on unknown connection {e}") from None
        succ: list[list[int]] = [[] for _ in range(n)]
        indeg = [0] * n
        last_on_conn: dict[int, int] = {}
        for i, t in enumerate(ts):
            preds = set()
            for d in t.deps:
                if d not in pos:
                    raise PredictorError(f"jobs.{self.name}: transfer {t.tid} depends on "
                                         f"unknown transfer {d}")
                preds.add(pos[d])
            prev = last_on_conn.get(t.conn_id)
            if prev is not None:
                preds.add(prev)
            last_on_conn[t.conn_id] = i
            for p in preds:
                succ[p].append(i)
            indeg[i] = len(preds)
        self.succ = succ
        self.indeg0 = indeg
        self.roots = [i for i in range(n) if indeg[i] == 0]
        if n and not self.roots:
            raise PredictorError(f"jobs.{self.name}: the transfer DAG has a cycle")
        # dynamic state
        self.iteration = 0
        self.indeg: list[int] = []
        self.started_at = np.zeros(n)
        self.done = 0
        self.iter_start = 0.0
        self.ccts: list[float] = []
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.fct_sum = np.zeros(n)
        self.fct_max = np.zeros(n)
        self.fct_cur = np.zeros(n)
        self.fct_all = np.zeros((self.iterations, n)) if keep_fcts else None


UNROUTED = -1   # link index of a connection that crosses leaves but has no spine (yet)


def _conn_links(fabric: Fabric, plans: list[JobPlan], spine_of: dict[int, str | None] | None,
                nonblocking: bool, allow_unrouted: bool = False
                ) -> tuple[np.ndarray, dict[int, int]]:
    """(C, path_width) link indices per connection (pad = len(fabric.links)) and conn_id -> row.
    allow_unrouted: an inter-leaf connection without a route gets UNROUTED instead of an error
    (a router gives it one when its job starts)."""
    li = fabric.link_index
    pad = len(fabric.links)
    width = path_width(fabric)
    conns = [c for p in plans for c in p.connections]
    table = np.full((len(conns), width), pad, dtype=np.int64)
    row_of: dict[int, int] = {}
    for r, c in enumerate(conns):
        if c.conn_id in row_of:
            raise PredictorError(f"connection id {c.conn_id} appears twice")
        row_of[c.conn_id] = r
        try:
            a, b = fabric.leaf_of(c.src), fabric.leaf_of(c.dst)
        except KeyError as e:
            raise PredictorError(f"jobs.{c.job}: host {e} is not in the fabric") from None
        table[r, 0] = li[(c.src, a)]
        table[r, width - 1] = li[(b, c.dst)]
        if nonblocking or a == b:
            continue
        s = None if spine_of is None else spine_of.get(c.conn_id)
        if s is None:
            if allow_unrouted:
                table[r, 1:width - 1] = UNROUTED
                continue
            raise PredictorError(f"flow {c.job}:{c.src}->{c.dst} (conn {c.conn_id}) crosses "
                                 f"{a}->{b} but has no route")
        path = (a, s, b) if isinstance(s, str) else tuple(s)
        if path not in fabric.switch_paths(a, b):
            raise PredictorError(f"flow {c.job}:{c.src}->{c.dst} (conn {c.conn_id}) is routed "
                                 f"via {'/'.join(path[1:-1]) or s}, which is failed or unknown "
                                 f"between {a} and {b}")
        for k, e in enumerate(zip(path, path[1:])):
            table[r, 1 + k] = li[e]
    return table, row_of


class Router(Protocol):
    """Routes that change while the jobs run: the controller's epochs and the fabric's events
    (experiments/routes.py adapts routing/policy.py). Every call returns conn_id -> spine for
    at least every connection of the active jobs."""

    def jobs_started(self, jobs: list[str], t: float) -> dict[int, str | None]:
        """`jobs` begin their first iteration at t (s)."""
        ...

    def job_finished(self, job: str, t: float) -> dict[int, str | None]:
        """`job` ended its last iteration at t (s)."""
        ...

    def event_times(self) -> list[float]:
        """When the fabric changes (s), in order."""
        ...

    def fire(self, k: int, t: float) -> tuple[Fabric, dict[int, str | None]]:
        """Event k happens at t: the fabric after it and the routes the controller then sets."""
        ...


def _simulate(fabric: Fabric, plans: list[JobPlan], spine_of: dict[int, str | None] | None,
              goodput_factor: float, nonblocking: bool, batch_tol_s: float,
              util_bin_s: float | None, keep_fcts: bool,
              router: Router | None = None) -> Prediction:
    wall0 = time.perf_counter()
    if not goodput_factor > 0:
        raise PredictorError("goodput_factor must be positive")
    if util_bin_s is not None and not util_bin_s > 0:
        raise PredictorError("util_bin_s must be positive")
    names = [p.name for p in plans]
    if len(set(names)) != len(names):
        raise PredictorError("job names must be unique")
    links = list(fabric.links)
    n_links = len(links)
    nominal = np.array([fabric.capacity_mbps(u, v) for (u, v) in links], dtype=float)
    cap = np.append(nominal * goodput_factor, np.inf)          # + the pad link
    conn_table, row_of = _conn_links(fabric, plans, spine_of, nonblocking,
                                     allow_unrouted=router is not None)
    jobs = [_Job(p, row_of, keep_fcts) for p in plans]
    job_index = {job.name: j for j, job in enumerate(jobs)}
    fabric_now = fabric
    n_reroutes = 0

    # active flows: parallel arrays (job index, transfer index, remaining bytes, link rows)
    a_job = np.zeros(0, dtype=np.int64)
    a_tid = np.zeros(0, dtype=np.int64)
    a_rem = np.zeros(0)
    a_row = np.zeros(0, dtype=np.int64)                       # connection row
    width = path_width(fabric)
    a_links = np.zeros((0, width), dtype=np.int64)
    rates = np.zeros(0)

    util_integral = np.zeros(n_links + 1)
    util_max = np.zeros(n_links + 1)
    series: dict[int, np.ndarray] = {}
    timers: list[tuple[float, int, int]] = []                 # (time, seq, job)
    seq = 0
    for j, job in enumerate(jobs):
        heapq.heappush(timers, (job.start_s, seq, j))
        seq += 1
    if router is not None:           # fabric events: timers with a negative "job" index
        for k, t in enumerate(router.event_times()):
            heapq.heappush(timers, (float(t), seq, -1 - k))
            seq += 1
    jobs_left = len(jobs)
    started: list[str] = []
    finished: list[str] = []

    def reroute(spines: dict[int, str | None], new_fabric: Fabric) -> None:
        """New routes from the router: every flow in flight follows them from now."""
        nonlocal conn_table, a_links, fabric_now, n_reroutes
        if list(new_fabric.links) != links:
            raise PredictorError("a router's fabric must have the same links as the original")
        fabric_now = new_fabric
        conn_table, _ = _conn_links(fabric_now, plans, spines, nonblocking, allow_unrouted=True)
        a_links = conn_table[a_row]
        n_reroutes += 1

    now = 0.0
    batches = 0
    completions = 0
    n_rounds = 0

    def start_iteration(j: int, t: float, new: list[tuple[int, int]]) -> None:
        job = jobs[j]
        job.indeg = list(job.indeg0)
        job.done = 0
        job.iter_start = t
        job.started_at[:] = t
        for i in job.roots:
            new.append((j, i))

    def finish(j: int, i: int, t: float, new: list[tuple[int, int]]) -> None:
        """Transfer i of job j completes at t: release successors, maybe end the iteration."""
        nonlocal seq, completions
        completions += 1
        job = jobs[j]
        job.fct_cur[i] = t - job.started_at[i]
        indeg = job.indeg
        for s in job.succ[i]:
            indeg[s] -= 1
            if indeg[s] == 0:
                job.started_at[s] = t
                new.append((j, s))
        job.done += 1
        if job.done == job.n:
            end_iteration(j, t)

    def end_iteration(j: int, t: float) -> None:
        nonlocal seq, jobs_left
        job = jobs[j]
        job.ccts.append(t - job.iter_start)
        job.starts.append(job.iter_start)
        job.ends.append(t)
        job.fct_sum += job.fct_cur
        np.maximum(job.fct_max, job.fct_cur, out=job.fct_max)
        if job.fct_all is not None:
            job.fct_all[job.iteration] = job.fct_cur
        job.iteration += 1
        if job.iteration < job.iterations:
            heapq.heappush(timers, (t + job.compute_s, seq, j))
            seq += 1
        else:
            jobs_left -= 1
            finished.append(job.name)

    while True:
        # ---- when is the next event? ------------------------------------------------------
        if a_rem.size:
            with np.errstate(divide="ignore", invalid="ignore"):
                left_s = a_rem * 8.0 / (rates * 1e6)
            dt_flow = float(left_s.min())
        else:
            left_s = a_rem
            dt_flow = np.inf
        t_timer = timers[0][0] if timers else np.inf
        t_next = min(now + dt_flow, t_timer)
        if not np.isfinite(t_next) or jobs_left == 0:
            break
        dt = t_next - now
        done_mask = left_s <= dt + batch_tol_s
        # ---- advance the fluid ------------------------------------------------------------
        if a_rem.size and dt > 0:
            load = np.bincount(a_links.ravel(), weights=np.repeat(rates, width),
                               minlength=n_links + 1)
            util_integral += load * dt
            np.maximum(util_max, load, out=util_max)
            if util_bin_s is not None:
                b0 = int(now // util_bin_s)
                b1 = int(t_next // util_bin_s)
                for b in range(b0, b1 + 1):
                    lo, hi = max(now, b * util_bin_s), min(t_next, (b + 1) * util_bin_s)
                    if hi > lo:
                        if b not in series:
                            series[b] = np.zeros(n_links + 1)
                        series[b] += load * (hi - lo)
        now = t_next
        batches += 1
        new: list[tuple[int, int]] = []
        # ---- completions (batched within batch_tol_s) --------------------------------------
        if a_rem.size:
            a_rem = a_rem - rates * 1e6 / 8.0 * dt
            done_idx = np.nonzero(done_mask)[0]
            for f in done_idx.tolist():
                finish(int(a_job[f]), int(a_tid[f]), now, new)
            keep = ~done_mask
            a_job, a_tid, a_rem = a_job[keep], a_tid[keep], a_rem[keep]
            a_row, a_links = a_row[keep], a_links[keep]
            np.maximum(a_rem, 0.0, out=a_rem)
        # ---- timers (iteration starts, fabric events) --------------------------------------
        while timers and timers[0][0] <= now + batch_tol_s:
            _, _, j = heapq.heappop(timers)
            if j < 0:
                reroute_fabric, spines = router.fire(-1 - j, now)
                reroute(spines, reroute_fabric)
                continue
            if jobs[j].iteration == 0:
                started.append(jobs[j].name)
            start_iteration(j, now, new)
            if jobs[j].n == 0:
                end_iteration(j, now)
        # ---- zero-byte transfers complete at once -----------------------------------------
        while True:
            zero = [(j, i) for (j, i) in new if jobs[j].size[i] <= 0]
            if not zero:
                break
            new = [(j, i) for (j, i) in new if jobs[j].size[i] > 0]
            for j, i in zero:
                finish(j, i, now, new)
        # ---- the controller's epochs: jobs that start, then jobs that finished -------------
        if router is not None:
            if started:
                reroute(router.jobs_started(started, now), fabric_now)
            for name in finished:
                reroute(router.job_finished(name, now), fabric_now)
        finished.clear()
        started.clear()
        # ---- admit new flows, recompute rates ----------------------------------------------
        if new:
            nj = np.fromiter((j for j, _ in new), dtype=np.int64, count=len(new))
            ni = np.fromiter((i for _, i in new), dtype=np.int64, count=len(new))
            sizes = np.empty(len(new))
            rows = np.empty(len(new), dtype=np.int64)
            for k, (j, i) in enumerate(new):
                sizes[k] = jobs[j].size[i]
                rows[k] = jobs[j].row[i]
            a_job = np.concatenate([a_job, nj])
            a_tid = np.concatenate([a_tid, ni])
            a_rem = np.concatenate([a_rem, sizes])
            a_row = np.concatenate([a_row, rows])
            a_links = np.concatenate([a_links, conn_table[rows]])
        if router is not None and a_links.size and (a_links == UNROUTED).any():
            f = int(np.nonzero((a_links == UNROUTED).any(axis=1))[0][0])
            t = jobs[int(a_job[f])].plan.transfers[int(a_tid[f])]
            raise PredictorError(f"jobs.{jobs[int(a_job[f])].name}: connection {t.conn_id} "
                                 f"carries a transfer at t={now:.6g} s but the router gave "
                                 f"it no spine")
        rates = max_min_rates(a_links, cap)
        n_rounds += 1

    makespan = now
    results: dict[str, JobResult] = {}
    for job in jobs:
        runs = max(job.iteration, 1)
        if job.iteration < job.iterations:
            raise PredictorError(
                f"jobs.{job.name}: stalled after {job.iteration} of {job.iterations} iterations "
                f"at t={now:.6g} s (a flow with no capacity on its path?)")
        results[job.name] = JobResult(
            name=job.name, cct_s=job.ccts, iteration_start_s=job.starts,
            iteration_end_s=job.ends,
            transfer_bytes=job.size.copy(),
            transfer_conn=np.array([t.conn_id for t in job.plan.transfers], dtype=np.int64),
            fct_mean_s=job.fct_sum / runs, fct_max_s=job.fct_max.copy(), fct_s=job.fct_all)
    nominal_pad = np.append(nominal, np.inf)
    mean_util = (util_integral / makespan / nominal_pad)[:n_links] if makespan > 0 \
        else np.zeros(n_links)
    series_arr = None
    if util_bin_s is not None:
        n_bins = int(np.ceil(makespan / util_bin_s)) if makespan > 0 else 0
        series_arr = np.zeros((n_bins, n_links), dtype=np.float32)
        for b, v in series.items():
            if b < n_bins:
                series_arr[b] = (v[:n_links] / util_bin_s / nominal)
    return Prediction(
        jobs=results, links=links, link_capacity_mbps=nominal, link_mean_util=mean_util,
        link_max_util=(util_max / nominal_pad)[:n_links], makespan_s=makespan,
        goodput_factor=goodput_factor, nonblocking=nonblocking, util_bin_s=util_bin_s,
        link_util_series=series_arr, event_batches=batches, completions=completions,
        wall_s=time.perf_counter() - wall0,
        stats={"rate_recomputations": n_rounds, "reroutes": n_reroutes})


def predict(fabric: Fabric, plans: list[JobPlan], spine_of: dict[int, str | None] | None,
            goodput_factor: float = 1.0, *, batch_tol_s: float = 1e-9,
            util_bin_s: float | None = None, keep_fcts: bool = False,
            router: Router | None = None) -> Prediction:
    """Predict every job's per-iteration CCT when connection c is routed via spine_of[c].

    With a `router`, routes change as the controller changes them: spine_of then holds the
    routes before the first epoch (may be None or empty), the router is asked again whenever
    jobs start or finish and at each of its fabric events, and flows in flight move at once.

    spine_of maps conn_id -> spine name (None for connections within one leaf), as in
    RoutingPlan.spine_of (a spine given for a connection within one leaf is ignored: such a
    flow never leaves its leaf). goodput_factor multiplies every link capacity. Completions within
    batch_tol_s (s) of each other are processed as one batch. util_bin_s: also record link
    utilization per time bin of that width. keep_fcts: keep every iteration's FCTs.
    Raises PredictorError for a missing or failed route."""
    return _simulate(fabric, plans, spine_of, goodput_factor, False, batch_tol_s,
                     util_bin_s, keep_fcts, router)


def ideal(fabric: Fabric, plans: list[JobPlan], goodput_factor: float = 1.0, *,
          batch_tol_s: float = 1e-9, util_bin_s: float | None = None,
          keep_fcts: bool = False) -> Prediction:
    """The same workload on a non-blocking fabric: every flow crosses only its two host links
    (sender's uplink, receiver's downlink), so only the hosts' NICs limit."""
    return _simulate(fabric, plans, None, goodput_factor, True, batch_tol_s,
                     util_bin_s, keep_fcts)

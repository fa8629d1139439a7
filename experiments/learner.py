"""`demand: measured`: a controller that learns the traffic from the switches, then plans it.

Hedera's controller learned its demand from edge-switch flow statistics; so does this one
(docs/programs.md has the whole story):

- every ordered pair of the jobs' hosts has a counting rule at its destination leaf (on
  several planes at each plane's copy of it: routing/rules.py pair_counting_rules), read
  every SAMPLE_S once the revalidators are current, each leaf with the time it was read:
  the bytes each host delivered to each other host, whatever the ports (a program's are
  ephemeral); an agents' job's pairs are also read where its step opens or closes a window,
  idle between its iterations, so that the window's ends are exact;
- a job's learning windows run from the end of its first step (start-up and warm-up left
  out) over `learn_steps` steps at a time (or `learn_s` seconds): what each pair delivered in
  one (its counter interpolated at both ends), over the window's steps, is its bytes per
  step; a pair is demand when it delivered at ELEPHANT_FRACTION of its host link's rate or
  more (Hedera's elephants);
- the run starts hashed; once every running job has learned once, the strategy places
  exactly the demand pairs (pinned per host pair at their source leaf), live, as an epoch;
  it places new demand as it appears, and a job's pairs go back to the hash when it ends;
- the model predicts each learned job (a cycle: a ring all-reduce of its bytes per edge) as
  hashed while learning and as placed; results record every window, when each job's pairs
  were placed, and its step times before and after.
"""
from __future__ import annotations

import statistics
import time
from typing import Callable

from routing.rules import cookie_of
from testbed.installer import flow_bytes_by_cookie, settle_flow_stats
from traffic.collectives import Collective, Connection, JobSpec

from .measure import observed_paths, switch_counts

#: A pair is demand when it sent at this share of its host link's rate or more over a window.
ELEPHANT_FRACTION = 0.1
#: Seconds between two readings of the counters (a reading waits for the revalidators, up to
#: ~0.5 s, and dumps the leaves' rules).
SAMPLE_S = 0.5
#: Learned host pairs are connections numbered from here (above any job's connections).
PAIR_CONN_BASE = 1 << 22


def candidate_pairs(owners: dict[str, str]) -> list[Connection]:
    """Every ordered pair of the jobs' hosts (`owners`: host -> the job it runs), as host
    pair connections; a pair belongs to its source's job."""
    hosts = sorted(owners, key=lambda h: int(h[1:]) if h[1:].isdigit() else 0)
    return [Connection(PAIR_CONN_BASE + i, owners[a], a, b, 0, 0)
            for i, (a, b) in enumerate((a, b) for a in hosts for b in hosts if a != b)]


def delivered_at(readings: list[tuple[float, dict[int, int]]], cid: int, t: float) -> float:
    """A pair's cumulative delivered bytes at time t, interpolated linearly between the
    readings either side of t (the nearest one when t lies outside them)."""
    for (t0, c0), (t1, c1) in zip(readings, readings[1:]):
        if t0 <= t <= t1:
            y0, y1 = c0.get(cid, 0), c1.get(cid, 0)
            return y0 + (y1 - y0) * ((t - t0) / (t1 - t0) if t1 > t0 else 1.0)
    near = min(readings, key=lambda r: abs(r[0] - t))
    return near[1].get(cid, 0)


class DemandLearner:
    """Drives the controller under demand: measured (hooks of the program or traffic driver).

    Every SAMPLE_S the counters of every running job's pairs are read, with the time of the
    reading. A job's window runs from the end of one of its steps to the end of the
    learn_steps-th after it (steps' ends as the ranks timed them); what each pair delivered
    in it, its counter interpolated at both ends, over those steps, is its bytes per step."""

    def __init__(self, controller, exp, log: Callable[[str], None],
                 clock: Callable[[], float] = time.monotonic):
        """`clock`: the machine's monotonic clock (a test's script)."""
        self.c, self.log, self.clock = controller, log, clock
        self.learn_steps, self.learn_s = exp.demand[1], exp.demand[2]
        self.pairs = [c for c in controller.conns if c.conn_id >= PAIR_CONN_BASE]
        self.by_id = {c.conn_id: c for c in self.pairs}
        self.host_mbps = exp.fabric.spec.host_link_mbps
        self.running: set[str] = set()
        self.read_at: list[float] = []            # when each reading began (its first dump)
        #: per leaf, (when it was dumped, bytes per cookie): each leaf stamped as it is read
        self.series: dict[str, list[tuple[float, dict[int, int]]]] = {}
        self.at_leaves: dict[int, list[str]] = {}  # pair -> where it is counted (each plane)
        #: pair -> {a step's end: bytes delivered by then}, read while its job was idle
        self.exact: dict[int, dict[float, int]] = {}
        self.ends: dict[str, list[float]] = {}    # per job, when each of its steps ended
        self.window: dict[str, float] = {}        # per job, when its open window began
        self.windows: list[dict] = []             # what each window learned
        self.clock0 = clock()
        self.planned_at: dict[str, float] = {}     # per job, when its pairs were first placed
        self.demand: frozenset[int] = frozenset()
        self._ever: frozenset[int] = frozenset()  # every pair ever placed
        #: demand learned but not placed yet: the first plan waits until every running job
        #: has learned once (a job placed alone would meet the others' hashed flows)
        self.pending: frozenset[int] = frozenset()
        self.hashed_counts: dict[str, dict[int, int]] = {}   # switch counters at the plan

    # -- counters ------------------------------------------------------------------------------
    def _sample(self, t: float) -> None:
        """Read the running jobs' pairs, from their destination leaves' rules (on several
        planes, each plane's copy of it) once the revalidators have caught up with the
        datapath; each leaf stamped as it is read, so that a reading of several leaves
        (planes) does not date the first ones' counters by the last one's dump."""
        mine = [c for c in self.pairs if c.job in self.running]
        if not mine:
            return
        first = None
        for leaf, counts in self._read(mine):
            at = self.clock() - self.clock0
            self.series.setdefault(leaf, []).append((at, counts))
            first = at if first is None else first
        self.read_at.append(first)

    def _read(self, pairs: list[Connection]):
        """(leaf, bytes per cookie) of every leaf where `pairs` are counted, each dumped as
        it is yielded, once the revalidators have caught up with the datapath."""
        settle_flow_stats()
        f = self.c.fabric0
        for c in pairs:
            self.at_leaves.setdefault(c.conn_id, [f.leaf_at(c.dst, p)
                                                  for p in range(1, f.planes + 1)])
        for leaf in dict.fromkeys(x for c in pairs for x in self.at_leaves[c.conn_id]):
            yield leaf, flow_bytes_by_cookie(leaf)

    def _read_idle(self, job: str, t: float) -> None:
        """`job`'s pairs read while they are idle since its step ended at t (an agents'
        job between iterations: the driver's hooks run before it starts the next one), so
        the counters are what they delivered by t, exactly."""
        mine = [c for c in self.pairs if c.job == job]
        counts = dict(self._read(mine))
        for c in mine:
            self.exact.setdefault(c.conn_id, {})[t] = sum(
                counts[leaf].get(cookie_of(c.conn_id), 0) for leaf in self.at_leaves[c.conn_id])

    def delivered(self, cid: int, t: float) -> float:
        """What pair `cid` had delivered by t: read at t while idle, or else interpolated
        between the readings of every leaf it is counted at."""
        if t in self.exact.get(cid, {}):
            return self.exact[cid][t]
        return sum(delivered_at(self.series[leaf], cookie_of(cid), t)
                   for leaf in self.at_leaves.get(cid, ()) if leaf in self.series)

    # -- hooks ---------------------------------------------------------------------------------
    def jobs_started(self, jobs: list[str], t: float) -> None:
        """Jobs begin, hashed until learned; each one's first window opens at the end of its
        first step (start-up, compilation and warm-up are not its demand)."""
        self.clock0 = self.clock() - t              # the jobs' clock
        self.c.policy.active.update(jobs)
        self.running.update(jobs)

    def step(self, job: str, step: int, t: float) -> None:
        """`job` completed a step (every rank recorded it), which ended at t."""
        self.ends.setdefault(job, []).append(t)
        self.window.setdefault(job, t)

    def iteration_done(self, job: str, record) -> None:
        """An agents' job's iteration (traffic/driver.py on_iteration) is one step; where it
        opens or closes the job's window its pairs are read now, idle (`_read_idle`)."""
        t = record.end_s - self.clock0
        self.step(job, 0, t)
        start = self.window.get(job)
        if job in self.running and (t == start or self._window_end(job, start) == t):
            self._read_idle(job, t)

    def job_finished(self, job: str, t: float) -> None:
        self.running.discard(job)
        self.window.pop(job, None)
        self.c.policy.active.discard(job)
        self.pending = frozenset(cid for cid in self.pending if self.by_id[cid].job != job)
        left = frozenset(cid for cid in self.demand if self.by_id[cid].job != job)
        if left != self.demand:
            self._plan(left, t, f"finish {job}")

    def due_s(self) -> float | None:
        """The next reading."""
        return self.read_at[-1] + SAMPLE_S if self.read_at and self.running else None

    def tick(self, t: float) -> float | None:
        """A reading every SAMPLE_S; learn from every window that a reading has closed."""
        if not self.read_at or t >= self.read_at[-1] + SAMPLE_S:
            self._sample(t)
        last = self.read_at[-1] if self.read_at else -1.0
        for job, start in list(self.window.items()):
            end = self._window_end(job, start)
            if end is not None and (last >= end or self._read_at_end(job, end)):
                self._learn(job, start, end)
        return self.due_s()

    def _read_at_end(self, job: str, end: float) -> bool:
        """Whether `job`'s pairs were read idle at `end`."""
        return any(end in self.exact.get(c.conn_id, {}) for c in self.pairs if c.job == job)

    def _window_end(self, job: str, start: float) -> float | None:
        """When `job`'s window from `start` closes: at the end of its learn_steps-th step
        after it, or learn_s after it; None while it is open."""
        if self.learn_s is not None:
            return start + self.learn_s
        later = [e for e in self.ends.get(job, []) if e > start]
        return later[self.learn_steps - 1] if len(later) >= self.learn_steps else None

    # traffic/driver.py's FlowWatch, for our agents' jobs (no transfer reports wanted)
    wants_transfers = False

    def iteration_started(self, job: str, t: float) -> None:
        pass

    def transfer_received(self, job: str, tid: int, t: float) -> None:
        pass

    # -- learning and planning -------------------------------------------------------------------
    def _learn(self, job: str, start: float, end: float) -> None:
        """`job`'s window [start, end] closed: what each pair delivered in it (its counter
        interpolated at both ends between the readings around them), demand where that is a
        tenth of its link or more, bytes per step over the job's steps there, a plan if the
        demand grew, and the next window from `end`."""
        steps = [e for e in self.ends.get(job, []) if start < e <= end]
        span = max(end - start, 1e-9)
        mine = [c.conn_id for c in self.pairs if c.job == job]
        sent = {cid: self.delivered(cid, end) - self.delivered(cid, start) for cid in mine}
        new = frozenset(cid for cid, b in sent.items()
                        if b * 8 / span / 1e6 >= ELEPHANT_FRACTION * self.host_mbps)
        self.windows.append({
            "job": job, "from_s": start, "to_s": end, "steps": len(steps),
            "readings": sum(1 for r in self.read_at if start <= r <= end),
            "pairs": [{"src": self.by_id[cid].src, "dst": self.by_id[cid].dst, "bytes": b,
                       "rate_mbps": b * 8 / span / 1e6,
                       "bytes_per_step": b / len(steps) if steps else None,
                       "demand": cid in new} for cid, b in sorted(sent.items()) if b > 0]})
        self.window[job] = end
        self.pending |= new
        learning = [j for j in self.running if not any(w["job"] == j for w in self.windows)]
        if not learning and self.demand | self.pending != self.demand:
            self._plan(self.demand | self.pending, end, "learned")

    def _plan(self, demand: frozenset[int], t: float, reason: str) -> None:
        if not self.planned_at and demand:         # what the hash chose while learning
            self.hashed_counts = switch_counts(self.c.fabric_all)
        t0 = time.perf_counter()
        decision = self.c.policy.place_only(sorted(demand), reason)
        self.c.record_epoch(t, f"{reason}: {len(demand)} host pairs", decision)
        for job in {self.by_id[cid].job for cid in demand - self.demand}:
            self.planned_at.setdefault(job, t + (time.perf_counter() - t0))
        self._ever |= demand
        self.demand = demand
        self.log(f"[{self.c.entry.name}] {reason}: {len(demand)} host pairs placed by "
                 f"{self.c.strategy} at {t:.2f} s")

    # -- results -------------------------------------------------------------------------------
    def record(self) -> dict:
        """results.json's `learned`."""
        return {"learn_steps": self.learn_steps, "learn_s": self.learn_s,
                "elephant_fraction": ELEPHANT_FRACTION,
                "windows": self.windows}

    def matrix(self, job: str) -> dict[tuple[str, str], float]:
        """`job`'s demand, (src, dst) -> bytes per step: per pair of its demand, the median
        over its windows (every window's bytes per step holds, whatever the routes made its
        step time)."""
        got: dict[tuple[str, str], list[float]] = {}
        demand = {(self.by_id[cid].src, self.by_id[cid].dst) for cid in self.demand
                  | frozenset(cid for cid in self._ever if self.by_id[cid].job == job)}
        for w in self.windows:
            for p in w["pairs"]:
                if (w["job"] == job and (p["src"], p["dst"]) in demand
                        and p["bytes_per_step"] is not None):
                    got.setdefault((p["src"], p["dst"]), []).append(p["bytes_per_step"])
        return {pair: statistics.median(v) for pair, v in got.items()}

    def after_plan(self, job: str, steps: list[dict]) -> tuple[list[float], list[float]]:
        """`job`'s step times that ended before its pairs were placed, and those that began
        once every learned job's were (the plan's steady state; a step under way while rules
        changed is in neither)."""
        at = self.planned_at.get(job)
        if at is None:
            return [s["time_s"] for s in steps], []
        settled = max(self.planned_at.values())
        return ([s["time_s"] for s in steps if s["at_s"] <= at],
                [s["time_s"] for s in steps if s["at_s"] - s["time_s"] >= settled])

    def job_record(self, rec, row: dict) -> dict:
        """A job's steps before and after its plan went in, and its learned traffic."""
        before, after = self.after_plan(rec.name, rec.steps)
        return {"planned_at_s": self.planned_at.get(rec.name),
                "step_time_before_s": statistics.median(before) if before else None,
                "step_time_after_s": statistics.median(after) if after else None,
                "learned_bytes_per_step": [{"src": a, "dst": b, "bytes": v} for (a, b), v
                                           in sorted(self.matrix(rec.name).items())]}


def model_paths(learner: DemandLearner, plans) -> tuple[dict, dict]:
    """The learned traffic's connections (`plans`, JobPlans of host pairs) routed as the hash
    routed them while the controller learned (the spine counters at its first plan), and as
    it placed them: (before, after), conn_id -> path."""
    by_pair = {(c.src, c.dst): c for c in learner.pairs}
    seen = observed_paths(learner.c.fabric_all, learner.pairs, learner.hashed_counts)
    before, after = {}, {}
    for c in (c for p in plans for c in p.connections):
        pair = by_pair[(c.src, c.dst)]
        before[c.conn_id] = seen.get(pair.conn_id, {}).get("path")
        after[c.conn_id] = learner.c.policy.final_path(pair.conn_id)
    return before, after


def learned_job(name: str, matrix: dict[tuple[str, str], float]) -> JobSpec | None:
    """The model of a learned demand: one ring (every host sends to one and receives from one,
    in one cycle) as a ring all-reduce moving the same bytes per edge (2(n-1)/n x S); any
    other set of pairs as independent flows of their mean bytes. None when nothing was
    learned."""
    if not matrix:
        return None
    nxt = dict(matrix)
    succ = {a: b for a, b in nxt}
    hosts = {h for pair in nxt for h in pair}
    mean = statistics.fmean(nxt.values())
    if len(succ) == len(nxt) == len(hosts) and len(set(succ.values())) == len(hosts):
        ring, h = [], next(iter(sorted(hosts)))
        while h not in ring:
            ring.append(h)
            h = succ[h]
        if len(ring) == len(hosts):
            n = len(ring)
            return JobSpec(name, Collective.ALLREDUCE, [ring],
                           max(n, round(mean * n / (2 * (n - 1)))), host_pairs=True)
    return JobSpec(name, Collective.FLOWS, [list(p) for p in sorted(nxt)],
                   max(1, round(mean)), host_pairs=True)


# -- our agents' jobs under demand: measured --------------------------------------------------
def agents_prediction(exp, plans, learner: DemandLearner, goodput: float):
    """The agents' jobs as the learned plan routes them (each connection on its host
    pair's path), in its steady state."""
    from traffic.predictor import predict
    path = {(c.src, c.dst): learner.c.policy.final_path(c.conn_id) for c in learner.pairs}
    spine_of = {c.conn_id: path.get((c.src, c.dst)) for p in plans for c in p.connections}
    return predict(exp.fabric, plans, spine_of, goodput)


def agents_learned(run: dict, plans, driven, learner: DemandLearner) -> None:
    """results.json's `learned`, and per job: its learned bytes per step beside the ones
    its DAG declares (the check that the controller learned what ran), its iterations before
    and after its plan, and the model's error on the iterations that began once every job's
    pairs were placed."""
    run["learned"] = learner.record()
    settled = max(learner.planned_at.values(), default=None)
    for p, j in zip(plans, run["jobs"]):
        declared: dict[tuple[str, str], int] = {}
        conn = {c.conn_id: c for c in p.connections}
        for t in p.transfers:
            pair = (conn[t.conn_id].src, conn[t.conn_id].dst)
            declared[pair] = declared.get(pair, 0) + t.size_bytes
        learned = learner.matrix(p.name)
        j["learned_bytes_per_step"] = [
            {"src": a, "dst": b, "bytes": v, "declared_bytes": declared.get((a, b), 0)}
            for (a, b), v in sorted(learned.items())]
        j["planned_at_s"] = learner.planned_at.get(p.name)
        its = driven.records[p.name].iterations
        after = [it.cct_s for it in its if settled is not None
                 and it.start_s - driven.t0 >= settled]
        before = [it.cct_s for it in its if j["planned_at_s"] is None
                  or it.end_s - driven.t0 <= j["planned_at_s"]]
        j["step_time_before_s"] = statistics.median(before) if before else None
        j["step_time_after_s"] = statistics.median(after) if after else None
        if after:
            j["prediction_error_fraction"] = (statistics.fmean(after)
                                              / j["predicted_cct_mean_s"] - 1)

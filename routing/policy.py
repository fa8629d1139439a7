"""The central controller's routing decisions over time, without switches.

Pure code. The paper's controller does not route once: it recomputes whenever the set of active
flows or the fabric changes. `EpochPolicy` holds that state (active jobs, the live fabric, each
active flow's path, routing/paths.py) and answers three calls:

- `start(jobs)`: jobs begin their first iteration, an epoch;
- `finish(job)`: a job ended its last iteration, an epoch;
- `change_fabric(fabric)`: an element failed or came back; flows on a dead path are lost and
  rerouted with the rest;
- `replan(in_flight)` (epoch policy recompute="flows"): the set of flows in flight changed;
  only those are re-planned, as if they were the only flows, and the idle ones keep their
  paths (they carry nothing until their next transfer starts).

Each call recomputes the active flows' paths with the configured strategy, starting from the
previous assignment (low churn, routing/epochs.py). ECMP decides nothing here (the switches
hash); a host-enforced plan (`static`) is fixed for the whole run. The live controller
(experiments/controller.py) turns the assignment into rules; the predictor
(traffic/predictor.py) replays the same decisions in model time, so emulated and predicted runs
follow one policy.
"""
from __future__ import annotations

from dataclasses import dataclass

from testbed.fabric import Fabric
from traffic.collectives import Connection

from .base import RoutingError
from .paths import Path
from .epochs import recompute


@dataclass(frozen=True)
class Decision:
    """One recomputation: solver time (s) and how many flows changed path (None: the
    strategy does not place flows, e.g. ECMP)."""
    solve_s: float
    moved: int | None


class EpochPolicy:
    """Which path each active inter-leaf flow takes, epoch by epoch."""

    def __init__(self, strategy: str, fabric: Fabric, conns: list[Connection], seed: int = 0,
                 static: dict[int, Path | None] | None = None,
                 time_limit_s: float | None = None):
        """`time_limit_s`: each CBC solve's limit for ilp and mmf (None: their defaults)."""
        self.strategy, self.fabric, self.seed = strategy, fabric, seed
        self.options = {} if time_limit_s is None else {"time_limit_s": time_limit_s}
        self.conns = list(conns)
        self.static = static
        self.active: set[str] = set()
        self.assignment: dict[int, Path | None] = {}  # active flows (every flow when static)
        self.history: dict[int, set[Path]] = {}       # every path a flow was ever given
        self._last: dict[int, Path | None] = {}       # finished flows: their last path
        self._by_id = {c.conn_id: c for c in self.conns}
        self.peak_link_flows = 0                      # busiest link over all epochs so far
        self.solves: list[dict] = []                  # one per recomputation (results' solve)
        self._scratch: tuple | None = None            # flows and fabric of the last scratch solve
        self._replanned: tuple | None = None          # flows and fabric of the last replan
        if static is not None:
            self.assignment = dict(static)
            for cid, s in static.items():
                if s is not None:
                    self.history.setdefault(cid, set()).add(s)

    @property
    def places_flows(self) -> bool:
        """False for ECMP and fixed host-enforced plans: epochs change no route."""
        return self.strategy != "ecmp" and self.static is None

    def start(self, jobs: list[str]) -> Decision:
        self.active.update(jobs)
        return self._reroute(lost=set(), reason="start " + ",".join(sorted(jobs)))

    def finish(self, job: str) -> Decision:
        self.active.discard(job)
        if self.places_flows:
            for c in self.conns:
                if c.job == job and c.conn_id in self.assignment:
                    self._last[c.conn_id] = self.assignment.pop(c.conn_id)
        return self._reroute(lost=set(), reason=f"finish {job}")

    def recompute(self, reason: str = "iteration", low_churn: bool = False) -> Decision:
        """Recompute every active flow's path with nothing else changed: floodns's central
        strategies do so at every iteration start and end (predictor Semantics
        recompute="iterations"); they solve from scratch, hence low_churn=False. A solve
        from scratch of the same flows on the same fabric as the last one is not repeated
        (every strategy is deterministic for a seed): nothing moves."""
        key = (frozenset(self.active), self.fabric)
        if not low_churn and key == self._scratch:
            return Decision(0.0, 0 if self.places_flows else None)
        decision = self._reroute(lost=set(), reason=reason, low_churn=low_churn)
        self._scratch = None if low_churn else key
        return decision

    def replan(self, in_flight: list[int], reason: str = "flows") -> Decision:
        """Re-plan the connections `in_flight` (conn ids of active jobs carrying a transfer),
        starting from their paths now (low churn: the strategy moves a flow only where that
        lowers the busiest link); the other active connections keep theirs. The same set on
        the same fabric as the last re-plan is not solved again."""
        if not self.places_flows:
            return Decision(0.0, None)
        conns = [self._by_id[cid] for cid in in_flight if self._by_id[cid].job in self.active]
        key = (frozenset(c.conn_id for c in conns), self.fabric)
        if key == self._replanned or not conns:
            return Decision(0.0, 0)
        self._replanned = key
        return self._solve(conns, set(), reason, low_churn=True, partial=True)

    def place_only(self, conn_ids: list[int], reason: str) -> Decision:
        """Place exactly `conn_ids` (demand: measured, the host pairs the controller learned
        carry traffic), from their paths now where they have one; every other flow loses its
        path (its traffic goes back to the switches' hash)."""
        if not self.places_flows:
            return Decision(0.0, None)
        keep = set(conn_ids)
        for cid in [c for c in self.assignment if c not in keep]:
            self._last[cid] = self.assignment.pop(cid)
        self._replanned = None
        if not keep:
            return Decision(0.0, 0)
        return self._solve([self._by_id[cid] for cid in sorted(keep)], set(), reason,
                           low_churn=True, partial=True)

    def change_fabric(self, fabric: Fabric, reason: str = "fabric change") -> Decision:
        """The fabric after a failure or repair: flows whose path died are rerouted
        (a fixed host-enforced plan cannot be: RoutingError)."""
        self.fabric = fabric
        lost = {cid for cid, s in self.assignment.items()
                if s is not None and not self.usable(cid, s)}
        if lost and self.static is not None:
            raise RoutingError(f"host-enforced plan: {len(lost)} flows lost their path and "
                               "fixed source ports cannot be rerouted")
        if self.places_flows:
            for cid in lost:
                self.assignment.pop(cid)
        return self._reroute(lost, reason)

    def usable(self, cid: int, path: Path) -> bool:
        c = self._by_id[cid]
        return self.fabric.serves(c.src, c.dst, path)

    def final_path(self, cid: int) -> Path | None:
        """The path a flow has now, or the last it had (finished jobs)."""
        if cid in self.assignment:
            return self.assignment[cid]
        return self._last.get(cid)

    def _reroute(self, lost: set[int], reason: str, low_churn: bool = True) -> Decision:
        self._scratch = None
        self._replanned = None
        if not self.places_flows:
            return Decision(0.0, None)
        active = [c for c in self.conns if c.job in self.active]
        return self._solve(active, lost, reason, low_churn)

    def _solve(self, conns: list[Connection], lost: set[int], reason: str, low_churn: bool,
               partial: bool = False) -> Decision:
        """Route `conns` with the strategy from their previous paths; with `partial` the
        other active flows keep theirs, else `conns` are every active flow."""
        ids = {c.conn_id for c in conns} if partial else None
        previous = {cid: s for cid, s in self.assignment.items() if ids is None or cid in ids}
        from . import TIME_LIMITED
        result = recompute(self.strategy, self.fabric, conns, previous, seed=self.seed,
                           low_churn=low_churn,
                           **(self.options if self.strategy in TIME_LIMITED else {}))
        paths = {c.conn_id: result.plan.path_of[c.conn_id] for c in conns}
        self.assignment = {**self.assignment, **paths} if partial else paths
        for cid, s in paths.items():
            if s is not None:
                self.history.setdefault(cid, set()).add(s)
        moved = sum(1 for cid, s in paths.items() if cid in previous and previous[cid] != s)
        moved += sum(1 for cid in lost if self.assignment.get(cid) is not None)
        self.peak_link_flows = max(self.peak_link_flows, result.max_link_flows)
        self.solves.append({"reason": reason, "flows": len(conns),
                            "max_link_flows": result.max_link_flows,
                            **result.plan.stats.as_dict()})
        return Decision(result.plan.stats.time_s, moved)

"""Routes over time for the predictor: the controller's policy replayed in model time.

An emulated run's controller recomputes routes at every epoch (jobs start or finish) and event
(failures, repairs). `ControllerRoutes` makes the predictor (traffic/predictor.py `Router`)
follow the same policy (routing/policy.py) at the model's own epoch times, so that `predict`
and the prediction beside every `run` model what the controller does, not a single plan:

- optimizing strategies: the policy's assignment of the active flows, epoch by epoch;
- host-enforced plans: fixed;
- ECMP: the model's per-hop hash over the live paths, or, for an emulated run, the path each
  flow's bytes really took between two events (`observed_phases`, from the switch counters).
"""
from __future__ import annotations

from collections import Counter

from routing import route
from routing.base import link_flow_counts
from routing.paths import Path
from routing.policy import EpochPolicy
from routing.rules import ECMP
from testbed.fabric import Fabric
from traffic.collectives import Connection

from .config import Event, apply_event


class ControllerRoutes:
    """A `Router` for traffic.predictor.predict."""

    def __init__(self, strategy: str, fabric: Fabric, conns: list[Connection], seed: int,
                 events: list[Event] = (), static: dict[int, Path | None] | None = None,
                 observed_phases: list[dict[int, Path | None]] | None = None,
                 time_limit_s: float | None = None,
                 hashed: dict[int, Path | None] | None = None):
        """`observed_phases[k]`: ECMP only, conn_id -> path seen between event k-1 and event
        k (phase 0 before the first event); flows not seen in a phase take the model hash.
        `time_limit_s`: each ilp / mmf solve's CBC limit (the config's solver_time_limit_s).
        `hashed`: ECMP only, the hash on `fabric` when the caller already has it (phase 0)."""
        self.policy = EpochPolicy(strategy, fabric, conns, seed, static=static,
                                  time_limit_s=time_limit_s)
        self.conns, self.seed, self.events = conns, seed, list(events)
        self.observed = observed_phases
        self.phase = 0
        #: ECMP: the switches' hash (or the paths it was seen to take), not the policy's
        self.hashed = strategy == ECMP
        self._hashed = self._ecmp(hashed) if self.hashed else {}
        #: (src, dst) -> the most flows the policy put on the link in any epoch, once
        #: `track_links` was called (links.csv's `flows` of a planner)
        self.link_peak: Counter | None = None

    @property
    def fixed_routes(self) -> bool:
        """Routes that never move in a run: ECMP's one hash, no fabric events (the
        predictor may then replay a solo job's run, traffic/predictor_replay.py)."""
        return self.hashed and not self.events

    def track_links(self) -> None:
        """From now on, keep each link's most flows over the policy's epochs (`link_peak`)."""
        self.link_peak = Counter()

    def _ecmp(self, hashed: dict[int, Path | None] | None = None) -> dict[int, Path | None]:
        """The hash on the current fabric (`hashed`, or computed), then the observed paths."""
        paths = dict(hashed if hashed is not None else
                     route(ECMP, self.policy.fabric, self.conns, seed=self.seed).path_of)
        if self.observed and self.phase < len(self.observed):
            for cid, p in self.observed[self.phase].items():
                if p is not None and self.policy.usable(cid, p):
                    paths[cid] = p
        return paths

    def _routes(self) -> dict[int, Path | None]:
        if self.hashed:
            return self._hashed
        if self.link_peak is not None:
            for link, n in link_flow_counts(self.policy.fabric, self.conns,
                                            self.policy.assignment).items():
                if n > self.link_peak[link]:
                    self.link_peak[link] = n
        return dict(self.policy.assignment)

    # -- traffic.predictor.Router -------------------------------------------------------------
    def jobs_started(self, jobs: list[str], t: float) -> dict[int, Path | None]:
        self.policy.start(jobs)
        return self._routes()

    def job_finished(self, job: str, t: float) -> dict[int, Path | None]:
        self.policy.finish(job)
        return self._routes()

    def recompute(self, t: float) -> dict[int, Path | None]:
        """floodns's central strategies: every active flow rerouted at an iteration's start
        or end (predictor Semantics recompute="iterations")."""
        self.policy.recompute(f"iteration bound at {t:.6g} s")
        return self._routes()

    def flows_changed(self, in_flight: list[int], t: float) -> dict[int, Path | None]:
        """recompute="flows": the flows in flight changed at t; the policy re-plans them."""
        self.policy.replan(in_flight, f"flows at {t:.6g} s")
        return self._routes()

    def event_times(self) -> list[float]:
        return [e.at_s for e in self.events]

    def fire(self, k: int, t: float) -> tuple[Fabric, dict[int, Path | None]]:
        event = self.events[k]
        after = apply_event(self.policy.fabric, event)
        self.policy.change_fabric(after, f"{event.kind} {'/'.join(event.target)}")
        self.phase = k + 1
        if self.hashed:
            self._hashed = self._ecmp()
        return after, self._routes()

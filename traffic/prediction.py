"""What a prediction returns (Prediction, JobResult), the semantics it follows (Semantics: ours,
or floodns's), what a router answers (Router) and the error type. Pure data;
traffic/predictor.py computes them.

Semantics other than ours: floodns's synchronous ring steps (ring_sync="step"), its
recomputation at every iteration start and end (recompute="iterations", asked of the router)
and its unrecorded tail step; re-planning the flows in flight whenever one starts or ends
(recompute="flows"); its all-reduce time (max over rings of ring end - iteration
start) and next start (start + that + compute) are ours already. floodns's 1 ns between steps
(<= 15 ns per iteration) is not modelled.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from testbed.fabric import Fabric
from traffic.collectives import CONNECTIONS


class PredictorError(ValueError):
    """Input the predictor cannot simulate: a missing or unusable route, a malformed DAG."""


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
    transfer_bytes: np.ndarray               # (T,) size of each transfer (may be the plan's)
    transfer_conn: np.ndarray                # (T,) conn_id of each transfer (the plan's: read only)
    fct_mean_s: np.ndarray                   # (T,) mean FCT over the iterations run
    fct_max_s: np.ndarray                    # (T,) max FCT over the iterations run
    fct_s: np.ndarray | None = None          # (iterations, T), only with keep_fcts=True

    @property
    def mean_cct_s(self) -> float:
        return float(np.mean(self.cct_s)) if self.cct_s else float("nan")

    def conn_rates_mbps(self) -> dict[int, float]:
        """Per connection: bytes carried / time it had a transfer in flight (Mbit/s),
        averaged over iterations; the "flow rate" of the fairness metric."""
        conns, rates = self.conn_rates()
        return dict(zip(conns.tolist(), rates.tolist()))

    def conn_rates(self) -> tuple[np.ndarray, np.ndarray]:
        """conn_rates_mbps as arrays: conn ids ascending, their rates (Mbit/s; inf for a
        connection that was never busy)."""
        conns, inv = np.unique(self.transfer_conn, return_inverse=True)
        bits = np.bincount(inv, weights=self.transfer_bytes * 8.0)
        busy = np.bincount(inv, weights=self.fct_mean_s)
        with np.errstate(divide="ignore", invalid="ignore"):
            rates = np.where(busy > 0, bits / busy / 1e6, np.inf)
        return conns, rates


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
# semantics
# --------------------------------------------------------------------------------------------
RING_SYNCS = ("rank", "step", "flow")


RECOMPUTES = ("epochs", "iterations", "flows")
#: The longest hold between two re-plans of recompute="flows" a config may ask for (s).
MAX_REPLAN_INTERVAL_S = 60.0


@dataclass(frozen=True)
class Semantics:
    """How the model runs the jobs: ours (the default) or floodns's (`Semantics.floodns()`).

    ring_sync: `rank` (NCCL): a rank's step-k send waits for the chunk of step k-1 it
    receives; `step` (floodns): a ring's step k starts when the ring's whole step k-1 has
    ended (every transfer of step k-1 among those its dependencies connect it to); `flow`:
    a ring's connections each send the iteration's bytes as one flow, without steps (the
    planner merges them: traffic/collectives.py ring_flows; the predictor sees no rings).
    recompute: `epochs`: the router is asked for routes when jobs start or finish (and at
    fabric events); `iterations` (floodns's central strategies): also at every later
    iteration start, and at every iteration end while another job is communicating (in an
    iteration, or past its last one: floodns never counts a finished job as idle again);
    `flows`: also whenever the set of flows in flight changes (a transfer starts or ends),
    the router re-plans the flows in flight, at most once per replan_min_interval_s (None:
    0 in the model; the emulator's controller holds 0.05 s, testbed/settings.py).
    tail_step: floodns starts one more iteration after the last (after compute_s) and runs
    only its first step (its roots), unrecorded; the job ends, for the router too, after it.
    connections: `job`: every job opens its own connections (its own listen port, so its own
    ECMP hash); `stream`: an imported workload's collectives on one stream (communicator)
    with the same groups send on the connections its first one opened, as NCCL's do
    (traffic/collectives.py plan_jobs; the planner's choice, the predictor sees the plans).
    """

    ring_sync: str = "rank"
    recompute: str = "epochs"
    tail_step: bool = False
    replan_min_interval_s: float | None = None
    connections: str = "job"

    @classmethod
    def floodns(cls) -> "Semantics":
        return cls(ring_sync="step", recompute="iterations", tail_step=True)

    def as_dict(self) -> dict:
        """As the YAML's `semantics:` section writes it."""
        out = {"ring_sync": self.ring_sync, "recompute": self.recompute,
               "tail_step": self.tail_step}
        if self.replan_min_interval_s is not None:
            out["replan_min_interval_s"] = self.replan_min_interval_s
        if self.connections != "job":
            out["connections"] = self.connections
        return out

    def check(self) -> None:
        if self.ring_sync not in RING_SYNCS:
            raise PredictorError(f"ring_sync: {self.ring_sync!r}; choose from {RING_SYNCS}")
        if self.connections not in CONNECTIONS:
            raise PredictorError(f"connections: {self.connections!r}; choose from "
                                 f"{CONNECTIONS}")
        if self.recompute not in RECOMPUTES:
            raise PredictorError(f"recompute: {self.recompute!r}; choose from {RECOMPUTES}")
        gap = self.replan_min_interval_s
        if gap is not None and not 0 <= gap <= MAX_REPLAN_INTERVAL_S:
            raise PredictorError(f"replan_min_interval_s: {gap!r}; from 0 to "
                                 f"{MAX_REPLAN_INTERVAL_S:g} s")


OURS = Semantics()


class Router(Protocol):
    """Routes that change while the jobs run: the controller's epochs and the fabric's events
    (experiments/routes.py adapts routing/policy.py). Every call returns conn_id -> spine for
    at least every connection of the active jobs. The predictor keeps the mapping it is given
    and takes the same object again as "nothing moved": a router returns a new mapping for
    new routes and never changes one it has returned."""

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

    def recompute(self, t: float) -> dict[int, str | None]:
        """Only with Semantics(recompute="iterations"): an iteration began or ended at t and
        the controller recomputes every active flow's route (floodns's central strategies)."""
        ...

    def flows_changed(self, in_flight: list[int], t: float) -> dict[int, str | None]:
        """Only with Semantics(recompute="flows"): the connections carrying a transfer at t
        (s) changed; the controller re-plans those connections (the others keep theirs)."""
        ...

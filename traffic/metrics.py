"""How good is a routing for the jobs on the network: efficiency and the 2-layered fairness vector.

Pure code over two predictions of the same workload: `pred` (the routing under test, from
traffic.predictor.predict) and `ideal_pred` (the same jobs on a non-blocking fabric, from
traffic.predictor.ideal, where only the hosts' own links limit).

* **Per-job efficiency** = ideal mean CCT / predicted mean CCT (as in results.json). 1.0 means
  the network costs the job nothing; 0.5 means its collectives take twice as long as they must.
* **Network-wide efficiency** = the arithmetic mean of the per-job efficiencies (every job
  counts once, whatever its size). Our choice: each job is a tenant whose iteration time is its
  slowest ring, and a routing that slows a small job down must not hide behind a big one that
  runs well (a byte- or time-weighted mean would let it).
* **Link-load imbalance** = the most bytes on one fabric link / the mean over the links routing
  could use (every switch link on a live shortest path between the leaves the flows connect;
  a transfer between two GPUs of one server connects none: it stays on NVLink).
  1.0: every usable link carried the same; ECMP piling 3 of 16 equal flows on one of 16
  uplinks gives 3.0. Links no path offers are left out, so a link a failure took away does not
  count as idle.
* **2-layered max-min fairness vector** -- OUR READING of the paper's objective, not its
  published definition: layer 1 = the jobs' efficiencies sorted ascending (max-min across
  jobs: each job is as fast as its slowest ring); layer 2 = within each job, its flows'
  (connections') rates sorted ascending, normalized by the host link rate, the jobs taken in
  layer-1 order. Routing A is better than B when A's vector is lexicographically larger
  (first layer 1, then layer 2), comparing values within a relative tolerance.
  A connection's rate = bytes it carries per iteration / time it had a transfer in flight.
"""
from __future__ import annotations

from collections.abc import Iterable
from itertools import compress
from operator import not_
from dataclasses import dataclass

import numpy as np

from testbed.fabric import Fabric
from traffic.predictor import Prediction


class MetricError(ValueError):
    """Two predictions that do not describe the same jobs."""


def job_efficiency(pred: Prediction, ideal_pred: Prediction) -> dict[str, float]:
    """{job: ideal mean CCT / predicted mean CCT} (1.0 = as fast as non-blocking); the same
    definition as the `efficiency` of a job in results.json (experiments/results.py)."""
    if set(pred.jobs) != set(ideal_pred.jobs):
        raise MetricError(f"jobs differ: {sorted(pred.jobs)} vs {sorted(ideal_pred.jobs)}")
    out: dict[str, float] = {}
    for name, job in pred.jobs.items():
        mean = job.mean_cct_s
        out[name] = ideal_pred.jobs[name].mean_cct_s / mean if mean > 0 else 1.0
    return out


def network_efficiency(pred: Prediction, ideal_pred: Prediction) -> float:
    """Mean of the per-job efficiencies (each job counts once); see the module docstring."""
    eff = job_efficiency(pred, ideal_pred)
    return sum(eff.values()) / len(eff) if eff else float("nan")


@dataclass(frozen=True)
class FairnessVector:
    """Layer 1: job efficiencies ascending; layer 2: per job (same order, `jobs`), its
    connections' rates / host link rate, ascending."""

    jobs: tuple[str, ...]
    layer1: tuple[float, ...]
    layer2: tuple[tuple[float, ...], ...]

    def as_dict(self) -> dict:
        return {"jobs": list(self.jobs), "layer1": list(self.layer1),
                "layer2": [list(r) for r in self.layer2]}


def fairness_vector(pred: Prediction, ideal_pred: Prediction,
                    reference_rate_mbps: float | None = None) -> FairnessVector:
    """The 2-layered max-min vector (our reading; module docstring). Rates are divided by
    reference_rate_mbps (default: the largest link capacity of the fabric)."""
    eff = job_efficiency(pred, ideal_pred)
    ref = reference_rate_mbps or float(pred.link_capacity_mbps.max())
    order = sorted(eff, key=lambda n: (eff[n], n))
    layer2 = tuple(
        tuple(sorted(r / ref for r in pred.jobs[n].conn_rates_mbps().values())) for n in order)
    return FairnessVector(tuple(order), tuple(eff[n] for n in order), layer2)


def summary(pred: Prediction, ideal_pred: Prediction) -> dict:
    """JSON-ready: network efficiency, per-job efficiency and CCTs, the fairness vector."""
    eff = job_efficiency(pred, ideal_pred)
    return {
        "efficiency": network_efficiency(pred, ideal_pred),
        "job_efficiency": eff,
        "cct_s": pred.cct_s(),
        "ideal_cct_s": {n: j.mean_cct_s for n, j in ideal_pred.jobs.items()},
        "fairness": fairness_vector(pred, ideal_pred).as_dict(),
    }


def link_load_imbalance(pred: Prediction, fabric: Fabric,
                        leaf_pairs: Iterable[tuple[str, str]]) -> float | None:
    """Max / mean bytes over the switch links on the live shortest paths between `leaf_pairs`
    (the links routing could use; see the module docstring). None when no flow leaves its leaf
    or no such link carried a byte."""
    usable = _usable_links(fabric, leaf_pairs)
    if not usable:
        return None
    # bytes on a link = its time-weighted mean utilization x capacity x the makespan; summed
    # in the links' sorted order, as Python floats
    at = np.fromiter(map(fabric.link_index.__getitem__, usable), np.int64, len(usable))
    loads = (np.asarray(pred.link_mean_util, dtype=float)[at]
             * np.asarray(pred.link_capacity_mbps, dtype=float)[at]).tolist()
    mean = sum(loads) / len(loads)
    return max(loads) / mean if mean > 0 else None


def fabric_leaf_pairs(fabric: Fabric, conns: list) -> set[tuple[str, str]]:
    """(source leaf, destination leaf) of each connection that crosses the fabric: not
    between two GPUs of one server (NVLink only; a PXN relay's record is already sent by the
    relay)."""
    srcs, dsts = [c.src for c in conns], [c.dst for c in conns]
    crosses = list(map(not_, fabric.same_servers_of(srcs, dsts)))
    return set(zip(fabric.leaves_of(compress(srcs, crosses)),
                   fabric.leaves_of(compress(dsts, crosses))))


def _usable_links(fabric: Fabric, leaf_pairs: Iterable[tuple[str, str]]
                  ) -> list[tuple[str, str]]:
    """The links of the live shortest paths between `leaf_pairs`, sorted; the scan stops
    once they are every live link between two switches (on the 16,384-NIC clos3 its 8,192
    are reached after a few of 12,542 pairs, whose paths were 6 M link tuples: 0.6 s)."""
    hosts = set(fabric.hosts)
    live = fabric.live_links(e for e in fabric.links       # the fabric's own tuples
                             if e[0] not in hosts and e[1] not in hosts)
    usable: set[tuple[str, str]] = set()
    for a, b in set(leaf_pairs):
        for p in fabric.switch_paths(a, b):
            usable.update(zip(p, p[1:]))
        if len(usable) >= len(live) and usable >= live:
            break
    return sorted(usable)

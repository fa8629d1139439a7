"""The predictor's results: each link's load integrated over the run (`LinkUsage`, which the
water-filling kernels' `advance` writes) and the `Prediction` record built at the end.

Pure code (numpy). Loads in Mbit/s, times in seconds, utilizations as fractions of a link's
nominal capacity (before the goodput factor).
"""
from __future__ import annotations

import numpy as np

from traffic.prediction import JobResult, PredictorError


class LinkUsage:
    """Per link (+ the pad link): the load at the current rates, its integral over time and
    its maximum; with `bin_s`, also the integral per time bin of that width."""

    def __init__(self, n_links: int, bin_s: float | None):
        self.n_links, self.bin_s = n_links, bin_s
        self.integral = np.zeros(n_links + 1)          # Mbit
        self.load = np.zeros(n_links + 1)              # Mbit/s, at current rates
        self.max = np.zeros(n_links + 1)               # Mbit/s
        self.series: dict[int, np.ndarray] = {}        # bin -> Mbit

    def bin(self, t0: float, t1: float) -> None:
        """The current load held from t0 to t1, into the time bins it spans."""
        w = self.bin_s
        for b in range(int(t0 // w), int(t1 // w) + 1):
            lo, hi = max(t0, b * w), min(t1, (b + 1) * w)
            if hi > lo:
                if b not in self.series:
                    self.series[b] = np.zeros(self.n_links + 1)
                self.series[b] += self.load * (hi - lo)

    def mean_util(self, makespan_s: float, nominal: np.ndarray) -> np.ndarray:
        if not makespan_s > 0:
            return np.zeros(self.n_links)
        return (self.integral / makespan_s / np.append(nominal, np.inf))[:self.n_links]

    def max_util(self, nominal: np.ndarray) -> np.ndarray:
        return (self.max / np.append(nominal, np.inf))[:self.n_links]

    def util_series(self, makespan_s: float, nominal: np.ndarray) -> np.ndarray | None:
        """(bins, links) mean utilization per bin, or None without bins."""
        if self.bin_s is None:
            return None
        n_bins = int(np.ceil(makespan_s / self.bin_s)) if makespan_s > 0 else 0
        out = np.zeros((n_bins, self.n_links), dtype=np.float32)
        for b, v in self.series.items():
            if b < n_bins:
                out[b] = (v[:self.n_links] / self.bin_s / nominal)
        return out


def job_results(jobs: list, now: float) -> dict[str, JobResult]:
    """Every job's result by name; PredictorError if one stalled before its last iteration."""
    results: dict[str, JobResult] = {}
    for job in jobs:
        if job.iteration < job.iterations:
            raise PredictorError(
                f"jobs.{job.name}: stalled after {job.iteration} of {job.iterations} "
                f"iterations at t={now:.6g} s (a flow with no capacity on its path?)")
        results[job.name] = job.result()
    return results

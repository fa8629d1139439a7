"""What a benchmark ran under, printed beside its figures: the machine's load, which code paths
ran (compiled kernels or plain Python, numba's cache state) and the solvers' versions.

Machines here are shared: a figure is quoted with the load average it was measured at, as a
median over repeats, with CPU time per call beside wall time (the load moves CPU time less)."""
from __future__ import annotations

import os
import platform
import statistics
import time
from importlib import metadata


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, and the cores."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} on {os.cpu_count()} cores"


def versions() -> str:
    out = [f"python {platform.python_version()}"]
    for pkg in ("numpy", "numba", "highspy", "PuLP"):
        try:
            out.append(f"{pkg} {metadata.version(pkg)}")
        except metadata.PackageNotFoundError:
            out.append(f"{pkg} missing")
    return ", ".join(out)


def kernels() -> str:
    """Which code paths the routing and predictor kernels take in this process, after warming
    them (numba import, then compile or load from its on-disk cache)."""
    from routing.greedy import warm_kernels
    from traffic import dag_kernel, waterfill
    took, how = warm_kernels()
    t0 = time.perf_counter()
    waterfill.warm()
    dag_kernel.warm()
    made = [getattr(k, "stats", None) for k in (waterfill.fill_with, waterfill.advance,
                                                 dag_kernel.complete)]
    state = ("plain Python" if None in made else
             "compiled now" if any(k.cache_misses for k in made) else "loaded from numba's cache")
    return (f"greedy's loops: {how} in {took:.2f} s; predictor's water-filling, fluid step and "
            f"DAG step: {state} in {time.perf_counter() - t0:.2f} s")


def header() -> str:
    """The lines a benchmark prints first."""
    return f"conditions: {load_average()}; {versions()}\nkernels: {kernels()}"


class Calls:
    """Wall and CPU (this process) seconds of repeated calls: medians and the max."""

    def __init__(self):
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def time(self, fn):
        """Call fn(), record its wall and CPU time, return its result."""
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        self.wall.append(time.perf_counter() - t0)
        self.cpu.append(time.process_time() - c0)
        return out

    def median_wall(self) -> float:
        return statistics.median(self.wall)

    def median_cpu(self) -> float:
        return statistics.median(self.cpu)

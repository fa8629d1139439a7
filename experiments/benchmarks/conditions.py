"""What a benchmark ran under, printed beside its figures: the machine's load, which code paths
ran (compiled kernels or plain Python, numba's cache state) and the solvers' versions.

Machines here are shared: a figure is quoted with the load average it was measured at, as a
median over repeats, with CPU time per call beside wall time (the load moves CPU time less).
Benchmarks print these through harness.conditions."""
from __future__ import annotations

import os
import platform
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
    them (built ahead of time; else numba import, then compile or load from its on-disk
    cache)."""
    from routing.greedy import warm_kernels
    from traffic import dag_kernel, jit, waterfill
    took, how = warm_kernels()
    t0 = time.perf_counter()
    if jit.ahead_of_time() is not None:
        return (f"greedy's loops: {how} in {took:.2f} s; predictor's water-filling, fluid step "
                f"and DAG step: built ahead of time (traffic/aot.py), loaded in "
                f"{time.perf_counter() - t0:.3f} s")
    waterfill.warm()
    dag_kernel.warm()
    made = [getattr(k, "stats", None) for k in (waterfill.fill_with, waterfill.advance,
                                                 dag_kernel.complete)]
    state = ("plain Python" if None in made else
             "compiled now" if any(k.cache_misses for k in made) else "loaded from numba's cache")
    return (f"greedy's loops: {how} in {took:.2f} s; predictor's water-filling, fluid step and "
            f"DAG step: {state} in {time.perf_counter() - t0:.2f} s")


def header(with_kernels: bool = True) -> str:
    """The lines a benchmark prints first (the kernels' line only `with_kernels`: it warms
    them, which a script that times no kernel need not wait for)."""
    line = f"conditions: {load_average()}; {versions()}"
    return f"{line}\nkernels: {kernels()}" if with_kernels else line

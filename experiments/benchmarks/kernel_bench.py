"""Each strategy's two kernels on every shipped leaf-spine config: the spine-indexed one that
`route` uses where a path has one choice (the spine), and the path kernel every other fabric
uses. Prints, per strategy, on how many configs both give the same routes and the total wall
time of each (median of --runs), so that keeping a spine kernel is a measured decision: it
stays only where it is more than 2x faster, or where the two differ (merging would move
routes). Run: .venv/bin/python experiments/benchmarks/kernel_bench.py [--runs 3]
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from experiments.config import load
from routing.registry import KERNELS, paths_of, warm_kernels
from traffic.collectives import plan_jobs

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.yaml"))


def _timed(kernel, fabric, conns, seed: int, runs: int):
    times, plan = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        plan = kernel(fabric, conns, seed=seed)
        times.append(time.perf_counter() - t0)
    return plan, statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    warm_kernels()
    rows: dict[str, list[tuple[str, bool, float, float]]] = {}
    for path in CONFIGS:
        exp = load(path)
        if len(exp.fabric.choice_points) != 1:
            continue
        conns = [c for p in plan_jobs(exp.jobs) for c in p.connections]
        for name, (spine, paths) in KERNELS.items():
            if spine is paths:
                continue
            a, ta = _timed(spine, exp.fabric, conns, exp.seed, args.runs)
            try:
                b, tb = _timed(paths, exp.fabric, conns, exp.seed, args.runs)
            except (ZeroDivisionError, ValueError, KeyError):
                continue   # a three-tier algorithm of its own (edge-coloring's staged colouring)
            same = paths_of(exp.fabric, conns, a.path_of) == b.path_of
            rows.setdefault(name, []).append((path.name, same, ta, tb))
    print(f"{'strategy':14} {'same routes':>12} {'spine s':>9} {'path s':>9} {'path/spine':>10}")
    for name, rs in rows.items():
        ta, tb = sum(r[2] for r in rs), sum(r[3] for r in rs)
        print(f"{name:14} {sum(r[1] for r in rs):>5} of {len(rs):<4} {ta:9.3f} {tb:9.3f} "
              f"{tb / ta:9.1f}x")
        for r in rs:
            if not r[1]:
                print(f"  differs on {r[0]}")


if __name__ == "__main__":
    main()

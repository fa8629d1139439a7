"""Each strategy's two kernels on every shipped leaf-spine config: the spine-indexed one that
`route` uses where a path has one choice (the spine), and the path kernel every other fabric
uses. Prints, per strategy, on how many configs both give the same routes and the total wall
time of each (median of --runs, the two kernels called in alternation), so that keeping a
spine kernel is a measured decision: it stays only where it is more than 2x faster, or where
the two differ (merging would move routes).
Run: python -m experiments.benchmarks.kernel_bench [--runs 3]
"""
from __future__ import annotations

import argparse
from pathlib import Path

from experiments.benchmarks.harness import alternate, conditions
from experiments.config import load
from routing.registry import KERNELS, paths_of, warm_kernels
from traffic.collectives import plan_jobs

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.yaml"))


def _timed(spine, paths, fabric, conns, seed: int, runs: int):
    """Both kernels called in alternation (spine, path, spine, ...) `runs` times each: their
    last plans and median wall seconds."""
    ab = alternate(lambda: spine(fabric, conns, seed=seed),
                   lambda: paths(fabric, conns, seed=seed), runs)
    return ab.last_a, ab.a.median_wall(), ab.last_b, ab.b.median_wall()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with conditions():
        warm_kernels()
        table(args.runs)


def table(runs: int) -> None:
    """Per strategy: configs with the same routes, each kernel's total median wall time."""
    rows: dict[str, list[tuple[str, bool, float, float]]] = {}
    for path in CONFIGS:
        exp = load(path)
        if len(exp.fabric.choice_points) != 1:
            continue
        conns = [c for p in plan_jobs(exp.jobs) for c in p.connections]
        for name, (spine, paths) in KERNELS.items():
            if spine is None or spine is paths:
                continue
            try:
                a, ta, b, tb = _timed(spine, paths, exp.fabric, conns, exp.seed, runs)
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

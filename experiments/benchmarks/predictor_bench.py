"""Benchmark of the flow-level predictor on the largest paper scenario (a script, not a test).

    python experiments/benchmarks/predictor_bench.py [--config PATH] [--repeats N]
        [--routing ecmp greedy ...] [--iterations 1 11]

It prints the conditions first (load average, versions, which kernels are compiled and
whether numba's cache held them) and the load average again at the end. For each routing:
the wall and CPU time of `predict` for 1 and for 11 iterations of every job (median of
--repeats runs, after one untimed run that compiles or loads the numba kernels; its time is
printed first), the event batches (rate recomputations) and completions per second, the
peak Python heap of one run (tracemalloc, run separately), and the network-wide efficiency
against `ideal`. Targets: one iteration of the 5-job scenario in at most 1 s on 2 cores, on the
paper's leaf-spine (default) and on the 2,048-NIC clos3 (--config
experiments/configs/clos3-2048-5jobs.yaml).
"""
from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

from experiments.config import load as load_config  # noqa: E402
from routing import route  # noqa: E402
from traffic.collectives import plan_jobs  # noqa: E402
from traffic.metrics import network_efficiency  # noqa: E402
from traffic.predictor import Prediction, ideal, predict  # noqa: E402

from experiments.benchmarks.conditions import header, load_average  # noqa: E402

DEFAULT_CONFIG = ROOT / "experiments" / "configs" / "paper-5jobs-d4.yaml"


def load(path: Path):
    """The config through the project's own parser (any fabric kind)."""
    exp = load_config(path)
    return exp.raw, exp.fabric, exp.jobs


def timed(fn, repeats: int) -> tuple[float, float, Prediction]:
    """Median wall and CPU (this process) seconds of fn over repeats, and its last result."""
    walls, cpus, out = [], [], None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus), out


def peak_heap_mb(fn) -> float:
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--routing", nargs="+", default=["ecmp", "greedy"])
    ap.add_argument("--iterations", nargs="+", type=int, default=[1, 11],
                    help="iterations per job of each timed run (1-100)")
    args = ap.parse_args(argv)
    if not all(1 <= n <= 100 for n in args.iterations):
        ap.error("--iterations: each must be 1-100")

    print(header())
    cfg, fabric, specs = load(args.config)
    n_conns = sum(len(p.connections) for p in plan_jobs(specs))
    n_transfers = sum(len(p.transfers) for p in plan_jobs(specs))
    print(f"config {args.config.name}: {len(specs)} jobs, {n_conns} connections, "
          f"{n_transfers} transfers per iteration, {len(fabric.links)} directed links; "
          f"median of {args.repeats} runs")
    t0 = time.perf_counter()
    predict(fabric, plan_jobs(specs[:1]), route("ecmp", fabric, plan_jobs(specs[:1])[0].connections,
                                                seed=0).path_of)
    print(f"first prediction (numba kernels compiled, or loaded from their cache): "
          f"{time.perf_counter() - t0:.2f} s")
    for name in args.routing:
        plans1 = plan_jobs(specs)
        conns = [c for p in plans1 for c in p.connections]
        t0 = time.perf_counter()
        rp = route(name, fabric, conns, seed=cfg.get("seed", 0))
        route_s = time.perf_counter() - t0
        print(f"\n[{name}] routing {route_s:.3f} s")
        for iterations in args.iterations:
            plans = plan_jobs([replace(s, iterations=iterations) for s in specs])
            wall, cpu, pr = timed(lambda: predict(fabric, plans, rp.path_of), args.repeats)
            iwall, icpu, ip = timed(lambda: ideal(fabric, plans), args.repeats)
            heap = peak_heap_mb(lambda: predict(fabric, plans, rp.path_of))
            print(f"  {iterations:2d} iteration(s): predict {wall:.3f} s (CPU {cpu:.3f} s), "
                  f"{pr.event_batches} event batches ({pr.event_batches / wall:,.0f}/s), "
                  f"{pr.completions} completions ({pr.completions / wall:,.0f}/s), "
                  f"peak heap {heap:.1f} MB; ideal {iwall:.3f} s (CPU {icpu:.3f} s); "
                  f"efficiency {network_efficiency(pr, ip):.3f}")
        worst = {n: max(j.cct_s) for n, j in pr.jobs.items()}
        print("  CCT per job (max over iterations, s): "
              + ", ".join(f"{n} {c:.3f}" for n, c in worst.items()))
    print(f"\nend: {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

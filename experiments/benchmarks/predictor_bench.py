"""Benchmark of the flow-level predictor on the largest paper scenario (a script, not a test).

    python -m experiments.benchmarks.predictor_bench [--config PATH] [--repeats N]
        [--routing ecmp greedy ...] [--iterations 1 11]

It prints the conditions first (load average, versions, which kernels are compiled and
whether numba's cache held them) and the load average again at the end. For each routing:
the wall and CPU time of `predict` for 1 and for 11 iterations of every job (median of
--repeats runs, with the wall time's min and max, after one untimed run that compiles or
loads the numba kernels; its time is printed first), the event batches (rate
recomputations) and completions per second, the peak Python heap of one run (tracemalloc,
run separately), and the network-wide efficiency against `ideal`. Targets: one iteration of
the 5-job scenario in at most 1 s on 2 cores, on the paper's leaf-spine (default) and on the
2,048-NIC clos3 (--config experiments/configs/clos3-2048-5jobs.yaml).
"""
from __future__ import annotations

import argparse
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

from experiments.benchmarks.harness import conditions, predict_timed, repeat
from experiments.config import load as load_config
from routing import route
from traffic.collectives import plan_jobs
from traffic.metrics import network_efficiency
from traffic.predictor import ideal, predict

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG = ROOT / "experiments" / "configs" / "paper-5jobs-d4.yaml"


def load(path: Path):
    """The config through the project's own parser (any fabric kind)."""
    exp = load_config(path)
    return exp.raw, exp.fabric, exp.jobs


def peak_heap_mb(fn) -> float:
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 1e6


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--routing", nargs="+", default=["ecmp", "greedy"])
    ap.add_argument("--iterations", nargs="+", type=int, default=[1, 11],
                    help="iterations per job of each timed run (1-100)")
    args = ap.parse_args(argv)
    if not all(1 <= n <= 100 for n in args.iterations):
        ap.error("--iterations: each must be 1-100")
    if not 1 <= args.repeats <= 100:
        ap.error("--repeats: 1-100")
    return args


def one_routing(name: str, cfg: dict, fabric, specs, args: argparse.Namespace) -> None:
    """Route once, then per --iterations: predict and ideal timed (medians of --repeats),
    the peak heap of one more prediction, and the jobs' worst CCT."""
    plans1 = plan_jobs(specs)
    conns = [c for p in plans1 for c in p.connections]
    t0 = time.perf_counter()
    rp = route(name, fabric, conns, seed=cfg.get("seed", 0))
    print(f"\n[{name}] routing {time.perf_counter() - t0:.3f} s")
    for iterations in args.iterations:
        plans = plan_jobs([replace(s, iterations=iterations) for s in specs])
        calls, pr = predict_timed(fabric, plans, rp.path_of, args.repeats)
        icalls, ip = repeat(lambda: ideal(fabric, plans), args.repeats)
        wall, cpu, spread = calls.median_wall(), calls.median_cpu(), calls.wall_spread()
        heap = peak_heap_mb(lambda: predict(fabric, plans, rp.path_of))
        print(f"  {iterations:2d} iteration(s): predict {wall:.3f} s (CPU {cpu:.3f} s; wall "
              f"min {spread.low:.3f}, max {spread.high:.3f}), "
              f"{pr.event_batches} event batches ({pr.event_batches / wall:,.0f}/s), "
              f"{pr.completions} completions ({pr.completions / wall:,.0f}/s), "
              f"peak heap {heap:.1f} MB; ideal {icalls.median_wall():.3f} s "
              f"(CPU {icalls.median_cpu():.3f} s); efficiency {network_efficiency(pr, ip):.3f}")
    worst = {n: max(j.cct_s) for n, j in pr.jobs.items()}
    print("  CCT per job (max over iterations, s): "
          + ", ".join(f"{n} {c:.3f}" for n, c in worst.items()))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with conditions():
        cfg, fabric, specs = load(args.config)
        plans = plan_jobs(specs)
        n_conns = sum(len(p.connections) for p in plans)
        n_transfers = sum(len(p.transfers) for p in plans)
        print(f"config {args.config.name}: {len(specs)} jobs, {n_conns} connections, "
              f"{n_transfers} transfers per iteration, {len(fabric.links)} directed links; "
              f"median of {args.repeats} runs")
        first = plan_jobs(specs[:1])
        t0 = time.perf_counter()
        predict(fabric, first, route("ecmp", fabric, first[0].connections, seed=0).path_of)
        print(f"first prediction (numba kernels compiled, or loaded from their cache): "
              f"{time.perf_counter() - t0:.2f} s")
        for name in args.routing:
            one_routing(name, cfg, fabric, specs, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

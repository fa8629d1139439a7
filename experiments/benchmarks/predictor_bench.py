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

--ring-sync-ab: instead, per routing, `predict`'s own code (as the command runs it) with the
config's ring_sync (default `rank`: rings as steps) against `ring_sync: flow` (rings as
flows, the rest of its semantics kept), alternated (steps, flow, steps, ...; --repeats each)
after one untimed `flow` run that loads every strategy's kernels: the predictor's median wall
times (from results.json) and their ratio, the whole call's CPU and wall medians (every
routing and the ideal), and the transfers per iteration of each. The
numbers the two give: experiments/configs/sweeps/ringflow-*.yaml and `sweep_tables ringflow`.
"""
from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

from experiments.benchmarks.harness import (alternate, conditions, predict_experiment_timed,
                                           predict_timed, ratio_of_medians, repeat)
from experiments.config import load as load_config, parse, read_yaml
from routing import route
from traffic.collectives import plan_jobs
from traffic.metrics import network_efficiency
from traffic.prediction import Semantics
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
    ap.add_argument("--ring-sync-ab", action="store_true",
                    help="time predict with rings as steps against rings as flows, alternated")
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


def with_flow(doc: dict) -> dict:
    """The config with semantics.ring_sync: flow, its other semantics kept."""
    sem = doc.get("semantics")
    sem = Semantics.floodns().as_dict() if sem == "floodns" else dict(sem or {})
    return {**doc, "semantics": {**sem, "ring_sync": "flow"}}


def ring_sync_ab(path: Path, routing: list[str], repeats: int) -> None:
    """Per routing, predict's wall time (s) with rings as steps and as flows, alternated."""
    doc = {**read_yaml(path), "routing": routing}
    steps_exp, flow_exp = parse(doc, path.parent), parse(with_flow(doc), path.parent)
    predict_experiment_timed(flow_exp)                                 # kernels loaded
    ab = alternate(lambda: predict_experiment_timed(steps_exp)[1],
                   lambda: predict_experiment_timed(flow_exp)[1], repeats)
    counts = [sum(len(p.transfers) for p in e.plans()) for e in (steps_exp, flow_exp)]
    print(f"\n{path.name}: {counts[0]:,} -> {counts[1]:,} transfers per iteration "
          "(steps -> flow)")
    for k, run in enumerate(ab.last_a["runs"]):
        walls_a = [r["runs"][k]["predict_wall_s"] for r in ab.results_a]
        walls_b = [r["runs"][k]["predict_wall_s"] for r in ab.results_b]
        print(f"  {run['routing']:>14}: predict {statistics.median(walls_a):.2f} s -> "
              f"{statistics.median(walls_b):.2f} s ({ratio_of_medians(walls_a, walls_b):.1f}x "
              f"faster with flows, medians of {repeats}, order {ab.order[:4]}...)")
    print(f"  the whole predict call (every routing and the ideal), CPU: "
          f"{ab.a.median_cpu():.2f} s -> {ab.b.median_cpu():.2f} s "
          f"({ratio_of_medians(ab.a.cpu, ab.b.cpu):.1f}x), wall {ab.a.median_wall():.2f} s -> "
          f"{ab.b.median_wall():.2f} s (medians of {repeats})")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.ring_sync_ab:
        with conditions():
            ring_sync_ab(args.config, args.routing, args.repeats)
        return 0
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

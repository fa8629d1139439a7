"""Rings as flows against rings as steps: what `semantics: {ring_sync: flow}` changes in the
numbers and in the time to predict them (a script, not a test).

    python -m experiments.benchmarks.ring_flow_bench [CONFIG ...] [--routing R ...] [--repeats N]

Each config (default: the shipped paper, clos3 and fat-tree configs) is predicted through
the `predict` command's own code as written (its ring_sync, default `rank`) and with
ring_sync `flow` (the rest of its semantics kept), in alternation (steps, flow, steps, ...,
--repeats each, default 1), after one untimed `flow` run that loads every strategy's kernels.
Per routing it prints the jobs' mean CCT ratio flow / steps (median and the extremes over
jobs), both network efficiencies, the transfers per iteration and the ratio of predict's
median wall times (the predictor only, from results.json). The two agree exactly when every
hop of a ring gets one rate (a ring alone, or rings that share links evenly); elsewhere flows
end at their own hop's rate where steps wait for the slowest hop, and the others' share of
the links moves with it.

A script, not a sweep file: its figure is a ratio of two variants' predict times in one
process, alternated (a sweep runs points in parallel worker processes, whose times on a shared
2-core machine are not comparable), its CCT ratios pair each job across the two variants
(`report` tables efficiencies per point, not ratios between points), and its defaults span
seven base configs (a sweep file has one base).
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import yaml

from experiments.benchmarks.harness import (alternate, conditions, predict_experiment_timed,
                                           ratio_of_medians)
from experiments.config import parse
from traffic.prediction import Semantics

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = [ROOT / "experiments" / "configs" / f"{n}.yaml" for n in (
    "paper-1job-d8", "paper-3jobs-d4", "paper-5jobs-d4", "paper-3jobs-d4-fail4",
    "paper-4jobs-mixed", "fat-tree-rings", "clos3-2048-5jobs")]


def with_flow(doc: dict) -> dict:
    """The config with semantics.ring_sync: flow, its other semantics kept."""
    sem = doc.get("semantics")
    sem = Semantics.floodns().as_dict() if sem == "floodns" else dict(sem or {})
    return {**doc, "semantics": {**sem, "ring_sync": "flow"}}


def experiment(doc: dict, base: Path, routing: list[str] | None):
    """doc parsed (routings limited to `routing` when given)."""
    return parse({**doc, "routing": routing} if routing else doc, base)


def compare(path: Path, routing: list[str] | None, repeats: int) -> None:
    doc = yaml.safe_load(path.read_text())
    steps_exp = experiment(doc, path.parent, routing)
    flow_exp = experiment(with_flow(doc), path.parent, routing)
    predict_experiment_timed(flow_exp)                                 # kernels loaded
    ab = alternate(lambda: predict_experiment_timed(steps_exp)[1],
                   lambda: predict_experiment_timed(flow_exp)[1], repeats)
    transfers = [sum(len(p.transfers) for p in e.plans()) for e in (steps_exp, flow_exp)]
    print(f"\n{path.name}: {transfers[0]:,} -> {transfers[1]:,} transfers per iteration")
    steps, flows = ab.last_a, ab.last_b
    for k, (a, b) in enumerate(zip(steps["runs"], flows["runs"])):
        ratios = [jb["cct_mean_s"] / ja["cct_mean_s"] for ja, jb in zip(a["jobs"], b["jobs"])]
        walls_a = [r["runs"][k]["predict_wall_s"] for r in ab.results_a]
        walls_b = [r["runs"][k]["predict_wall_s"] for r in ab.results_b]
        wall_a, wall_b = statistics.median(walls_a), statistics.median(walls_b)
        print(f"  {a['routing']:>14}: CCT flow/steps median {statistics.median(ratios):.4f} "
              f"(min {min(ratios):.4f}, max {max(ratios):.4f}, {len(ratios)} jobs); "
              f"efficiency {a['efficiency']:.3f} -> {b['efficiency']:.3f}; predict "
              f"{wall_a:.2f} s -> {wall_b:.2f} s ({ratio_of_medians(walls_a, walls_b):.1f}x, medians "
              f"of {repeats}, {ab.order[:4]}...)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="*", type=Path, default=CONFIGS)
    ap.add_argument("--routing", nargs="+", default=None,
                    help="routings to compare (default: each config's own)")
    ap.add_argument("--repeats", type=int, default=1, help="timed runs of each variant (1-20)")
    args = ap.parse_args(argv)
    if not 1 <= args.repeats <= 20:
        ap.error("--repeats: 1-20")
    with conditions():
        for path in args.configs:
            compare(path, args.routing, args.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Rings as flows against rings as steps: what `semantics: {ring_sync: flow}` changes in the
numbers and in the time to predict them (a script, not a test).

    .venv/bin/python experiments/benchmarks/ring_flow_bench.py [CONFIG ...] [--routing R ...]

Each config (default: the shipped paper, clos3 and fat-tree configs) is predicted through
the `predict` command's own code twice, as written (its ring_sync, default `rank`) and with
ring_sync `flow` (the rest of its semantics kept), after one untimed `flow` run that loads
every strategy's kernels. Per routing it prints the jobs' mean CCT
ratio flow / steps (median and the extremes over jobs), both network efficiencies, the
transfers per iteration and the ratio of predict's wall times (the predictor only, from
results.json). The two agree exactly when every hop of a ring gets one rate (a ring alone, or
rings that share links evenly); elsewhere flows end at their own hop's rate where steps wait
for the slowest hop, and the others' share of the links moves with it.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from experiments.benchmarks.conditions import header, load_average  # noqa: E402
from experiments.config import parse  # noqa: E402
from experiments.predict import predict_experiment  # noqa: E402
from traffic.prediction import Semantics  # noqa: E402

CONFIGS = [ROOT / "experiments" / "configs" / f"{n}.yaml" for n in (
    "paper-1job-d8", "paper-3jobs-d4", "paper-5jobs-d4", "paper-3jobs-d4-fail4",
    "paper-4jobs-mixed", "fat-tree-rings", "clos3-2048-5jobs")]


def with_flow(doc: dict) -> dict:
    """The config with semantics.ring_sync: flow, its other semantics kept."""
    sem = doc.get("semantics")
    sem = Semantics.floodns().as_dict() if sem == "floodns" else dict(sem or {})
    return {**doc, "semantics": {**sem, "ring_sync": "flow"}}


def predicted(doc: dict, base: Path, routing: list[str] | None, out: Path) -> dict:
    """results.json of `predict` on doc (routings limited to `routing` when given)."""
    if routing:
        doc = {**doc, "routing": routing}
    exp = parse(doc, base)
    res = predict_experiment(exp, out, log=lambda _line: None)
    res["transfers"] = sum(len(p.transfers) for p in exp.plans())
    return res


def compare(path: Path, routing: list[str] | None) -> None:
    doc = yaml.safe_load(path.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        predicted(with_flow(doc), path.parent, routing, Path(tmp) / "warm")   # kernels loaded
        steps = predicted(doc, path.parent, routing, Path(tmp) / "steps")
        flows = predicted(with_flow(doc), path.parent, routing, Path(tmp) / "flow")
    print(f"\n{path.name}: {steps['transfers']:,} -> {flows['transfers']:,} transfers per "
          "iteration")
    for a, b in zip(steps["runs"], flows["runs"]):
        ratios = [jb["cct_mean_s"] / ja["cct_mean_s"] for ja, jb in zip(a["jobs"], b["jobs"])]
        speed = a["predict_wall_s"] / max(b["predict_wall_s"], 1e-9)
        print(f"  {a['routing']:>14}: CCT flow/steps median {statistics.median(ratios):.4f} "
              f"(min {min(ratios):.4f}, max {max(ratios):.4f}, {len(ratios)} jobs); "
              f"efficiency {a['efficiency']:.3f} -> {b['efficiency']:.3f}; predict "
              f"{a['predict_wall_s']:.2f} s -> {b['predict_wall_s']:.2f} s ({speed:.1f}x)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="*", type=Path, default=CONFIGS)
    ap.add_argument("--routing", nargs="+", default=None,
                    help="routings to compare (default: each config's own)")
    args = ap.parse_args(argv)
    print(header())
    for path in args.configs:
        compare(path, args.routing)
    print(f"\nend: {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

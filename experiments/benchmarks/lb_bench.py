"""The load-balancing matrix (a script, not a test): how close hashing with K subflows per
connection comes to planning, per shipped config, predicted (and emulated with --emulate, root).

    python -m experiments.benchmarks.lb_bench [--configs quickstart fat-tree-rings ...]
        [--seeds 5] [--subflows 1 2 4 8] [--splits even adaptive] [--recompute epochs flows]
        [--emulate] [--csv PATH]

Schemes: ecmp with K = 1, 2, 4, 8 subflows (median over --seeds hash seeds, with the min and
max); spray (subflows dealt round-robin over the live paths), greedy and ilp with K = 1, 2,
4; greedy re-planning the flows in flight whenever one starts or ends (`recompute: flows`,
column "replan") with K = 1, 2, 4; spray@packet (fluid per-packet spraying, the model only);
and with `split: adaptive` (the subflows share each transfer's bytes as they go) ecmp with
K = 4, 8 and spray with K = 4, in pieces of --piece-bytes (default 16 KiB: the shipped
configs' ring chunks are a few hundred kB, so a subflow takes several pieces of each).

Per config and scheme it prints the efficiency (the lowest job's ideal / mean CCT), the
network efficiency (mean over jobs), the link-load imbalance (max / mean bytes over the
usable fabric links), the most flows on one link, the connections and the prediction's wall
time; then, per config, the smallest K at which ECMP's median network efficiency reaches 90%
of the better planner's at K = 1. --emulate also runs each scheme once on the emulator (ecmp
with the first seed) and prints the emulated efficiency, the model's error and the CPU
monitor's verdict.

A script, not a sweep file: its matrix spans several base configs (a sweep file has one
base), hashes ECMP over --seeds while the planners run once, and prints medians with the
extremes over seeds, link-load imbalance and the subflows ECMP needs, none of which `report`
tables (its efficiency.csv is a mean with a 95% interval per point).
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
import tempfile
from pathlib import Path

from experiments.benchmarks.harness import conditions, predict_experiment_timed
from experiments.config import ConfigError, parse
from experiments.config.yamlio import read_yaml
from traffic.collectives import plan_jobs

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
DEFAULT = ["quickstart", "fat-tree-rings", "fidelity-mixed", "hedera-k4", "paper-3jobs-d4",
           "paper-3jobs-d4-fail4", "paper-5jobs-d4", "floodns-2jobs-d4", "clos3-2048-5jobs"]
#: (routing, K, split, recompute)
SCHEMES = ([("ecmp", k, "even", "epochs") for k in (1, 2, 4, 8)]
           + [(s, k, "even", "epochs") for s in ("spray", "greedy", "ilp") for k in (1, 2, 4)]
           + [("greedy", k, "even", "flows") for k in (1, 2, 4)]
           + [("spray@packet", 1, "even", "epochs")]
           + [("ecmp", 4, "adaptive", "epochs"), ("ecmp", 8, "adaptive", "epochs"),
              ("spray", 4, "adaptive", "epochs")])
PIECE_BYTES = 16 * 1024          # --piece-bytes
COLUMNS = ["config", "routing", "subflows", "split", "recompute", "piece_bytes", "seeds",
           "connections", "efficiency",
           "efficiency_min", "efficiency_max", "network_efficiency", "link_load_imbalance",
           "max_link_flows", "predict_wall_s", "emulated_efficiency",
           "prediction_error_fraction", "emulator_ok"]


def experiment(name: str, routing: str, k: int, split: str, seed: int | None,
               piece_bytes: int = PIECE_BYTES, recompute: str = "epochs"):
    """The shipped config `name` with one routing, K subflows split `split` (pieces of
    piece_bytes), (if given) another seed, and with recompute "flows" its semantics
    re-planning the flows in flight."""
    path = CONFIGS / f"{name}.yaml"
    doc = read_yaml(path)
    doc = {**doc, "routing": [routing], "subflows": k, "split": split,
           "split_piece_bytes": piece_bytes}
    if recompute != "epochs":
        sem = doc.get("semantics") or {}
        if sem == "floodns":
            sem = {"ring_sync": "step", "tail_step": True}
        doc["semantics"] = {**sem, "recompute": recompute}
    if seed is not None:
        doc["seed"] = seed
    return parse(doc, base_dir=path.parent)


def predicted(name: str, routing: str, k: int, split: str, seeds: list[int | None],
              piece_bytes: int, recompute: str = "epochs") -> dict:
    """One row: the scheme predicted once per seed (ECMP) or once (planners)."""
    runs, walls = [], []
    for seed in seeds:
        exp = experiment(name, routing, k, split, seed, piece_bytes, recompute)
        calls, res = predict_experiment_timed(exp)
        walls.append(calls.median_wall())
        runs.append(res["runs"][0])
    conns = sum(len(p.connections) for p in plan_jobs(exp.jobs))   # the same for every seed
    effs = sorted(r["efficiency"] for r in runs)
    run = sorted(runs, key=lambda r: r["network_efficiency"])[len(runs) // 2]  # the median
    return {"config": name, "routing": routing, "subflows": k, "split": split,
            "recompute": recompute, "piece_bytes": piece_bytes, "seeds": len(seeds),
            "connections": conns, "efficiency": statistics.median(effs),
            "efficiency_min": effs[0], "efficiency_max": effs[-1],
            "network_efficiency": statistics.median(r["network_efficiency"] for r in runs),
            "link_load_imbalance": run.get("link_load_imbalance"),
            "max_link_flows": run["max_link_flows"], "predict_wall_s": statistics.median(walls)}


def emulated(row: dict, seed: int | None) -> None:
    """Run the row's scheme once on the emulator; add its efficiency, error and verdict."""
    from experiments.runner import run_experiment
    exp = experiment(row["config"], row["routing"], row["subflows"], row["split"], seed,
                     row["piece_bytes"], row["recompute"])
    with tempfile.TemporaryDirectory() as out:
        run = run_experiment(exp, Path(out), log=lambda s: None)["runs"][0]
    row.update(emulated_efficiency=run["efficiency"],
               prediction_error_fraction=run["prediction_error_fraction"],
               emulator_ok=run["fidelity"]["ok"])


def print_table(rows: list[dict]) -> None:
    print(f"{'config':22} {'routing':12} {'K':>2} {'split':8} {'replan':6} {'conns':>6} "
          f"{'eff':>6} {'(min-max)':>13} {'net eff':>7} {'imbal':>6} {'maxfl':>5} "
          f"{'wall s':>7} {'emu eff':>7} {'err':>7}")
    for r in rows:
        spread = (f"{r['efficiency_min']:.3f}-{r['efficiency_max']:.3f}"
                  if r["seeds"] > 1 else "")
        imb = r["link_load_imbalance"]
        emu = r.get("emulated_efficiency")
        print(f"{r['config']:22} {r['routing']:12} {r['subflows']:>2} {r['split']:8} "
              f"{r['recompute']:6} {r['connections']:>6} "
              f"{r['efficiency']:6.3f} {spread:>13} {r['network_efficiency']:7.3f} "
              f"{imb if imb is None else f'{imb:6.2f}'!s:>6} {r['max_link_flows']:>5} "
              f"{r['predict_wall_s']:7.2f} "
              + (f"{emu:7.3f} {r['prediction_error_fraction']:+7.1%}"
                 + ("" if r["emulator_ok"] else " flagged") if emu is not None else ""))


def subflows_needed(rows: list[dict]) -> None:
    """Per config: the smallest K with ECMP's network efficiency >= 0.9 x the best planner's
    at K = 1."""
    print("\nECMP subflows needed for 90% of planning (network efficiency, K = 1 planner):")
    for name in dict.fromkeys(r["config"] for r in rows):
        mine = [r for r in rows if r["config"] == name]
        plan = max((r["network_efficiency"] for r in mine if r["routing"] in ("greedy", "ilp")
                    and r["subflows"] == 1 and r["recompute"] == "epochs"), default=None)
        if plan is None:
            continue
        ks = [r["subflows"] for r in mine if r["routing"] == "ecmp" and r["split"] == "even"
              and r["network_efficiency"] >= 0.9 * plan]
        tried = max((r["subflows"] for r in mine if r["routing"] == "ecmp"), default=0)
        print(f"  {name:22} planner {plan:.3f}: "
              + (f"K = {min(ks)}" if ks else f"not reached by K = {tried}"))


def matrix(args: argparse.Namespace) -> list[dict]:
    """Every config x scheme the arguments select, predicted (and emulated), each row printed
    as it comes."""
    rows = []
    for name in args.configs:
        for routing, k, split, recompute in SCHEMES:
            if (k not in args.subflows or split not in args.splits
                    or recompute not in args.recompute):
                continue
            seeds = list(range(1, args.seeds + 1)) if routing == "ecmp" else [None]
            try:
                row = predicted(name, routing, k, split, seeds, args.piece_bytes, recompute)
            except ConfigError as e:        # e.g. K x connections past the source ports
                print(f"{name} {routing} K={k}: {e}", file=sys.stderr)
                continue
            if args.emulate and not routing.endswith("@packet"):   # the model only
                emulated(row, seeds[0])
            rows.append(row)
            print_table([row])
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", nargs="+", default=DEFAULT)
    ap.add_argument("--seeds", type=int, default=5, help="ECMP hash seeds per point (1-100)")
    ap.add_argument("--emulate", action="store_true", help="also run each scheme (root)")
    ap.add_argument("--subflows", type=int, nargs="+", default=[1, 2, 4, 8],
                    help="the K values to run (default 1 2 4 8; planners stop at 4)")
    ap.add_argument("--splits", nargs="+", default=["even", "adaptive"],
                    choices=["even", "adaptive"], help="the splits to run (default both)")
    ap.add_argument("--recompute", nargs="+", default=["epochs", "flows"],
                    choices=["epochs", "flows"],
                    help="the re-planning policies to run (default both)")
    ap.add_argument("--piece-bytes", type=int, default=PIECE_BYTES,
                    help="split_piece_bytes of the adaptive schemes (16384 .. 2^30)")
    ap.add_argument("--csv", type=Path)
    args = ap.parse_args()
    if not 1 <= args.seeds <= 100:
        print("lb_bench: --seeds must be 1..100", file=sys.stderr)
        return 2
    with conditions():
        rows = matrix(args)
        print()
        print_table(rows)
        subflows_needed(rows)
    if args.csv:
        with args.csv.open("w", newline="") as f:
            w = csv.DictWriter(f, COLUMNS)
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

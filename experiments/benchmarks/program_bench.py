"""Programs on the fabric (a script, not a test; root): the figures of docs/programs.md.

    sudo .venv/bin/python experiments/benchmarks/program_bench.py [--cases rings cross train]
        [--out DIR]

rings: experiments/configs/jax-rings.yaml (four 4-rank JAX all-reduce programs, one rank per
  leaf) run under ECMP and the ILP with the declared traffic, then with demand: measured
  (ILP); per job: the mean step time under ECMP, under the declared plan and after the
  learned plan went in (steps that began once every job's pairs were placed), the learned
  plan against the declared one, the speed-up over ECMP against the model's (ECMP's spines
  as the hash chose them), and the learned bytes per step against the declared 2(n-1)/n x S.
cross: our agents' ring all-reduce on the same hosts, bytes and routings (the ILP plan: the
  same paths for both), against the JAX programs under the declared plan: mean CCT per job.
train: experiments/configs/jax-train-fat-tree.yaml (the MLP on 8 ranks of a k=4 fat-tree)
  under ECMP and with demand: measured (ILP): step times, loss from first to last step, and
  the CPU monitor's verdict.
Each run prints the load average before it; the machine's other work shows in the monitor.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from experiments.benchmarks.harness import conditions
from experiments.config import parse
from experiments.config.yamlio import read_yaml
from experiments.runner import run_experiment
from testbed.registry import RunClash

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def run(name: str, out: Path, **changes) -> dict:
    """A shipped config with `changes` at the top level, emulated; its results."""
    doc = {**read_yaml(CONFIGS / f"{name}.yaml"), **changes}
    return emulate(parse(doc, base_dir=CONFIGS.parent.parent), out, name, changes)


def emulate(exp, out: Path, name: str, changes: dict, wait_s: float = 1800.0) -> dict:
    """run_experiment, waiting while another run holds the fabric's names (RunClash)."""
    deadline = time.monotonic() + wait_s
    while True:
        print(f"-- {name} {changes or ''}: load average {os.getloadavg()[0]:.1f}", flush=True)
        try:
            return run_experiment(exp, out, log=lambda s: None)
        except RunClash as e:
            if time.monotonic() > deadline:
                raise
            print(f"   waiting: {e}", flush=True)
            time.sleep(20)


def _mean(xs: list[float]) -> float | None:
    return statistics.fmean(xs) if xs else None


def _after(job: dict, settled: float) -> list[float]:
    """Step times of the steps that began once every learned job was placed."""
    return [s["time_s"] for s in job["steps"] if s["at_s"] - s["time_s"] >= settled]


def rings(out: Path) -> dict:
    declared = run("jax-rings", out / "declared")
    learned = run("jax-rings", out / "learned", demand="measured", routing=["ilp"])
    by = {r["routing"]: {j["name"]: j for j in r["jobs"]} for r in declared["runs"]}
    lrun = learned["runs"][0]
    settled = max(j["planned_at_s"] for j in lrun["jobs"])
    rows = []
    for j in lrun["jobs"]:
        ecmp, plan = by["ecmp"][j["name"]], by["ilp"][j["name"]]
        after = _mean(_after(j, settled))
        n = plan["ranks_per_group"]
        per_step = 2 * (n - 1) / n * plan["size_bytes"]     # the declared ring's, per edge
        learned_bytes = [p["bytes"] for p in j["learned_bytes_per_step"]]
        rows.append({
            "job": j["name"], "ecmp_s": ecmp["cct_mean_s"], "declared_s": plan["cct_mean_s"],
            "learned_s": after, "learned_vs_declared": after / plan["cct_mean_s"] - 1,
            "speedup": ecmp["cct_mean_s"] / after,
            "model_speedup": ecmp["predicted_cct_mean_s"] / j["predicted_cct_mean_s"],
            "ecmp_error": ecmp["prediction_error_fraction"],
            "declared_error": plan["prediction_error_fraction"],
            "learned_error": j["prediction_error_fraction"],
            "bytes_error_max": max(abs(b / per_step - 1) for b in learned_bytes),
            "pairs": len(learned_bytes)})
    flags = {r["routing"]: r["fidelity"]["ok"] for r in declared["runs"] + learned["runs"]}
    print(f"{'job':8} {'ECMP s':>7} {'decl s':>7} {'lrnd s':>7} {'lrnd/decl':>9} "
          f"{'speedup':>8} {'model':>6} {'err E/D/L':>22} {'bytes err':>9}")
    for r in rows:
        print(f"{r['job']:8} {r['ecmp_s']:7.3f} {r['declared_s']:7.3f} {r['learned_s']:7.3f} "
              f"{r['learned_vs_declared']:+9.1%} {r['speedup']:8.2f} {r['model_speedup']:6.2f} "
              f"{r['ecmp_error']:+7.1%}/{r['declared_error']:+6.1%}/{r['learned_error']:+6.1%} "
              f"{r['bytes_error_max']:9.2%}")
    print(f"monitor ok: {flags}")
    return {"rows": rows, "monitor_ok": flags}


def cross(out: Path) -> dict:
    """Our agents' rings on jax-rings' hosts, bytes and links (iterations = its steps)."""
    doc = read_yaml(CONFIGS / "jax-rings.yaml")
    jobs = [{"name": j["name"], "collective": "allreduce", "hosts": j["hosts"],
             "size_bytes": j["traffic"]["size_bytes"], "iterations": 12} for j in doc["jobs"]]
    agents = emulate(parse({**doc, "jobs": jobs, "routing": ["ilp"]}), out / "agents",
                     "agents on jax-rings", {})
    programs = run("jax-rings", out / "programs", routing=["ilp"])
    a = {j["name"]: j["cct_mean_s"] for j in agents["runs"][0]["jobs"]}
    p = {j["name"]: j["cct_mean_s"] for j in programs["runs"][0]["jobs"]}
    for name in a:
        print(f"{name:8} agents {a[name]:.3f} s  JAX {p[name]:.3f} s  JAX / agents "
              f"{p[name] / a[name] - 1:+.1%}")
    return {"agents_s": a, "jax_s": p}


def train(out: Path) -> dict:
    hashed = run("jax-train-fat-tree", out / "ecmp", routing=["ecmp"])
    learned = run("jax-train-fat-tree", out / "learned", demand="measured", routing=["ilp"])
    got = {}
    for res, folder in ((hashed, out / "ecmp"), (learned, out / "learned")):
        r = res["runs"][0]
        j, = r["jobs"]
        lines = [json.loads(x) for x in (folder / r["routing"] / "logs" / "mlp-rank0.out")
                 .read_text().splitlines() if x.startswith("{")]
        got[r["routing"]] = {"steps": len(j["steps"]), "step_s": j["cct_median_s"],
                             "loss_first": lines[0]["loss"], "loss_last": lines[-1]["loss"],
                             "monitor_ok": r["fidelity"]["ok"],
                             "after_s": j.get("step_time_after_s")}
        print(f"{r['routing']:5} {got[r['routing']]}")
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=["rings", "cross", "train"],
                    choices=["rings", "cross", "train"])
    ap.add_argument("--out", type=Path, default=None, help="keep the runs' folders here")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("program_bench: emulation needs root", file=sys.stderr)
        return 2
    out = args.out or Path(tempfile.mkdtemp(prefix="program-bench-"))
    with conditions(kernels=False):
        results = {case: globals()[case](out / case) for case in args.cases}
    (out / "program_bench.json").write_text(json.dumps(results, indent=1))
    print(f"runs and figures: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

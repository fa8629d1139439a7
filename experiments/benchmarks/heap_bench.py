"""What a prediction holds in Python's heap (docs/interop.md, "What a prediction holds"): the
marginal bytes per transfer (rings) or per connection (all-to-alls) between two sizes of one
job whose transfers are all in flight, held after parse and at peak (tracemalloc), and the
larger size's CPU seconds; optionally alternated with another checkout's code (before/after).

    python -m experiments.benchmarks.heap_bench [--workload rings|all-to-alls|both]
        [--repeats 3] [--baseline CHECKOUT]

The job, on a 4,096-NIC leaf-spine (64 leaves x 64 NICs at 100 Gbit/s, 8 spines at 400
Gbit/s), ECMP, every group starting at 0: ring all-gathers of 64 ranks, 10 and 60 groups
(40,320 and 241,920 transfers), or 16-rank all-to-alls, 20 and 90 groups (4,800 and 21,600
connections, one transfer each). The groups take disjoint NICs of one seeded shuffle (the code
before plans as arrays refuses a NIC in two groups). Each measurement is a fresh `python -c`
process run in the checkout whose code it measures: the predictor's compiled kernels loaded
(traffic/waterfill.py and traffic/dag_kernel.py `warm`, in both codes) before tracemalloc
starts, so that their one-off load, which today's predictor makes only past a size, is not
counted as a marginal cost and both sizes run them; the config parsed
(experiments.config.parse.load, which plans the job): the heap held then; then the predict
command's code (experiments.predict.predict_experiment): the heap's peak, and the process's
CPU seconds from the parse on (tracemalloc slows it). The marginal cost is (large - small) /
(units of the large - units of the small), from the medians of --repeats. With --baseline
each size alternates (baseline, this checkout, ...), after one untimed run of each side
(numba's cache filled for either code).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from experiments.benchmarks.harness import (ab_arguments, add_ab_arguments, alternate,
                                             conditions)

HERE = Path(__file__).resolve().parents[2]

#: the 4,096-NIC leaf-spine every measurement runs on (room for 60 disjoint rings of 64)
FABRIC = {"topology": "leaf-spine", "spines": 8, "leaves": 64, "hosts_per_leaf": 64,
          "host_link_mbps": 100_000, "spine_link_mbps": 400_000}


@dataclass(frozen=True)
class Workload:
    """One job of `groups` groups of `ranks` ranks each running `collective`."""

    collective: str
    ranks: int
    sizes: tuple[int, int]     # groups: the small and the large job
    size_bytes: int
    unit: str                  # what the marginal cost is per

    def units(self, groups: int) -> int:
        """Transfers of an all-gather ring (ranks x (ranks - 1) per group, one per step and
        rank) or connections of an all-to-all (ranks x (ranks - 1) per group)."""
        return groups * self.ranks * (self.ranks - 1)


WORKLOADS = {
    "rings": Workload("allgather", 64, (10, 60), 64 * 2 ** 20, "transfer"),
    "all-to-alls": Workload("alltoall", 16, (20, 90), 16 * 2 ** 20, "connection"),
}

#: the measuring process, run as `python -c CHILD CONFIG` in a checkout (so its code is
#: imported; the compiled kernels loaded before tracing): one JSON line of held bytes after
#: parse, peak bytes and CPU seconds
CHILD = """
import json, sys, tempfile, time, tracemalloc
from pathlib import Path
from experiments.config.parse import load
from experiments.predict import predict_experiment
from traffic import dag_kernel, waterfill
waterfill.warm()
dag_kernel.warm()
try:
    from traffic.jit import compiled      # code with kernels built ahead of time: those too
    compiled()
except ImportError:
    pass
tracemalloc.start()
c0 = time.process_time()
exp = load(sys.argv[1])
held = tracemalloc.get_traced_memory()[0]
with tempfile.TemporaryDirectory() as out:
    predict_experiment(exp, Path(out) / "res", log=lambda _line: None)
peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"held_bytes": held, "peak_bytes": peak, "cpu_s": time.process_time() - c0}))
"""


def config(w: Workload, groups: int, seed: int = 1) -> dict:
    """The job of `groups` groups as a config: each group the next w.ranks NICs of one
    seeded shuffle (ValueError when the fabric has too few)."""
    hosts = [f"h{i}" for i in range(1, FABRIC["leaves"] * FABRIC["hosts_per_leaf"] + 1)]
    if groups * w.ranks > len(hosts):
        raise ValueError(f"{groups} groups of {w.ranks} need more than {len(hosts):,} NICs")
    random.Random(seed).shuffle(hosts)
    return {"name": f"heap-{w.collective}-{groups}", "seed": seed, "routing": ["ecmp"],
            "fabric": FABRIC,
            "jobs": [{"name": "job", "collective": w.collective, "size_bytes": w.size_bytes,
                      "groups": [hosts[g * w.ranks:(g + 1) * w.ranks]
                                 for g in range(groups)]}]}


def measure(checkout: Path, cfg: Path) -> dict:
    """CHILD in `checkout` on `cfg`: {held_bytes, peak_bytes, cpu_s}; raises naming the
    checkout when it fails."""
    p = subprocess.run([sys.executable, "-c", CHILD, str(cfg)], cwd=checkout,
                       capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    if p.returncode != 0:
        raise RuntimeError(f"heap measurement in {checkout} exited {p.returncode}: "
                           f"{p.stderr.strip()[-400:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def marginal(w: Workload, small: list[dict], large: list[dict], key: str) -> float:
    """Bytes per unit between the medians of the small and the large job's `key`."""
    grow = statistics.median(r[key] for r in large) - statistics.median(r[key] for r in small)
    return grow / (w.units(w.sizes[1]) - w.units(w.sizes[0]))


def summary(w: Workload, side: str, small: list[dict], large: list[dict]) -> str:
    """One side's row: held and peak bytes per unit, the larger size's CPU (median, range)."""
    cpu = [r["cpu_s"] for r in large]
    return (f"{side:<14} held {marginal(w, small, large, 'held_bytes'):>6.0f} / peak "
            f"{marginal(w, small, large, 'peak_bytes'):>6.0f} B per {w.unit}; CPU at "
            f"{w.units(w.sizes[1]):,} {w.unit}s {statistics.median(cpu):.2f} s "
            f"({min(cpu):.2f}-{max(cpu):.2f})")


def run_workload(name: str, baseline: Path | None, repeats: int, tmp: Path) -> None:
    """Both sizes of one workload, each side's results per run and its row."""
    w = WORKLOADS[name]
    sides = ([("baseline", baseline)] if baseline else []) + [("this checkout", HERE)]
    got: dict[str, list[list[dict]]] = {s: [] for s, _ in sides}
    for groups in w.sizes:
        cfg = tmp / f"{name}-{groups}.yaml"
        cfg.write_text(yaml.safe_dump(config(w, groups), sort_keys=False))
        print(f"{name}: {groups} groups of {w.ranks}, {w.units(groups):,} {w.unit}s", flush=True)
        if baseline:
            ab = alternate(lambda: measure(baseline, cfg), lambda: measure(HERE, cfg), repeats)
            runs = [ab.results_a, ab.results_b]
        else:
            calls = [measure(HERE, cfg) for _ in range(repeats)]
            runs = [calls]
        for (side, _), rs in zip(sides, runs):
            got[side].append(rs)
            for r in rs:
                print(f"  {side}: held {r['held_bytes']:,} B, peak {r['peak_bytes']:,} B, "
                      f"CPU {r['cpu_s']:.2f} s", flush=True)
    for side, (small, large) in got.items():
        print(summary(w, side, small, large))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", choices=[*WORKLOADS, "both"], default="both")
    add_ab_arguments(ap)
    args = ap.parse_args(argv)
    baseline = ab_arguments(ap, args)
    names = list(WORKLOADS) if args.workload == "both" else [args.workload]
    with conditions(kernels=False), tempfile.TemporaryDirectory(prefix="heap-bench-") as tmp:
        warm = Path(tmp) / "warm.yaml"
        warm.write_text(yaml.safe_dump(config(WORKLOADS["all-to-alls"], 2), sort_keys=False))
        for checkout in [c for c in (baseline, HERE) if c is not None]:
            measure(checkout, warm)
        print(f"order: {'AB' if baseline else 'B'} x {args.repeats} per size, one untimed "
              "run each first", flush=True)
        for name in names:
            run_workload(name, baseline, args.repeats, Path(tmp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

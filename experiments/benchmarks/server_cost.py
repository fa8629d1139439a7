"""What servers cost the predictor (docs/servers.md, "Cost at scale"): the modern-cluster
matrix's data-parallel case (experiments/benchmarks/server_matrix.py) as the whole `predict`
command, on 8-GPU servers against the same NICs as lone NICs, or against another checkout's
code on the same servers; each side's wall seconds, CPU seconds and peak RSS, A/B alternated.

    python -m experiments.benchmarks.server_cost [--groups 16] [--servers-per-group 64]
        [--routing ecmp] [--repeats 3] [--baseline CHECKOUT [--baseline-case lone]]

Each call is one `python -m experiments predict CONFIG --no-plots` process, run from the
checkout whose code it times. B is this checkout's code on 8-GPU servers; A is the same GPUs
as lone NICs, or with --baseline CHECKOUT's code on servers (on lone NICs with
--baseline-case lone). Peak RSS is the process's own (os.wait4).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from experiments.benchmarks.harness import alternate, conditions, ratio_of_medians
from experiments.benchmarks.server_matrix import fabric, jobs

HERE = Path(__file__).resolve().parents[2]


def config(groups: int, servers: int, nvlink: bool, routing: str) -> dict:
    """The matrix's dp case under one routing, rings as one flow per hop."""
    return {"name": f"cost-{'servers' if nvlink else 'lone'}", "seed": 1, "routing": [routing],
            "subflows": 1, "semantics": {"ring_sync": "flow"},
            "fabric": fabric(groups, servers, nvlink), "jobs": jobs("dp", groups * servers)}


def run(checkout: Path, cfg: Path, out: Path) -> tuple[float, float]:
    """One `predict` process from `checkout`: (CPU s, peak RSS MB); raises when it fails."""
    cmd = [sys.executable, "-m", "experiments", "predict", str(cfg), "--out", str(out),
           "--force", "--no-plots"]
    with subprocess.Popen(cmd, cwd=checkout, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE) as p:
        err = p.stderr.read().decode() if p.stderr else ""
        _, status, use = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd)} (in {checkout}) exited {p.returncode}: {err[-500:]}")
    return use.ru_utime + use.ru_stime, use.ru_maxrss / 1024


def line(label: str, walls: list[float], results: list[tuple[float, float]]) -> str:
    """One variant's medians: wall (with its min and max), CPU seconds, peak RSS MB."""
    cpu = statistics.median(r[0] for r in results)
    rss = statistics.median(r[1] for r in results)
    return (f"{label:<28} {statistics.median(walls):>8.2f} {min(walls):>6.2f} {max(walls):>6.2f}"
            f" {cpu:>8.2f} {rss:>9.0f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--groups", type=int, default=16, choices=range(2, 17), metavar="2..16")
    ap.add_argument("--servers-per-group", type=int, default=64, choices=range(8, 65),
                    metavar="8..64")
    ap.add_argument("--routing", default="ecmp")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--baseline", type=Path, default=None,
                    help="another checkout: time its code (A) against this one's on servers")
    ap.add_argument("--baseline-case", choices=["servers", "lone"], default="servers",
                    help="what the baseline checkout predicts: servers or lone NICs")
    args = ap.parse_args()
    if args.repeats < 1:
        print(f"--repeats: {args.repeats}; give 1 or more", file=sys.stderr)
        return 2
    if args.baseline is not None and not (args.baseline / "experiments").is_dir():
        print(f"--baseline: {args.baseline} holds no experiments/; give a checkout of "
              "mlfabric", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="mlfabric-cost-") as tmp, conditions(kernels=False):
        d = Path(tmp)
        for nv in (True, False):
            doc = config(args.groups, args.servers_per_group, nv, args.routing)
            (d / f"{doc['name']}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
        srv, lone = d / "cost-servers.yaml", d / "cost-lone.yaml"
        a_cfg = lone if args.baseline is None or args.baseline_case == "lone" else srv
        a_dir = HERE if args.baseline is None else args.baseline.resolve()
        a_label = ("lone NICs" if a_cfg == lone else "servers") + \
            (", baseline" if args.baseline is not None else "")
        a = lambda: run(a_dir, a_cfg, d / "a")              # noqa: E731
        b = lambda: run(HERE, srv, d / "b")                 # noqa: E731
        b_label = "servers, this checkout"
        gpus = args.groups * args.servers_per_group * 8
        print(f"\n{gpus:,} GPUs, dp case, routing {args.routing}, `predict --no-plots` per "
              f"call, {args.repeats} calls each, order AB...")
        print(f"{'variant':<28} {'wall s':>8} {'min':>6} {'max':>6} {'CPU s':>8} {'RSS MB':>9}")
        ab = alternate(a, b, args.repeats)
        print(line(f"A {a_label}", ab.a.wall, ab.results_a))
        print(line(f"B {b_label}", ab.b.wall, ab.results_b))
        cpu_ratio = ratio_of_medians([r[0] for r in ab.results_a], [r[0] for r in ab.results_b])
        print(f"A/B: wall {ratio_of_medians(ab.a.wall, ab.b.wall):.2f}x, CPU {cpu_ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

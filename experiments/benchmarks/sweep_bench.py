"""Benchmark of sweeps and reports (a script, not a test).

    python -m experiments.benchmarks.sweep_bench [--points 100] [--workers N] [--keep DIR]

1. A predicted sweep of --points quickstart-sized points (the quickstart at 10 spine-link
   rates x --points/10 seeds), on a Dask LocalCluster (one worker process per core, cluster
   start included), against the same points run one after another in this one process
   (`run_point` + `write_point`, no Dask). Target: <= 60 s on the local cluster; the speedup
   is printed.
2. `report` on the sweep's run folders (merged CSV, efficiency table, every figure as PNG and
   SVG). Target: <= 20 s for 100 run folders.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

from experiments.benchmarks.harness import conditions
from experiments.report import report
from experiments.sweep import load_sweep, run_point, run_sweep, write_point

ROOT = Path(__file__).resolve().parents[2]

SWEEP_TARGET_S, REPORT_TARGET_S = 60.0, 20.0
RATES = [2.5, 3, 4, 5, 6, 7.5, 8, 10, 12.5, 15]


class Quiet:
    """No display; the time each point was written (s, perf_counter)."""

    def __init__(self):
        self.at: list[float] = []

    def point(self, *a, **k):
        self.at.append(time.perf_counter())

    def close(self):
        pass


def sweep_file(folder: Path, points: int) -> Path:
    seeds = max(1, points // len(RATES))
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump({
        "base": str(ROOT / "experiments" / "configs" / "quickstart.yaml"), "mode": "predict",
        "grid": {"fabric.spine_link_mbps": RATES[:min(points, len(RATES))]},
        "seeds": list(range(1, seeds + 1))}))
    return path


def one_process(path: Path, out: Path) -> float:
    """Every point in this process, one after another: the work of a sweep without Dask."""
    sweep = load_sweep(path)
    t0 = time.perf_counter()
    for p in sweep.points:
        result = run_point(p.doc, sweep.mode, p.repetition, None, p.columns(), p.name, [],
                           str(sweep.base.parent))
        assert result["status"] == "ok", result["error"]
        write_point(out, p, p.fingerprint(sweep.mode, None), result)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=100)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--keep", type=Path, default=None, help="keep the sweep folder here")
    args = ap.parse_args()
    with conditions(kernels=False):
        work = Path(tempfile.mkdtemp(prefix="sweep-bench-"))
        try:
            path = sweep_file(work, args.points)
            n = len(load_sweep(path).points)
            cores = os.cpu_count()
            print(f"{n} predicted quickstart points; {cores} cores; workers "
                  f"{args.workers or cores}")
            seq_s = one_process(path, work / "seq")
            print(f"one process (no Dask):   {seq_s:6.1f} s  ({seq_s / n * 1000:.0f} ms per point)")
            t0 = time.perf_counter()
            quiet = Quiet()
            summary = run_sweep(load_sweep(path), work / "dask", workers=args.workers,
                                progress=quiet, log=lambda _: None)
            dask_s = time.perf_counter() - t0
            assert summary["failed"] == 0 and summary["ran"] == n
            ok = "ok" if dask_s <= SWEEP_TARGET_S else "MISSED"
            print(f"local Dask cluster:      {dask_s:6.1f} s  (target <= {SWEEP_TARGET_S:.0f} s: "
                  f"{ok}); speedup over one process {seq_s / dask_s:.2f}x")
            first, last = quiet.at[0] - t0, quiet.at[-1] - t0
            print(f"  of which: cluster start to first point {first:.1f} s, points "
                  f"{last - first:.1f} s ({(last - first) / max(n - 1, 1) * 1000:.0f} ms per point), "
                  f"merge and cluster close {dask_s - last:.1f} s; load average (1 min) "
                  f"{os.getloadavg()[0]:.1f}")
            t0 = time.perf_counter()
            rep = report([work / "dask"], work / "report")
            report_s = time.perf_counter() - t0
            ok = "ok" if report_s <= REPORT_TARGET_S else "MISSED"
            print(f"report on {rep['runs']} run folders: {report_s:6.1f} s  ({rep['rows']:,} rows, "
                  f"{len(rep['figures'])} figures as PNG+SVG; target <= {REPORT_TARGET_S:.0f} s: "
                  f"{ok})")
            if args.keep:
                shutil.copytree(work, args.keep, dirs_exist_ok=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The whole `predict` command timed as a user runs it (a script, not a test): wall, CPU (user
+ system) and peak RSS of a fresh interpreter per run, and each routing's solve, predictor time and
(an imported workload's) iteration from its results.json; optionally alternated with another
checkout's same command (before/after).

    python -m experiments.benchmarks.command_bench CONFIG [--set KEY=VALUE ...]
        [--repeats 3] [--no-plots] [--baseline CHECKOUT]

Each run writes into a fresh folder of a temporary one. With --baseline the two commands
alternate (baseline, this checkout, baseline, ...: a load that comes and goes falls on both
sides), after one untimed run of each (numba's cache filled for either code); without, one
untimed run first as well. Medians of --repeats with the range, and with --baseline the
ratio of the medians (this checkout / baseline). The conditions (load, versions) are printed
first and the load again at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from experiments.benchmarks.conditions import load_average
from experiments.benchmarks.harness import (ab_arguments, add_ab_arguments, conditions,
                                             ratio_of_medians)

HERE = Path(__file__).resolve().parents[2]
#: what each routing's results.json run gives the report: its solves, the predictor's wall
#: seconds and, for an imported workload, its iteration and the non-blocking one (s)
RUN_KEYS = ("solve", "predict_wall_s", "iteration_time_s", "ideal_iteration_time_s")


@dataclass
class Runs:
    """One side's runs: wall s, CPU s (user + system), peak RSS MiB, per routing its run's
    RUN_KEYS."""

    name: str
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rss_mib: list[float] = field(default_factory=list)
    runs: list[dict] = field(default_factory=list)


def run_once(checkout: Path, argv: list[str], out: Path) -> tuple[float, float, float, dict]:
    """`python -m experiments predict ... --out OUT` in CHECKOUT: (wall s, CPU s, peak RSS
    MiB, {routing: its results.json run's RUN_KEYS})."""
    cmd = [sys.executable, "-m", "experiments", "predict", *argv, "--out", str(out), "--force"]
    t0 = time.perf_counter()
    with subprocess.Popen(cmd, cwd=checkout, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, env={**os.environ, "PYTHONHASHSEED": "0"}) as p:
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        err = p.stderr.read().decode(errors="replace") if p.stderr else ""
        p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError(f"predict in {checkout} exited {p.returncode}: {err.strip()[-400:]}")
    res = json.loads((out / "results.json").read_text())
    runs = {run.get("routing", str(i)): {k: run[k] for k in RUN_KEYS if k in run}
            for i, run in enumerate(res["runs"])}
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, runs


def spread(values: list[float], unit: str) -> str:
    """'median unit (min-max)'."""
    return f"{statistics.median(values):.2f} {unit} ({min(values):.2f}-{max(values):.2f})"


def report(side: Runs) -> None:
    """One side's medians and its routings' runs (run_line), run by run."""
    print(f"{side.name}: wall {spread(side.wall, 's')}, CPU {spread(side.cpu, 's')}, "
          f"peak RSS {spread(side.rss_mib, 'MiB')}")
    for k, runs in enumerate(side.runs):
        for routing, run in runs.items():
            print(f"  run {k + 1} {routing}: {run_line(run)}")


def run_line(run: dict) -> str:
    """A routing's run: its solves, the predictor's wall time and, when given, the iteration."""
    s, nan = run.get("solve", {}), float("nan")
    text = (f"solve {s.get('time_s', nan):.3f} s, slowest {s.get('time_s_max', nan):.3f} s, "
            f"{s.get('count', '?')} solves, status {s.get('status')}, solver calls "
            f"{s.get('solver_calls')} ({s.get('solver')}); predicted in "
            f"{run.get('predict_wall_s', nan):.2f} s")
    if "iteration_time_s" in run:
        text += (f"; iteration {run['iteration_time_s']!r} s "
                 f"(ideal {run.get('ideal_iteration_time_s', nan)!r} s)")
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", type=Path)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--no-plots", action="store_true")
    add_ab_arguments(ap)
    args = ap.parse_args(argv)
    baseline = ab_arguments(ap, args)
    cmd = [str(args.config.resolve())] + [a for s in args.set for a in ("--set", s)]
    cmd += ["--no-plots"] if args.no_plots else []
    sides = [(baseline, Runs("baseline"))] if baseline else []
    sides.append((HERE, Runs("this checkout")))
    with conditions(kernels=False), tempfile.TemporaryDirectory(prefix="cmd-bench-") as tmp:
        print(f"command: predict {' '.join(cmd)}; order: "
              f"{'AB' if args.baseline else 'B'} x {args.repeats}, one untimed run each first")
        for k in range(args.repeats + 1):
            for i, (checkout, side) in enumerate(sides):
                wall, cpu, rss, runs = run_once(checkout, cmd, Path(tmp) / f"{i}-{k}")
                if k == 0:
                    continue
                side.wall.append(wall), side.cpu.append(cpu), side.rss_mib.append(rss)
                side.runs.append(runs)
                print(f"  {side.name} run {k}: wall {wall:.2f} s, CPU {cpu:.2f} s, peak RSS "
                      f"{rss:.0f} MiB ({load_average()})", flush=True)
        for _, side in sides:
            report(side)
        if args.baseline:
            a, b = sides[0][1], sides[1][1]
            print(f"ratio this / baseline (medians): wall {ratio_of_medians(b.wall, a.wall):.3f}, "
                  f"CPU {ratio_of_medians(b.cpu, a.cpu):.3f}, "
                  f"peak RSS {ratio_of_medians(b.rss_mib, a.rss_mib):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

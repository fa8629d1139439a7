"""Validation against floodns on the paper's own inputs (a script, not a test).

    python experiments/benchmarks/floodns_bench.py [--data DIR] [--cases 1-0-2 1-0-8 ...]
        [--floodns DIR --classpath CP [--work DIR] [--reuse]] [--csv PATH]
        [--repeats N] [--whole-command [--baseline DIR]]

A case J-F-R is concurrent_jobs_J, F failed cores, ring size R (floodns's folders). For each:

* floodns: with --floodns (the authors' floodns folder, built with javac: docs/interop.md)
  and --classpath, its ECMP and mcvlc runs are made here (one run each, wall
  time of the whole `java` process) and its per-job mean all-reduce time read from
  logs_floodns/job_info.csv; without, the figures its authors' code printed (the notes:
  single-job cases only, no wall times).
* ours with floodns semantics (`Semantics.floodns()`): `replay` of floodns's own ECMP flow log
  (when floodns ran here), our ECMP hash, greedy and edge-coloring (against their mcvlc and
  edge_coloring); and our default semantics beside them.

Per job: mean all-reduce time over the iterations (s); per side: wall time (s). Ours is timed
from reading the traffic folder to the last prediction's end (parse + route + predict).
Targets (issue 13): replayed ECMP within 0.1% of floodns; ours >= 10x faster than floodns.

--repeats N runs floodns N times per case and strategy (WORK/rep-K/CASE-STRATEGY; wall: the
median). --whole-command times the whole `mlfabric predict` command per case instead (a
fresh interpreter, as a user runs it: imports, numba's cache, the traffic folder and flow log,
results files, the figure worker), with its figures and without (--no-plots), against
floodns's ECMP run (the same routes: `replay` of its flow log, our ECMP hash where floodns did
not run): N rounds of floodns then ours, alternated (both sides of each ratio under the same
load), after one untimed run of each command; medians of wall and CPU time, and which code
path the predictor took (results.json's predict_kernels: numpy or compiled). --baseline DIR
times another checkout's command in the same rounds (before/after). Target (issue 45): the
command with figures >= 30x faster than floodns.
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from experiments.benchmarks.harness import alternate, conditions
from experiments.config import parse
from experiments.routes import ControllerRoutes
from routing.replay import read_flow_log, route_replay
from traffic.collectives import plan_jobs
from traffic.predictor import Semantics, ideal, predict

ROOT = Path(__file__).resolve().parents[2]

DATA = Path("/work/shared/data/floodns-traffic-pairs")
#: What floodns printed (the notes), mean all-reduce time (s) of the one BLOOM job.
STORED = {
    "1-0-2": {"ecmp": 4.6933, "mcvlc": 1.1733, "edge_coloring": 1.1733},
    "1-0-8": {"ecmp": 8.2133, "mcvlc": 2.0533, "edge_coloring": 2.0533},
    "1-4-2": {"ecmp": 4.6933, "mcvlc": 2.3467},
}
DEFAULT_CASES = ["1-0-2", "1-0-8", "1-4-2", "2-0-4", "3-0-4"]
#: floodns's ECMP flow logs shipped with the tests (replayed when floodns does not run here).
VENDORED_LOGS = {"1-0-2": ROOT / "tests" / "fixtures" / "floodns" / "logs" / "1job-d2-ecmp"
                 / "flow_info.csv"}
#: edge_coloring shells out to `poetry run python -m external.edge_coloring.main` (typer,
#: pandas, networkx): put a `poetry` on PATH that runs such a Python, or it is skipped.
FLOODNS_STRATEGIES = ("ecmp", "mcvlc", "edge_coloring")


def parse_case(case: str) -> tuple[int, int, int]:
    jobs, failed, ring = (int(x) for x in case.split("-"))
    return jobs, failed, ring


# -- floodns ------------------------------------------------------------------------------------
def run_floodns_median(floodns: Path, classpath: str, data: Path, case: str, strategy: str,
                       work: Path, reuse: bool, repeats: int
                       ) -> tuple[dict[int, float], float | None]:
    """run_floodns `repeats` times (WORK/rep-K): the first run's means, the median wall."""
    runs = [run_floodns(floodns, classpath, data, case, strategy, work / f"rep-{k}", reuse)
            for k in range(1, repeats + 1)]
    walls = [w for _, w in runs if w is not None]
    return runs[0][0], (statistics.median(walls) if len(walls) == repeats else None)


def run_floodns(floodns: Path, classpath: str, data: Path, case: str, strategy: str,
                work: Path, reuse: bool) -> tuple[dict[int, float], float | None]:
    """Run floodns on one case (or reuse its logs): per job id mean AR (s), wall time (s)."""
    jobs, failed, ring = parse_case(case)
    src = floodns / "runs" / f"concurrent_jobs_{jobs}" / f"{failed}_core_failures" \
        / f"ring_size_{ring}" / strategy
    run = work / f"{case}-{strategy}"
    log = run / "logs_floodns" / "job_info.csv"
    wall_file = run / "wall_s.txt"
    if not src.is_dir():
        return {}, None
    if not (reuse and log.is_file() and wall_file.is_file()):
        if run.exists():
            shutil.rmtree(run)
        run.mkdir(parents=True)
        for name in ("config.properties", "topology.properties", "schedule.csv"):
            shutil.copy(src / name, run / name)
        traffic = data / f"concurrent_jobs_{jobs}" / f"ring_size_{ring}"
        props = (run / "config.properties").read_text().splitlines()
        props = [f"job_base_dir_schedule={traffic}" if p.startswith("job_base_dir_schedule=")
                 else p for p in props]
        (run / "config.properties").write_text("\n".join(props) + "\n")
        before = _children_cpu_s()
        t0 = time.perf_counter()
        done = subprocess.run(["java", "-cp", classpath,
                               "ch.ethz.systems.floodns.ext.basicsim.BasicSimulation", str(run)],
                              cwd=floodns, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env={**os.environ, "PYTHONHASHSEED": "0"})
        if done.returncode != 0 or not log.is_file():
            print(f"floodns {strategy} failed on {case} (exit {done.returncode}); skipped")
            return {}, None
        wall_file.write_text(f"{time.perf_counter() - t0:.3f}\n")
        (run / "cpu_s.txt").write_text(f"{_children_cpu_s() - before:.3f}\n")
    return floodns_mean_ar(log), float(wall_file.read_text())


def _children_cpu_s() -> float:
    """User + system CPU seconds of this process's finished children."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def floodns_cpu_s(work: Path, case: str, strategy: str, repeats: int) -> float | None:
    """The median CPU time of floodns's runs in WORK/rep-K (cpu_s.txt), None if not all."""
    files = [work / f"rep-{k}" / f"{case}-{strategy}" / "cpu_s.txt" for k in range(1, repeats + 1)]
    if not all(f.is_file() for f in files):
        return None
    return statistics.median(float(f.read_text()) for f in files)


def floodns_mean_ar(job_info: Path) -> dict[int, float]:
    """job_info.csv (job, epoch, ring, start_ns, end_ns, duration_ns, ...): per job the mean
    over epochs of the slowest ring's duration, in seconds."""
    ar: dict[tuple[int, int], int] = {}
    with job_info.open() as f:
        for row in csv.reader(f):
            key = (int(row[0]), int(row[1]))
            ar[key] = max(ar.get(key, 0), int(row[5]))
    out: dict[int, list[int]] = {}
    for (job, _), d in sorted(ar.items()):
        out.setdefault(job, []).append(d)
    return {job: statistics.mean(v) / 1e9 for job, v in out.items()}


# -- ours ---------------------------------------------------------------------------------------
#: Beyond one path per flow, with floodns's semantics otherwise: (name, routing, subflows,
#: recompute). K = 7 subflows spread 32 flows per ToR as 224 over 28 live cores, 8 each.
BEYOND = [("greedy+flows", "greedy", 1, "flows"), ("greedy K=7", "greedy", 7, "iterations"),
          ("spray@packet", "spray@packet", 1, "iterations")]


def ours(data: Path, case: str, routing: str, semantics: Semantics,
         flow_log: Path | None = None, subflows: int = 1) -> tuple[dict[str, float], float]:
    """Per job mean all-reduce time (s) and wall time (s) of parse + route + predict."""
    jobs, failed, ring = parse_case(case)
    t0 = time.perf_counter()
    exp = parse({"name": f"floodns-{case}", "routing": ["ecmp"], "subflows": subflows,
                 "jobs_from": {"floodns": str(data / f"concurrent_jobs_{jobs}"
                                              / f"ring_size_{ring}"),
                               "failed_cores": failed}})
    plans = plan_jobs(exp.jobs)
    conns = [c for p in plans for c in p.connections]
    if routing == "replay":
        plan = route_replay(exp.fabric, conns, read_flow_log(flow_log))
        router = ControllerRoutes("replay", exp.fabric, conns, exp.seed, static=plan.path_of)
    else:
        router = ControllerRoutes(routing.removesuffix("@packet"), exp.fabric, conns, exp.seed)
    pred = predict(exp.fabric, plans, None, router=router, semantics=semantics,
                   spray=routing.endswith("@packet"))
    wall = time.perf_counter() - t0
    return {n: j.mean_cct_s for n, j in pred.jobs.items()}, wall


def live_bound_s(data: Path, case: str) -> dict[str, float]:
    """Per job the fluid bound the live cores allow: its ideal (host links only, floodns's
    semantics) x 32 / live cores (every ToR sends 32 flows, one per server, over its live
    uplinks; no routing does better)."""
    jobs, failed, ring = parse_case(case)
    exp = parse({"name": f"floodns-{case}", "routing": ["ecmp"],
                 "jobs_from": {"floodns": str(data / f"concurrent_jobs_{jobs}"
                                              / f"ring_size_{ring}"), "failed_cores": failed}})
    pred = ideal(exp.fabric, plan_jobs(exp.jobs), semantics=Semantics.floodns())
    cores = len(exp.fabric.spines)
    return {n: j.mean_cct_s * cores / (cores - failed) for n, j in pred.jobs.items()}


def job_names(data: Path, case: str) -> dict[int, str]:
    jobs, _, ring = parse_case(case)
    folder = data / f"concurrent_jobs_{jobs}" / f"ring_size_{ring}"
    return {int(f.name.split("-")[0][4:]): f.stem for f in sorted(folder.glob("job_*.txt"))}


# -- the whole command -------------------------------------------------------------------------
def command_config(data: Path, case: str, flow_log: Path | None, folder: Path) -> Path:
    """A config for `mlfabric predict` of one case: floodns's traffic and failed cores, its
    semantics, and its ECMP routes replayed (our ECMP hash without its flow log)."""
    jobs, failed, ring = parse_case(case)
    doc = {"name": f"floodns-{case}",
           "jobs_from": {"floodns": str(data / f"concurrent_jobs_{jobs}" / f"ring_size_{ring}"),
                         "failed_cores": failed},
           "semantics": "floodns",
           "routing": ["replay"] if flow_log else ["ecmp"]}
    if flow_log:
        doc["replay_log"] = str(flow_log)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"floodns-{case}.yaml"
    path.write_text(json.dumps(doc, indent=1) + "\n")     # JSON is YAML
    return path


#: The commands' environment: this one, with Python's bytecode cache on (as installed; a
#: PYTHONDONTWRITEBYTECODE set here would make every run compile its modules, ~0.2 s).
COMMAND_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def time_command(config: Path, out: Path, plots: bool, root: Path = ROOT
                 ) -> tuple[float, float]:
    """One `python -m experiments predict CONFIG` of the checkout `root` in a fresh
    interpreter: wall and CPU (user + system of the child and its figure worker) seconds."""
    argv = [sys.executable, "-m", "experiments", "predict", str(config), "--out", str(out),
            "--force", *([] if plots else ["--no-plots"])]
    before = _children_cpu_s()
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, env=COMMAND_ENV)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"predict {config} failed: {done.stderr.strip()[-300:]}")
    return wall, _children_cpu_s() - before


def predict_kernels(out: Path) -> str:
    """The predictor's code path(s) of the last `predict` in `out` (results.json's
    predict_kernels: "numpy" or "compiled", "+"-joined when its runs differ)."""
    runs = json.loads((out / "results.json").read_text())["runs"]
    return "+".join(sorted({r.get("predict_kernels", "?") for r in runs}))


#: The variants of the command timed per case: (label, figures, checkout: "new" or "old").
VARIANTS = [("figures", True, "new"), ("--no-plots", False, "new"),
            ("figures, baseline", True, "old"), ("--no-plots, baseline", False, "old")]


def whole_command(args, cases: list[str], work: Path, local: bool) -> list[dict]:
    """Per case, --repeats rounds, each: floodns's ECMP run (the routes `replay` takes; a
    fresh java process), then the whole `predict` command with figures and with
    --no-plots (and the same of --baseline's checkout): both sides of every ratio in one
    alternated run (harness.alternate). Before the first round, one untimed run of each
    command (bytecode and numba's caches in place). Medians of wall and CPU time."""
    rows = []
    roots = {"new": ROOT, "old": args.baseline}
    variants = [v for v in VARIANTS if roots[v[2]] is not None]
    for case in cases:
        config, log = _case_config(args, case, work, local)
        outs = {v: work / "predict" / case / f"{v[2]}-{'figures' if v[1] else 'no-plots'}"
                for v in variants}
        for v in variants:                       # warm: .pyc files, numba's cache
            time_command(config, outs[v], v[1], roots[v[2]])
        load = [os.getloadavg()[0]]
        rounds = iter(range(1, args.repeats + 1))
        ab = alternate((lambda: _floodns_round(args, case, work, next(rounds))) if local
                       else (lambda: (None, None)),
                       lambda: {v: time_command(config, outs[v], v[1], roots[v[2]])
                                for v in variants},
                       args.repeats)
        load.append(os.getloadavg()[0])
        theirs = _median_pair(ab.results_a)
        paths = predict_kernels(outs[variants[0]])
        for v in variants:
            wall, cpu = _median_pair([r[v] for r in ab.results_b])
            row = {"case": case, "routing": "replay" if log else "ecmp", "variant": v[0],
                   "figures": v[1], "predict_wall_s": wall, "predict_cpu_s": cpu,
                   "floodns_ecmp_wall_s": theirs[0], "floodns_ecmp_cpu_s": theirs[1],
                   "ratio_wall": theirs[0] and theirs[0] / wall,
                   "ratio_cpu": theirs[1] and theirs[1] / cpu,
                   "load_1min_before": load[0], "load_1min_after": load[1],
                   "repeats": args.repeats, "order": ab.order, "predict_kernels": paths}
            rows.append(row)
            print(f"{case:6s} predict ({row['routing']}, {v[0]}): {wall:5.2f} s wall, "
                  f"{cpu:5.2f} s CPU | floodns ecmp {_f(theirs[0], '6.2f')} s wall "
                  f"({_f(row['ratio_wall'], '5.1f')}x), {_f(theirs[1], '6.2f')} s CPU "
                  f"({_f(row['ratio_cpu'], '5.1f')}x) | load {load[0]:.2f}-{load[1]:.2f}; "
                  f"medians of {args.repeats}, floodns and ours alternated; kernels {paths}",
                  flush=True)
    return rows


def _case_config(args, case: str, work: Path, local: bool) -> tuple[Path, Path | None]:
    """The case's `predict` config and the flow log it replays (floodns's ECMP run in
    WORK/rep-1, made first if need be; the vendored one; None: our ECMP hash)."""
    log = work / "rep-1" / f"{case}-ecmp" / "logs_floodns" / "flow_info.csv"
    if local and not log.is_file():
        run_floodns(args.floodns, args.classpath, args.data, case, "ecmp", work / "rep-1",
                    reuse=False)
    log = log if log.is_file() else VENDORED_LOGS.get(case)
    return command_config(args.data, case, log, work / "configs"), log


def _floodns_round(args, case: str, work: Path, k: int) -> tuple[float | None, float | None]:
    """floodns's ECMP run of round k into WORK/round-K (again, unless --reuse): its wall
    and CPU seconds (None when it did not run)."""
    folder = work / f"round-{k}"
    wall = run_floodns(args.floodns, args.classpath, args.data, case, "ecmp", folder,
                       args.reuse)[1]
    cpu = folder / f"{case}-ecmp" / "cpu_s.txt"
    return wall, (float(cpu.read_text()) if wall is not None and cpu.is_file() else None)


def _median_pair(pairs: list[tuple]) -> tuple[float | None, float | None]:
    """(median of the firsts, median of the seconds); None where any is None."""
    out = []
    for i in (0, 1):
        values = [p[i] for p in pairs]
        out.append(None if None in values else statistics.median(values))
    return out[0], out[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--cases", nargs="+", default=None)
    ap.add_argument("--floodns", type=Path, default=None, help="the floodns/ folder")
    ap.add_argument("--classpath", default=None, help="floodns classes and jars")
    ap.add_argument("--work", type=Path, default=None, help="floodns run folders")
    ap.add_argument("--reuse", action="store_true", help="reuse floodns logs in --work")
    ap.add_argument("--csv", type=Path, default=None)
    ap.add_argument("--repeats", type=int, default=1,
                    help="floodns runs per case and strategy (and, with --whole-command, "
                         "commands per case and variant); medians")
    ap.add_argument("--whole-command", action="store_true",
                    help="time the whole `mlfabric predict` command per case against floodns")
    ap.add_argument("--baseline", type=Path, default=None,
                    help="with --whole-command: another checkout (e.g. `git worktree add "
                         "DIR COMMIT`) whose command is timed in the same rounds")
    args = ap.parse_args(argv)
    if not 1 <= args.repeats <= 100:
        ap.error(f"--repeats: from 1 to 100, got {args.repeats}")
    if args.baseline is not None and not (args.baseline / "experiments").is_dir():
        ap.error(f"--baseline: {args.baseline} is not an mlfabric checkout (no experiments/)")
    local = args.floodns is not None and args.classpath is not None
    cases = args.cases or (DEFAULT_CASES if local else sorted(STORED))
    work = args.work or Path(tempfile.mkdtemp(prefix="floodns-bench-"))
    with conditions(kernels=False):
        rows = (whole_command(args, cases, work, local) if args.whole_command
                else [r for case in cases for r in one_case(args, case, work, local)])
    _write_csv(args.csv, rows)
    return 0


def case_runs(case: str, work: Path, local: bool) -> list[tuple]:
    """(ours, floodns's strategy, semantics, flow log or subflows) of every run of a case."""
    flood_sem, our_sem = Semantics.floodns(), Semantics()
    runs = []
    if local:
        runs.append(("replay", "ecmp", flood_sem, work / "rep-1" / f"{case}-ecmp"
                     / "logs_floodns" / "flow_info.csv"))
    elif case in VENDORED_LOGS:
        runs.append(("replay", "ecmp", flood_sem, VENDORED_LOGS[case]))
    for sem in (flood_sem, our_sem):
        for ours_name, their_name in (("ecmp", "ecmp"), ("greedy", "mcvlc"),
                                      ("edge-coloring", "edge_coloring")):
            runs.append((ours_name, their_name, sem, None))
    if parse_case(case)[1]:           # failed cores: beyond one static path per flow
        for label, _routing, k, recompute in BEYOND:
            runs.append((label, "mcvlc", dataclasses.replace(flood_sem, recompute=recompute), k))
    return runs


def one_case(args: argparse.Namespace, case: str, work: Path, local: bool) -> list[dict]:
    """floodns's runs of one case (or its stored figures) against ours, printed; the rows."""
    flood_sem, our_sem = Semantics.floodns(), Semantics()
    names = job_names(args.data, case)
    theirs: dict[str, tuple[dict[int, float], float | None]] = {}
    if local:
        for s in FLOODNS_STRATEGIES:
            theirs[s] = run_floodns_median(args.floodns, args.classpath, args.data, case,
                                           s, work, args.reuse, args.repeats)
    for s, v in STORED.get(case, {}).items():     # what floodns did not run here
        theirs.setdefault(s, ({0: v}, None))
    rows: list[dict] = []
    for ours_name, their_name, sem, extra in case_runs(case, work, local):
        log, k = (extra, 1) if not isinstance(extra, int) else (None, extra)
        routing = next((r for lab, r, _, _ in BEYOND if lab == ours_name), ours_name)
        ar, wall = ours(args.data, case, routing, sem, log, subflows=k)
        their_ar, their_wall = theirs.get(their_name, ({}, None))
        for jid, name in names.items():
            t = their_ar.get(jid)
            rows.append({
                "case": case, "job": name, "ours": ours_name,
                "semantics": ("ours" if sem == our_sem else "floodns"
                              + ("" if sem == flood_sem else f", recompute {sem.recompute}")),
                "floodns": their_name, "ours_mean_ar_s": ar[name],
                "floodns_mean_ar_s": t,
                "diff_pct": None if t is None else 100 * (ar[name] - t) / t,
                "ours_wall_s": wall, "floodns_wall_s": their_wall,
                "speedup": None if their_wall is None else their_wall / wall})
        print_row(rows[-len(names):])
    if parse_case(case)[1]:
        best(case, names, theirs, rows, live_bound_s(args.data, case))
    return rows


def _write_csv(path: Path | None, rows: list[dict]) -> None:
    if path and rows:
        with path.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


def best(case: str, names: dict[int, str], theirs: dict, rows: list[dict],
         bound: dict[str, float]) -> None:
    """Per job: floodns's best strategy and ours (any scheme, floodns's semantics), their
    ratio, and ours against the fluid bound of the live cores."""
    for jid, name in names.items():
        t = min(((v[0][jid], s) for s, v in theirs.items() if jid in v[0]), default=None)
        o = min((r["ours_mean_ar_s"], r["ours"]) for r in rows
                if r["case"] == case and r["job"] == name and r["semantics"] != "ours"
                and r["ours"] != "replay")
        print(f"{case:6s} {name:18s} best: floodns {_f(t and t[0], '.4f')} s ({t and t[1]}), "
              f"ours {o[0]:.4f} s ({o[1]}), ours/floodns "
              f"{_f(t and o[0] / t[0], '.3f')}, bound {bound[name]:.4f} s, ours/bound "
              f"{o[0] / bound[name]:.3f}", flush=True)


def _f(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def print_row(rows: list[dict]) -> None:
    for r in rows:
        print(f"{r['case']:6s} {r['job']:18s} {r['semantics']:8s} {r['ours']:14s} "
              f"{r['ours_mean_ar_s']:9.6f} s | floodns {r['floodns']:14s} "
              f"{_f(r['floodns_mean_ar_s'], '9.6f')} s  diff {_f(r['diff_pct'], '+8.4f')}% | "
              f"wall ours {r['ours_wall_s']:6.2f} s floodns {_f(r['floodns_wall_s'], '6.2f')} s "
              f"speedup {_f(r['speedup'], '5.1f')}x", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())

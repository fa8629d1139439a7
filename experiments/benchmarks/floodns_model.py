"""The model's time against floodns's, alternated (a script, not a test).

    python -m experiments.benchmarks.floodns_model --floodns DIR --classpath CP
        [--data DIR] [--cases 1-0-2 ...] [--repeats 3] [--work DIR]
        [--pairs replay ecmp greedy edge-coloring]

Per case (J-F-R: J concurrent jobs, F failed cores, ring size R) and round: floodns's ECMP
run and its mcvlc run (each a fresh `java` process: wall, and user + system CPU of the
process and its threads), then ours in the same process as floodns's semantics (reading the
traffic folder, routing, predicting): `replay` of that round's ECMP flow log, our ECMP hash
and greedy (wall, and this process's CPU); --pairs picks which of ours run, and floodns runs
the strategies they are set against (edge-coloring: floodns's edge_coloring, whose Python
step floodns starts as `python -m external.edge_coloring.main` when the run folder's path
holds `cs/labs`, else through `poetry run`). One untimed run of ours first (numba's kernels
loaded). --repeats rounds, both sides in each (their load alike); medians, each ratio
floodns / ours of the medians, and the last round's per-job means, floodns's beside ours.
The conditions (load, versions) are printed first and the load again at the end.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from experiments.benchmarks.floodns_bench import DATA, DEFAULT_CASES, ours, run_floodns
from experiments.benchmarks.harness import conditions
from experiments.benchmarks.conditions import load_average
from traffic.prediction import Semantics

#: ours -> floodns's strategy it is set against
PAIRS = {"replay": "ecmp", "ecmp": "ecmp", "greedy": "mcvlc", "edge-coloring": "edge_coloring"}
DEFAULT_PAIRS = ["replay", "ecmp", "greedy"]


def floodns_round(args: argparse.Namespace, case: str, work: Path) -> dict[str, tuple]:
    """floodns's runs of one round, one per strategy --pairs needs (ECMP first when replay
    reads its log): {strategy: (wall s, CPU s, per-job means)}."""
    out = {}
    for strategy in dict.fromkeys(PAIRS[p] for p in args.pairs):
        means, wall = run_floodns(args.floodns, args.classpath, args.data, case, strategy,
                                  work, reuse=False)
        if wall is None:
            raise RuntimeError(f"floodns {strategy} failed on {case}")
        cpu = float((work / f"{case}-{strategy}" / "cpu_s.txt").read_text())
        out[strategy] = (wall, cpu, means)
    return out


def ours_timed(args: argparse.Namespace, case: str, routing: str, work: Path) -> tuple:
    """Ours on one case with floodns's semantics: (wall s, CPU s, per-job means)."""
    log = work / f"{case}-ecmp" / "logs_floodns" / "flow_info.csv"
    c0 = time.process_time()
    means, wall = ours(args.data, case, routing, Semantics.floodns(),
                       log if routing == "replay" else None)
    return wall, time.process_time() - c0, means


def one_case(args: argparse.Namespace, case: str, work: Path) -> None:
    """--repeats rounds of floodns then ours on one case; medians and ratios printed."""
    times: dict[str, list[tuple]] = {}
    first = True
    for k in range(args.repeats):
        rwork = work / case / f"round-{k}"
        for strategy, t in floodns_round(args, case, rwork).items():
            times.setdefault(f"floodns {strategy}", []).append(t)
        if first:                     # untimed: numba's kernels and the imports loaded
            ours_timed(args, case, args.pairs[0], rwork)
            first = False
        for routing in args.pairs:
            times.setdefault(routing, []).append(ours_timed(args, case, routing, rwork))
    med = {name: (statistics.median(t[0] for t in ts), statistics.median(t[1] for t in ts))
           for name, ts in times.items()}
    for name, (w, c) in med.items():
        means = ", ".join(f"{m:.6f}" for m in sorted(times[name][-1][2].values()))
        print(f"{case} {name:>14}: wall {w:7.3f} s, CPU {c:7.3f} s "
              f"(medians of {args.repeats}); per-job means, last round: {means} s")
    for routing in args.pairs:
        theirs = PAIRS[routing]
        fw, fc = med[f"floodns {theirs}"]
        w, c = med[routing]
        print(f"{case} floodns {theirs} / ours {routing}: wall {fw / w:6.1f}x, "
              f"CPU {fc / c:6.1f}x ({load_average()})", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--cases", nargs="+", default=DEFAULT_CASES)
    ap.add_argument("--floodns", type=Path, required=True, help="the floodns/ folder")
    ap.add_argument("--classpath", required=True, help="floodns classes and jars")
    ap.add_argument("--work", type=Path, default=None, help="floodns run folders")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pairs", nargs="+", default=DEFAULT_PAIRS, choices=list(PAIRS),
                    help="which of ours to time, each against its floodns strategy")
    args = ap.parse_args(argv)
    if not 1 <= args.repeats <= 100:
        ap.error(f"--repeats: from 1 to 100, got {args.repeats}")
    work = args.work or Path(tempfile.mkdtemp(prefix="floodns-model-"))
    with conditions(kernels=False):
        for case in args.cases:
            one_case(args, case, work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

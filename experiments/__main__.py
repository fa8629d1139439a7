"""mlfabric's command line: `mlfabric {run,predict,sweep,report,validate,calibrate,
clean} ...` (also `python -m experiments ...`).

Input problems print one line naming the key and the fix, and exit 2 before anything is built.
Runtime failures print one line and exit 1; the fabric has been torn down by then.
"""
from __future__ import annotations

import argparse
import gc
import math
import os
import signal
import sys
import warnings
from pathlib import Path


from .process import exit_now, one_blas_thread, open_std_fds
from testbed.signals import (ENDING, HELD, PENDING, Terminated, deferred, raise_interrupt,
                             raise_terminated)


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line, like every other input error (exit 2)."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {' '.join(message.split())}\n")


#: calibrate --duration-s: whole seconds (iperf3 -t takes an integer; 0 would mean forever).
MAX_CALIBRATE_S = 600
_OUT_HELP = ("; it must not hold earlier results unless --force (which removes only what "
             "mlfabric writes there)")
_FORCE_HELP = "replace the results an earlier run left in --out"
_SET_HELP = ("change one config key before it is checked, e.g. --set fabric.spine_link_mbps=10 "
             "or --set jobs[0].iterations=5 (the value is YAML; repeatable)")
#: --repeat: independent repetitions, each its own run folder (rep-1 .. rep-N).
MAX_REPEAT = 1000


def _add_set(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", action="append", default=[], metavar="KEY.PATH=VALUE",
                   help=_SET_HELP)


def _add_repeat(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help=f"N independent repetitions (1..{MAX_REPEAT}), each in OUT/rep-K with "
                        "its own source ports (so its own ECMP hash outcome); OUT/results.csv "
                        "holds them all")


class _Version(argparse.Action):
    """--version: _version() when asked for (it runs git and imports the results' modules:
    not on every command's way in)."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(_version())
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mlfabric",
                description="mlfabric: emulate and predict ML collectives "
                            "under different routings")
    p.add_argument("--version", action=_Version, nargs=0,
                   help="print mlfabric's version and the checkout's commit, and exit")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    r = sub.add_parser("run", help="run CONFIG on the emulated fabric (root)")
    r.add_argument("config", type=Path)
    r.add_argument("--out", type=str, default=None,
                   help="results folder (default: results/<name>)" + _OUT_HELP)
    r.add_argument("--force", action="store_true", help=_FORCE_HELP)
    _add_set(r)
    _add_repeat(r)
    r.add_argument("--strict", action="store_true",
                   help="exit 3 when the CPU monitor flagged any routing (emulator saturated)")
    r.add_argument("--cli", nargs="?", const="after", choices=("after", "before"),
                   help="open Mininet's CLI on the live fabric after the last routing (or "
                        "before the first routing's traffic with `--cli before`); leaving it "
                        "tears the fabric down as usual")
    pr = sub.add_parser("predict", help="predict CONFIG with the flow-level model (no root)")
    pr.add_argument("config", type=Path)
    pr.add_argument("--out", type=str, default=None,
                    help="results folder (default: results/<name>-predicted)" + _OUT_HELP)
    pr.add_argument("--force", action="store_true", help=_FORCE_HELP)
    pr.add_argument("--util-bin-s", type=float, default=None,
                    help="also write links_over_time.csv with utilization per bin of this "
                         "many seconds (at least 0.001; at most 20,000,000 bins x links)")
    pr.add_argument("--no-plots", action="store_true",
                    help="write the results without drawing the figures (no figure worker, "
                         "which imports matplotlib on a second core: about 1 s of CPU less; "
                         "`mlfabric report OUT --out REPORT` draws them later)")
    _add_set(pr)
    _add_repeat(pr)
    sw = sub.add_parser("sweep", help="run the points of SWEEP.yaml on a Dask cluster")
    sw.add_argument("sweep", type=Path)
    sw.add_argument("--out", type=str, default=None,
                    help="sweep folder (default: results/<sweep file name>); started again on "
                         "the same folder, it skips the finished points")
    sw.add_argument("--force", action="store_true",
                    help="start over: remove the sweep's earlier results in --out")
    sw.add_argument("--dry-run", action="store_true",
                    help="list the points (name and values) and exit; nothing is run or "
                         "written")
    _add_set(sw)
    sw.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                    help="a running Dask scheduler (default: a local cluster)")
    sw.add_argument("--workers", type=int, default=None,
                    help="worker processes of the local cluster (default: one per core; "
                         "emulated points: always 1)")
    rp = sub.add_parser("report", help="merge run and sweep folders into one CSV and figures")
    rp.add_argument("dirs", type=Path, nargs="+", metavar="DIR")
    rp.add_argument("--out", type=str, required=True, help="report folder" + _OUT_HELP)
    rp.add_argument("--force", action="store_true", help=_FORCE_HELP)
    rp.add_argument("--html", action="store_true",
                    help="also write REPORT/report.html: one self-contained page (the answer "
                         "table, the figures, fidelity, the environment) that opens offline")
    v = sub.add_parser("validate", help="check CONFIG or SWEEP.yaml (its base and every "
                       "point, with --set changes) without running it")
    v.add_argument("config", type=Path)
    _add_set(v)
    c = sub.add_parser("calibrate", help="measure goodput and fairness on CONFIG's fabric (root)")
    c.add_argument("config", type=Path, nargs="?",
                   default=Path("experiments/configs/quickstart.yaml"))
    c.add_argument("--out", type=str, default=None,
                   help="folder for calibration.json (default: results/calibration)"
                        + _OUT_HELP)
    c.add_argument("--force", action="store_true", help=_FORCE_HELP)
    c.add_argument("--duration-s", type=float, default=8.0,
                   help=f"length of each test, whole seconds 1..{MAX_CALIBRATE_S}")
    cl = sub.add_parser("clean", help="remove what a crashed mlfabric run left (root)")
    cl.add_argument("--machines", type=Path, metavar="CONFIG", default=None,
                    help="also on every machine of CONFIG's machines: (over ssh)")
    pf = sub.add_parser("preflight", help="check every machine of CONFIG's `machines:` over "
                        "ssh (root, OVS version, commit, VXLAN port, clock); builds nothing")
    pf.add_argument("config", type=Path)
    return p


def _version() -> str:
    """'mlfabric 0.9.0 (commit 2dd2fd38d700, uncommitted changes)': pyproject.toml's version
    of this checkout and its git commit."""
    import tomllib
    root = Path(__file__).resolve().parents[1]
    try:
        version = tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
    except (OSError, ValueError, KeyError):
        from importlib import metadata
        try:
            version = metadata.version("mlfabric")
        except metadata.PackageNotFoundError:
            version = "unknown"
    from .tidy import git_state
    git = git_state()
    commit = (git["commit"] or "unknown")[:12]
    return (f"mlfabric {version} (commit {commit}"
            + (", uncommitted changes" if git["dirty"] else "") + ")")


def _writes_results(fn, folder: Path):
    """Call fn(); a full disk that names no file is reported naming the results folder."""
    from .outdir import name_the_folder
    try:
        return fn()
    except OSError as e:
        err = name_the_folder(e, folder)
        if err is e:
            raise
        raise err from None


def _check_repeat(n: int) -> None:
    from .config import ConfigError
    if not 1 <= n <= MAX_REPEAT:
        raise ConfigError(f"--repeat: from 1 to {MAX_REPEAT}, got {n}")


def _repetitions(out: Path, n: int) -> list[tuple[int, Path]]:
    """(repetition, run folder): OUT itself for one, OUT/rep-1 .. OUT/rep-N for several."""
    return [(1, out)] if n == 1 else [(r, out / f"rep-{r}") for r in range(1, n + 1)]


def _repeated(exp, args, out: Path, one) -> None:
    """Call one(folder, repetition, port_offset) per repetition; then each folder's
    results.csv and environment.json, and OUT/results.csv over all of them."""
    from .overrides import set_values
    from .tidy import finish_environment, start_record, write_results_csv
    folders = []
    for r, folder in _repetitions(out, args.repeat):
        start = start_record(args.command_line)
        offset = 0
        if r > 1:                # (r - 1) x ...: 0 for the first, without importing sweep
            from .sweep import repetition_offset
            offset = repetition_offset(exp, r)
        results = _writes_results(lambda: one(folder, r, offset), out)
        _writes_results(lambda: write_results_csv(folder, results, set_values(args.set)), out)
        _writes_results(lambda: finish_environment(folder, start), out)
        folders.append(folder)
    if len(folders) > 1:
        with deferred():         # pandas, matplotlib: C extensions, signals held (_dispatch)
            import pandas  # noqa: F401  (merge_csvs: imported at first use)
            from .report import merge_csvs
        _writes_results(lambda: merge_csvs([f / "results.csv" for f in folders],
                                           out / "results.csv"), out)
        from .results import repeat_summary
        print(repeat_summary([_read_json(f / "results.json") for f in folders]))


def _read_json(path: Path) -> dict:
    import json
    return json.loads(path.read_text())


def _page(folder: Path, rows=None) -> str:
    """Write folder/report.html; the line that names it."""
    from .html_report import write_html
    return f"report: {_writes_results(lambda: write_html(folder, rows), folder)}"


def _cmd_run(args) -> int:
    from .config import ConfigError
    from .outdir import check_out, lock
    from .overrides import load_with
    from .runner import check_emulable
    exp = load_with(args.config, args.set)  # ConfigError -> exit 2, nothing built
    check_emulable(exp)      # pure: link rates the emulator can shape
    _check_repeat(args.repeat)
    out = check_out(args.out, Path("results") / exp.name, args.force)
    if os.geteuid() != 0:
        print("error: run: emulation needs root; use `sudo make run` or "
              "`sudo .venv/bin/mlfabric run ...`", file=sys.stderr)
        return 2
    from testbed.ovs import kernel_datapath_available
    if exp.emulation.datapath == "kernel" and not kernel_datapath_available():
        raise ConfigError("emulation.datapath: kernel, but this machine has no openvswitch "
                          "kernel module loaded; use user (the default) or auto")
    if exp.machines:         # reachable, ready, MTU: before --out is made or anything built
        from .split_run import check_machines
        check_machines(exp)
    from .runner import run_experiment
    lock(out, "run")
    out.clear()
    _repeated(exp, args, out.path, lambda folder, r, offset: run_experiment(
        exp, folder, repetition=r, port_offset=offset, cli=args.cli))
    with deferred():             # matplotlib: C extensions, signals held (_dispatch)
        from .report import draw_report
    figures = _writes_results(lambda: draw_report([out.path], out.path / "plots",
                                                  fmt=("png",)), out.path)
    print(f"figures: {out.path / 'plots'} ({', '.join(figures)}; PNG, and SVG from `report`)")
    print(_page(out.path))
    from .runner import flagged_runs
    if args.strict and flagged_runs(out.path):   # results kept; the exit code says flagged
        print(f"error: run: --strict: the emulator was the bottleneck in "
              f"{', '.join(flagged_runs(out.path))} (see the advice above)", file=sys.stderr)
        return 3
    return 0


#: `predict`'s cyclic garbage collector: a young collection every 100,000 allocations (not
#: 700), the older generations after 50 and 100 of the younger (not 10 and 10). The model
#: allocates a record per connection and per result (10^5 and more at 8,192 GPUs on 8-GPU
#: servers) and almost no cycles; with Python's defaults the collections that scan them are
#: a large share of the command's CPU time (docs/servers.md, "Cost at scale").
BATCH_GC_THRESHOLDS = (100_000, 50, 100)


def _cmd_predict(args) -> int:
    """`predict` under BATCH_GC_THRESHOLDS, with what the config built frozen (gc.freeze:
    the modules, the fabric and the plans live as long as the command); both undone after."""
    old = gc.get_threshold()
    gc.set_threshold(*BATCH_GC_THRESHOLDS)
    try:
        return _predict(args)
    finally:
        gc.unfreeze()
        gc.set_threshold(*old)


def _predict(args) -> int:
    from .config import check_util_bin_s
    from .outdir import check_out, lock
    from .overrides import load_with
    from .predict import check_predictable, predict_experiment
    exp = load_with(args.config, args.set)
    gc.freeze()
    check_predictable(exp)
    check_util_bin_s(exp, args.util_bin_s)
    _check_repeat(args.repeat)
    out = check_out(args.out, Path("results") / f"{exp.name}-predicted", args.force)
    lock(out, "predict")
    out.clear()
    from .warm import needs_compile
    if needs_compile():
        print("compiling the model's kernels (numba, once: cached on disk for later runs; "
              "`make setup` builds them ahead)", flush=True)
    _repeated(exp, args, out.path, lambda folder, r, offset: predict_experiment(
        exp, folder, util_bin_s=args.util_bin_s, repetition=r, port_offset=offset))
    if not args.no_plots:
        figures = _writes_results(lambda: _draw_predicted(out.path, args), out.path)
        print(f"figures: {out.path / 'plots'} ({', '.join(figures)}; PNG, and SVG from "
              "`report`)")
    print(_page(out.path))
    return 0


def _draw_predicted(folder: Path, args) -> list[str]:
    """`predict`'s figures of `folder`: their data read here, drawn by the figure worker
    started with the command (experiments/figure_worker.py), or here when it could not
    start. Returns the figures' stems."""
    with deferred():             # pandas for --util-bin-s (matplotlib, when drawn here): C
        from .report import predicted_figure_data      # extensions, signals held (_dispatch)
        if args.util_bin_s is not None:
            import pandas  # noqa: F401  (link utilization over time)
        worker = getattr(args, "figure_worker", None)
        if worker is None:
            from .answer_figures import draw_figures
    data = predicted_figure_data(folder)
    if worker is None:
        return draw_figures(data, folder / "plots")
    return worker.draw(folder / "plots", data)


def _cmd_sweep(args) -> int:
    from .outdir import check_out, lock
    from .sweep import check_scheduler, check_workers, load_sweep, run_sweep
    sweep = load_sweep(args.sweep, args.set)   # every path and key checked: exit 2
    if args.dry_run:
        from .sweep import describe_points
        print(describe_points(sweep))
        return 0
    check_scheduler(args.scheduler, connect=True)   # bounded, before --out is touched
    check_workers(args.workers)
    default = Path("results") / args.sweep.stem
    resume = not args.force and args.out is not None and (Path(args.out) / "sweep.json").is_file()
    resume = resume or (args.out is None and not args.force and (default / "sweep.json").is_file())
    out = check_out(args.out, default, args.force or resume)
    if sweep.mode == "run" and args.scheduler is None and os.geteuid() != 0:
        print("error: sweep: mode run emulates on this machine and needs root; use sudo, or "
              "--scheduler with workers started as root", file=sys.stderr)
        return 2
    lock(out, "sweep")
    if not resume:
        out.clear()
    summary = _writes_results(lambda: run_sweep(sweep, out.path, args.scheduler,
                                                args.workers, argv=args.command_line),
                               out.path)
    print(f"sweep: {summary['points']} points, {summary['skipped']} skipped (finished before), "
          f"{summary['ran']} ran, {summary['failed']} failed, in {summary['wall_s']:.1f} s; "
          f"results: {out.path / 'results.csv'}")
    if summary["points"] > summary["failed"]:
        with deferred():         # matplotlib: C extensions, signals held (_dispatch)
            from .report import draw_report, efficiency_table, read_report
        runs, table = read_report([out.path])
        figures = _writes_results(lambda: draw_report([out.path], out.path / "plots", table,
                                                      runs, fmt=("png",)), out.path)
        print(f"figures: {out.path / 'plots'} ({', '.join(figures)})")
        print(_page(out.path, efficiency_table(table).to_dict("records")))
    return 1 if summary["failed"] else 0


def _cmd_report(args) -> int:
    from .outdir import check_out, lock
    with deferred():             # matplotlib: C extensions, signals held (_run)
        from .figure_worker import skip_set_docstrings
        skip_set_docstrings()
        from . import drawing  # noqa: F401  (the figures: imported at their first use)
        from .report import read_report, report
    read = read_report(args.dirs)     # every input file checked before --out is touched
    out = check_out(args.out, Path("results") / "report", args.force)
    lock(out, "report")
    out.clear()
    summary = _writes_results(lambda: report(args.dirs, out.path, read), out.path)
    page = None
    if args.html:
        from .html_report import write_html
        page = _writes_results(lambda: write_html(out.path, summary["efficiency"],
                                                  summary["run_folders"], out.path / "plots"),
                               out.path)
    print(f"report: {summary['runs']} run folders, {summary['rows']} rows -> "
          f"{out.path / 'results.csv'}; figures: {', '.join(summary['figures'])}"
          + (f"; page: {page}" if page else ""))
    return 0


def _cmd_validate(args) -> int:
    """Load CONFIG with its --set changes (every check `run` and `predict` make before
    building anything); exit 0 and one summary line, or the usual one-line error and 2."""
    from .config import ConfigError, read_yaml
    from .overrides import load_with
    from .runner import check_emulable
    doc = read_yaml(args.config)
    if isinstance(doc, dict) and {"base", "grid", "points", "seeds"} & set(doc):  # a sweep
        from .sweep import check_points, load_sweep
        sweep = load_sweep(args.config, args.set)
        print(f"{args.config}: {check_points(sweep)}")
        return 0
    exp = load_with(args.config, args.set)
    try:
        check_emulable(exp)
        emulable = "yes"
    except ConfigError as e:
        emulable = f"no: {e}"
    from testbed.topologies import title
    jobs, events = len(exp.programs) or len(exp.jobs), len(exp.events)
    kind = "program job" if exp.programs else "job"
    print(f"{args.config}: ok: {exp.name}, {title(exp.fabric)}, {jobs} {kind}"
          f"{'s' * (jobs != 1)}, routing {', '.join(exp.routing)}, {events} event"
          f"{'s' * (events != 1)}; `run` can emulate it: {emulable}")
    return 0


def _cmd_calibrate(args) -> int:
    from .config import ConfigError, load, quote
    from .outdir import check_out, lock
    from .runner import check_emulable
    exp = load(args.config)
    check_emulable(exp)
    d = args.duration_s
    if not (math.isfinite(d) and d.is_integer() and 1 <= d <= MAX_CALIBRATE_S):
        raise ConfigError(f"--duration-s: whole seconds from 1 to {MAX_CALIBRATE_S}, got "
                          f"{quote(d)}")
    out = check_out(args.out, Path("results") / "calibration", args.force)
    if os.geteuid() != 0:
        print("error: calibrate: emulation needs root", file=sys.stderr)
        return 2
    from .calibrate import calibrate
    lock(out, "calibrate")
    out.clear()
    _writes_results(lambda: calibrate(exp, out.path, d), out.path)
    return 0


def _cmd_preflight(args) -> int:
    from .machines_cli import preflight
    return preflight(args.config)


def _cmd_clean(args) -> int:
    if os.geteuid() != 0:
        print("error: clean: needs root (it removes OVS bridges and interfaces)",
              file=sys.stderr)
        return 2
    machines = ()
    if args.machines is not None:
        from .config import ConfigError, load
        machines = load(args.machines).machines
        if not machines:
            raise ConfigError("clean --machines: the config names no machines")
    from testbed.registry import clean_all
    removed = clean_all()
    left = removed.pop("left")
    print("removed: " + ", ".join(f"{v} {k}" for k, v in removed.items()))
    if left:
        print(f"error: clean: could not remove {left}; their records are kept",
              file=sys.stderr)
    code = 1 if left else 0
    if machines:
        from .machines_cli import clean_machines
        code = max(code, clean_machines(machines))
    return code


def main(argv: list[str] | None = None) -> int:
    # SIGTERM handled from the first moment: a signal while the modules below import (a
    # second or more on a loaded machine) ends the command like one at any later moment
    signal.signal(signal.SIGTERM, raise_terminated)
    for sig in (signal.SIGHUP, signal.SIGQUIT):     # a closed terminal or ssh, Ctrl-\
        if signal.getsignal(sig) is signal.SIG_DFL:  # not when ignored (nohup)
            signal.signal(sig, raise_terminated)
    PENDING.clear()                  # a command of its own (main() also runs in tests)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:   # not when ignored
        signal.signal(signal.SIGINT, raise_interrupt)
    open_std_fds()
    args = _parser().parse_args(argv)
    if args.command == "predict":
        one_blas_thread()
    args.command_line = [sys.executable, "-m", "experiments",
                         *(sys.argv[1:] if argv is None else argv)]
    try:
        code = _dispatch(args)
    except KeyboardInterrupt:
        code = -signal.SIGINT
    except Terminated as e:
        code = -e.signum
    if code >= 0 and PENDING:        # a handler's exception was lost in a finalizer
        code = -PENDING[0]
    PENDING.clear()
    if code == -signal.SIGINT:
        print(f"interrupted{_AFTER[args.command]}", file=sys.stderr)
        return 130
    if -code in ENDING:
        print(f"{ENDING[-code]}{_AFTER[args.command]}", file=sys.stderr)
        return 128 - code
    return code


def _dispatch(args: argparse.Namespace) -> int:
    """Run the command; input errors exit 2, runtime failures 1, each as one line, as is each
    importer's warning. `predict` with figures starts its figure worker first and ends it on
    every exit path."""
    worker, shown = None, warnings.showwarning
    try:
        warnings.showwarning = _one_line_warnings(shown)
        with deferred():
            if args.command == "predict" and not args.no_plots:
                # first: it imports matplotlib on another core while this process predicts
                from .figure_worker import FigureWorker
                worker = FigureWorker.start()
        args.figure_worker = worker
        return _run(args)
    finally:                            # ended by the PID started, whatever happened
        warnings.showwarning = shown
        if worker is not None:
            worker.stop()


def _one_line_warnings(shown):
    """`shown` (warnings.showwarning), but a warning whose class says `one_line` (an
    importer's assumption: traffic.streams.WorkloadWarning) is one `warning: ...` line on
    stderr."""
    def show(message, category, *args, **kwargs):
        if getattr(category, "one_line", False):
            print(f"warning: {message}", file=sys.stderr)
        else:
            shown(message, category, *args, **kwargs)
    return show


def _run(args: argparse.Namespace) -> int:
    """The command, its failures as one line: input errors exit 2, runtime failures 1."""
    # signals held while the modules import: a KeyboardInterrupt inside a C extension's
    # initialisation (matplotlib's ft2font) aborted the interpreter (exit -6, CI, 2026-12-01);
    # a held signal is raised when the imports are done and ends the command as usual
    with deferred():
        from .config import ConfigError
        from routing.base import RoutingError
        from testbed.fabric import FabricError
        from testbed.ovs import TestbedError
        from traffic.collectives import WorkloadError
        from traffic.driver import TrafficError
        from traffic.predictor import PredictorError
        failures = (RoutingError, WorkloadError, PredictorError, FabricError, TestbedError,
                    TrafficError)
        if args.command != "predict":   # predict emulates nothing (its figure worker imports
            from .runner import PathMismatchError      # matplotlib: experiments/figure_worker)
            failures += (PathMismatchError,)
        else:
            from .figure_worker import FigureError
            failures += (FigureError,)
        if args.command in ("run", "sweep", "report"):
            import pandas  # noqa: F401  (results.csv, reports: imported later, C extensions)

    try:
        return {"run": _cmd_run, "predict": _cmd_predict, "sweep": _cmd_sweep,
                "report": _cmd_report, "validate": _cmd_validate, "calibrate": _cmd_calibrate,
                "clean": _cmd_clean, "preflight": _cmd_preflight}[args.command](args)
    except ConfigError as e:            # bad input: found before anything was built
        print(f"error: {e}", file=sys.stderr)
        return 2
    except failures as e:               # failed while running; torn down
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    except (OSError, UnicodeDecodeError) as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


#: What the interrupted command leaves: only `run` and `calibrate` build a fabric.
_AFTER = {"run": ": the fabric was torn down", "calibrate": ": the fabric was torn down",
          "sweep": ": finished points are kept; start it again to resume"}
_AFTER = {c: _AFTER.get(c, "") for c in ("run", "predict", "sweep", "report", "validate",
                                         "calibrate", "clean", "preflight")}


def cli() -> None:
    """The `mlfabric` command (and `python -m experiments`): main(), then exit with its code."""
    try:
        code = main()
    except KeyboardInterrupt:   # a second Ctrl-C after main() had caught the first one
        code = 130
    except Terminated as e:
        code = 128 + e.signum
    finally:
        # the work is done: the interpreter's shutdown restores the default handlers, under
        # which a late SIGTERM killed the process (-15) after a clean run, and a KeyboardInterrupt
        # left uncaught makes Python end itself by SIGINT (-2, CI 2026-12-03, after it had
        # printed "interrupted: the fabric was torn down"); ignore them from here on
        for held in HELD:
            signal.signal(held, signal.SIG_IGN)
    exit_now(code)


if __name__ == "__main__":
    cli()

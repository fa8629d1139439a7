"""mlfabric's command line: `python -m experiments {run,predict,calibrate,clean} ...`.

Input problems print one line naming the key and the fix, and exit 2 before anything is built.
Runtime failures print one line and exit 1; the fabric has been torn down by then.
"""
from __future__ import annotations

import argparse
import math
import os
import signal
import sys
from pathlib import Path


from testbed.signals import Terminated, raise_terminated


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line, like every other input error (exit 2)."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {' '.join(message.split())}\n")


#: calibrate --duration-s: whole seconds (iperf3 -t takes an integer; 0 would mean forever).
MAX_CALIBRATE_S = 600
_OUT_HELP = ("; it must not hold earlier results unless --force (which removes only what "
             "mlfabric writes there)")
_FORCE_HELP = "replace the results an earlier run left in --out"


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m experiments",
                description="mlfabric: emulate and predict ML collectives "
                            "under different routings")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    r = sub.add_parser("run", help="run CONFIG on the emulated fabric (root)")
    r.add_argument("config", type=Path)
    r.add_argument("--out", type=str, default=None,
                   help="results folder (default: results/<name>)" + _OUT_HELP)
    r.add_argument("--force", action="store_true", help=_FORCE_HELP)
    pr = sub.add_parser("predict", help="predict CONFIG with the flow-level model (no root)")
    pr.add_argument("config", type=Path)
    pr.add_argument("--out", type=str, default=None,
                    help="results folder (default: results/<name>-predicted)" + _OUT_HELP)
    pr.add_argument("--force", action="store_true", help=_FORCE_HELP)
    pr.add_argument("--util-bin-s", type=float, default=None,
                    help="also write links_over_time.csv with utilization per bin of this "
                         "many seconds (at least 0.001; at most 20,000,000 bins x links)")
    c = sub.add_parser("calibrate", help="measure goodput and fairness on CONFIG's fabric (root)")
    c.add_argument("config", type=Path, nargs="?",
                   default=Path("experiments/configs/quickstart.yaml"))
    c.add_argument("--out", type=str, default=None,
                   help="folder for calibration.json (default: results/calibration)"
                        + _OUT_HELP)
    c.add_argument("--force", action="store_true", help=_FORCE_HELP)
    c.add_argument("--duration-s", type=float, default=8.0,
                   help=f"length of each test, whole seconds 1..{MAX_CALIBRATE_S}")
    sub.add_parser("clean", help="remove what a crashed mlfabric run left (root)")
    return p


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


def _cmd_run(args) -> int:
    from .config import load
    from .outdir import check_out
    from .runner import check_emulable
    exp = load(args.config)  # ConfigError -> exit 2, nothing built
    check_emulable(exp)      # pure: link rates the emulator can shape
    out = check_out(args.out, Path("results") / exp.name, args.force)
    if os.geteuid() != 0:
        print("error: run: emulation needs root; use `sudo make run` or "
              "`sudo .venv/bin/python -m experiments run ...`", file=sys.stderr)
        return 2
    from .runner import run_experiment
    out.clear()
    _writes_results(lambda: run_experiment(exp, out.path), out.path)
    return 0


def _cmd_predict(args) -> int:
    from .config import check_util_bin_s, load
    from .outdir import check_out
    from .predict import predict_experiment
    exp = load(args.config)
    check_util_bin_s(exp, args.util_bin_s)
    out = check_out(args.out, Path("results") / f"{exp.name}-predicted", args.force)
    out.clear()
    _writes_results(lambda: predict_experiment(exp, out.path, util_bin_s=args.util_bin_s),
                    out.path)
    return 0


def _cmd_calibrate(args) -> int:
    from .config import ConfigError, load, quote
    from .outdir import check_out
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
    out.clear()
    _writes_results(lambda: calibrate(exp, out.path, d), out.path)
    return 0


def _cmd_clean(args) -> int:  # noqa: ARG001
    if os.geteuid() != 0:
        print("error: clean: needs root (it removes OVS bridges and interfaces)",
              file=sys.stderr)
        return 2
    from testbed.registry import clean_all
    removed = clean_all()
    left = removed.pop("left")
    print("removed: " + ", ".join(f"{v} {k}" for k, v in removed.items()))
    if left:
        print(f"error: clean: could not remove {left}; their records are kept",
              file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from .config import ConfigError
    from routing.base import RoutingError
    from testbed.fabric import FabricError
    from testbed.ovs import TestbedError
    from traffic.collectives import WorkloadError
    from traffic.driver import TrafficError
    from traffic.predictor import PredictorError
    from .runner import PathMismatchError

    signal.signal(signal.SIGTERM, raise_terminated)
    try:
        return {"run": _cmd_run, "predict": _cmd_predict, "calibrate": _cmd_calibrate,
                "clean": _cmd_clean}[args.command](args)
    except ConfigError as e:            # bad input: found before anything was built
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (RoutingError, WorkloadError, PredictorError, FabricError, TestbedError,
            TrafficError, PathMismatchError) as e:   # failed while running; torn down
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    except (OSError, UnicodeDecodeError) as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: the fabric was torn down", file=sys.stderr)
        return 130
    except Terminated:
        print("terminated: the fabric was torn down", file=sys.stderr)
        return 143


if __name__ == "__main__":
    sys.exit(main())

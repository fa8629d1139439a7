"""mlfabric's command line: `python -m experiments {run,predict,calibrate,clean} ...`.

Input problems print one line naming the key and the fix, and exit 2 before anything is built.
Runtime failures print one line and exit 1; the fabric has been torn down by then.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path


from testbed.signals import Terminated, raise_terminated


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m experiments",
                                description="mlfabric: emulate and predict ML collectives "
                                            "under different routings")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run CONFIG on the emulated fabric (root)")
    r.add_argument("config", type=Path)
    r.add_argument("--out", type=Path, default=None,
                   help="results folder (default: results/<name>)")
    pr = sub.add_parser("predict", help="predict CONFIG with the flow-level model (no root)")
    pr.add_argument("config", type=Path)
    pr.add_argument("--out", type=Path, default=None,
                    help="results folder (default: results/<name>-predicted)")
    pr.add_argument("--util-bin-s", type=float, default=None,
                    help="also write links_over_time.csv with utilization per bin of this "
                         "many seconds")
    c = sub.add_parser("calibrate", help="measure goodput and fairness on CONFIG's fabric (root)")
    c.add_argument("config", type=Path, nargs="?",
                   default=Path("experiments/configs/quickstart.yaml"))
    c.add_argument("--out", type=Path, default=None,
                   help="folder for calibration.json (default: results/calibration)")
    c.add_argument("--duration-s", type=float, default=8.0, help="length of each test (s)")
    sub.add_parser("clean", help="remove what a crashed mlfabric run left (root)")
    return p


def _cmd_run(args) -> int:
    from .config import load
    exp = load(args.config)  # ConfigError -> exit 2, nothing built
    if os.geteuid() != 0:
        print("error: run: emulation needs root; use `sudo make run` or "
              "`sudo .venv/bin/python -m experiments run ...`", file=sys.stderr)
        return 2
    from .runner import run_experiment
    out = args.out or Path("results") / exp.name
    run_experiment(exp, out)
    return 0


def _cmd_predict(args) -> int:
    from .config import load
    from .predict import predict_experiment
    exp = load(args.config)
    if args.util_bin_s is not None and not args.util_bin_s > 0:
        print("error: --util-bin-s: must be > 0", file=sys.stderr)
        return 2
    predict_experiment(exp, args.out or Path("results") / f"{exp.name}-predicted",
                       util_bin_s=args.util_bin_s)
    return 0


def _cmd_calibrate(args) -> int:
    from .config import load
    exp = load(args.config)
    if os.geteuid() != 0:
        print("error: calibrate: emulation needs root", file=sys.stderr)
        return 2
    if not args.duration_s > 0:
        print("error: --duration-s: must be > 0", file=sys.stderr)
        return 2
    from .calibrate import calibrate
    calibrate(exp, args.out or Path("results") / "calibration", args.duration_s)
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

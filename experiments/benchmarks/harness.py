"""The one runner every benchmark uses: the conditions printed first and the load again at the
end, repeated calls summarised as min / median / max, two variants timed in alternation
(ABAB..., both sides of a ratio in one run, the ratio of their medians), and `predict` timed.

Run a benchmark from the checkout as `python -m experiments.benchmarks.NAME` (or by its path
with the project installed editable); no script changes `sys.path`.
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from experiments.benchmarks.conditions import header, load_average


@dataclass(frozen=True)
class Spread:
    """Min, median and max of repeated measurements (seconds, or any unit the caller names)."""

    low: float
    median: float
    high: float
    n: int

    @classmethod
    def of(cls, values: list[float]) -> Spread:
        """The spread of a non-empty list (ValueError naming the empty list otherwise)."""
        if not values:
            raise ValueError("Spread.of: no values (repeats must be >= 1)")
        return cls(min(values), statistics.median(values), max(values), len(values))


class Calls:
    """Wall and CPU (this process) seconds of repeated calls."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def time(self, fn: Callable[[], Any]) -> Any:
        """Call fn(), record its wall and CPU time, return its result."""
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        self.wall.append(time.perf_counter() - t0)
        self.cpu.append(time.process_time() - c0)
        return out

    def median_wall(self) -> float:
        return statistics.median(self.wall)

    def median_cpu(self) -> float:
        return statistics.median(self.cpu)

    def wall_spread(self) -> Spread:
        return Spread.of(self.wall)


def repeat(fn: Callable[[], Any], repeats: int) -> tuple[Calls, Any]:
    """fn called `repeats` times (>= 1): the calls' times and the last result."""
    if repeats < 1:
        raise ValueError(f"repeats: {repeats}; give 1 or more")
    calls, out = Calls(), None
    for _ in range(repeats):
        out = calls.time(fn)
    return calls, out


@dataclass
class AB:
    """Two variants timed in alternation: A's and B's calls, the order they ran in, and
    each call's result."""

    a: Calls
    b: Calls
    order: str
    results_a: list = field(default_factory=list)
    results_b: list = field(default_factory=list)

    @property
    def last_a(self) -> Any:
        return self.results_a[-1]

    @property
    def last_b(self) -> Any:
        return self.results_b[-1]


def ratio_of_medians(num: list[float], den: list[float]) -> float:
    """median(num) / median(den): a ratio of two variants' times that one outlier on either
    side does not move."""
    return statistics.median(num) / max(statistics.median(den), 1e-12)


def alternate(a: Callable[[], Any], b: Callable[[], Any], repeats: int) -> AB:
    """A and B called `repeats` times each in the order ABAB..., so that a load that comes
    and goes falls on both sides of the ratio."""
    if repeats < 1:
        raise ValueError(f"repeats: {repeats}; give 1 or more")
    out = AB(Calls(), Calls(), "")
    for _ in range(repeats):
        out.results_a.append(out.a.time(a))
        out.results_b.append(out.b.time(b))
        out.order += "AB"
    return out


def predict_timed(fabric, plans, path_of, repeats: int, **kw: Any) -> tuple[Calls, Any]:
    """`traffic.predictor.predict(fabric, plans, path_of, **kw)` called `repeats` times: its
    wall and CPU seconds per call and the last Prediction."""
    from traffic.predictor import predict
    return repeat(lambda: predict(fabric, plans, path_of, **kw), repeats)


def predict_experiment_timed(exp, repeats: int = 1) -> tuple[Calls, dict]:
    """The `predict` command's own code (experiments.predict.predict_experiment) on a parsed
    Experiment, `repeats` times, each into a folder of a temporary one: its wall and CPU
    seconds per call (parse and the folder's removal excluded) and the last results.json
    record."""
    from experiments.predict import predict_experiment
    with tempfile.TemporaryDirectory(prefix="mlfabric-bench-") as tmp:
        outs = iter([Path(tmp) / f"run-{k}" for k in range(repeats)])
        return repeat(lambda: predict_experiment(exp, next(outs), log=lambda _line: None),
                      repeats)


@contextlib.contextmanager
def conditions(kernels: bool = True) -> Iterator[None]:
    """Print the conditions (load averages, versions and, with `kernels`, the compiled
    kernels' code paths) before the body and the load average after it."""
    print(header(kernels), flush=True)
    try:
        yield
    finally:
        print(f"\nend: {load_average()}", flush=True)


def add_ab_arguments(ap: argparse.ArgumentParser) -> None:
    """--repeats (1-50, default 3) and --baseline CHECKOUT (another checkout, the "before"
    side of an alternated run); `ab_arguments` checks them."""
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--baseline", type=Path, default=None, help="another checkout (before)")


def ab_arguments(ap: argparse.ArgumentParser, args: argparse.Namespace) -> Path | None:
    """The checked --repeats and --baseline (a usage error, exit 2, names the bad one): the
    baseline checkout resolved, or None."""
    if not 1 <= args.repeats <= 50:
        ap.error(f"--repeats: from 1 to 50, got {args.repeats}")
    if args.baseline is not None and not (args.baseline / "experiments").is_dir():
        ap.error(f"--baseline: {args.baseline} holds no experiments/; give a checkout")
    return args.baseline.resolve() if args.baseline else None

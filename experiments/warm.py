"""Build the model's compiled kernels once, at `make setup`, so that no `predict` waits for
them: `python -m experiments.warm`.

The kernels (traffic/waterfill.py, traffic/dag_kernel.py, routing/greedy.py, gff.py,
mmf_search.py, mmf_descent.py, annealing_kernel.py) are numba functions cached on disk
(`cache=True`: beside their source in __pycache__, invalidated by it). A fresh clone has no
cache, and its first prediction compiled them: 5-8 s of a 2-host ring's 7-9 s. Here every
strategy predicts a small two-tier and a small three-tier workload (ring all-reduce,
all-to-all, two subflows), which compiles every signature a run uses, and a stamp in the
virtual environment records the kernels' sources (sha256). `predict` says so in one line when
the stamp does not match them (`needs_compile`): the kernels are then compiled during that
run. Then the predictor's kernels and the routings' loops are built ahead of time into one
extension module (traffic/aot.py), which a command loads without numba; where that cannot be
built (no C compiler or Python headers), the stamp says why and commands load numba's.
It also writes the bytecode without docstrings that `predict`'s figure worker loads under -OO
(experiments/figure_worker.py's `optimized`).
"""
from __future__ import annotations

import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The modules whose numba kernels are cached on disk.
KERNEL_SOURCES = ("traffic/waterfill.py", "traffic/dag_kernel.py", "traffic/kernel_abi.py",
                  "routing/greedy.py",
                  "routing/gff.py", "routing/mmf_search.py", "routing/mmf_descent.py",
                  "routing/annealing_kernel.py")
STAMP = Path(sys.prefix) / "mlfabric-kernels.json"
#: What the warm-up predicts: each strategy on both fabrics.
FABRICS = [
    {"spines": 4, "leaves": 4, "hosts_per_leaf": 2, "host_link_mbps": 100,
     "spine_link_mbps": 100},
    {"topology": "clos3", "pods": 2, "leaves_per_pod": 2, "aggs_per_pod": 2,
     "cores_per_plane": 2, "hosts_per_leaf": 2, "host_link_mbps": 100,
     "leaf_agg_mbps": 100, "agg_core_mbps": 100},
]


def sources_digest() -> str:
    """sha256 over the kernels' source files."""
    h = hashlib.sha256()
    for rel in KERNEL_SOURCES:
        path = ROOT / rel
        h.update(rel.encode() + (path.read_bytes() if path.exists() else b""))
    return h.hexdigest()


def needs_compile() -> bool:
    """True when the kernels were not built for these sources (no stamp, or another one),
    or the module built ahead of time is missing and its build did not fail here (the
    stamp's "ahead_of_time" error for its key)."""
    from traffic import aot
    try:
        stamp = json.loads(STAMP.read_text())
        if stamp.get("sources_sha256") != sources_digest():
            return True
    except (OSError, ValueError, AttributeError):
        return True
    tried = stamp.get("ahead_of_time") or {}
    return aot.built() is None and not (tried.get("key") == aot.key() and "error" in tried)


def _doc(fabric: dict, routing: list[str]) -> dict:
    hosts = [f"h{i}" for i in range(1, 9)]
    return {"name": "warm", "seed": 1, "fabric": fabric, "routing": routing,
            "jobs": [{"name": "ring", "collective": "allreduce", "hosts": hosts[0::2],
                      "size_bytes": 4_000_000, "iterations": 2, "subflows": 2},
                     {"name": "a2a", "collective": "alltoall", "hosts": hosts[1::2],
                      "size_bytes": 4_000_000, "iterations": 1}]}


def warm(log=print) -> float:
    """Predict every strategy on FABRICS (compiling what is not cached); write the stamp.
    Returns the seconds it took."""
    from routing import STRATEGIES
    from traffic import jit

    from .config import parse
    from .predict import predict_experiment
    t0 = time.monotonic()
    routing = [*STRATEGIES, "spray@packet", "greedy@host", "nonblocking"]
    jit.AHEAD_OF_TIME = False              # numba's kernels, for where the module cannot load
    with tempfile.TemporaryDirectory(prefix="mlfabric-warm-") as tmp:
        for i, fabric in enumerate(FABRICS):
            exp = parse(_doc(fabric, routing))
            predict_experiment(exp, Path(tmp) / str(i), log=lambda s: None)
    took = time.monotonic() - t0
    log(f"warm: the model's kernels are compiled and cached by numba ({took:.1f} s)")
    _worker_bytecode(log)
    stamp = {"sources_sha256": sources_digest(), "built_s": took, **_ahead_of_time(log)}
    STAMP.write_text(json.dumps(stamp) + "\n")
    took = time.monotonic() - t0
    log(f"warm: the model's kernels are built ({took:.1f} s); stamp {STAMP}")
    return took


def _worker_bytecode(log) -> None:
    """Write the bytecode without docstrings of what `predict`'s figure worker imports (in a
    fresh interpreter: figure_worker.write_optimized), which later workers load under -OO
    (figure_worker.optimized)."""
    import subprocess
    try:
        done = subprocess.run([sys.executable, "-c", "from experiments.figure_worker import "
                               "write_optimized; write_optimized()"],
                              cwd=ROOT, capture_output=True, text=True, timeout=300)
        why = None if done.returncode == 0 else (
            done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    except (OSError, subprocess.TimeoutExpired) as e:
        why = str(e)
    if why is not None:
        log(f"warm: the figure worker's optimized bytecode was not written ({why[:200]}); "
            "its workers import as before")


def _ahead_of_time(log) -> dict:
    """Build the predictor's and routings' kernels ahead of time (traffic/aot.py): the
    stamp's record of it (its key; the error when it could not be built)."""
    from traffic import aot
    t0 = time.monotonic()
    try:
        path = aot.build()
    except aot.BuildError as e:
        log(f"warm: the predictor's and routings' kernels are not built ahead of time ({e}); "
            "commands load numba's (~0.25 s each)")
        return {"ahead_of_time": {"key": aot.key(), "error": str(e)[:500]}}
    log(f"warm: the predictor's and routings' kernels are built ahead of time "
        f"({time.monotonic() - t0:.1f} s): {path}")
    return {"ahead_of_time": {"key": aot.key(), "path": str(path)}}


def main(argv: list[str]) -> int:
    """`warm` builds the kernels; `warm --if-needed` only when the stamp does not match (the
    figure worker's bytecode either way: each module's only where it is stale)."""
    if argv[1:] not in ([], ["--if-needed"]):
        print("usage: python -m experiments.warm [--if-needed]", file=sys.stderr)
        return 2
    if argv[1:] == ["--if-needed"] and not needs_compile():
        _worker_bytecode(print)     # rewritten where stale (an upgraded numpy, Pillow, ...)
        return 0
    warm()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

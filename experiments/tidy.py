"""Tidy results and provenance of a run folder: `results.csv` and `environment.json`.

`results.csv` has one row per (routing, job, iteration), units in the column names:

    point, name, mode, routing, job, iteration, cct_s, ideal_cct_s, predicted_cct_s,
    iteration_end_s, seed, repetition, source_port_offset, speedup_over_ecmp,
    speedup_over_best_hashed, prediction_error_fraction, flagged, flag_reason,
    <swept or --set keys...>

`predicted_cct_s` and `iteration_end_s` are empty for predicted runs. The run columns
(experiments/results.py) repeat on each row of a routing: `speedup_over_ecmp` (ECMP's mean CCT
/ this routing's, same mode), `speedup_over_best_hashed` (over the hashed scheme of the lowest
mean CCT), `prediction_error_fraction` (emulated / predicted mean CCT - 1), `flagged` (the CPU
monitor flagged the emulated run; False for predicted runs) and `flag_reason`. Swept values are columns
named by their dotted key (`fabric.spine_link_mbps`); list values are written as YAML flow
(`[ecmp, ilp]`); a swept key that is also a base column is `config.<key>`. pandas builds
and merges the tables (experiments/report.py).

`environment.json` gains what a reader needs to trace a run: the git commit and whether the
tree was dirty, the command line, start and end times (UTC, ISO 8601), the load average before
the run, and every installed Python package's version.
"""
from __future__ import annotations

import csv
import functools
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from .outdir import writing

#: The columns every results.csv has had (`report` refuses a table without them).
REQUIRED_COLUMNS = ["point", "name", "mode", "routing", "job", "iteration", "cct_s",
                    "ideal_cct_s", "predicted_cct_s", "iteration_end_s", "seed", "repetition",
                    "source_port_offset"]
#: Per run (routing and mode), repeated on its rows; `report` computes them from
#: results.json for a table written before they were.
RUN_COLUMNS = ["speedup_over_ecmp", "speedup_over_best_hashed", "prediction_error_fraction",
               "flagged", "flag_reason"]
BASE_COLUMNS = REQUIRED_COLUMNS + RUN_COLUMNS
REPO_ROOT = Path(__file__).resolve().parent.parent


def cell(v: Any) -> Any:
    """A swept value as one CSV cell: scalars as they are, lists/maps as YAML flow."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return yaml.safe_dump(v, default_flow_style=True, width=10_000).strip()


def column(key: str) -> str:
    """The column of a swept key: its dotted name, `config.<key>` when that is a base
    column (a swept `routing` list is not the row's routing)."""
    return f"config.{key}" if key in BASE_COLUMNS else key


def rows(results: dict, extra: dict[str, Any] | None = None, point: str = "") -> list[dict]:
    """The tidy rows of one results.json document."""
    extra = {column(k): cell(v) for k, v in (extra or {}).items()}
    per_run = run_columns(results)
    out = []
    for run in results["runs"]:
        at_run = per_run[(run["routing"], run["mode"])]
        for j in run["jobs"]:
            pred = j.get("predicted_cct_s") or []
            ends = j.get("iteration_end_s") or []
            for i, c in enumerate(j["cct_s"]):
                out.append({
                    "point": point, "name": results["name"], "mode": run["mode"],
                    "routing": run["routing"], "job": j["name"], "iteration": i + 1,
                    "cct_s": c, "ideal_cct_s": j["ideal_cct_s"],
                    "predicted_cct_s": pred[i] if i < len(pred) else None,
                    "iteration_end_s": ends[i] if i < len(ends) else None,
                    "seed": results["seed"], "repetition": results.get("repetition", 1),
                    "source_port_offset": results.get("source_port_offset", 0), **at_run,
                    **extra})
    return out


def run_columns(results: dict) -> dict[tuple[str, str], dict[str, Any]]:
    """RUN_COLUMNS per (routing, mode) of one results.json document."""
    from .results import flag_reason, speedups
    fast = speedups(results)
    out = {}
    for run in results["runs"]:
        reason = flag_reason(run)
        out[(run["routing"], run["mode"])] = {
            **fast[(run["routing"], run["mode"])],
            "prediction_error_fraction": run.get("prediction_error_fraction"),
            "flagged": reason is not None, "flag_reason": reason}
    return out


def write_results_csv(folder: Path, results: dict, extra: dict[str, Any] | None = None,
                      point: str = "") -> Path:
    """Write folder/results.csv from `results` (header row always); returns its path. The
    bytes pandas' `to_csv(float_format="%.9g")` writes; by the csv module when every column
    is of a kind `_csv_cells` formats as pandas does (`predict` then never imports pandas,
    about 0.25 s of CPU), by pandas otherwise."""
    header = BASE_COLUMNS + [column(k) for k in (extra or {})]
    table = rows(results, extra, point)
    cols = [_csv_cells([r.get(c) for r in table]) for c in header]
    path = folder / "results.csv"
    if any(c is None for c in cols):
        from testbed.signals import deferred
        with deferred():            # a C extension's initialisation must not be cut
            import pandas as pd
        with writing(path):
            pd.DataFrame(table, columns=header).to_csv(path, index=False, float_format="%.9g")
        return path
    with writing(path), path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(zip(*cols) if table else [])
    return path


def _csv_cells(values: list[Any]) -> list[str] | None:
    """One column's cells as pandas writes them with float_format "%.9g", for the column
    kinds it can tell: None (or NaN) alone, strings and None, int64 integers alone (an
    int64 column), numbers with a float or a None among them (a float64 column: "%.9g",
    NaN empty), booleans alone. None for any other mix (object columns: pandas' rules)."""
    present = [v for v in values if v is not None and not (isinstance(v, float) and v != v)]
    if all(type(v) is str for v in present):
        return [v if type(v) is str else "" for v in values]
    if all(type(v) is bool for v in present) and len(present) == len(values):
        return [str(v) for v in values]
    if not all(type(v) in (int, float) for v in present):
        return None
    if all(type(v) is int for v in present) and len(present) == len(values):
        if all(-2**63 <= v < 2**63 for v in present):
            return [str(v) for v in values]
        return None
    if any(type(v) is int and abs(v) > 2**53 for v in present):
        return None                 # not exact as a float64
    return ["%.9g" % v if v is not None and v == v else "" for v in values]


# -- provenance ------------------------------------------------------------------------------
def _git(*args: str) -> str | None:
    try:
        # --no-optional-locks: `status` does not refresh (write) the checkout's index
        r = subprocess.run(["git", "--no-optional-locks", "-C", str(REPO_ROOT), *args],
                           capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout if r.returncode == 0 else None


def git_state() -> dict:
    """{'commit': sha or None, 'dirty': bool or None} of this repository."""
    sha = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {"commit": sha.strip() if sha else None,
            "dirty": None if status is None else bool(status.strip())}


@functools.lru_cache(maxsize=1)
def installed_packages() -> dict[str, str]:
    """Every installed distribution's version, by name, sorted (read once per process)."""
    seen: dict[str, str] = {}
    for d in metadata.distributions():
        name, version = _name_version(d)
        if name and name not in seen:
            seen[name] = version
    return dict(sorted(seen.items(), key=lambda kv: kv[0].lower()))


def _name_version(d: metadata.Distribution) -> tuple[str | None, str | None]:
    """d.metadata's Name and Version, read from the header lines only: d.metadata parses the
    whole file (long descriptions included) as an e-mail, 0.2 s for 60 packages, and
    d.version parsed it again. A header this does not read plainly goes to d.metadata."""
    text = d.read_text("METADATA") or d.read_text("PKG-INFO") or ""
    found: dict[str, str] = {}
    key = ""
    for line in text.splitlines():
        if not line.strip():
            break
        if line[0] in " \t":                    # a folded header continues the last one
            if key in ("name", "version"):
                found = {}
                break
            continue
        key, sep, value = line.partition(":")
        if not sep:
            found = {}
            break
        key = key.lower()                       # header names: any case
        if key in ("name", "version") and key not in found:
            found[key] = value.lstrip(" \t")         # the e-mail parser keeps the right end
    if len(found) < 2:
        md = d.metadata
        return md.get("Name"), md.get("Version")
    return found["name"], found["version"]


def now_utc() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def start_record(argv: list[str] | None = None) -> dict:
    """Taken just before a run: command line, start time, load average, git state."""
    try:
        load = list(os.getloadavg())
    except OSError:
        load = None
    return {"command_line": list(sys.argv if argv is None else argv),
            "started_at_utc": now_utc(), "load_average_before_1_5_15_min": load,
            "git": git_state(), "_t0": time.monotonic()}


def kernels_built_ahead_of_time() -> str | None:
    """The file name of the module of kernels built ahead of time (traffic/aot.py) this
    process ran, or None (numba's kernels, the numpy ones, or none)."""
    aot = sys.modules.get("traffic.aot")
    path = aot.built() if aot is not None and aot.exports() else None
    return path.name if path else None


def finish_environment(folder: Path, start: dict) -> Path:
    """Merge `start`, the end time and every package version into folder/environment.json
    (created when the run wrote none, e.g. `predict`)."""
    path = folder / "environment.json"
    env = {}
    if path.is_file():
        try:
            env = json.loads(path.read_text())
        except (OSError, ValueError):
            env = {}
    rec = {k: v for k, v in start.items() if not k.startswith("_")}
    env.update(rec)
    env.setdefault("python", sys.version.split()[0])
    env["ended_at_utc"] = now_utc()
    env["wall_s"] = round(time.monotonic() - start["_t0"], 3)
    env["installed_packages"] = installed_packages()
    env["kernels_built_ahead_of_time"] = kernels_built_ahead_of_time()
    with writing(path):
        path.write_text(json.dumps(env, indent=2) + "\n")
    return path

"""Tidy results and provenance of a run folder: `results.csv` and `environment.json`.

`results.csv` has one row per (routing, job, iteration), units in the column names:

    point, name, mode, routing, job, iteration, cct_s, ideal_cct_s, predicted_cct_s,
    iteration_end_s, seed, repetition, source_port_offset, <swept or --set keys...>

`predicted_cct_s` and `iteration_end_s` are empty for predicted runs. Swept values are columns
named by their dotted key (`fabric.spine_link_mbps`); list values are written as YAML flow
(`[ecmp, ilp]`); a swept key that is also a base column is `config.<key>`. pandas builds
and merges the tables (experiments/report.py).

`environment.json` gains what a reader needs to trace a run: the git commit and whether the
tree was dirty, the command line, start and end times (UTC, ISO 8601), the load average before
the run, and every installed Python package's version.
"""
from __future__ import annotations

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

BASE_COLUMNS = ["point", "name", "mode", "routing", "job", "iteration", "cct_s", "ideal_cct_s",
                "predicted_cct_s", "iteration_end_s", "seed", "repetition",
                "source_port_offset"]
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
    out = []
    for run in results["runs"]:
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
                    "source_port_offset": results.get("source_port_offset", 0), **extra})
    return out


def write_results_csv(folder: Path, results: dict, extra: dict[str, Any] | None = None,
                      point: str = "") -> Path:
    """Write folder/results.csv from `results` (header row always); returns its path."""
    import pandas as pd
    table = pd.DataFrame(rows(results, extra, point),
                         columns=BASE_COLUMNS + [column(k) for k in (extra or {})])
    path = folder / "results.csv"
    with writing(path):
        table.to_csv(path, index=False, float_format="%.9g")
    return path


# -- provenance ------------------------------------------------------------------------------
def _git(*args: str) -> str | None:
    try:
        r = subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True,
                           text=True, timeout=10, stdin=subprocess.DEVNULL)
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
        name = d.metadata.get("Name")
        if name and name not in seen:
            seen[name] = d.version
    return dict(sorted(seen.items(), key=lambda kv: kv[0].lower()))


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
    with writing(path):
        path.write_text(json.dumps(env, indent=2) + "\n")
    return path

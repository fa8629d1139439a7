"""`jobs_from`: other tools' workloads (floodns folders, Chakra traces, SimAI / ASTRA-sim
1.0 files; each format in experiments/config/importers) and `semantics`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from testbed.fabric import Fabric
from traffic.collectives import CONNECTIONS, JobSpec
from traffic.prediction import MAX_REPLAN_INTERVAL_S, RECOMPUTES, RING_SYNCS, Semantics

from .importers import FORMATS, JOBS_FROM_KEYS, JobsOf
from .limits import MAX_JOBS
from .readers import ConfigError, quote, _check_keys, _num, _choice


def _jobs_from(d: dict, base_dir: str | Path | None) -> tuple[dict | None, JobsOf] | None:
    """`jobs_from:` another tool's workload, one of the formats in experiments/config/importers
    (floodns, chakra, simai): (the fabric section it implies or None, a function fabric ->
    (JobSpecs, traffic.streams.Notes or None)). Paths are relative to the config file; rank r
    runs on host h{r+1}."""
    if d.get("jobs_from") is None:
        return None
    src = _check_keys(d["jobs_from"], JOBS_FROM_KEYS, "jobs_from")
    if "jobs" in d:
        raise ConfigError("jobs_from: give either jobs or jobs_from, not both")
    kinds = [k for k in FORMATS if k in src]
    if len(kinds) != 1:
        raise ConfigError("jobs_from: give exactly one of "
                          + ", ".join(f"{k}: {f.shape}" for k, f in FORMATS.items()))
    fmt = FORMATS[kinds[0]]
    extra = set(src) - fmt.keys
    if extra:
        raise ConfigError(f"jobs_from.{sorted(extra)[0]}: not a key of jobs_from.{fmt.name}")
    return fmt.read(src, d, base_dir)


def _jobs_source(d: dict, base_dir: str | Path | None) -> dict:
    """`jobs_from` as resolved (its format's `resolved`: absolute paths)."""
    return FORMATS[_source_kind(d)].resolved(d["jobs_from"], base_dir)


def _source_kind(d: dict) -> str:
    """Which importer jobs_from names (a key of FORMATS)."""
    return next(k for k in FORMATS if k in d["jobs_from"])


def _imported_jobs(jobs: list[JobSpec], fabric: Fabric, kind: str) -> list[JobSpec]:
    """Jobs read from another tool's files must fit the fabric, and be some."""
    if not jobs:
        raise ConfigError(f"jobs_from.{kind}: the workload has no communication between "
                          "ranks (0 jobs), so there is nothing to route; give a workload "
                          "with collectives or sends (or more GPUs: jobs_from.all_gpus, when the "
                          "file's header has none)")
    if len(jobs) > MAX_JOBS:
        raise ConfigError(f"jobs_from: {len(jobs):,} jobs; at most {MAX_JOBS:,}")
    known, seen = set(fabric.hosts), set()
    for j in jobs:
        for g in j.groups:
            if id(g) in seen:           # importers share one list per group kind
                continue
            seen.add(id(g))
            bad = next((h for h in g if h not in known), None)
            if bad is not None:
                raise ConfigError(f"jobs_from: job {j.name} uses host {bad}, which this "
                                  f"fabric does not have (h1..h{len(fabric.hosts)})")
    return jobs


def _semantics(v: Any) -> Semantics:
    """`semantics: floodns` or {ring_sync: rank | step | flow, recompute: epochs |
    iterations | flows, tail_step: false | true, replan_min_interval_s: 0..60, connections:
    job | stream}; absent: ours
    (traffic/prediction.py Semantics)."""
    if v is None:
        return Semantics()
    if v == "floodns":
        return Semantics.floodns()
    if not isinstance(v, dict):
        raise ConfigError(f"semantics: floodns, or a mapping of ring_sync, recompute, "
                          f"tail_step; got {quote(v)}")
    _check_keys(v, {"ring_sync", "recompute", "tail_step", "replan_min_interval_s",
                    "connections"}, "semantics")
    tail = v.get("tail_step", False)
    if not isinstance(tail, bool):
        raise ConfigError(f"semantics.tail_step: expected true or false, got {quote(tail)}")
    recompute = _choice(v, "recompute", "semantics", RECOMPUTES, "epochs")
    gap = None
    if "replan_min_interval_s" in v:
        if recompute != "flows":
            raise ConfigError("semantics.replan_min_interval_s: only with recompute: flows")
        gap = _num(v, "replan_min_interval_s", "semantics", positive=False,
                   maximum=MAX_REPLAN_INTERVAL_S)
    return Semantics(_choice(v, "ring_sync", "semantics", RING_SYNCS, "rank"), recompute,
                     tail, gap, _choice(v, "connections", "semantics", CONNECTIONS, "job"))

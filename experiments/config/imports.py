"""`jobs_from`: other tools' workloads (floodns folders, Chakra traces, SimAI / ASTRA-sim
1.0 files) and `semantics`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from testbed.fabric import Fabric
from traffic.collectives import CONNECTIONS, JobSpec
from traffic.prediction import MAX_REPLAN_INTERVAL_S, RECOMPUTES, RING_SYNCS, Semantics

from .limits import MAX_ITERATIONS, MAX_JOBS
from .keys import JOBS_FROM_KEYS
from .readers import (ConfigError, quote, _one_line, _shown, _check_keys, _int, _num, _str,
                      _choice)


def _rel_path(v: str, base_dir: str | Path | None) -> Path:
    """A relative path is looked up beside the config file first, then from the working
    directory (callers that parse a document without its file give no base_dir)."""
    p = Path(v)
    if p.is_absolute() or base_dir is None or not (Path(base_dir) / p).exists():
        return p
    return Path(base_dir) / p


def _jobs_from(d: dict, base_dir: str | Path | None) -> tuple[dict | None, Any] | None:
    """`jobs_from:` another tool's workload: (the fabric section it implies or None, a
    function fabric -> (JobSpecs, traffic.streams.Notes or None)). One of
    {floodns: PATH, iterations: 11, failed_cores: 0}: a floodns traffic folder
    (traffic/floodns.py) and the fabric floodns ran it on (64 leaves x 32 spines x 32 hosts
    at 100 Gbit/s, the failed_cores highest spines failed), used when there is no `fabric`;
    {chakra: FOLDER, comm_groups: JSON}: Chakra .et traces, one per rank (traffic/chakra.py);
    {simai: FILE, all_gpus: N, first_dim_npus: D}: a SimAI / AICB / ASTRA-sim 1.0 workload
    (traffic/simai.py; all_gpus when its header has none, default the fabric's hosts; D:
    topology dimension 0 of the HYBRID_DATA_MODEL kinds). Paths are relative to the config
    file; rank r runs on host h{r+1}."""
    if d.get("jobs_from") is None:
        return None
    src = _check_keys(d["jobs_from"], JOBS_FROM_KEYS, "jobs_from")
    if "jobs" in d:
        raise ConfigError("jobs_from: give either jobs or jobs_from, not both")
    kinds = [k for k in ("floodns", "chakra", "simai") if k in src]
    if len(kinds) != 1:
        raise ConfigError("jobs_from: give exactly one of floodns: FOLDER, chakra: FOLDER, "
                          "simai: FILE")
    extra = set(src) - {kinds[0]} - {"floodns": {"iterations", "failed_cores"},
                                     "chakra": {"comm_groups"},
                                     "simai": {"all_gpus", "first_dim_npus",
                                               "comm_scale"}}[kinds[0]]
    if extra:
        raise ConfigError(f"jobs_from.{sorted(extra)[0]}: not a key of jobs_from.{kinds[0]}")
    if kinds[0] != "floodns":
        return None, _trace_jobs(src, kinds[0], base_dir)
    from traffic import floodns
    if "failed_cores" in src and "fabric" in d:
        raise ConfigError("jobs_from.failed_cores: only without a fabric section; with one, "
                          "list the failed spines as fabric.failed_spines")
    failed = _int(src, "failed_cores", "jobs_from", 0, minimum=0,
                  maximum=floodns.PAPER_TOPOLOGY.cores - 1)
    iterations = _int(src, "iterations", "jobs_from", floodns.FLOODNS_ITERATIONS,
                      maximum=MAX_ITERATIONS)
    path = _rel_path(_str(src, "floodns", "jobs_from"), base_dir)
    try:
        jobs = floodns.job_specs(path, iterations)
        return floodns.PAPER_TOPOLOGY.fabric_section(failed), lambda fabric: (jobs, None)
    except floodns.FloodnsError as e:
        raise ConfigError(f"jobs_from.floodns: {_one_line(e, 300)}") from None


def _trace_jobs(src: dict, kind: str, base_dir: str | Path | None) -> Any:
    """fabric -> the JobSpecs of a Chakra trace folder or a SimAI workload file."""
    import json
    from traffic import chakra, chakra_jobs, files, simai, simai_passes
    from traffic.streams import Notes, StreamError
    path = _rel_path(_str(src, kind, "jobs_from"), base_dir)
    groups = None
    if "comm_groups" in src:
        gpath = _rel_path(_str(src, "comm_groups", "jobs_from"), base_dir)
        try:
            groups = json.loads(files.read_text(gpath))
        except files.InputFileError as e:
            raise ConfigError(f"jobs_from.comm_groups: {_one_line(e, 300)}") from None
        except (ValueError, RecursionError) as e:
            raise ConfigError(f"jobs_from.comm_groups: {_shown(gpath)}: cannot be read as "
                              f"JSON ({type(e).__name__})") from None
        if not isinstance(groups, dict) or not all(
                isinstance(v, list) and all(isinstance(r, int) and not isinstance(r, bool)
                                            for r in v) for v in groups.values()):
            raise ConfigError(f"jobs_from.comm_groups: {_shown(gpath)}: expected "
                              '{"<pg_name>": [ranks...]}')
        groups = {str(k): v for k, v in groups.items()}

    gpus = _int(src, "all_gpus", "jobs_from", None, minimum=1, maximum=simai.MAX_GPUS) \
        if "all_gpus" in src else None
    dim0 = _int(src, "first_dim_npus", "jobs_from", None, minimum=1, maximum=simai.MAX_GPUS) \
        if "first_dim_npus" in src else None

    scale = (_num(src, "comm_scale", "jobs_from", minimum=1e-9, maximum=1000.0,
                  why="SimAI's comm_scale: a multiplier of every comm's bytes")
             if "comm_scale" in src else 1.0)

    def jobs(fabric: Fabric) -> tuple[list[JobSpec], Notes]:
        hosts, rate = list(fabric.hosts), fabric.spec.host_link_mbps
        notes = Notes(kind, "us" if kind == "chakra" else "cycles of 1 ns")
        try:
            if kind == "chakra":
                specs = chakra_jobs.job_specs(chakra.read_traces(path), hosts, rate, groups, notes)
            else:
                n = gpus or len(hosts)
                per_leaf = sum(1 for h in hosts if fabric.leaf_of(h) == fabric.leaf_of(hosts[0]))
                specs = simai_passes.job_specs(path, hosts, rate, gpus,
                                               dim0 or simai.default_dim0(n, per_leaf), notes, scale)
        except (chakra.ChakraError, simai.SimaiError, StreamError) as e:
            raise ConfigError(f"jobs_from.{kind}: {_one_line(e, 300)}") from None
        return specs, notes
    return jobs


def _jobs_source(d: dict, base_dir: str | Path | None) -> dict:
    """`jobs_from` as resolved: absolute paths, and without failed_cores (the resolved fabric
    section lists the failed spines)."""
    return {k: (str(_rel_path(v, base_dir).resolve())
                if k in ("floodns", "chakra", "simai", "comm_groups") else v)
            for k, v in d["jobs_from"].items() if k != "failed_cores"}


def _source_kind(d: dict) -> str:
    """Which importer jobs_from names: floodns, chakra or simai."""
    return next(k for k in ("floodns", "chakra", "simai") if k in d["jobs_from"])


def _imported_jobs(jobs: list[JobSpec], fabric: Fabric, kind: str) -> list[JobSpec]:
    """Jobs read from another tool's files must fit the fabric, and be some."""
    if not jobs:
        raise ConfigError(f"jobs_from.{kind}: the workload has no communication between "
                          "ranks (0 jobs), so there is nothing to route; give a workload "
                          "with collectives or sends (or more GPUs: jobs_from.all_gpus)")
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

"""`parse` and `load`: a document or a file to a checked Experiment, section by section.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from traffic.collectives import WorkloadError, plan_jobs
from traffic.prediction import Semantics

from .limits import MAX_SEED, MAX_SOLVER_S
from .keys import TOP_KEYS
from .readers import ConfigError, _check_keys, _section, _int, _num, _name
from .yamlio import read_yaml, _check_tree
from .records import Experiment
from .fabric import _fabric, host_pairs, _check_paths, _check_reachable
from .jobs import _check_size, _job_key, _jobs, server_settings, subflow_settings
from .timing import _check_timing
from .strategies import _replay_flows, _routing_replay
from .events import _events
from .emulation import _emulation
from .machines import _machines
from .programs import check_programs, demand
from .imports import _jobs_from, _jobs_source, _source_kind, _imported_jobs, _semantics
from ..routing_entry import parse_entries


def parse(doc: Any, base_dir: str | Path | None = None) -> Experiment:
    """Validate a parsed YAML document; raises ConfigError. Nothing is built but the fabric
    model (a graph) and the jobs' plans, both bounded by the limits checked before them.
    `base_dir`: where relative paths (jobs_from, replay_log) start; default the cwd."""
    _check_tree(doc)
    d = _check_keys(doc, TOP_KEYS, "config")
    name = _name(d, "name", "config")
    seed = _int(d, "seed", "config", 1, minimum=0, maximum=MAX_SEED)
    imported = _jobs_from(d, base_dir)     # None, or (fabric section, jobs): floodns inputs
    if "fabric" not in d and (imported is None or imported[0] is None):
        raise ConfigError("fabric: required (spines, leaves, hosts_per_leaf, ...)")
    fabric = _fabric(d["fabric"] if "fabric" in d else imported[0])
    routing, replay_log = _routing_replay(d, base_dir)
    notes, programs = None, []
    if imported is None:
        jobs, programs = _jobs(d.get("jobs"), fabric, seed, base_dir)
    else:
        jobs, notes = imported[1](fabric)
        jobs = _imported_jobs(jobs, fabric, _source_kind(d))
    jobs, subflow_defaults = subflow_settings(jobs, d)
    jobs = server_settings(jobs, d, fabric)      # NCCL on servers (traffic/nccl.py)
    semantics = _semantics(d.get("semantics"))
    _check_shared(semantics, routing)
    _check_size(jobs, routing, _source_kind(d) if imported is not None else None,
                semantics.ring_sync, semantics.connections)
    try:    # rings, bytes, unique 5-tuples
        plans = plan_jobs(jobs, semantics.ring_sync, semantics.connections)
    except WorkloadError as e:
        raise ConfigError(_groups_key(_job_key(str(e), [j.name for j in jobs]), jobs,
                                      d.get("jobs") if imported is None else None)) from None
    pairs = host_pairs(plans)
    _check_reachable(fabric, pairs)
    _check_paths(fabric, plans, "jobs" if imported is None else "jobs_from",
                 any(e.per_packet for e in parse_entries(routing)))
    emulation = _emulation(_section(d, "emulation"), fabric)
    machines = _machines(d.get("machines"), fabric, emulation)
    check_programs(programs, jobs)
    if jobs:
        _check_timing(jobs, fabric, emulation,
                      _source_kind(d) if imported is not None else None)
    events = _events(d.get("events"), fabric, routing, jobs, emulation, pairs)
    flows = _replay_flows(replay_log, fabric, plans) if replay_log is not None else None
    limit = (_num(d, "solver_time_limit_s", "config", maximum=MAX_SOLVER_S,
                  why="one hour per solve; a run solves at every epoch")
             if d.get("solver_time_limit_s") is not None else None)
    exp = Experiment(name=name, seed=seed, fabric=fabric, jobs=jobs, routing=routing,
                     emulation=emulation, events=events, raw=d,
                     semantics=semantics, replay_log=replay_log,
                     solver_time_limit_s=limit,
                     jobs_from=_jobs_source(d, base_dir) if imported is not None else None,
                     replay_flows=flows, subflow_defaults=subflow_defaults,
                     workload=notes, programs=programs, demand=demand(d),
                     machines=machines)
    exp.keep_plans(plans)
    return exp


def _check_shared(semantics: Semantics, routing: list[str]) -> None:
    """connections: stream takes the routings that route every connection once: a
    controller's strategy places the connections of the jobs that start, and a shared
    connection belongs to its stream's first job."""
    if semantics.connections != "stream":
        return
    for entry in parse_entries(routing):
        if entry.places_flows and not entry.per_packet:
            raise ConfigError(f"semantics.connections: stream takes routings planned once "
                              f"(ecmp, @host plans, replay, spray@packet, nonblocking), not "
                              f"{entry.name}; use connections: job for it")


def load(path: str | Path) -> Experiment:
    """Read and validate an experiment YAML file; raises ConfigError."""
    return parse(read_yaml(path), Path(path).parent)


def _groups_key(msg: str, jobs: list, raw) -> str:
    """A message about jobs[i].hosts names jobs[i].groups when that job gave `groups`."""
    given = {j.get("name") for j in raw or [] if isinstance(j, dict) and "groups" in j}
    for i, job in enumerate(jobs):
        head = f"jobs[{i}].hosts"
        if job.name in given and msg.startswith(head):
            return f"jobs[{i}].groups" + msg[len(head):]
    return msg

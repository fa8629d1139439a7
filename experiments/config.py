"""Step 1 of a run: read and validate the experiment YAML into typed objects.

Pure code. Every problem is a ConfigError whose message names the key and the fix, e.g.
`jobs[0].hosts: unknown host 'h99' (this fabric has h1..h16)`; the CLI prints it on one line
and exits 2 before anything is built. `Experiment.resolved()` is the config with every default
filled in, saved beside the results.
"""
from __future__ import annotations

import dataclasses
import math
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from routing import STRATEGIES
from testbed.fabric import Fabric, FabricError, FabricSpec, build_fabric
from testbed.shaping import MAX_MTU_BYTES, SCHEDULERS, auto_mtu_bytes

DEFAULT_WINDOW_FRAMES = 16
from traffic.collectives import (SOURCE_PORT_SPAN, Collective, JobSpec, WorkloadError,
                                 plan_jobs)


class ConfigError(ValueError):
    """Bad experiment input; the message names the key and the fix."""


TOP_KEYS = {"name", "seed", "fabric", "jobs", "routing", "emulation", "events"}
EVENT_KINDS = ("fail_spine", "restore_spine", "fail_link", "restore_link")
FABRIC_KEYS = {"spines", "leaves", "hosts_per_leaf", "host_link_mbps", "spine_link_mbps",
               "failed_spines", "failed_links"}
EXPLICIT_JOB_KEYS = {"name", "collective", "hosts", "size_bytes", "iterations", "compute_s",
                     "start_s"}
MODEL_JOB_KEYS = {"name", "model", "dp", "placement", "iterations", "compute_s",
                  "start_s", "scale_bytes"}
EMULATION_KEYS = {"datapath", "tcp_cc", "mtu_bytes", "queue_packets", "link_scheduler",
                  "window_frames", "iteration_timeout_s",
                  "capture"}
TCP_CCS = ("cubic", "bbr", "reno")


@dataclass
class EmulationConfig:
    """How the emulator runs; each default is explained in the README (datapath tuning)."""

    datapath: str = "auto"          # auto | kernel | user
    tcp_cc: str = "cubic"           # set per socket by the agents, recorded in results
    mtu_bytes: int = 9000           # resolved from "auto" (the default): testbed/shaping.py
    mtu_auto: bool = True           # mtu_bytes chosen from the link rates
    queue_packets: int = 100        # drop-tail queue per HTB leaf class (packets)
    link_scheduler: str = "fair"    # fair: per-flow round robin in each link; fifo: drop-tail
    window_frames: int = 16         # TCP receive window bound (frames); 0: kernel autotuning;
                                    # "auto" (default): 16 with the fair scheduler, 0 with fifo
    iteration_timeout_s: float | None = None  # None: 20 x ideal CCT + 30 s
    capture: bool = False           # scapy pcap of one spine port per routing (testbed/capture.py)


@dataclass(frozen=True)
class Event:
    """A failure or repair at `at_s` seconds after the jobs' clock starts."""

    at_s: float
    kind: str                   # one of EVENT_KINDS
    target: tuple[str, ...]     # (spine,) or (leaf, spine)

    def as_dict(self) -> dict:
        return {"at_s": self.at_s, self.kind: (self.target[0] if len(self.target) == 1
                                               else list(self.target))}


@dataclass
class Experiment:
    name: str
    seed: int
    fabric: Fabric
    jobs: list[JobSpec]
    routing: list[str]
    emulation: EmulationConfig = field(default_factory=EmulationConfig)
    events: list[Event] = field(default_factory=list)
    raw: dict = field(default_factory=dict)

    def resolved(self) -> dict:
        """The config as run: every default filled in, model jobs expanded to their hosts."""
        s = self.fabric.spec
        return {
            "name": self.name, "seed": self.seed,
            "fabric": {"spines": s.spines, "leaves": s.leaves,
                       "hosts_per_leaf": s.hosts_per_leaf, "host_link_mbps": s.host_link_mbps,
                       "spine_link_mbps": s.spine_link_mbps,
                       "failed_spines": list(s.failed_spines),
                       "failed_links": [list(p) for p in s.failed_links]},
            "jobs": [{"name": j.name, "collective": j.collective.value,
                      "groups": j.groups, "size_bytes": j.size_bytes,
                      "iterations": j.iterations, "compute_s": j.compute_s,
                      "start_s": j.start_s} for j in self.jobs],
            "routing": list(self.routing),
            "emulation": vars(self.emulation).copy(),
            "events": [e.as_dict() for e in self.events],
        }


# -- small typed readers ---------------------------------------------------------------------
def _check_keys(d: Any, allowed: set[str], where: str) -> dict:
    if not isinstance(d, dict):
        raise ConfigError(f"{where}: expected a mapping of keys, got {type(d).__name__}")
    unknown = sorted(set(d) - allowed)
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown key; allowed keys are "
                          f"{', '.join(sorted(allowed))}")
    return d


def _int(d: dict, key: str, where: str, default: int | None = None, minimum: int = 1) -> int:
    if key not in d:
        if default is None:
            raise ConfigError(f"{where}.{key}: required; give an integer >= {minimum}")
        return default
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{where}.{key}: expected an integer, got {v!r}")
    if v < minimum:
        raise ConfigError(f"{where}.{key}: must be >= {minimum}, got {v}")
    return v


def _num(d: dict, key: str, where: str, default: float | None = None,
         positive: bool = True) -> float:
    if key not in d:
        if default is None:
            raise ConfigError(f"{where}.{key}: required; give a number")
        return default
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ConfigError(f"{where}.{key}: expected a finite number, got {v!r}")
    if positive and not v > 0:
        raise ConfigError(f"{where}.{key}: must be > 0, got {v}")
    if not positive and v < 0:
        raise ConfigError(f"{where}.{key}: must be >= 0, got {v}")
    return float(v)


NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _name(d: dict, key: str, where: str) -> str:
    """A name that becomes part of file names: letters, digits, '.', '_', '-'."""
    v = _str(d, key, where)
    if not NAME_RE.fullmatch(v):
        raise ConfigError(f"{where}.{key}: {v!r} must be 1-64 letters, digits, '.', '_' or '-'"
                          " (it names files of the run)")
    return v


def _str(d: dict, key: str, where: str, default: str | None = None) -> str:
    if key not in d:
        if default is None:
            raise ConfigError(f"{where}.{key}: required; give a string")
        return default
    v = d[key]
    if not isinstance(v, str) or not v:
        raise ConfigError(f"{where}.{key}: expected a non-empty string, got {v!r}")
    return v


# -- sections --------------------------------------------------------------------------------
def _fabric(d: Any) -> Fabric:
    d = _check_keys(d, FABRIC_KEYS, "fabric")
    failed_spines = d.get("failed_spines", []) or []
    if not isinstance(failed_spines, list) or not all(isinstance(s, str) for s in failed_spines):
        raise ConfigError("fabric.failed_spines: expected a list of spine names, e.g. [spine3]")
    failed_links = d.get("failed_links", []) or []
    if not isinstance(failed_links, list) or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
            for p in failed_links):
        raise ConfigError("fabric.failed_links: expected a list of [leafX, spineY] pairs")
    spec = FabricSpec(
        spines=_int(d, "spines", "fabric"), leaves=_int(d, "leaves", "fabric"),
        hosts_per_leaf=_int(d, "hosts_per_leaf", "fabric"),
        host_link_mbps=_num(d, "host_link_mbps", "fabric"),
        spine_link_mbps=_num(d, "spine_link_mbps", "fabric"),
        failed_spines=tuple(failed_spines),
        failed_links=tuple(tuple(p) for p in failed_links))
    try:
        return build_fabric(spec)
    except FabricError as e:
        raise ConfigError(str(e)) from None


def _hosts(v: Any, where: str, fabric: Fabric) -> list[str]:
    if not isinstance(v, list) or not v or not all(isinstance(h, str) for h in v):
        raise ConfigError(f"{where}: expected a list of host names, e.g. [h1, h5]")
    known = set(fabric.hosts)
    for h in v:
        if h not in known:
            raise ConfigError(f"{where}: unknown host {h!r} (this fabric has "
                              f"h1..h{len(fabric.hosts)})")
    return list(v)


def _explicit_job(d: dict, where: str, fabric: Fabric) -> JobSpec:
    _check_keys(d, EXPLICIT_JOB_KEYS, where)
    coll = _str(d, "collective", where)
    try:
        collective = Collective(coll)
    except ValueError:
        raise ConfigError(f"{where}.collective: unknown {coll!r}; choose from "
                          f"{', '.join(c.value for c in Collective)}") from None
    hosts = _hosts(d.get("hosts"), f"{where}.hosts", fabric)
    return JobSpec(
        name=_name(d, "name", where), collective=collective, groups=[hosts],
        size_bytes=_int(d, "size_bytes", where), iterations=_int(d, "iterations", where, 1),
        compute_s=_num(d, "compute_s", where, 0.0, positive=False),
        start_s=_num(d, "start_s", where, 0.0, positive=False))


def _model_job(d: dict, where: str, fabric: Fabric, rng: random.Random,
               used_leaves: set[str]) -> JobSpec:
    _check_keys(d, MODEL_JOB_KEYS, where)
    from traffic import models  # the presets live with the workloads
    placement = _str(d, "placement", where, "random-tors")
    if placement != "random-tors":
        raise ConfigError(f"{where}.placement: only random-tors is supported")
    try:
        return models.model_job(
            name=_name(d, "name", where), model=_str(d, "model", where),
            dp=_int(d, "dp", where, minimum=2), fabric=fabric, rng=rng,
            used_leaves=used_leaves, iterations=_int(d, "iterations", where, 1),
            start_s=_num(d, "start_s", where, 0.0, positive=False),
            compute_s=(_num(d, "compute_s", where, positive=False)
                       if "compute_s" in d else None),
            scale_bytes=_num(d, "scale_bytes", where, 1.0))
    except WorkloadError as e:
        raise ConfigError(str(e)) from None


def _jobs(v: Any, fabric: Fabric, seed: int) -> list[JobSpec]:
    if not isinstance(v, list) or not v:
        raise ConfigError("jobs: expected a non-empty list of jobs")
    rng = random.Random(seed)
    for i, d in enumerate(v):
        if not isinstance(d, dict):
            raise ConfigError(f"jobs[{i}]: expected a mapping with name, collective, hosts, ...")
    # explicit jobs first, so that random placement avoids the leaves they already use
    explicit = {i: _explicit_job(d, f"jobs[{i}]", fabric)
                for i, d in enumerate(v) if "model" not in d}
    used_leaves = {fabric.leaf_of(h) for j in explicit.values() for h in j.hosts}
    jobs: list[JobSpec] = [explicit[i] if i in explicit
                           else _model_job(d, f"jobs[{i}]", fabric, rng, used_leaves)
                           for i, d in enumerate(v)]
    names = [j.name for j in jobs]
    for n in names:
        if names.count(n) > 1:
            raise ConfigError(f"jobs: job name {n!r} appears twice; names must be unique")
    seen: dict[str, str] = {}
    for i, j in enumerate(jobs):
        for h in j.hosts:
            if h in seen:
                raise ConfigError(f"jobs[{i}].hosts: host {h!r} is listed twice (also in job "
                                  f"{seen[h]!r}); give each rank its own host")
            seen[h] = j.name
    return jobs


def run_dir_name(entry: str) -> str:
    """The folder of one routing's run: 'ilp@host' -> 'ilp-at-host'."""
    return entry.replace("@", "-at-")


def split_routing(entry: str) -> tuple[str, str]:
    """'ilp@host' -> ('ilp', 'host'); 'ilp' -> ('ilp', 'switch')."""
    strategy, _, enforcement = entry.partition("@")
    return strategy, enforcement or "switch"


def _routing(v: Any) -> list[str]:
    if not isinstance(v, list) or not v or not all(isinstance(r, str) for r in v):
        raise ConfigError(f"routing: expected a list of strategies from {sorted(STRATEGIES)}")
    for r in v:
        strategy, enforcement = split_routing(r)
        if strategy not in STRATEGIES:
            raise ConfigError(f"routing: unknown strategy {strategy!r}; choose from "
                              f"{', '.join(sorted(STRATEGIES))} (optionally with @host)")
        if enforcement not in ("switch", "host"):
            raise ConfigError(f"routing: {r!r}: the suffix must be @host (or nothing)")
        if enforcement == "host" and strategy == "ecmp":
            raise ConfigError("routing: ecmp@host makes no sense: ECMP is the switches' hash")
    if len(set(v)) != len(v):
        raise ConfigError("routing: a strategy is listed twice")
    return list(v)


def apply_event(fabric: Fabric, event: Event) -> Fabric:
    """The fabric after `event`; raises FabricError (e.g. when a leaf would be cut off)."""
    spec = fabric.spec
    spines, links = set(spec.failed_spines), set(spec.failed_links)
    target = tuple(event.target)
    if event.kind == "fail_spine":
        spines.add(target[0])
    elif event.kind == "restore_spine":
        spines.discard(target[0])
    elif event.kind == "fail_link":
        links.add(target)
    else:
        links.discard(target)
    return build_fabric(dataclasses.replace(
        spec, failed_spines=tuple(sorted(spines)), failed_links=tuple(sorted(links))))


def _replay(events: list[Event], fabric: Fabric) -> None:
    """Every event must change something and leave every leaf connected."""
    for i, e in enumerate(events):
        failed = (set(fabric.spec.failed_spines) if e.kind.endswith("_spine")
                  else set(fabric.spec.failed_links))
        key = e.target[0] if e.kind.endswith("_spine") else tuple(e.target)
        if e.kind.startswith("fail") == (key in failed):
            state = "already failed" if e.kind.startswith("fail") else "not failed"
            raise ConfigError(f"events (at_s {e.at_s:g}): {'/'.join(e.target)} is {state} "
                              f"then; {e.kind} changes nothing")
        try:
            fabric = apply_event(fabric, e)
        except FabricError as err:
            raise ConfigError(f"events (at_s {e.at_s:g}, {e.kind}): {err}") from None


def _events(v: Any, fabric: Fabric, routing: list[str]) -> list[Event]:
    if v is None:
        return []
    if not isinstance(v, list):
        raise ConfigError("events: expected a list like [{at_s: 3.0, fail_spine: spine2}]")
    events = []
    for i, d in enumerate(v):
        where = f"events[{i}]"
        _check_keys(d, {"at_s", *EVENT_KINDS}, where)
        at_s = _num(d, "at_s", where, positive=False)
        kinds = [k for k in EVENT_KINDS if k in d]
        if len(kinds) != 1:
            raise ConfigError(f"{where}: give exactly one of {', '.join(EVENT_KINDS)}")
        kind = kinds[0]
        t = d[kind]
        if kind.endswith("_spine"):
            if t not in fabric.spines:
                raise ConfigError(f"{where}.{kind}: unknown spine {t!r} "
                                  f"(spine1..spine{len(fabric.spines)})")
            target: tuple[str, ...] = (t,)
        else:
            if (not isinstance(t, list) or len(t) != 2 or t[0] not in fabric.leaves
                    or t[1] not in fabric.spines):
                raise ConfigError(f"{where}.{kind}: expected [leafX, spineY] of this fabric")
            target = (t[0], t[1])
        events.append(Event(at_s, kind, target))
    _replay(sorted(events, key=lambda e: e.at_s), fabric)
    if events and any(split_routing(r)[1] == "host" for r in routing):
        raise ConfigError("events: host-enforced routing (@host) fixes each flow's source port "
                          "when it connects, so it cannot reroute; drop @host or the events")
    return sorted(events, key=lambda e: e.at_s)


def _emulation(d: Any, fabric: Fabric) -> EmulationConfig:
    d = _check_keys(d or {}, EMULATION_KEYS, "emulation")
    e = EmulationConfig()
    e.datapath = _str(d, "datapath", "emulation", e.datapath)
    if e.datapath not in ("auto", "kernel", "user"):
        raise ConfigError("emulation.datapath: choose auto, kernel or user")
    e.tcp_cc = _str(d, "tcp_cc", "emulation", e.tcp_cc)
    if e.tcp_cc not in TCP_CCS:
        raise ConfigError(f"emulation.tcp_cc: choose from {', '.join(TCP_CCS)} "
                          "(dctcp is not in this kernel)")
    slowest = min(fabric.spec.host_link_mbps, fabric.spec.spine_link_mbps)
    if d.get("mtu_bytes", "auto") == "auto":
        e.mtu_bytes, e.mtu_auto = auto_mtu_bytes(slowest), True
    else:
        e.mtu_bytes = _int(d, "mtu_bytes", "emulation", e.mtu_bytes, minimum=576)
        e.mtu_auto = False
        if e.mtu_bytes > MAX_MTU_BYTES:
            raise ConfigError(f"emulation.mtu_bytes: at most {MAX_MTU_BYTES}, or auto")
    e.queue_packets = _int(d, "queue_packets", "emulation", e.queue_packets, minimum=2)
    e.link_scheduler = _str(d, "link_scheduler", "emulation", e.link_scheduler)
    if e.link_scheduler not in SCHEDULERS:
        raise ConfigError(f"emulation.link_scheduler: choose {' or '.join(SCHEDULERS)}")
    if d.get("window_frames", "auto") == "auto":
        # bounded under fair queuing; in one FIFO the ACKs wait behind up to a window of
        # data, and a bounded window then starves its own flow (ILP +7.5% at 5 Mbit/s)
        bound = min(DEFAULT_WINDOW_FRAMES, e.queue_packets)
        e.window_frames = bound if e.link_scheduler == "fair" and bound >= 4 else 0
    else:
        e.window_frames = _int(d, "window_frames", "emulation", 0, minimum=0)
    if 0 < e.window_frames < 4 or e.window_frames > e.queue_packets:
        raise ConfigError(f"emulation.window_frames: auto, 0 (no bound) or 4..queue_packets "
                          f"({e.queue_packets}), so that a window fits its queue")
    if "capture" in d:
        if not isinstance(d["capture"], bool):
            raise ConfigError(f"emulation.capture: expected true or false, got {d['capture']!r}")
        e.capture = d["capture"]
    if "iteration_timeout_s" in d:
        e.iteration_timeout_s = _num(d, "iteration_timeout_s", "emulation")
    return e


def parse(doc: Any) -> Experiment:
    """Validate a parsed YAML document; raises ConfigError."""
    d = _check_keys(doc, TOP_KEYS, "config")
    name = _name(d, "name", "config")
    seed = _int(d, "seed", "config", 1, minimum=0)
    if "fabric" not in d:
        raise ConfigError("fabric: required (spines, leaves, hosts_per_leaf, ...)")
    fabric = _fabric(d["fabric"])
    jobs = _jobs(d.get("jobs"), fabric, seed)
    try:
        n_conns = sum(len(p.connections) for p in plan_jobs(jobs))  # rings, bytes, 5-tuples
    except WorkloadError as e:
        raise ConfigError(str(e)) from None
    routing = _routing(d.get("routing"))
    if len(routing) * n_conns > SOURCE_PORT_SPAN // 2:
        raise ConfigError(f"routing: {len(routing)} routings x {n_conns} connections exceed "
                          f"the {SOURCE_PORT_SPAN // 2} source ports runs can use without "
                          "reusing one another's; list fewer routings or smaller jobs")
    events = _events(d.get("events"), fabric, routing)
    return Experiment(name, seed, fabric, jobs, routing, _emulation(d.get("emulation"), fabric),
                      events, d)


def load(path: str | Path) -> Experiment:
    """Read and validate an experiment YAML file; raises ConfigError."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{p}: no such config file")
    try:
        doc = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: not valid YAML ({str(e).splitlines()[0]})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{p}: cannot be read ({e})") from None
    return parse(doc)

"""The typed records a config becomes: Experiment (built by keyword), its EmulationConfig
and Events.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed import topologies
from testbed.fabric import Fabric
from testbed.settings import DEFAULTS, EmulationSettings
from traffic.collectives import JobPlan, JobSpec, plan_jobs
from traffic.programs import DEFAULT_LEARN_STEPS, ProgramSpec
from traffic.predictor import Semantics

from ..routing_entry import RoutingEntry, parse_entries


@dataclass(frozen=True)
class SubflowDefaults:
    """The top-level `subflows`, `split` and `split_piece_bytes` (each job may set its own)."""

    subflows: int = 1
    split: str = "even"
    split_piece_bytes: int = 1 << 20

    def as_dict(self) -> dict:
        """The keys that differ from the defaults."""
        return {k: v for k, v in vars(self).items() if v != getattr(SubflowDefaults, k)}


@dataclass
class EmulationConfig:
    """How the emulator runs; each default is explained in docs/emulation.md."""

    datapath: str = DEFAULTS.datapath          # auto | kernel | user
    port_type: str = DEFAULTS.port_type        # system | tap: how the userspace datapath
                                               # reaches a port
    tcp_cc: str = "cubic"           # set per socket by the agents, recorded in results
    mtu_bytes: int = DEFAULTS.mtu_bytes        # resolved from "auto" (the default)
    mtu_auto: bool = True           # mtu_bytes chosen from the link rates
    queue_packets: int = DEFAULTS.queue_packets   # drop-tail queue per HTB leaf class
    link_scheduler: str = DEFAULTS.scheduler   # fair: per-flow round robin; fifo: drop-tail
    window_frames: int = DEFAULTS.window_frames   # TCP receive window bound (frames); 0:
                                    # autotuning; "auto": 16 with fair, 0 with fifo
    switch_burst_frames: int = DEFAULTS.switch_burst_frames  # HTB burst at switches' egress
    iteration_timeout_s: float | None = None  # None: 20 x ideal CCT + 30 s
    capture: bool | tuple[str, str] = False   # scapy pcap per routing (testbed/capture.py):
                                    # true: leaf1's first live uplink; (a, b): a's port to b
    switch_processes: int = DEFAULTS.switch_processes   # ovs-vswitchd instances the
                                    # switches are spread over (testbed/instances.py)

    def settings(self) -> EmulationSettings:
        """What the emulator builds with (testbed/settings.py), by keyword."""
        return EmulationSettings(datapath=self.datapath, mtu_bytes=self.mtu_bytes,
                                 queue_packets=self.queue_packets,
                                 scheduler=self.link_scheduler,
                                 window_frames=self.window_frames,
                                 switch_burst_frames=self.switch_burst_frames,
                                 port_type=self.port_type,
                                 switch_processes=self.switch_processes)

    def resolved(self) -> dict:
        """As the YAML says it: `mtu_bytes: auto` when it was chosen from the link rates (it
        then resolves to the same number again), window_frames as the number it resolved to."""
        extra = ({"switch_processes": self.switch_processes} if self.switch_processes != 1
                 else {})     # left out at its default: older runs' configs stay the same
        return {"datapath": self.datapath, "port_type": self.port_type, "tcp_cc": self.tcp_cc,
                "mtu_bytes": "auto" if self.mtu_auto else self.mtu_bytes,
                "queue_packets": self.queue_packets, "link_scheduler": self.link_scheduler,
                "window_frames": self.window_frames,
                "switch_burst_frames": self.switch_burst_frames,
                "iteration_timeout_s": self.iteration_timeout_s,
                "capture": list(self.capture) if isinstance(self.capture, tuple) else self.capture,
                **extra}


@dataclass(frozen=True)
class Event:
    """A failure or repair at `at_s` seconds after the jobs' clock starts."""

    at_s: float
    kind: str                   # one of EVENT_KINDS
    target: tuple[str, ...]     # (switch,) or a link (lower tier, upper tier)

    def as_dict(self) -> dict:
        return {"at_s": self.at_s, self.kind: (self.target[0] if len(self.target) == 1
                                               else list(self.target))}

    @property
    def on_switch(self) -> bool:
        return not self.kind.endswith("_link")


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
    semantics: Semantics = field(default_factory=Semantics)   # traffic/predictor.py
    replay_log: Path | None = None            # floodns flow log for routing `replay`
    solver_time_limit_s: float | None = None  # each ilp / mmf CBC solve; None: 30 s / 60 s
    jobs_from: dict | None = None             # the jobs' source files (absolute paths)
    #: replay_log's flows as read (routing/replay.py ReplayLog), checked against the jobs
    replay_flows: Any = field(default=None, repr=False, compare=False)
    #: the config's top-level subflows / split keys (jobs keep their own)
    subflow_defaults: SubflowDefaults = field(default_factory=SubflowDefaults)
    #: what an importer noted besides the jobs (traffic/streams.py Notes), or None
    workload: Any = field(default=None, repr=False, compare=False)
    #: program jobs (traffic/programs.py); their declared traffic is in `jobs` (host pairs)
    programs: list[ProgramSpec] = field(default_factory=list)
    #: the controller's demand: (declared | measured, learn_steps, learn_s or None)
    demand: tuple[str, int, float | None] = ("declared", DEFAULT_LEARN_STEPS, None)
    #: the machines the fabric is split over (testbed/remote.py MachineSpec); (): this one
    machines: tuple = ()
    #: `routing` parsed once, entry by entry (experiments/routing_entry.py)
    routings: list[RoutingEntry] = field(init=False, repr=False, compare=False)
    #: (the jobs list they were made of, plan_jobs of it): see `plans`
    _plans: tuple[list[JobSpec], list[JobPlan]] | None = field(
        default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.routings = parse_entries(self.routing)

    def plans(self) -> list[JobPlan]:
        """plan_jobs(self.jobs) as the semantics plan them (ring_sync, connections), made
        once per jobs list (parse makes them to check the jobs; a 1 M-transfer workload takes
        seconds to plan). Treat them as read-only."""
        if self._plans is None or self._plans[0] is not self.jobs:
            self._plans = (self.jobs, plan_jobs(self.jobs, self.semantics.ring_sync,
                                                self.semantics.connections))
        return self._plans[1]

    def keep_plans(self, plans: list[JobPlan]) -> None:
        """Remember plan_jobs(self.jobs), made by the caller (parse)."""
        self._plans = (self.jobs, plans)

    def resolved(self) -> dict:
        """The config as run: every default filled in, model jobs expanded to their rings
        (`groups`), imported jobs as their source files (absolute paths: a trace's ranks may
        run several jobs on one host, which explicit jobs may not). It loads again (`parse`)
        to the same experiment and the same resolved()."""
        traffic = {j.name: j for j in self.jobs if j.host_pairs}
        jobs = ({"jobs_from": self.jobs_from} if self.jobs_from else {"jobs": [
            _explicit(j) for j in self.jobs if not j.host_pairs] + [
            _program(p, traffic.get(p.name)) for p in self.programs]})
        demand, steps, window = self.demand
        return {
            "name": self.name, "seed": self.seed,
            "fabric": topologies.resolved(self.fabric.spec),
            **jobs,
            **(self.subflow_defaults.as_dict() if self.jobs_from else {}),
            "routing": list(self.routing),
            "emulation": self.emulation.resolved(),
            "events": [e.as_dict() for e in self.events],
            **({"semantics": self.semantics.as_dict()} if self.semantics != Semantics() else {}),
            **({"replay_log": str(self.replay_log)} if self.replay_log else {}),
            **({"solver_time_limit_s": self.solver_time_limit_s}
               if self.solver_time_limit_s is not None else {}),
            **({"demand": demand} if demand != "declared" else {}),
            **({"learn_s": window} if window is not None else
               {"learn_steps": steps} if steps != DEFAULT_LEARN_STEPS else {}),
            **({"machines": [m.as_dict() for m in self.machines]} if self.machines else {}),
        }


def _explicit(j: JobSpec) -> dict:
    """A job as an explicit collective."""
    return {"name": j.name, "collective": j.collective.value,
            **({"hosts": list(j.groups[0])} if len(j.groups) == 1
               else {"groups": [list(g) for g in j.groups]}),
            "size_bytes": j.size_bytes, "iterations": j.iterations, "compute_s": j.compute_s,
            "start_s": j.start_s, **_subflow_keys(j), **({} if j.pxn else {"pxn": False}),
            **({} if j.algorithm == "ring" else {"algorithm": j.algorithm})}


def _program(p: ProgramSpec, traffic: JobSpec | None) -> dict:
    """A program job, with its declared traffic."""
    out = {"name": p.name, "program": list(p.argv), "hosts": list(p.hosts),
           "env": dict(p.env), "timeout_s": p.timeout_s, "cwd": p.cwd, "start_s": p.start_s}
    if traffic is not None:
        t = _explicit(traffic)
        out["traffic"] = {k: v for k, v in t.items() if k not in ("name", "start_s")}
    return out


def _subflow_keys(j: JobSpec) -> dict:
    """A job's subflows / split keys where they differ from the defaults."""
    return SubflowDefaults(j.subflows, j.split, j.split_piece_bytes).as_dict()

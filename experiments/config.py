"""Step 1 of a run: read and validate the experiment YAML into typed objects.

Pure code. Every problem is a ConfigError whose message is one line that names the key and
the fix, e.g. `jobs[0].hosts: unknown host 'h99' (this fabric has h1..h16)`; the CLI prints it
and exits 2 before anything is built or written. Every number has a bound this machine can
honour (the LIMITS below, tabled in the README); values are quoted by at most a short prefix
(`quote`). `Experiment.resolved()` is the config with every default filled in, saved beside
the results as config.yaml, which loads again to the same experiment.
"""
from __future__ import annotations

import math
import random
import re
import reprlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from routing import STRATEGIES
from testbed import topologies
from testbed.fabric import Fabric, FabricError, build_fabric
from testbed.topologies.base import (MAX_HOSTS, MAX_HOSTS_PER_LEAF, MAX_RATE_MBPS,  # noqa: F401
                                     MIN_RATE_MBPS, RATE_WHY)
from testbed.topologies.clos3 import (MAX_AGGS_PER_POD, MAX_CORES_PER_PLANE,  # noqa: F401
                                      MAX_LEAVES_PER_POD, MAX_PODS)
from testbed.topologies.fat_tree import MAX_FAT_TREE_K  # noqa: F401
from testbed.topologies.leaf_spine import MAX_LEAVES, MAX_SPINES  # noqa: F401
from testbed.shaping import (MAX_BURST_FRAMES, MAX_MTU_BYTES, SCHEDULERS,
                             SWITCH_BURST_FRAMES, auto_mtu_bytes)
from testbed.taps import PORT_TYPES
from traffic.collectives import (SOURCE_PORT_SPAN, Collective, JobSpec, WorkloadError,
                                 ideal_cct_s, plan_jobs)
from traffic.predictor import RECOMPUTES, RING_SYNCS, Semantics

from .routing_entry import NONBLOCKING, REPLAY, RoutingEntry, parse_entries
from .routing_entry import run_dir_name  # noqa: F401  (experiments/outdir.py imports it here)

DEFAULT_WINDOW_FRAMES = 16


class ConfigError(ValueError):
    """Bad experiment input; the message names the key and the fix."""


TOP_KEYS = {"name", "seed", "fabric", "jobs", "routing", "emulation", "events",
            "jobs_from", "semantics", "replay_log", "solver_time_limit_s"}
EVENT_KINDS = ("fail_spine", "restore_spine", "fail_switch", "restore_switch", "fail_link",
               "restore_link")
#: Every key a fabric section of some topology kind may hold (testbed/topologies/).
FABRIC_KEYS = set().union(*(k.keys for k in topologies.KINDS.values()))
EXPLICIT_JOB_KEYS = {"name", "collective", "hosts", "groups", "size_bytes", "iterations",
                     "compute_s", "start_s"}
MODEL_JOB_KEYS = {"name", "model", "dp", "placement", "iterations", "compute_s",
                  "start_s", "scale_bytes"}
PATTERN_JOB_KEYS = {"name", "pattern", "hosts", "stride", "p_leaf", "p_pod", "hotspots",
                    "flows_per_host", "seed", "size_bytes", "iterations", "compute_s", "start_s"}
EMULATION_KEYS = {"datapath", "port_type", "tcp_cc", "mtu_bytes", "queue_packets",
                  "link_scheduler", "window_frames", "switch_burst_frames",
                  "iteration_timeout_s", "capture"}
TCP_CCS = ("cubic", "bbr", "reno")

# -- limits (README, "The experiment YAML": every one is tabled there with its reason) -------
#: A config file larger than this is refused unread: the paper's configs are < 1 kB, a resolved
#: paper-scale config.yaml (every host listed) ~40 kB, and the largest experiment the limits
#: allow (22,768 connections, so at most 45,536 hosts in jobs) resolves to well under 1 MB.
MAX_CONFIG_BYTES = 1_000_000
#: Mappings and lists nested deeper than this are refused (a config needs 5 levels).
MAX_DEPTH = 32
#: The fabric's bounds are its topology kind's (testbed/topologies/: leaf_spine.MAX_SPINES,
#: MAX_LEAVES; clos3.MAX_PODS, ...; base.MAX_HOSTS, MAX_HOSTS_PER_LEAF and the link rates).
#: One job's collective size: 1 TiB (GPT-3 175B's fp32 gradient is 700 GB).
MAX_SIZE_BYTES = 2 ** 40
#: Iterations per job: the predictor takes ~10 us per transfer per iteration.
MAX_ITERATIONS = 10_000
#: Any one time in the YAML (start_s, compute_s, at_s, iteration_timeout_s): 1 day. The
#: iteration timeout also reaches the agents' socket timeouts, which overflow past 24.8 days.
MAX_SECONDS = 86_400.0
#: The whole experiment, even on a non-blocking fabric (each job's start_s + iterations x
#: (ideal CCT + compute_s)): 1 week. Below 2^20 s the model's clock still resolves 1e-9 s.
MAX_DURATION_S = 7 * 86_400.0
MAX_SEED = 2 ** 32 - 1
#: Per-link drop-tail queue (frames): 10,000 x 64,000 B = 640 MB, still a C int for the
#: window clamp (window_frames <= queue_packets).
MAX_QUEUE_PACKETS = 10_000
#: Largest `solver_time_limit_s` (seconds per ilp / mmf solve).
MAX_SOLVER_S = 3_600.0
#: Jobs and events per experiment; every event rebuilds the fabric and re-solves every
#: routing (up to ~1.5 s per rebuild at the largest fabric).
MAX_JOBS = 1_000
MAX_EVENTS = 100
#: Data-parallel copies of a model job (at most 62,500 hosts / 48 GPUs per copy = 1,302).
MAX_DP = 1_024
#: Multiplier of a model's gradient bytes (the result must still be <= MAX_SIZE_BYTES).
MAX_SCALE_BYTES = 1_000.0
#: Transfers of one iteration of all jobs together (each ~200 B in memory, ~10 us to predict),
#: and over all iterations: ~17 min of prediction per routing at most.
MAX_TRANSFERS = 1_000_000
MAX_TRANSFER_RUNS = 100_000_000
#: predict --util-bin-s: at least 1 ms, and at most this many bins x links (12 B each in the
#: predictor, one CSV row per used link and bin), counted over a duration no prediction of the
#: config can exceed (`duration_upper_bound_s`).
MIN_UTIL_BIN_S = 0.001
MAX_UTIL_CELLS = 20_000_000
#: run's default iteration timeout: 20 x the slowest ideal CCT + 30 s (experiments/runner.py).
TIMEOUT_FACTOR, TIMEOUT_SLACK_S = 20.0, 30.0


# -- quoting user values -----------------------------------------------------------------------
_REPR = reprlib.Repr()
_REPR.maxlevel = 2
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = _REPR.maxfrozenset = 3
_REPR.maxstring = _REPR.maxlong = _REPR.maxother = 40
QUOTE_CHARS = 40


def quote(v: Any) -> str:
    """At most QUOTE_CHARS characters of repr(v), computed without expanding big or deeply
    nested values (reprlib), on one line."""
    try:
        s = _REPR.repr(v)
    except Exception:  # noqa: BLE001 - a value whose repr fails is still quoted by its type
        s = f"<{type(v).__name__}>"
    s = s.replace("\n", " ")
    return s if len(s) <= QUOTE_CHARS else s[:QUOTE_CHARS - 3] + "..."


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.@-]{1,40}")


def _key(k: Any) -> str:
    """A key as it appears in a message: plain names as they are, anything else quoted."""
    return k if isinstance(k, str) and _PLAIN_KEY.fullmatch(k) else quote(k)


def _one_line(s: str, limit: int = 200) -> str:
    s = " ".join(str(s).split())
    return s if len(s) <= limit else s[:limit - 3] + "..."


@dataclass
class EmulationConfig:
    """How the emulator runs; each default is explained in the README (datapath tuning)."""

    datapath: str = "auto"          # auto | kernel | user
    port_type: str = "system"       # system | tap: how the userspace datapath reaches a port
    tcp_cc: str = "cubic"           # set per socket by the agents, recorded in results
    mtu_bytes: int = 9000           # resolved from "auto" (the default): testbed/shaping.py
    mtu_auto: bool = True           # mtu_bytes chosen from the link rates
    queue_packets: int = 100        # drop-tail queue per HTB leaf class (packets)
    link_scheduler: str = "fair"    # fair: per-flow round robin in each link; fifo: drop-tail
    window_frames: int = 16         # TCP receive window bound (frames); 0: kernel autotuning;
                                    # "auto" (default): 16 with the fair scheduler, 0 with fifo
    switch_burst_frames: int = SWITCH_BURST_FRAMES  # HTB burst at switches' egress (frames)
    iteration_timeout_s: float | None = None  # None: 20 x ideal CCT + 30 s
    capture: bool | tuple[str, str] = False   # scapy pcap per routing (testbed/capture.py):
                                    # true: leaf1's first live uplink; (a, b): a's port to b

    def resolved(self) -> dict:
        """As the YAML says it: `mtu_bytes: auto` when it was chosen from the link rates (it
        then resolves to the same number again), window_frames as the number it resolved to."""
        return {"datapath": self.datapath, "port_type": self.port_type, "tcp_cc": self.tcp_cc,
                "mtu_bytes": "auto" if self.mtu_auto else self.mtu_bytes,
                "queue_packets": self.queue_packets, "link_scheduler": self.link_scheduler,
                "window_frames": self.window_frames,
                "switch_burst_frames": self.switch_burst_frames,
                "iteration_timeout_s": self.iteration_timeout_s,
                "capture": list(self.capture) if isinstance(self.capture, tuple) else self.capture}


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
    #: `routing` parsed once, entry by entry (experiments/routing_entry.py)
    routings: list[RoutingEntry] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.routings = parse_entries(self.routing)

    def resolved(self) -> dict:
        """The config as run: every default filled in, model jobs expanded to their rings
        (`groups`), imported jobs as their source files (absolute paths: a trace's ranks may
        run several jobs on one host, which explicit jobs may not). It loads again (`parse`)
        to the same experiment and the same resolved()."""
        jobs = ({"jobs_from": self.jobs_from} if self.jobs_from else {"jobs": [
            {"name": j.name, "collective": j.collective.value,
             **({"hosts": list(j.groups[0])} if len(j.groups) == 1
                else {"groups": [list(g) for g in j.groups]}),
             "size_bytes": j.size_bytes, "iterations": j.iterations, "compute_s": j.compute_s,
             "start_s": j.start_s} for j in self.jobs]})
        return {
            "name": self.name, "seed": self.seed,
            "fabric": topologies.resolved(self.fabric.spec),
            **jobs,
            "routing": list(self.routing),
            "emulation": self.emulation.resolved(),
            "events": [e.as_dict() for e in self.events],
            **({"semantics": self.semantics.as_dict()} if self.semantics != Semantics() else {}),
            **({"replay_log": str(self.replay_log)} if self.replay_log else {}),
            **({"solver_time_limit_s": self.solver_time_limit_s}
               if self.solver_time_limit_s is not None else {}),
        }


# -- the YAML itself -------------------------------------------------------------------------
class _Refused(yaml.MarkedYAMLError):
    """Valid YAML that a config may not contain (aliases, duplicate or non-string keys)."""


class _Loader(yaml.SafeLoader):
    """SafeLoader that refuses anchors and aliases (no alias bombs), keys that are not
    strings, keys given twice in one mapping, merge keys, and nesting deeper than MAX_DEPTH."""

    _depth = 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise _Refused(problem="aliases (*name) are not allowed in a config; write the "
                                   "value out", problem_mark=event.start_mark)
        if getattr(event, "anchor", None) is not None:
            raise _Refused(problem="anchors (&name) are not allowed in a config; write the "
                                   "value out", problem_mark=event.start_mark)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(problem=f"nested more than {MAX_DEPTH} levels deep",
                               problem_mark=event.start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first: dict[str, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    raise _Refused(problem="merge keys (<<) are not allowed in a config",
                                   problem_mark=key_node.start_mark)
                key = self.construct_object(key_node, deep=True)
                if not isinstance(key, str):
                    raise _Refused(problem=f"key {quote(key)} is not a string; keys are names "
                                           "like spines or at_s",
                                   problem_mark=key_node.start_mark)
                if key in first:
                    raise _Refused(problem=f"key {_key(key)} is given twice in one mapping "
                                           f"(first on line {first[key].line + 1}); keep one",
                                   problem_mark=key_node.start_mark)
                first[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


def _shown(p: Path) -> str:
    s = str(p)
    return s if len(s) <= 200 and s.isprintable() else quote(s)


def read_yaml(path: str | Path) -> Any:
    """The document of a config file; ConfigError (one line, `file:line:column: ...` for
    YAML problems) when it is missing, too big, not YAML, or uses what a config may not."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{_shown(p)}: no such config file")
    try:
        with p.open("rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"{_shown(p)}: cannot be read ({_one_line(e.strerror or e)})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{_shown(p)}: larger than {MAX_CONFIG_BYTES:,} bytes; a config is "
                          "a few kB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{_shown(p)}: not UTF-8 text (byte {e.start})") from None
    return yaml_value(text, _shown(p))


def yaml_value(text: str, where: str, marks: bool = True) -> Any:
    """`text` read by the config's loader (no anchors, aliases, merge keys, repeated or
    non-string keys, deep nesting); ConfigError starting with `where` (and, with `marks`,
    `:line:column`) when it cannot be."""
    loader = _Loader(text)
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        at = f"{where}:{mark.line + 1}:{mark.column + 1}" if mark and marks else where
        what = "" if isinstance(e, _Refused) else "not valid YAML: "
        ctx = f" ({_one_line(e.context, 80)})" if e.context and not isinstance(e, _Refused) \
            else ""
        raise ConfigError(f"{at}: {what}{_one_line(e.problem or e)}{ctx}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{where}: not valid YAML ({_one_line(e)})") from None
    except RecursionError:
        raise ConfigError(f"{where}: nested too deeply") from None
    except (ValueError, OverflowError) as e:   # e.g. an integer of more than 4,300 digits
        raise ConfigError(f"{where}: a value cannot be read ({_one_line(e, 80)})") from None
    finally:
        loader.dispose()


def _check_tree(doc: Any) -> None:
    """Keys anywhere must be strings, nesting at most MAX_DEPTH deep (for documents that did
    not come through read_yaml). Each container is visited once, so shared ones cost nothing."""
    stack: list[tuple[Any, str, int]] = [(doc, "", 0)]
    seen: set[int] = set()
    while stack:
        v, where, depth = stack.pop()
        if not isinstance(v, (dict, list)) or id(v) in seen:
            continue
        seen.add(id(v))
        if depth > MAX_DEPTH:
            raise ConfigError(f"{where or 'config'}: nested more than {MAX_DEPTH} levels deep")
        if isinstance(v, dict):
            for k, x in v.items():
                if not isinstance(k, str):
                    raise ConfigError(f"{where or 'config'}: key {quote(k)} is not a string; "
                                      "keys are names like spines or at_s")
                stack.append((x, f"{where}.{_key(k)}" if where else _key(k), depth + 1))
        else:
            for i, x in enumerate(v):
                stack.append((x, f"{where}[{i}]", depth + 1))


# -- small typed readers ---------------------------------------------------------------------
def _check_keys(d: Any, allowed: set[str], where: str) -> dict:
    if not isinstance(d, dict):
        raise ConfigError(f"{where}: expected a mapping of keys, got {type(d).__name__}")
    unknown = sorted(k for k in d if k not in allowed)
    if unknown:
        raise ConfigError(f"{where}.{_key(unknown[0])}: unknown key; allowed keys are "
                          f"{', '.join(sorted(allowed))}")
    return d


def _section(d: dict, key: str) -> dict:
    """An optional mapping: absent or null means the defaults; anything else must be one."""
    v = d.get(key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise ConfigError(f"{key}: expected a mapping of keys (or nothing, for the defaults), "
                          f"got {type(v).__name__} {quote(v)}")
    return v


def _int(d: dict, key: str, where: str, default: int | None = None, minimum: int = 1,
         maximum: int = 2 ** 31 - 1, why: str = "") -> int:
    if key not in d:
        if default is None:
            raise ConfigError(f"{where}.{key}: required; give an integer from {minimum:,} to "
                              f"{maximum:,}")
        return default
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{where}.{key}: expected an integer from {minimum:,} to "
                          f"{maximum:,}, got {quote(v)}")
    if not minimum <= v <= maximum:
        raise ConfigError(f"{where}.{key}: must be from {minimum:,} to {maximum:,}"
                          f"{' (' + why + ')' if why else ''}, got {quote(v)}")
    return v


def _num(d: dict, key: str, where: str, default: float | None = None,
         positive: bool = True, maximum: float = MAX_SECONDS, minimum: float = 0.0,
         why: str = "") -> float:
    """A finite number in [minimum, maximum]; with `positive`, also > 0."""
    if key not in d:
        if default is None:
            raise ConfigError(f"{where}.{key}: required; give a number")
        return default
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError(f"{where}.{key}: expected a number, got {quote(v)}")
    try:
        f = float(v)
    except OverflowError:
        f = math.inf
    if not math.isfinite(f):
        raise ConfigError(f"{where}.{key}: expected a finite number, got {quote(v)}")
    low = max(minimum, 0.0)
    if (positive and not f > 0) or f < low or f > maximum:
        span = (f"from {_fmt(low)} to" if low > 0 or not positive else "> 0 and at most")
        raise ConfigError(f"{where}.{key}: must be {span} {_fmt(maximum)}"
                          f"{' (' + why + ')' if why else ''}, got {quote(v)}")
    return f


def _fmt(x: float) -> str:
    """1000000.0 -> '1,000,000'; 0.001 -> '0.001'."""
    return f"{x:,.0f}" if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _name(d: dict, key: str, where: str) -> str:
    """A name that becomes part of file names: letters, digits, '.', '_', '-'."""
    v = _str(d, key, where)
    if not NAME_RE.fullmatch(v):
        raise ConfigError(f"{where}.{key}: {quote(v)} must be 1-64 letters, digits, '.', '_' "
                          "or '-', starting with a letter or digit (it names files of the run)")
    return v


def _str(d: dict, key: str, where: str, default: str | None = None) -> str:
    if key not in d:
        if default is None:
            raise ConfigError(f"{where}.{key}: required; give a string")
        return default
    v = d[key]
    if not isinstance(v, str) or not v:
        raise ConfigError(f"{where}.{key}: expected a non-empty string, got {quote(v)}")
    return v


def _choice(d: dict, key: str, where: str, choices, default: str | None = None,
            hint: str = "") -> str:
    v = _str(d, key, where, default)
    if v not in choices:
        raise ConfigError(f"{where}.{key}: unknown {quote(v)}; choose from "
                          f"{', '.join(choices)}{hint}")
    return v


# -- sections --------------------------------------------------------------------------------
def _name_list(d: dict, key: str, where: str) -> list:
    v = d.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise ConfigError(f"{where}.{key}: expected a list, got {type(v).__name__} {quote(v)}")
    return v


def _rate(d: dict, key: str) -> float:
    return _num(d, key, "fabric", minimum=MIN_RATE_MBPS, maximum=MAX_RATE_MBPS, why=RATE_WHY)


def _switch_names(d: dict, key: str) -> tuple[str, ...]:
    names = _name_list(d, key, "fabric")
    for x in names:
        if not isinstance(x, str) or len(x) > 64:
            raise ConfigError(f"fabric.{key}: {quote(x)} is not a switch name, e.g. core3")
    return tuple(names)


def _link_pairs(d: dict, key: str, example: str) -> tuple[tuple[str, str], ...]:
    pairs = _name_list(d, key, "fabric")
    for p in pairs:
        if (not isinstance(p, list) or len(p) != 2
                or not all(isinstance(x, str) and len(x) <= 64 for x in p)):
            raise ConfigError(f"fabric.{key}: {quote(p)} is not a pair of switch names, "
                              f"e.g. {example}")
    return tuple(tuple(p) for p in pairs)


def _fabric(d: Any) -> Fabric:
    """The fabric section: its kind (`topology`, default leaf-spine) reads its own keys, each
    with the bound its Param gives, then the failures; the model builds and checks it."""
    if not isinstance(d, dict):
        raise ConfigError(f"fabric: expected a mapping of keys, got {type(d).__name__}")
    name = d.get("topology", topologies.DEFAULT)
    if not isinstance(name, str) or name not in topologies.KINDS:
        raise ConfigError(f"fabric.topology: unknown {quote(name)}; choose from "
                          f"{', '.join(topologies.KINDS)}")
    kind = topologies.kind(name)
    d = _check_keys(d, kind.keys, "fabric")
    sizes = {p.key: _int(d, p.key, "fabric", p.default, minimum=p.minimum, maximum=p.maximum,
                         why=p.why) for p in kind.params}
    rates = {tier: _rate(d, key) for tier, key in kind.rate_keys.items()
             if key in d or tier not in kind.optional_rates}
    failures = {key: _switch_names(d, key) for key in ("failed_switches",
                                                       *kind.extra_failure_keys)}
    failures["failed_links"] = _link_pairs(d, "failed_links", "[leaf1, spine2] or [agg1, core3]")
    try:
        return build_fabric(kind.spec(sizes, rates, failures))
    except FabricError as e:
        raise ConfigError(str(e)) from None


def _hosts(v: Any, where: str, fabric: Fabric) -> list[str]:
    if not isinstance(v, list) or not v:
        raise ConfigError(f"{where}: expected a list of host names, e.g. [h1, h5], "
                          f"got {quote(v)}")
    n = len(fabric.hosts)
    for h in v:
        if not isinstance(h, str) or not fabric.graph.has_node(h) \
                or fabric.graph.nodes[h].get("role") != "host":
            raise ConfigError(f"{where}: unknown host {quote(h)} (this fabric has h1..h{n})")
    return list(v)


def _groups(d: dict, where: str, fabric: Fabric) -> list[list[str]]:
    """`hosts: [...]` (one group) or `groups: [[...], ...]` (several, e.g. the rings of a
    model job as resolved() writes them), exactly one of the two."""
    if ("hosts" in d) == ("groups" in d):
        raise ConfigError(f"{where}: give either hosts: [h1, h5, ...] or groups: "
                          "[[h1, h5], [h2, h6], ...]")
    if "hosts" in d:
        return [_hosts(d["hosts"], f"{where}.hosts", fabric)]
    g = d["groups"]
    if not isinstance(g, list) or not g:
        raise ConfigError(f"{where}.groups: expected a list of host lists, e.g. "
                          f"[[h1, h5], [h2, h6]], got {quote(g)}")
    return [_hosts(x, f"{where}.groups[{i}]", fabric) for i, x in enumerate(g)]


def _explicit_job(d: dict, where: str, fabric: Fabric) -> JobSpec:
    _check_keys(d, EXPLICIT_JOB_KEYS, where)
    name = _name(d, "name", where)
    collective = Collective(_choice(d, "collective", where, [c.value for c in Collective]))
    groups = _groups(d, where, fabric)
    return JobSpec(
        name=name, collective=collective, groups=groups,
        size_bytes=_int(d, "size_bytes", where, maximum=MAX_SIZE_BYTES, why="1 TiB"),
        iterations=_int(d, "iterations", where, 1, maximum=MAX_ITERATIONS),
        compute_s=_num(d, "compute_s", where, 0.0, positive=False),
        start_s=_num(d, "start_s", where, 0.0, positive=False))


def _model_job(d: dict, where: str, fabric: Fabric, rng: random.Random,
               used: set[str]) -> JobSpec:
    _check_keys(d, MODEL_JOB_KEYS, where)
    from traffic import models  # the presets live with the workloads
    name = _name(d, "name", where)
    model = _choice(d, "model", where, sorted(models.MODELS))
    placement = _choice(d, "placement", where, list(models.PLACEMENTS), "random-tors",
                        " (explicit placement: list the rings as groups of a collective job)")
    dp = _int(d, "dp", where, minimum=2, maximum=MAX_DP)
    scale = _num(d, "scale_bytes", where, 1.0, maximum=MAX_SCALE_BYTES)
    ring_bytes = models.MODELS[model].ring_bytes(scale)
    if ring_bytes > MAX_SIZE_BYTES:
        raise ConfigError(f"{where}.scale_bytes: {scale:g} gives {ring_bytes:,} bytes per ring, "
                          f"more than {MAX_SIZE_BYTES:,} (1 TiB)")
    try:
        return models.model_job(
            name=name, model=model, dp=dp, fabric=fabric, rng=rng, used=used,
            iterations=_int(d, "iterations", where, 1, maximum=MAX_ITERATIONS),
            start_s=_num(d, "start_s", where, 0.0, positive=False),
            compute_s=(_num(d, "compute_s", where, positive=False)
                       if "compute_s" in d else None),
            scale_bytes=scale, placement=placement)
    except WorkloadError as e:
        raise ConfigError(_job_key(str(e), [name], where)) from None


def _pattern_job(d: dict, where: str, fabric: Fabric, seed: int, used: set[str]) -> JobSpec:
    """Hedera's long-flow patterns (traffic/patterns.py) over `hosts` (default: every host
    that no other job uses), one flow of size_bytes per sender."""
    from traffic import patterns
    _check_keys(d, PATTERN_JOB_KEYS, where)
    name = _name(d, "name", where)
    pattern = _choice(d, "pattern", where, list(patterns.PATTERNS))
    for key, only in (("stride", "stride"), ("p_leaf", "staggered"), ("p_pod", "staggered"),
                      ("hotspots", "hotspot"), ("flows_per_host", "random")):
        if key in d and pattern != only:
            raise ConfigError(f"{where}.{key}: only for pattern: {only} (this job is "
                              f"pattern: {pattern}); remove it")
    hosts = (_hosts(d["hosts"], f"{where}.hosts", fabric) if "hosts" in d
             else [h for h in fabric.hosts if h not in used])
    if len(set(hosts)) != len(hosts):
        raise ConfigError(f"{where}.hosts: a host is listed twice")
    if len(hosts) < 2:
        raise ConfigError(f"{where}.hosts: a pattern needs at least 2 hosts, {len(hosts)} free")
    p_leaf = _num(d, "p_leaf", where, 0.0, positive=False, maximum=1.0)
    p_pod = _num(d, "p_pod", where, 0.0, positive=False, maximum=1.0)
    if p_leaf + p_pod > 1.0:
        raise ConfigError(f"{where}.p_pod: p_leaf + p_pod = {_fmt(p_leaf + p_pod)} > 1; "
                          "they are probabilities of disjoint choices")
    if pattern == "stride" and "stride" not in d:
        raise ConfigError(f"{where}.stride: missing; host x sends to x + stride, e.g. "
                          "stride: 4")
    try:
        pairs = patterns.pattern_pairs(
            fabric, hosts, pattern, _int(d, "seed", where, seed, minimum=0, maximum=MAX_SEED),
            stride_hosts=_int(d, "stride", where, 1, maximum=len(hosts) - 1),
            p_leaf=p_leaf, p_pod=p_pod,
            hotspots=_int(d, "hotspots", where, 1, maximum=len(hosts) - 1),
            flows_per_host=_int(d, "flows_per_host", where, 1, maximum=len(hosts) - 1))
    except WorkloadError as e:
        raise ConfigError(f"{where}.{e}") from None
    return JobSpec(
        name=name, collective=Collective.FLOWS, groups=[list(p) for p in pairs],
        size_bytes=_int(d, "size_bytes", where, maximum=MAX_SIZE_BYTES, why="1 TiB"),
        iterations=_int(d, "iterations", where, 1, maximum=MAX_ITERATIONS),
        compute_s=_num(d, "compute_s", where, 0.0, positive=False),
        start_s=_num(d, "start_s", where, 0.0, positive=False))


def _job_key(msg: str, names: list[str], *wheres: str) -> str:
    """traffic/ names a job's key `jobs.<name>.key`; the config's messages say `jobs[i].key`."""
    for name, where in zip(names, wheres or [f"jobs[{i}]" for i in range(len(names))]):
        for prefix in (f"jobs.{name}.", f"jobs.{name}:"):
            if msg.startswith(prefix):
                return where + msg[len(prefix) - 1:]
    return msg


def _jobs(v: Any, fabric: Fabric, seed: int) -> list[JobSpec]:
    if not isinstance(v, list) or not v:
        raise ConfigError("jobs: expected a non-empty list of jobs")
    if len(v) > MAX_JOBS:
        raise ConfigError(f"jobs: {len(v):,} jobs; at most {MAX_JOBS:,} (each listens on its "
                          "own port)")
    rng = random.Random(seed)
    for i, d in enumerate(v):
        if not isinstance(d, dict):
            raise ConfigError(f"jobs[{i}]: expected a mapping with name, collective, hosts, "
                              f"..., got {type(d).__name__}")
    # explicit jobs first, so that placed jobs avoid the hosts they already use; then model
    # jobs in order; pattern jobs last (by default they take every host still free)
    explicit = {i: _explicit_job(d, f"jobs[{i}]", fabric)
                for i, d in enumerate(v) if "model" not in d and "pattern" not in d}
    used = {h for j in explicit.values() for h in j.hosts}
    placed = {i: _model_job(d, f"jobs[{i}]", fabric, rng, used)
              for i, d in enumerate(v) if "model" in d}
    placed.update({i: _pattern_job(d, f"jobs[{i}]", fabric, seed, used)
                   for i, d in enumerate(v) if "pattern" in d and "model" not in d})
    jobs: list[JobSpec] = [explicit[i] if i in explicit else placed[i] for i in range(len(v))]
    names: set[str] = set()
    for j in jobs:
        if j.name in names:
            raise ConfigError(f"jobs: job name {j.name!r} appears twice; names must be unique")
        names.add(j.name)
    seen: dict[str, str] = {}
    for i, j in enumerate(jobs):
        # a flows job's host may send and receive in several pairs; any other rank is one host
        for h in (dict.fromkeys(j.hosts) if j.collective is Collective.FLOWS else j.hosts):
            if h in seen:
                raise ConfigError(f"jobs[{i}].hosts: host {h!r} is listed twice (also in job "
                                  f"{seen[h]!r}); give each rank its own host")
            seen[h] = j.name
    return jobs


def _group_counts(collective: Collective, n: int) -> tuple[int, int, int]:
    """(connections, transfers per iteration, bytes sent per iteration / size_bytes) of one
    group of n ranks, as traffic/collectives.py plans them."""
    if collective is Collective.ALLREDUCE:
        return n, 2 * (n - 1) * n, 2 * (n - 1)
    if collective in (Collective.ALLGATHER, Collective.REDUCE_SCATTER):
        return n, (n - 1) * n, n - 1
    if collective is Collective.ALLTOALL:
        return n * (n - 1), n * (n - 1), n - 1
    if collective is Collective.FLOWS:
        return 1, 1, 1                  # one [src, dst] pair
    return n - 1, n - 1, n - 1          # pipeline


def _check_size(jobs: list[JobSpec], routing: list[str]) -> None:
    """Connections and transfers, counted before they are built."""
    conns = transfers = runs = 0
    for i, j in enumerate(jobs):
        c = t = 0
        for g in j.groups:
            gc, gt, _ = _group_counts(j.collective, len(g))
            c, t = c + gc, t + gt
        conns, transfers, runs = conns + c, transfers + t, runs + t * j.iterations
        if transfers > MAX_TRANSFERS:
            raise ConfigError(f"jobs[{i}]: the jobs up to here send {transfers:,} transfers per "
                              f"iteration; at most {MAX_TRANSFERS:,}: use fewer or smaller "
                              "groups")
        if runs > MAX_TRANSFER_RUNS:
            raise ConfigError(f"jobs[{i}].iterations: the jobs up to here run {runs:,} "
                              f"transfers in all; at most {MAX_TRANSFER_RUNS:,}: use fewer "
                              "iterations or smaller groups")
    if len(routing) * conns > SOURCE_PORT_SPAN // 2:
        raise ConfigError(f"routing: {len(routing)} routings x {conns} connections exceed "
                          f"the {SOURCE_PORT_SPAN // 2} source ports runs can use without "
                          "reusing one another's; list fewer routings or smaller jobs")


def ideal_iteration_s(job: JobSpec, fabric: Fabric) -> float:
    """One iteration of `job` on a non-blocking fabric (traffic/collectives.ideal_cct_s: the
    predictor's non-blocking model in closed form)."""
    return ideal_cct_s(job, fabric.spec.host_link_mbps)


def iteration_timeout_s(exp_jobs: list[JobSpec], fabric: Fabric,
                        emulation: EmulationConfig) -> float:
    """The run's timeout per iteration: given, or 20 x the slowest ideal CCT + 30 s."""
    if emulation.iteration_timeout_s is not None:
        return emulation.iteration_timeout_s
    slowest = max(ideal_iteration_s(j, fabric) for j in exp_jobs)
    return TIMEOUT_FACTOR * slowest + TIMEOUT_SLACK_S


def _check_timing(jobs: list[JobSpec], fabric: Fabric, em: EmulationConfig,
                  source: str | None = None) -> None:
    """Bound how long the experiment runs, and what the iteration timeout can be. `source`:
    the jobs_from key the jobs came from (messages name it and the job, not jobs[i])."""
    ideal = [ideal_iteration_s(j, fabric) for j in jobs]
    for i, (j, t) in enumerate(zip(jobs, ideal)):
        end = j.start_s + j.iterations * t + (j.iterations - 1) * j.compute_s
        if not end <= MAX_DURATION_S:
            where = f"jobs_from.{source}: job {j.name}" if source else f"jobs[{i}]"
            raise ConfigError(
                f"{where}: ends {end:,.0f} s after the start even on a non-blocking fabric; "
                f"an experiment may take at most {MAX_DURATION_S:,.0f} s (1 week): use fewer "
                "iterations, fewer bytes, less compute_s or faster links")
    k = max(range(len(jobs)), key=lambda i: ideal[i])
    if em.iteration_timeout_s is None:
        if TIMEOUT_FACTOR * ideal[k] + TIMEOUT_SLACK_S > MAX_SECONDS:
            where = f"jobs_from.{source}: job {jobs[k].name}" if source else f"jobs[{k}]"
            raise ConfigError(
                f"{where}: one iteration takes {ideal[k]:,.0f} s even on a non-blocking "
                f"fabric, so the default iteration timeout (20 x that + 30 s) exceeds "
                f"{MAX_SECONDS:,.0f} s; use fewer bytes or faster links, or set "
                "emulation.iteration_timeout_s")
    elif em.iteration_timeout_s < ideal[k]:
        raise ConfigError(
            f"emulation.iteration_timeout_s: {em.iteration_timeout_s:g} s is shorter than one "
            f"iteration of job {jobs[k].name!r} on a non-blocking fabric ({ideal[k]:.3g} s), "
            "so every run would time out; give more, or leave it out (20 x ideal + 30 s)")


def events_horizon_s(jobs: list[JobSpec], fabric: Fabric, em: EmulationConfig) -> float:
    """By this time every job has ended, or a run has stopped on its iteration timeout: the
    sum over jobs of start_s + iterations x (compute_s + the iteration timeout). An event
    later than this can never fire."""
    t = iteration_timeout_s(jobs, fabric, em)
    return sum(j.start_s + j.iterations * (j.compute_s + t) for j in jobs)


def _routing(v: Any) -> list[str]:
    names = ", ".join(sorted([*STRATEGIES, NONBLOCKING]))
    if not isinstance(v, list) or not v or not all(isinstance(r, str) for r in v):
        raise ConfigError(f"routing: expected a list of strategies from {names}, got {quote(v)}")
    for e in parse_entries(v):
        r = e.name
        if e.reference and e.enforcement != "switch":
            raise ConfigError(f"routing: {quote(r)}: the non-blocking reference has no routes "
                              "to enforce; write nonblocking")
        if e.strategy not in STRATEGIES and not e.reference:
            raise ConfigError(f"routing: unknown strategy {quote(e.strategy)}; choose from "
                              f"{names} (optionally with @host)")
        if e.enforcement not in ("switch", "host"):
            raise ConfigError(f"routing: {quote(r)}: the suffix must be @host (or nothing)")
        if e.host_enforced and e.hashed:
            raise ConfigError("routing: ecmp@host makes no sense: ECMP is the switches' hash")
    if len(set(v)) != len(v):
        raise ConfigError("routing: a strategy is listed twice")
    return list(v)


def apply_event(fabric: Fabric, event: Event) -> Fabric:
    """The fabric after `event` (testbed/fabric.py Fabric.changed); FabricError when it
    cannot be built (e.g. a leaf would be cut off)."""
    return fabric.changed(event.kind.startswith("fail"), tuple(event.target))


def host_pairs(plans) -> dict[tuple[str, str], tuple[str, str, str]]:
    """The host pairs the jobs' connections join (job plans of traffic/collectives.py), each
    with one (job, src host, dst host) that needs it."""
    out: dict[tuple[str, str], tuple[str, str, str]] = {}
    for p in plans:
        for c in p.connections:
            out.setdefault((c.src, c.dst), (c.job, c.src, c.dst))
    return out


def unreachable(fabric: Fabric, pairs: dict) -> str | None:
    """'job ring: h1 -> h5 (leaf1 to leaf3)' for the first pair of hosts whose leaves have no
    live shortest path on `fabric`, or None when every pair has one."""
    seen: set[tuple[str, str]] = set()
    for job, src, dst in pairs.values():
        a, b = fabric.leaf_of(src), fabric.leaf_of(dst)
        if (a, b) in seen or a == b:
            continue
        seen.add((a, b))
        if not fabric.switch_paths(a, b):
            return f"job {job}: {src} -> {dst} ({a} to {b})"
    return None


def _check_reachable(fabric: Fabric, pairs: dict) -> None:
    """The failures in the fabric section leave a live path for every pair of hosts the jobs
    connect; ConfigError naming the failure keys otherwise."""
    cut = unreachable(fabric, pairs)
    if cut:
        keys = [k for k in ("failed_spines", "failed_switches", "failed_links")
                if getattr(fabric.spec, k)]
        raise ConfigError(f"fabric.{'/'.join(keys) or 'failed_switches'}: the failures leave "
                          f"no live path for {cut}; fail fewer switches or links")


def _replay(events: list[Event], fabric: Fabric, pairs: dict | None = None) -> None:
    """Every event must change something, leave every leaf connected and every pair of hosts
    the jobs connect (`pairs`, from host_pairs) a live path."""
    for i, e in enumerate(events):
        failed = set(fabric.spec.failed) if e.on_switch else set(fabric.spec.failed_links)
        key = e.target[0] if e.on_switch else tuple(e.target)
        if e.kind.startswith("fail") == (key in failed):
            state = "already failed" if e.kind.startswith("fail") else "not failed"
            raise ConfigError(f"events (at_s {e.at_s:g}): {'/'.join(e.target)} is {state} "
                              f"then; {e.kind} changes nothing")
        try:
            fabric = apply_event(fabric, e)
        except FabricError as err:
            raise ConfigError(f"events (at_s {e.at_s:g}, {e.kind}): {err}") from None
        cut = unreachable(fabric, pairs or {})
        if cut:
            raise ConfigError(f"events (at_s {e.at_s:g}, {e.kind} {'/'.join(e.target)}): the "
                              f"fabric then has no live path for {cut}; fail less, or "
                              "restore something first")


def _event_target(fabric: Fabric, kind: str, t: Any, where: str) -> tuple[str, ...]:
    """A checked event target (the fabric model checks it): (switch,) or a link as (lower
    tier, upper tier)."""
    try:
        if kind.endswith("_link"):
            return fabric.failable_link(t)
        return (fabric.failable_switch(t, "spine" if kind.endswith("_spine") else None),)
    except FabricError as e:
        raise ConfigError(f"{where}.{kind}: {e}") from None


def _events(v: Any, fabric: Fabric, routing: list[str], jobs: list[JobSpec],
            em: EmulationConfig, pairs: dict | None = None) -> list[Event]:
    if v is None:
        return []
    if not isinstance(v, list):
        raise ConfigError("events: expected a list like [{at_s: 3.0, fail_spine: spine2}], "
                          f"got {type(v).__name__} {quote(v)}")
    if len(v) > MAX_EVENTS:
        raise ConfigError(f"events: {len(v):,} events; at most {MAX_EVENTS} (each one rebuilds "
                          "the fabric and re-solves every routing)")
    horizon = events_horizon_s(jobs, fabric, em) if v else 0.0
    events = []
    for i, d in enumerate(v):
        where = f"events[{i}]"
        _check_keys(d, {"at_s", *EVENT_KINDS}, where)
        at_s = _num(d, "at_s", where, positive=False)
        if at_s > horizon:
            raise ConfigError(
                f"{where}.at_s: {at_s:g} s is after every job has ended or timed out (by "
                f"{horizon:,.1f} s: start_s + iterations x (compute_s + the iteration timeout), "
                "summed over jobs), so it could never fire; schedule it earlier")
        kinds = [k for k in EVENT_KINDS if k in d]
        if len(kinds) != 1:
            raise ConfigError(f"{where}: give exactly one of {', '.join(EVENT_KINDS)}")
        kind = kinds[0]
        events.append(Event(at_s, kind, _event_target(fabric, kind, d[kind], where)))
    _replay(sorted(events, key=lambda e: e.at_s), fabric, pairs)
    if events and any(e.host_enforced for e in parse_entries(routing)):
        raise ConfigError("events: host-enforced routing (@host) fixes each flow's source port "
                          "when it connects, so it cannot reroute; drop @host or the events")
    return sorted(events, key=lambda e: e.at_s)


def _capture(c: Any, fabric: Fabric) -> bool | tuple[str, str]:
    """emulation.capture: true, false, or [switch, neighbour] (the switch's port to it)."""
    if isinstance(c, bool):
        return c
    if (isinstance(c, list) and len(c) == 2 and all(isinstance(x, str) for x in c)
            and fabric.is_switch(c[0]) and fabric.graph.has_edge(c[0], c[1])):
        return (c[0], c[1])
    raise ConfigError(f"emulation.capture: expected true, false or [switch, neighbour] "
                      f"joined by a link of this fabric, e.g. [agg1, core1] or [leaf1, h1], "
                      f"got {quote(c)}")


def _emulation(d: dict, fabric: Fabric) -> EmulationConfig:
    d = _check_keys(d, EMULATION_KEYS, "emulation")
    e = EmulationConfig()
    e.datapath = _choice(d, "datapath", "emulation", ("auto", "kernel", "user"), e.datapath)
    e.port_type = _choice(d, "port_type", "emulation", PORT_TYPES, e.port_type)
    e.tcp_cc = _choice(d, "tcp_cc", "emulation", TCP_CCS, e.tcp_cc,
                       " (dctcp is not in this kernel)")
    slowest = min(fabric.spec.rates_mbps().values())
    if d.get("mtu_bytes", "auto") == "auto":
        e.mtu_bytes, e.mtu_auto = auto_mtu_bytes(slowest), True
    else:
        e.mtu_bytes = _int(d, "mtu_bytes", "emulation", e.mtu_bytes, minimum=576,
                           maximum=MAX_MTU_BYTES, why="or auto")
        e.mtu_auto = False
    e.queue_packets = _int(d, "queue_packets", "emulation", e.queue_packets, minimum=2,
                           maximum=MAX_QUEUE_PACKETS)
    e.link_scheduler = _choice(d, "link_scheduler", "emulation", SCHEDULERS, e.link_scheduler)
    if d.get("window_frames", "auto") == "auto":
        # bounded under fair queuing; in one FIFO the ACKs wait behind up to a window of
        # data, and a bounded window then starves its own flow (ILP +7.5% at 5 Mbit/s)
        bound = min(DEFAULT_WINDOW_FRAMES, e.queue_packets)
        e.window_frames = bound if e.link_scheduler == "fair" and bound >= 4 else 0
    else:
        e.window_frames = _int(d, "window_frames", "emulation", 0, minimum=0,
                               maximum=MAX_QUEUE_PACKETS)
    if 0 < e.window_frames < 4 or e.window_frames > e.queue_packets:
        raise ConfigError(f"emulation.window_frames: auto, 0 (no bound) or 4..queue_packets "
                          f"({e.queue_packets}), so that a window fits its queue")
    e.switch_burst_frames = _int(d, "switch_burst_frames", "emulation",
                                 min(SWITCH_BURST_FRAMES, e.queue_packets), minimum=1,
                                 maximum=min(MAX_BURST_FRAMES, e.queue_packets),
                                 why="and at most queue_packets: a burst must fit its queue")
    if "capture" in d:
        e.capture = _capture(d["capture"], fabric)
    if d.get("iteration_timeout_s") is not None:
        e.iteration_timeout_s = _num(d, "iteration_timeout_s", "emulation")
    return e


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
    jobs = (_jobs(d.get("jobs"), fabric, seed) if imported is None
            else _imported_jobs(imported[1](fabric), fabric, _source_kind(d)))
    _check_size(jobs, routing)
    try:
        plans = plan_jobs(jobs)  # rings, bytes, unique 5-tuples
    except WorkloadError as e:
        raise ConfigError(_job_key(str(e), [j.name for j in jobs])) from None
    pairs = host_pairs(plans)
    _check_reachable(fabric, pairs)
    emulation = _emulation(_section(d, "emulation"), fabric)
    _check_timing(jobs, fabric, emulation, _source_kind(d) if imported is not None else None)
    events = _events(d.get("events"), fabric, routing, jobs, emulation, pairs)
    flows = _replay_flows(replay_log, fabric, plans) if replay_log is not None else None
    limit = (_num(d, "solver_time_limit_s", "config", maximum=MAX_SOLVER_S,
                  why="one hour per solve; a run solves at every epoch")
             if d.get("solver_time_limit_s") is not None else None)
    return Experiment(name, seed, fabric, jobs, routing, emulation, events, d,
                      _semantics(d.get("semantics")), replay_log, limit,
                      _jobs_source(d, base_dir) if imported is not None else None,
                      replay_flows=flows)


def _replay_flows(path: Path, fabric: Fabric, plans) -> Any:
    """replay_log read, and every connection's logged path checked against this fabric
    (routing/replay.py); ConfigError naming replay_log otherwise."""
    from routing.base import RoutingError
    from routing.replay import read_flow_log, route_replay
    try:
        flows = read_flow_log(path)
        route_replay(fabric, [c for p in plans for c in p.connections], flows)
    except RoutingError as e:       # ReplayError is one
        raise ConfigError(f"replay_log: {_one_line(e, 300)}") from None
    return flows


def load(path: str | Path) -> Experiment:
    """Read and validate an experiment YAML file; raises ConfigError."""
    return parse(read_yaml(path), Path(path).parent)


# -- other tools' inputs (issue 13): floodns traffic folders, replayed routes, semantics ------
JOBS_FROM_KEYS = {"floodns", "iterations", "failed_cores", "chakra", "comm_groups",
                  "simai"}


def _rel_path(v: str, base_dir: str | Path | None) -> Path:
    """A relative path is looked up beside the config file first, then from the working
    directory (callers that parse a document without its file give no base_dir)."""
    p = Path(v)
    if p.is_absolute() or base_dir is None or not (Path(base_dir) / p).exists():
        return p
    return Path(base_dir) / p


def _jobs_from(d: dict, base_dir: str | Path | None) -> tuple[dict | None, Any] | None:
    """`jobs_from:` another tool's workload: (the fabric section it implies or None, a
    function fabric -> JobSpecs). One of
    {floodns: PATH, iterations: 11, failed_cores: 0}: a floodns traffic folder
    (traffic/floodns.py) and the fabric floodns ran it on (64 leaves x 32 spines x 32 hosts
    at 100 Gbit/s, the failed_cores highest spines failed), used when there is no `fabric`;
    {chakra: FOLDER, comm_groups: JSON}: Chakra .et traces, one per rank (traffic/chakra.py);
    {simai: FILE}: a SimAI / ASTRA-sim 1.0 workload (traffic/simai.py). Paths are relative
    to the config file; rank r runs on host h{r+1}."""
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
                                     "chakra": {"comm_groups"}, "simai": set()}[kinds[0]]
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
        return floodns.PAPER_TOPOLOGY.fabric_section(failed), lambda fabric: jobs
    except floodns.FloodnsError as e:
        raise ConfigError(f"jobs_from.floodns: {_one_line(e, 300)}") from None


def _trace_jobs(src: dict, kind: str, base_dir: str | Path | None) -> Any:
    """fabric -> the JobSpecs of a Chakra trace folder or a SimAI workload file."""
    import json
    from traffic import chakra, files, simai
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

    def jobs(fabric: Fabric) -> list[JobSpec]:
        hosts, rate = list(fabric.hosts), fabric.spec.host_link_mbps
        try:
            if kind == "chakra":
                return chakra.job_specs(chakra.read_traces(path), hosts, rate, groups)
            return simai.job_specs(path, hosts, rate)
        except (chakra.ChakraError, simai.SimaiError) as e:
            raise ConfigError(f"jobs_from.{kind}: {_one_line(e, 300)}") from None
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
                          "with collectives or sends")
    if len(jobs) > MAX_JOBS:
        raise ConfigError(f"jobs_from: {len(jobs):,} jobs; at most {MAX_JOBS:,}")
    for j in jobs:
        for h in j.hosts:
            if not fabric.graph.has_node(h) or fabric.graph.nodes[h].get("role") != "host":
                raise ConfigError(f"jobs_from: job {j.name} uses host {h}, which this fabric "
                                  f"does not have (h1..h{len(fabric.hosts)})")
    return jobs


def _routing_replay(d: dict, base_dir: str | Path | None) -> tuple[list[str], Path | None]:
    """`routing` where `replay` (routing/replay.py) may appear beside the strategies; it
    needs `replay_log: PATH` (floodns's logs_floodns/flow_info.csv, relative to the config)."""
    v = d.get("routing")
    rest = [r for r in v if r != REPLAY] if isinstance(v, list) else v
    if isinstance(v, list) and v.count(REPLAY) > 1:
        raise ConfigError("routing: a strategy is listed twice")
    if isinstance(v, list) and REPLAY in v:
        if "replay_log" not in d:
            raise ConfigError("routing: replay needs replay_log: PATH (floodns's "
                              "logs_floodns/flow_info.csv)")
        if rest:
            _routing(rest)
        return list(v), _rel_path(_str(d, "replay_log", "config"), base_dir)
    if "replay_log" in d:
        raise ConfigError("replay_log: only with `replay` in routing; add it or remove this")
    return _routing(v), None


def _semantics(v: Any) -> Semantics:
    """`semantics: floodns` or {ring_sync: rank | step, recompute: epochs | iterations,
    tail_step: false | true}; absent: ours (traffic/predictor.py Semantics)."""
    if v is None:
        return Semantics()
    if v == "floodns":
        return Semantics.floodns()
    if not isinstance(v, dict):
        raise ConfigError(f"semantics: floodns, or a mapping of ring_sync, recompute, "
                          f"tail_step; got {quote(v)}")
    _check_keys(v, {"ring_sync", "recompute", "tail_step"}, "semantics")
    tail = v.get("tail_step", False)
    if not isinstance(tail, bool):
        raise ConfigError(f"semantics.tail_step: expected true or false, got {quote(tail)}")
    return Semantics(_choice(v, "ring_sync", "semantics", RING_SYNCS, "rank"),
                     _choice(v, "recompute", "semantics", RECOMPUTES, "epochs"), tail)


# -- bounds the CLI checks -------------------------------------------------------------------
def _longest_chain_bytes(plan) -> int:
    """The heaviest path of one iteration's transfer DAG, in bytes: a transfer waits for its
    deps and for the previous transfer on its connection (traffic/predictor.py)."""
    ts = plan.transfers
    pos = {t.tid: i for i, t in enumerate(ts)}
    preds: list[set[int]] = [set() for _ in ts]
    last: dict[int, int] = {}
    for i, t in enumerate(ts):
        preds[i].update(pos[d] for d in t.deps)
        if t.conn_id in last:
            preds[i].add(last[t.conn_id])
        last[t.conn_id] = i
    succ: list[list[int]] = [[] for _ in ts]
    indeg = [len(p) for p in preds]
    for i, p in enumerate(preds):
        for j in p:
            succ[j].append(i)
    finish = [0] * len(ts)
    ready = [i for i, n in enumerate(indeg) if n == 0]
    while ready:
        i = ready.pop()
        finish[i] += ts[i].size_bytes
        for k in succ[i]:
            finish[k] = max(finish[k], finish[i])
            indeg[k] -= 1
            if indeg[k] == 0:
                ready.append(k)
    return max(finish, default=0)


def duration_upper_bound_s(exp: Experiment, goodput_factor: float = 1.0) -> float:
    """No prediction of `exp` lasts longer than this, whatever the routing and the events.

    Max-min: every active flow has a saturated bottleneck link on which no flow is faster,
    so it moves at least that link's capacity / the flows on it. At most one transfer per
    connection is active, so a flow moves at least r = the smallest of host rate / the most
    connections leaving or entering one host, and spine-link rate / the most connections
    leaving or entering one leaf for another (any routing, any failures; in three tiers an
    agg-core link may carry every inter-leaf connection). An iteration then
    lasts at most its heaviest chain of dependent transfers at r, and a job ends by start_s +
    iterations x (that + compute_s)."""
    f = exp.fabric
    plans = plan_jobs(exp.jobs)
    per_host: dict[tuple[str, str], int] = {}
    per_leaf: dict[tuple[str, str], int] = {}
    for p in plans:
        for c in p.connections:
            for k in (("out", c.src), ("in", c.dst)):
                per_host[k] = per_host.get(k, 0) + 1
            a, b = f.leaf_of(c.src), f.leaf_of(c.dst)
            if a != b:
                for k in (("out", a), ("in", b)):
                    per_leaf[k] = per_leaf.get(k, 0) + 1
    rate = f.spec.host_link_mbps / max(per_host.values(), default=1)
    up = min(r for tier, r in f.spec.rates_mbps().items() if tier != "host")
    if per_leaf and len(f.choice_points) == 1:   # every path crosses one uplink each side
        rate = min(rate, up / max(per_leaf.values()))
    elif per_leaf:   # an upper link may carry every inter-leaf flow of the fabric
        crossing = sum(n for (side, _), n in per_leaf.items() if side == "out")
        rate = min(rate, up / crossing)
    bps = rate * 1e6 * goodput_factor
    return max(p.spec.start_s + p.spec.iterations
               * (_longest_chain_bytes(p) * 8 / bps + p.spec.compute_s) for p in plans)


def check_util_bin_s(exp: Experiment, util_bin_s: float | None,
                     goodput_factor: float = 1.0) -> None:
    """`predict --util-bin-s`: at least MIN_UTIL_BIN_S, and at most MAX_UTIL_CELLS bins x
    links over `duration_upper_bound_s`; raises ConfigError naming --util-bin-s."""
    if util_bin_s is None:
        return
    if not math.isfinite(util_bin_s) or not MIN_UTIL_BIN_S <= util_bin_s <= MAX_DURATION_S:
        raise ConfigError(f"--util-bin-s: must be from {MIN_UTIL_BIN_S:g} to "
                          f"{MAX_DURATION_S:,.0f} s, got {quote(util_bin_s)}")
    links = len(exp.fabric.links)
    bound = duration_upper_bound_s(exp, goodput_factor)
    cells = math.ceil(bound / util_bin_s) * links
    if cells > MAX_UTIL_CELLS:
        least = bound * links / MAX_UTIL_CELLS
        raise ConfigError(f"--util-bin-s: {util_bin_s:g} s gives up to "
                          f"{math.ceil(bound / util_bin_s):,} bins x {links:,} links (this "
                          f"config can last up to {bound:,.0f} s); at most "
                          f"{MAX_UTIL_CELLS:,} cells: give at least {least:.3g} s")

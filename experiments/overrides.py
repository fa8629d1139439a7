"""`--set key.path=value`: change one key of a config document before it is validated.

Pure code. A path is dotted keys with list indices, e.g. `fabric.spine_link_mbps`,
`jobs[0].iterations` (or `jobs.0.iterations`), `seed`. The value is read as YAML
(`10` is an int, `[ecmp, ilp]` a list, `auto` a string), then the whole document goes through
the config loader (experiments/config.py), so types and bounds come from the schema. A path the
config cannot hold is a ConfigError naming the key: unknown keys, an index past a list's end,
a key under a value that is not a mapping.
"""
from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from . import config
from .config import (EMULATION_KEYS, EVENT_KINDS, FABRIC_KEYS, TOP_KEYS, ConfigError,
                     Experiment, parse, quote, read_yaml, yaml_value)

#: At most this many --set options (and characters in one), like every number a user types.
MAX_SETS = 100
MAX_SET_CHARS = 10_000
_SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_@-]*)((?:\[\d{1,6}\])*)")
#: Every key a job of any kind takes (config.py's EXPLICIT_, MODEL_, PATTERN_JOB_KEYS, ...).
JOB_KEYS = frozenset().union(*(v for k, v in vars(config).items() if k.endswith("_JOB_KEYS")))
#: Keys a missing mapping may gain, by where it sits ("" is the top; "[]" any list item).
ALLOWED = {"": TOP_KEYS, "fabric": FABRIC_KEYS, "emulation": EMULATION_KEYS,
           "jobs[]": JOB_KEYS, "events[]": {"at_s", *EVENT_KINDS}}

Path_ = list[str | int]


def parse_path(key: str, label: str | None = None) -> Path_:
    """'jobs[0].iterations' or 'jobs.0.iterations' -> ['jobs', 0, 'iterations']."""
    label = label or f"--set {quote(key)}"
    if not isinstance(key, str) or not key or len(key) > 200:
        raise ConfigError(f"{label}: expected key.path=value, e.g. "
                          "fabric.spine_link_mbps=10")
    out: Path_ = []
    for part in key.split("."):
        if part.isdigit() and out:
            out.append(int(part))
            continue
        m = _SEGMENT.fullmatch(part)
        if not m:
            raise ConfigError(f"{label}: {quote(part)} is not a key; use names "
                              "and [index], e.g. jobs[0].iterations")
        out.append(m.group(1))
        out.extend(int(i) for i in re.findall(r"\d+", m.group(2)))
    return out


def shown(path: Path_) -> str:
    """['jobs', 0, 'iterations'] -> 'jobs[0].iterations'."""
    s = ""
    for p in path:
        s += f"[{p}]" if isinstance(p, int) else (f".{p}" if s else p)
    return s


def parse_set(text: str) -> tuple[Path_, Any]:
    """'fabric.spine_link_mbps=10' -> (['fabric', 'spine_link_mbps'], 10)."""
    if len(text) > MAX_SET_CHARS:
        raise ConfigError(f"--set: longer than {MAX_SET_CHARS:,} characters")
    key, eq, raw = text.partition("=")
    if not eq:
        raise ConfigError(f"--set {quote(text)}: expected key.path=value, e.g. "
                          "fabric.spine_link_mbps=10")
    path = parse_path(key.strip())
    # the config file's own loader: no anchors or aliases (an alias bomb), no integer of
    # more digits than Python converts, the same depth
    value = yaml_value(raw, f"--set {shown(path)}", marks=False) if raw.strip() else None
    return path, value


def _where(path: Path_) -> str:
    """The ALLOWED entry of the mapping at `path`."""
    return "".join("[]" if isinstance(p, int) else (f".{p}" if i else p)
                   for i, p in enumerate(path))


def set_path(doc: dict, path: Path_, value: Any, label: str | None = None) -> None:
    """Set `value` at `path` inside `doc` (in place); ConfigError naming the key (messages
    start with `label`, default `--set <key>`) when the config cannot hold it. Missing
    mappings on the way are created."""
    name = label or f"--set {shown(path)}"
    here: Any = doc
    for i, p in enumerate(path):
        last = i == len(path) - 1
        if isinstance(p, int):
            if not isinstance(here, list):
                raise ConfigError(f"{name}: {shown(path[:i]) or 'config'} is not a list")
            if p >= len(here):
                raise ConfigError(f"{name}: {shown(path[:i])} has {len(here)} items "
                                  f"(index 0..{len(here) - 1})")
        else:
            if not isinstance(here, dict):
                raise ConfigError(f"{name}: {shown(path[:i]) or 'config'} is not a "
                                  "mapping of keys")
            allowed = ALLOWED.get(_where(path[:i]))
            if p not in here and allowed is not None and p not in allowed:
                raise ConfigError(f"{name}: unknown key {quote(p)} in "
                                  f"{shown(path[:i]) or 'the config'}; allowed keys are "
                                  f"{', '.join(sorted(allowed))}")
            if p not in here and allowed is None:
                raise ConfigError(f"{name}: {shown(path[:i + 1])} is not in the config")
        if last:
            here[p] = value
        else:
            if isinstance(p, str) and here.get(p) is None:
                here[p] = {}
            here = here[p]


def apply_sets(doc: Any, sets: list[tuple[Path_, Any]]) -> Any:
    """A deep copy of `doc` with every (path, value) set, in order."""
    if len(sets) > MAX_SETS:
        raise ConfigError(f"--set: {len(sets)} given; at most {MAX_SETS}")
    if not isinstance(doc, dict):
        raise ConfigError(f"config: expected a mapping of keys, got {type(doc).__name__}")
    out = copy.deepcopy(doc)
    for path, value in sets:
        set_path(out, path, value)
    return out


def load_with(path: str | Path, texts: list[str] | None = None) -> Experiment:
    """Read a config file, apply `--set` texts, validate; raises ConfigError."""
    doc = read_yaml(path)
    if texts:
        doc = apply_sets(doc, [parse_set(t) for t in texts])
    return parse(doc, Path(path).parent)        # relative paths in it start at its folder


def set_values(texts: list[str] | None) -> dict[str, Any]:
    """The --set values as tidy-table columns: {'fabric.spine_link_mbps': 10}."""
    return {shown(p): v for p, v in (parse_set(t) for t in texts or [])}

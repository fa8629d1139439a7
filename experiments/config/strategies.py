"""The `routing` list (strategies of routing/registry.py, the non-blocking reference,
`replay` with its `replay_log`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from routing import STRATEGIES
from testbed.fabric import Fabric

from ..routing_entry import NONBLOCKING, REPLAY, parse_entries
from .readers import ConfigError, quote, _one_line, _rel_path, _str


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
        if e.per_packet and e.strategy != "spray":
            raise ConfigError(f"routing: {quote(r)}: only spray has a per-packet form "
                              "(spray@packet)")
        if e.enforcement not in ("switch", "host", "packet") or \
                ("@" in r and e.enforcement == "switch") or r.endswith("@"):
            raise ConfigError(f"routing: {quote(r)}: the suffix must be @host (or @packet "
                              "after spray, or nothing)")
        if e.host_enforced and e.hashed:
            raise ConfigError("routing: ecmp@host makes no sense: ECMP is the switches' hash")
    if len(set(v)) != len(v):
        raise ConfigError("routing: a strategy is listed twice")
    return list(v)


def _replay_flows(path: Path, fabric: Fabric, plans) -> Any:
    """replay_log read, and every connection's logged path checked against this fabric
    (routing/replay.py); ConfigError naming replay_log otherwise."""
    from routing.base import RoutingError
    from routing.replay import read_flow_log, route_replay
    from traffic.collectives import unique_connections
    try:
        flows = read_flow_log(path)
        route_replay(fabric, unique_connections(plans), flows)
    except RoutingError as e:       # ReplayError is one
        raise ConfigError(f"replay_log: {_one_line(e, 300)}") from None
    return flows


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

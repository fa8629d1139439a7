"""Routing: strategies that map each connection to a spine, and the rule records that enforce it.

`route(name, fabric, conns, seed)` is the one entry point; `STRATEGIES` lists the names.
"""
from __future__ import annotations

from typing import Callable

from testbed.fabric import Fabric
from traffic.collectives import Connection

from .base import RoutingError, RoutingPlan, SolveStats, max_link_flows
from .ecmp import route_ecmp
from .ilp import route_ilp

Strategy = Callable[..., RoutingPlan]

STRATEGIES: dict[str, Strategy] = {
    "ecmp": route_ecmp,
    "ilp": route_ilp,
}


def route(name: str, fabric: Fabric, conns: list[Connection], seed: int = 0,
          previous: dict[int, str | None] | None = None) -> RoutingPlan:
    try:
        strategy = STRATEGIES[name]
    except KeyError:
        raise RoutingError(f"routing: unknown strategy {name!r}; choose from {sorted(STRATEGIES)}")
    return strategy(fabric, conns, seed=seed, previous=previous)


__all__ = ["STRATEGIES", "RoutingError", "RoutingPlan", "SolveStats", "max_link_flows", "route"]

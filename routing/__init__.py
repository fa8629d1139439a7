"""Routing: strategies that map each connection to a spine, and the rule records that enforce it.

`route(name, fabric, conns, seed, previous)` is the one entry point; `STRATEGIES` lists the
names: ecmp, greedy, edge-coloring, annealing, ilp, mmf. Every strategy has the signature
(fabric, conns, seed=0, previous=None) -> RoutingPlan, never uses a failed spine or link, and
raises RoutingError naming the flow it cannot route. `previous` (conn_id -> spine) asks for a
low-churn solution (see routing/epochs.py).
"""
from __future__ import annotations

from typing import Callable

from testbed.fabric import Fabric
from traffic.collectives import Connection

from .annealing import route_annealing
from .base import RoutingError, RoutingPlan, SolveStats, max_link_flows
from .ecmp import route_ecmp
from .edge_coloring import route_edge_coloring
from .greedy import route_greedy
from .ilp import route_ilp
from .mmf import route_mmf

Strategy = Callable[..., RoutingPlan]

STRATEGIES: dict[str, Strategy] = {
    "ecmp": route_ecmp,
    "greedy": route_greedy,
    "edge-coloring": route_edge_coloring,
    "annealing": route_annealing,
    "ilp": route_ilp,
    "mmf": route_mmf,
}


def route(name: str, fabric: Fabric, conns: list[Connection], seed: int = 0,
          previous: dict[int, str | None] | None = None, **options) -> RoutingPlan:
    """Route `conns` with strategy `name`; `options` go to the strategy (e.g. time_limit_s)."""
    try:
        strategy = STRATEGIES[name]
    except KeyError:
        raise RoutingError(f"routing: unknown strategy {name!r}; choose from {sorted(STRATEGIES)}")
    return strategy(fabric, conns, seed=seed, previous=previous, **options)


__all__ = ["STRATEGIES", "RoutingError", "RoutingPlan", "SolveStats", "max_link_flows", "route"]

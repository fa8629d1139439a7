"""Routing: strategies that give each connection a path, and the rule records that enforce it.

`route(name, fabric, conns, seed, previous)` is the one entry point; `STRATEGIES` lists the
names: ecmp, greedy, edge-coloring, annealing, ilp, mmf, gff, spray. A route is a switch path from the
source leaf to the destination leaf, one of `Fabric.switch_paths` (routing/paths.py); every
strategy never uses a failed switch or link and raises RoutingError naming the flow it cannot
route. `previous` (conn_id -> path) asks for a low-churn solution (see routing/epochs.py).

greedy, edge-coloring, the ILP and mmf have a leaf-spine kernel (a path there is its spine:
flat arrays per leaf and spine) and a kernel on paths for three tiers (routing/paths.py); ecmp,
gff, spray and annealing are written on paths only (routing/registry.py's KERNELS says why each
pair stays two). spray deals each
connection's subflows over every live shortest path; `spray@packet` sprays per packet.
"""
from __future__ import annotations

from .base import RoutingError, RoutingPlan, SolveStats, max_link_flows
from .registry import KERNELS, STRATEGIES, TIME_LIMITED, Strategy, paths_of, route

__all__ = ["KERNELS", "STRATEGIES", "TIME_LIMITED", "RoutingError", "RoutingPlan", "SolveStats",
           "Strategy", "max_link_flows", "paths_of", "route"]

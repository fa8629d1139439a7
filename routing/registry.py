"""The strategy registry: name -> (leaf-spine kernel, three-tier kernel), and `route`, the one
entry point that dispatches to them (re-exported by the `routing` package). A module of its
own so that routing/epochs.py imports `route` at its top, with no import cycle."""
from __future__ import annotations

import importlib
from itertools import compress
from operator import attrgetter, not_
from typing import Callable

from testbed.fabric import Fabric
from traffic.collectives import Connection

from .base import RoutingError, RoutingPlan
from .paths import Path

Strategy = Callable[..., RoutingPlan]


def _lazy(module: str, name: str) -> Strategy:
    """routing.<module>.<name>, imported at its first call: a command imports only the
    strategies it routes by (the ILP's and mmf's modules import pulp and highspy, 0.1 s)."""
    def kernel(*args, **kwargs) -> RoutingPlan:
        return getattr(importlib.import_module(f"routing.{module}"), name)(*args, **kwargs)
    kernel.__name__ = kernel.__qualname__ = name
    kernel.__module__ = f"routing.{module}"
    return kernel


#: name -> (spine kernel, path kernel). `route` takes the spine kernel where a path has one
#: choice (the spine), the path kernel elsewhere and where a strategy has no spine kernel
#: (None); why each pair stays two kernels (their speed ratios and routes on the shipped
#: configs): docs/architecture.md, "Routing and rules". Each kernel's module is imported at
#: its first call (_lazy).
KERNELS: dict[str, tuple[Strategy | None, Strategy]] = {
    "ecmp": (_lazy("ecmp", "route_ecmp"), _lazy("ecmp", "route_ecmp")),
    "greedy": (_lazy("greedy", "route_greedy"), _lazy("greedy", "route_greedy_paths")),
    "edge-coloring": (_lazy("edge_coloring", "route_edge_coloring"),
                      _lazy("edge_coloring", "route_edge_coloring_paths")),
    "annealing": (None, _lazy("annealing", "route_annealing_paths")),
    "ilp": (_lazy("ilp", "route_ilp"), _lazy("ilp", "route_ilp_paths")),
    "mmf": (_lazy("mmf", "route_mmf"), _lazy("mmf_paths", "route_mmf_paths")),
    "gff": (_lazy("gff", "route_gff"), _lazy("gff", "route_gff")),
    "spray": (_lazy("spray", "route_spray"), _lazy("spray", "route_spray")),
}
STRATEGIES = sorted(KERNELS)
_WARM: set[str] = set()     # whose compiled loops are ready ("greedy": greedy.py's)


def _warm_more() -> dict[str, Callable[[], tuple[Callable[[], object], ...]]]:
    """Per strategy, its own compiled loops' warm-ups (imported only when it first runs)."""
    def annealing():
        from .annealing_kernel import warm
        return (warm,)

    def mmf():
        from . import mmf_descent, mmf_search
        return (mmf_search.warm, mmf_descent.warm)
    return {"annealing": annealing, "mmf": mmf}


_WARM_MORE = _warm_more()


def warm_kernels() -> tuple[float, str]:
    """routing/greedy.py's warm_kernels (greedy's compiled loops ready), imported here."""
    from .greedy import warm_kernels as warm
    return warm()


#: Strategies that call CBC and take `time_limit_s` (seconds per solve; 30 s ilp, 60 s mmf).
TIME_LIMITED = ("ilp", "mmf")


def route(name: str, fabric: Fabric, conns: list[Connection], seed: int = 0,
          previous: dict[int, Path | None] | None = None, **options) -> RoutingPlan:
    """Route `conns` with strategy `name`; `options` go to the strategy (e.g. time_limit_s).
    A transfer between two GPUs of one server crosses NVLink only: no strategy sees it, and
    its route is None (as within a leaf). On several planes, routing/planes.py picks each
    flow's plane and routes every plane alone."""
    try:
        two_tier, three_tier = KERNELS[name]
    except KeyError:
        raise RoutingError(f"routing: unknown strategy {name!r}; choose from {STRATEGIES}")
    if fabric.server_of:
        same = fabric.same_servers_of(list(map(attrgetter("src"), conns)),
                                      list(map(attrgetter("dst"), conns)))
        inside = list(map(attrgetter("conn_id"), compress(conns, same)))
        if inside:
            plan = route(name, fabric, list(compress(conns, map(not_, same))),
                         seed, previous, **options)
            plan.path_of.update(dict.fromkeys(inside))
            return plan
    if fabric.planes > 1:
        from .planes import route_planes
        return route_planes(name, route, fabric, conns, seed, previous, **options)
    if "greedy" not in _WARM and name not in ("ecmp", "gff", "spray"):   # no greedy loop there
        # once per process: numba's compile or cache load untimed
        warm_kernels()
        _WARM.add("greedy")
    if name in _WARM_MORE and name not in _WARM:
        for warm in _WARM_MORE[name]():         # their own compiled loops, also untimed
            warm()
        _WARM.add(name)
    if two_tier is None and previous and len(fabric.choice_points) == 1:
        ids = {c.conn_id for c in conns}      # a spine name as its path (leafA, s, leafB)
        previous = {**previous, **paths_of(fabric, conns, {c: p for c, p in previous.items()
                                                           if c in ids})}
    if two_tier is None or len(fabric.choice_points) > 1:
        return three_tier(fabric, conns, seed=seed, previous=previous, **options)
    spines = None if previous is None else {
        cid: (p if p is None or isinstance(p, str) else p[1]) for cid, p in previous.items()}
    plan = two_tier(fabric, conns, seed=seed, previous=spines, **options)
    plan.path_of = paths_of(fabric, conns, plan.path_of)
    return plan


def paths_of(fabric: Fabric, conns: list[Connection],
             routes: dict[int, Path | str | None]) -> dict[int, Path | None]:
    """Routes as switch paths: a leaf-spine route given by its spine becomes (leafA, s, leafB)."""
    by_id = {c.conn_id: c for c in conns}
    out: dict[int, Path | None] = {}
    for cid, r in routes.items():
        if isinstance(r, str):
            c = by_id[cid]
            r = (fabric.leaf_of(c.src), r, fabric.leaf_of(c.dst))
        out[cid] = r
    return out


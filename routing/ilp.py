"""The min-max-link-load ILP (PuLP + CBC): one spine per inter-leaf flow, minimize the most
flows on any directed leaf->spine or spine->leaf link; failed elements are not variables.

    min a   s.t.  sum_s x[f,s] = 1                     for every flow f
                  sum_{f from leaf l} x[f,s] <= a      for every live link l->s
                  sum_{f to leaf l}   x[f,s] <= a      for every live link s->l
                  x binary

The solver's status and relative gap are recorded; a non-optimal solve is reported, never fatal.
"""
from __future__ import annotations

import time
from collections import defaultdict

import pulp

from testbed.fabric import Fabric
from traffic.collectives import Connection

from .base import (RoutingError, RoutingPlan, SolveStats, candidate_spines, inter_leaf,
                   lower_bound_link_flows)


def route_ilp(fabric: Fabric, conns: list[Connection], seed: int = 0,
              previous: dict[int, str | None] | None = None,
              time_limit_s: float = 30.0) -> RoutingPlan:
    t0 = time.perf_counter()
    spine_of: dict[int, str | None] = {c.conn_id: None for c in conns}
    flows = inter_leaf(fabric, conns)
    lb = lower_bound_link_flows(fabric, conns)
    if not flows:
        return RoutingPlan("ilp", spine_of, SolveStats(time.perf_counter() - t0, "optimal", 0.0, lb))

    prob = pulp.LpProblem("min_max_link_flows", pulp.LpMinimize)
    a = pulp.LpVariable("a", lowBound=lb, cat="Integer")
    prob += a
    x: dict[tuple[int, str], pulp.LpVariable] = {}
    up = defaultdict(list)
    down = defaultdict(list)
    for f in flows:
        spines = candidate_spines(fabric, f)
        for s in spines:
            v = pulp.LpVariable(f"x_{f.conn_id}_{s}", cat="Binary")
            x[f.conn_id, s] = v
            up[fabric.leaf_of(f.src), s].append(v)
            down[s, fabric.leaf_of(f.dst)].append(v)
        prob += pulp.lpSum(x[f.conn_id, s] for s in spines) == 1, f"one_spine_{f.conn_id}"
    for (leaf, s), vs in up.items():
        prob += pulp.lpSum(vs) <= a, f"up_{leaf}_{s}"
    for (s, leaf), vs in down.items():
        prob += pulp.lpSum(vs) <= a, f"down_{s}_{leaf}"

    solver = pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit_s)
    prob.solve(solver)
    status = pulp.LpStatus[prob.status].lower()
    if prob.sol_status not in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        raise RoutingError(f"ilp: CBC found no feasible routing (status {status})")
    for (cid, s), v in x.items():
        if v.value() is not None and v.value() > 0.5:
            spine_of[cid] = s
    best = round(pulp.value(a))
    optimal = prob.sol_status == pulp.LpSolutionOptimal
    gap = 0.0 if optimal else (best - lb) / best if best else 0.0
    stats = SolveStats(time.perf_counter() - t0, "optimal" if optimal else "feasible", gap, lb)
    return RoutingPlan("ilp", spine_of, stats)

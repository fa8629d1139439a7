"""The min-max-link-load ILP (PuLP + CBC): one spine per inter-leaf flow, minimize the most
flows on any directed leaf->spine or spine->leaf link; failed elements are not variables.

    min a   s.t.  sum_s x[f,s] = 1                     for every flow f
                  sum_{f from leaf l} x[f,s] <= a      for every live link l->s
                  sum_{f to leaf l}   x[f,s] <= a      for every live link s->l
                  x binary

Solved in an equivalent aggregated form: flows of the same leaf pair (a, b) are
interchangeable (same usable spines, same links), so the variables are integers
y[(a,b),s] in [0, n_ab] = how many of the pair's flows take spine s, with sum_s y = n_ab. This
has (leaf pairs x spines) variables instead of (flows x spines) and no symmetric copies, which
is what makes paper-scale instances solve in seconds. Counts are turned back into one spine per
flow afterwards (flows keep their `previous` spine where the counts allow: low churn).

CBC is warm-started from the greedy solution (or `previous`), and `a` is bounded below by the
combinatorial lower bound and above by the start's value. The solver's status and gap are
recorded in SolveStats: "optimal" (gap 0), "feasible" (time limit hit with a solution; gap =
(found - lower bound) / found, an upper bound on the true gap), or "time-limit-start" (CBC
returned nothing usable: the warm start is returned). A solver problem is reported, never fatal.
When the warm start already meets the combinatorial lower bound it is optimal and CBC is not
called at all: the status is still "optimal", and `solver_ran` is False (`solver_calls` 0), so
such a solve time is not mistaken for CBC's.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import psutil
import pulp

from testbed.fabric import Fabric
from traffic.collectives import Connection

from .base import (FlowTable, RoutingPlan, SolveStats, assignment_from_spine_of,
                   assignment_loads, flow_table, spine_of_from_assignment, table_lower_bound)
from .edge_coloring import route_edge_coloring_paths
from .greedy import greedy_assignment, greedy_fill, greedy_fill_paths
from .groups import Groups, assignment_counts, counts_to_assignment, flow_groups
from .mmf_cuts import descend
from .paths import (Path, PathTable, assignment_of_paths, loads_of, max_load, path_lower_bound,
                    path_of_assignment, path_table)

def start_assignment(t: FlowTable, seed: int, previous: dict[int, str | None] | None) -> list[int]:
    """Warm start: previous spines where still usable, greedy for the rest (or plain greedy)."""
    if previous:
        assign = assignment_from_spine_of(t, previous)
        up, down = assignment_loads(t, assign)
        return greedy_fill(t, assign, up, down, seed)
    return greedy_assignment(t, seed)


#: CBC's own limit (-sec) binds only in branch and bound: a 2,048-NIC mmf round spent 11 min
#: past a 4 s limit in preprocessing. Past limit x CAP_FACTOR + CAP_SLACK_S its process is
#: ended, and the solve reports a solver error (the caller keeps its warm start).
CAP_FACTOR, CAP_SLACK_S = 2.0, 5.0


class CappedCBC(pulp.PULP_CBC_CMD):
    """PULP_CBC_CMD whose CBC process is ended once it has run `cap_s` seconds (PuLP may
    spend longer than that writing a large model before CBC even starts)."""

    def __init__(self, cap_s: float, **kw):
        super().__init__(**kw)
        self.cap_s = cap_s
        self.capped = False
        self._files: tuple = ()

    def actualSolve(self, lp, **kw):
        me = psutil.Process()
        before = {c.pid for c in me.children()}
        done = threading.Event()
        watcher = threading.Thread(target=self._watch, args=(me, before, done), daemon=True)
        watcher.start()
        try:
            return super().actualSolve(lp, **kw)
        finally:
            done.set()
            watcher.join()
            for f in self._files if self.capped else ():   # PuLP keeps them on an error
                with contextlib.suppress(OSError):
                    os.unlink(f)

    def create_tmp_files(self, *args):
        self._files = tuple(super().create_tmp_files(*args))
        return self._files

    def _watch(self, me: psutil.Process, before: set[int], done: threading.Event) -> None:
        """Until the solve returns: end the CBC it started (a child of ours that was not there
        before it) once that has run cap_s; SIGTERM, then SIGKILL after 2 s."""
        while not done.wait(0.2):
            for child in me.children():
                with contextlib.suppress(psutil.Error):
                    if child.pid in before or time.time() - child.create_time() < self.cap_s:
                        continue
                    self.capped = True
                    child.terminate()
                    if not psutil.wait_procs([child], timeout=2.0)[1]:
                        continue
                    child.kill()


def cbc(time_limit_s: float, warm: bool, first_solution: bool = False) -> pulp.PULP_CBC_CMD:
    """CBC with a time limit in seconds (threads left at the default on purpose), ended for
    good at CAP_FACTOR x the limit + CAP_SLACK_S; `first_solution`: stop at the first integer
    solution (any gap allowed)."""
    limit = max(1, int(round(time_limit_s)))
    return CappedCBC(limit * CAP_FACTOR + CAP_SLACK_S, msg=False, timeLimit=limit,
                     warmStart=warm, gapAbs=1e9 if first_solution else None)


def solver_error(solver: pulp.PULP_CBC_CMD, exc: Exception) -> str:
    """The status of a solve that raised: CBC ended at its cap, or crashed (the caller keeps
    its warm start either way)."""
    if getattr(solver, "capped", False):
        return f"time-limit (CBC ended at its {solver.cap_s:g} s cap; warm start kept)"
    return f"solver-error: {exc}"


def solved_values(var: dict, key) -> int:
    v = var[key].value()
    return 0 if v is None else int(round(v))


@dataclass
class MinMax:
    """Outcome of the min-max ILP on a FlowTable (see `solve_min_max`)."""

    assign: list[int]          # spine index per flow
    value: int                 # max link flows of `assign`
    status: str                # "optimal", "feasible", "time-limit-start (...)", "solver-error: ..."
    gap: float
    solver_ran: bool           # False: the warm start met the lower bound, CBC was not called


def solve_min_max(t: FlowTable, seed: int = 0, previous: dict[int, str | None] | None = None,
                  time_limit_s: float = 30.0) -> MinMax:
    """The aggregated min-max ILP of the module docstring on `t` (at least one flow)."""
    lb = table_lower_bound(t)
    S = t.n_spines
    start = start_assignment(t, seed, previous)
    up0, down0 = assignment_loads(t, start)
    ub = max(max(up0), max(down0))
    prefer = assignment_from_spine_of(t, previous) if previous else start
    groups = flow_groups(t)
    if ub <= lb:  # the warm start is already optimal (proven by the bound): CBC is not called
        return MinMax(start, ub, "optimal", 0.0, solver_ran=False)

    start_counts = assignment_counts(groups, start)
    prob = pulp.LpProblem("min_max_link_flows", pulp.LpMinimize)
    a = pulp.LpVariable("a", lowBound=lb, upBound=ub, cat="Integer")
    a.setInitialValue(ub)
    prob += a
    y: dict[tuple, pulp.LpVariable] = {}
    up = defaultdict(list)
    down = defaultdict(list)
    for key, ids in groups.items():
        sa, sb = key[-2], key[-1]
        n = len(ids)
        vs = []
        for s in t.pair_cand[sa, sb]:
            v = pulp.LpVariable(f"y_{sa}_{sb}_{s}", lowBound=0, upBound=n, cat="Integer")
            v.setInitialValue(start_counts[key].get(s, 0))
            y[key, s] = v
            vs.append(v)
            up[sa * S + s].append(v)
            down[sb * S + s].append(v)
        prob += pulp.lpSum(vs) == n, f"pair_{sa}_{sb}"
    for idx, vs in up.items():
        prob += pulp.lpSum(vs) <= a, f"up_{idx // S}_{idx % S}"
    for idx, vs in down.items():
        prob += pulp.lpSum(vs) <= a, f"down_{idx % S}_{idx // S}"

    try:
        prob.solve(solver := cbc(time_limit_s, warm=True))
        sol = prob.sol_status
    except pulp.PulpSolverError as exc:  # solver crash: report, keep the warm start
        sol, status_text = None, solver_error(solver, exc)
    if sol in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        counts = {key: {s: solved_values(y, (key, s)) for s in t.pair_cand[key[-2], key[-1]]}
                  for key in groups}
        assign = counts_to_assignment(t, groups, counts, prefer)
        upA, downA = assignment_loads(t, assign)
        best = max(max(upA), max(downA))
        if best > ub:  # never return worse than the start
            assign, best = start, ub
        optimal = sol == pulp.LpSolutionOptimal or best <= lb
        status = "optimal" if optimal else "feasible"
        gap = 0.0 if optimal else (best - lb) / best
        return MinMax(assign, best, status, gap, solver_ran=True)
    if sol is not None:
        status_text = f"time-limit-start ({pulp.LpStatus[prob.status].lower()})"
    return MinMax(start, ub, status_text, (ub - lb) / ub, solver_ran=True)


def route_ilp(fabric: Fabric, conns: list[Connection], seed: int = 0,
              previous: dict[int, str | None] | None = None,
              time_limit_s: float = 30.0) -> RoutingPlan:
    """Exact min-max link flows (aggregated ILP); `time_limit_s` bounds CBC in seconds."""
    t0 = time.perf_counter()
    t = flow_table(fabric, conns)
    lb = table_lower_bound(t)
    if not t.flows:
        return RoutingPlan("ilp", spine_of_from_assignment(t, []),
                           SolveStats(time.perf_counter() - t0, "optimal", 0.0, lb,
                                      solver_ran=False, solver_calls=0))
    r = solve_min_max(t, seed, previous, time_limit_s)
    stats = SolveStats(time.perf_counter() - t0, r.status, r.gap, lb,
                       solver_ran=r.solver_ran, solver_calls=int(r.solver_ran),
                       solver="cbc" if r.solver_ran else None)
    return RoutingPlan("ilp", spine_of_from_assignment(t, r.assign), stats)


# -- three tiers: the same ILP over paths -------------------------------------------------------
def solve_min_max_paths(t: PathTable, fabric: Fabric, seed: int = 0,
                        previous: dict[int, Path | None] | None = None,
                        time_limit_s: float = 30.0, lb: int | None = None,
                        polish: Callable[[list[int]], list[int]] | None = None) -> MinMax:
    """The aggregated min-max ILP on paths: y[(a,b),p] flows of leaf pair (a, b) on its
    candidate path p, sum_p y = n_ab, and every directed switch link's flows <= a. Warm start:
    the better of greedy and the staged edge-colouring (or `previous` + greedy), then
    `polish` (HiGHS only where it stays above the bound); bounds,
    statuses and the skipped-CBC case as `solve_min_max`. `lb`: path_lower_bound(t, fabric)
    when the caller has it already. `polish` (default: mmf's descent, routing/mmf_cuts.py;
    mmf passes its own with inputs built once; the identity gives HiGHS the start as it is):
    applied to a start above `lb` before HiGHS; a polished start at `lb` is optimal and HiGHS
    is not run."""
    if lb is None:
        lb = path_lower_bound(t, fabric)
    n = len(t.flows)
    prefer = assignment_of_paths(t, previous) if previous else None
    start = list(prefer) if prefer else [-1] * n
    greedy_fill_paths(t, start, loads_of(t, start), seed)
    ub = max_load(loads_of(t, start))
    if not previous and ub > lb:   # the staged colouring often meets the bound where greedy
        coloured = assignment_of_paths(
            t, route_edge_coloring_paths(fabric, t.conns, seed).path_of)
        if min(coloured) >= 0 and max_load(loads_of(t, coloured)) < ub:
            start, ub = coloured, max_load(loads_of(t, coloured))
    if prefer is None:
        prefer = start
    groups = flow_groups(t)
    if ub > lb:    # the descent from that start often meets the bound: then no HiGHS
        if polish is None:
            polish = lambda a: descend(t, a)[0]   # noqa: E731
        polished = polish(start)
        if max_load(loads_of(t, polished)) < ub:
            start, ub = polished, max_load(loads_of(t, polished))
    if ub <= lb:
        return MinMax(start, ub, "optimal", 0.0, solver_ran=False)
    return _min_max_highs(t, groups, start, prefer, lb, ub, time_limit_s)


def _min_max_highs(t: PathTable, groups: Groups, start: list[int], prefer: list[int], lb: int,
                   ub: int, time_limit_s: float) -> MinMax:
    """The aggregated min-max ILP on paths in HiGHS (routing/highs.py), from `start`."""
    from .highs import FEASIBLE, OPTIMAL, Model
    m = Model()
    a = int(m.add_columns([lb], [ub], True)[0])
    keys = [(key, p) for key in groups for p in t.pair_paths[key[-2], key[-1]]]
    cols = m.add_columns(np.zeros(len(keys)), [len(groups[key]) for key, _ in keys], True)
    y = dict(zip(keys, cols.tolist()))
    on_link: dict[int, list[int]] = defaultdict(list)
    rows = []
    for key, ids in groups.items():
        vs = [y[key, p] for p in t.pair_paths[key[-2], key[-1]]]
        rows.append((len(ids), len(ids), vs, [1.0] * len(vs)))
        for p in t.pair_paths[key[-2], key[-1]]:
            for e in t.path_links[p]:
                on_link[e].append(y[key, p])
    rows += [(-np.inf, 0.0, vs + [a], [1.0] * len(vs) + [-1.0]) for vs in on_link.values()]
    m.add_rows(rows)
    x0 = np.zeros(m.n_cols)
    x0[a] = ub
    for key, c in assignment_counts(groups, start).items():
        for p, n in c.items():
            x0[y[key, p]] = n
    cost = np.zeros(m.n_cols)
    cost[a] = 1.0
    out = m.minimize(cost, x0, time_limit_s)
    if out.status not in (OPTIMAL, FEASIBLE):
        return MinMax(start, ub, "time-limit-start (no solution)", (ub - lb) / ub,
                      solver_ran=True)
    counts = {key: {p: int(round(out.x[y[key, p]])) for p in t.pair_paths[key[-2], key[-1]]}
              for key in groups}
    assign = counts_to_assignment(t, groups, counts, prefer)
    best = max_load(loads_of(t, assign))
    if best > ub:
        assign, best = start, ub
    proven = max(lb, int(np.ceil(out.bound - 1e-6)) if np.isfinite(out.bound) else lb)
    optimal = out.status == OPTIMAL or best <= proven
    return MinMax(assign, best, "optimal" if optimal else "feasible",
                  0.0 if optimal else (best - proven) / best, solver_ran=True)


def route_ilp_paths(fabric: Fabric, conns: list[Connection], seed: int = 0,
                    previous: dict[int, Path | None] | None = None,
                    time_limit_s: float = 30.0) -> RoutingPlan:
    """Exact min-max link flows over paths (three tiers)."""
    t0 = time.perf_counter()
    t = path_table(fabric, conns)
    if not t.flows:
        return RoutingPlan("ilp", path_of_assignment(t, []),
                           SolveStats(time.perf_counter() - t0, "optimal", 0.0, 0,
                                      solver_ran=False, solver_calls=0))
    r = solve_min_max_paths(t, fabric, seed, previous, time_limit_s)
    stats = SolveStats(time.perf_counter() - t0, r.status, r.gap, path_lower_bound(t, fabric),
                       solver_ran=r.solver_ran, solver_calls=int(r.solver_ran),
                       solver="highs" if r.solver_ran else None)
    return RoutingPlan("ilp", path_of_assignment(t, r.assign), stats)

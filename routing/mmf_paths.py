"""mmf on three tiers: the two layers of routing/mmf.py over paths, proven by cuts, with HiGHS
only for the rounds the cuts do not settle.

    top level A      the min-max ILP on paths (routing/ilp.py; HiGHS only when greedy, the
                     staged colouring and the descent below, run from their start, all
                     miss the path lower bound)
    descent          single-flow moves that lower the sorted link loads without raising any
                     job's level (routing/mmf_cuts.py), from the ILP's solution
    rounds           jobs at >= k for k = A..2, then links at >= k, each compared with its
                     lower bound (the cut relaxation of routing/mmf_cuts.py: per-cut job
                     levels, and the balanced loads of every cut); a round whose count meets
                     its bound is proven without a solver

A round above its bound goes to the unary model of routing/mmf.py on paths, built once in
HiGHS (highspy) and kept: each round changes its objective, adds one fixed count and starts
from the current solution; HiGHS's dual bound, or our cut bound if higher, proves it. The
descent runs again after a round that moved flows (it keeps every count fixed so far).

Measured on experiments/configs/clos3-2048-5jobs.yaml (10 epochs, up to 1,728 flows over
3,504 paths): every round of every epoch met its cut bound after the descent (HiGHS never
ran). The former form (PuLP writing, CBC re-reading a 25 MB model every round) took 323 s
for the 10 epochs, statuses "feasible" and "optimal" mixed; with no warm start HiGHS found no
solution of the first round (jobs at 4) in 60 s either, which is why the cuts come first.

Status: "optimal" when the ILP and every round are proven; else "feasible (job layer
optimal)" or "feasible", with the gap of the top level as in routing/mmf.py, and each round
left open with its count and proven lower bound (`open_rounds`). `solver_calls` counts the
HiGHS solves (the ILP's included); `solver` is "highs" when one ran.

HiGHS is not tried on a model of more than MAX_HIGHS_COLUMNS path columns: on
experiments/configs/clos3-16k-jobs.yaml's second epoch (704 flows, 2 jobs, top level 2
proven; about 90,000 columns) it ran the round "jobs at >= 2" (found 2, bound 1) for its
whole 60 s without a better solution or bound, and took 4 s to build; such rounds stay open
at once, stated in `open_rounds`.

The descent also lowers the top level: a re-plan from previous paths that greedy leaves above
the path lower bound (flows gone, their jobs' links freed) is descended before HiGHS, and one
that reaches the bound is proven without it. On clos3-16k-jobs the 9 such epochs ran the
min-max ILP in HiGHS for 13-24 s CPU each; each now reaches the bound in 0.2-7 s all told.
"""
from __future__ import annotations

import time
from collections import defaultdict

import numpy as np

from testbed.fabric import Fabric
from traffic.collectives import Connection

from .base import RoutingPlan, SolveStats
from .highs import Model
from .groups import flow_groups
from .ilp import solve_min_max_paths
from .mmf_cuts import CutBounds, descend
from .paths import Path, PathTable, _PathLinks, loads_of, max_load, path_lower_bound, path_of_assignment, \
    path_table

#: the largest model (path columns y) given to HiGHS; see the module docstring
MAX_HIGHS_COLUMNS = 20_000


def route_mmf_paths(fabric: Fabric, conns: list[Connection], seed: int = 0,
                    previous: dict[int, Path | None] | None = None,
                    time_limit_s: float = 60.0) -> RoutingPlan:
    """Lexicographic max-min over jobs, then links, on paths (module docstring); seconds."""
    t0 = time.perf_counter()
    t = path_table(fabric, conns)
    lb = path_lower_bound(t, fabric)
    if not t.flows:
        return RoutingPlan("mmf", path_of_assignment(t, []),
                           SolveStats(time.perf_counter() - t0, "optimal", 0.0, lb,
                                      solver_ran=False, solver_calls=0))

    def polish(start: list[int]) -> list[int]:   # the descent lowers the top level too
        return descend(t, start)[0]
    top = solve_min_max_paths(t, fabric, seed, previous, time_limit_s / 2, lb=lb,
                              polish=polish)
    calls, assign, A = int(top.solver_ran), top.assign, top.value
    solvers = ["highs"] if top.solver_ran else []
    all_optimal = jobs_optimal = top.status == "optimal"
    if A >= 2:
        bounds = CutBounds(t, A, top.status == "optimal")
        assign = descend(t, assign)[0]
        if previous and not settled(t, assign, bounds):
            # the low-churn start's descent is stuck above a bound: a fresh start's may not be
            fresh = solve_min_max_paths(t, fabric, seed, None, time_limit_s / 2, lb=lb,
                                        polish=polish)
            calls += int(fresh.solver_ran)
            solvers += ["highs"] if fresh.solver_ran and not solvers else []
            if fresh.value == A:
                other = descend(t, fresh.assign)[0]
                if objective(t, other) < objective(t, assign):
                    assign = other
        rounds = _Rounds(t, A, assign, t0 + time_limit_s)
        all_optimal, jobs_optimal = rounds.run(bounds, all_optimal)
        if rounds.calls:
            calls += rounds.calls
            solvers = ["highs"]
        assign = rounds.assign
        open_rounds = rounds.open
    else:
        open_rounds = []
    status = ("optimal" if all_optimal else
              "feasible (job layer optimal)" if A >= 2 and jobs_optimal else "feasible")
    m = max_load(loads_of(t, assign))
    gap = 0.0 if top.status == "optimal" else (m - lb) / m
    stats = SolveStats(time.perf_counter() - t0, status, gap, lb, solver_ran=calls > 0,
                       solver_calls=calls, solver=", ".join(solvers) or None,
                       open_rounds=open_rounds)
    return RoutingPlan("mmf", path_of_assignment(t, assign), stats)


def counts(t: PathTable, assign: list[int]) -> tuple[list[int], dict[int, int]]:
    """(flows per link, level per job index) of a full assignment (numpy over the assigned
    paths' links; counts_reference is the plain loop)."""
    pl = t.path_links
    if not isinstance(pl, _PathLinks) or not len(assign):
        return counts_reference(t, assign)
    m = pl.matrix(np.asarray(assign, dtype=np.int64))
    ok = m >= 0
    load = np.bincount(m[ok], minlength=t.n_links)
    worst = np.where(ok, load[np.where(ok, m, 0)], 0).max(axis=1)
    level = np.zeros(len(t.job_names), dtype=np.int64)
    job = np.asarray(t.job, dtype=np.int64)
    np.maximum.at(level, job, worst)
    return load.tolist(), {j: int(level[j]) for j in np.unique(job).tolist()}


def counts_reference(t: PathTable, assign: list[int]) -> tuple[list[int], dict[int, int]]:
    """counts by a loop over every flow's links."""
    load = loads_of(t, assign)
    level: dict[int, int] = defaultdict(int)
    pl = t.path_links
    for j, p in zip(t.job, assign):
        m = max(load[e] for e in pl[p])
        if m > level[j]:
            level[j] = m
    return load, dict(level)


def objective(t: PathTable, assign: list[int]) -> tuple[list[int], list[int]]:
    """The two layers' vectors (job levels, link loads; each sorted in decreasing order):
    a smaller tuple is a better solution."""
    load, level = counts(t, assign)
    return sorted(level.values(), reverse=True), sorted((v for v in load if v), reverse=True)


def settled(t: PathTable, assign: list[int], bounds: CutBounds) -> bool:
    """Does every round of `assign` meet its lower bound (so that it is optimal)?"""
    load, level = counts(t, assign)
    fixed: dict[str, dict[int, int]] = {"jobs": {}, "links": {}}
    for layer, values in (("jobs", list(level.values())), ("links", load)):
        for k in range(bounds.A, 1, -1):
            fixed[layer][k] = value = sum(1 for v in values if v >= k)
            bound = (bounds.jobs(k, fixed["jobs"]) if layer == "jobs"
                     else bounds.links_after(k, fixed["jobs"], fixed["links"]))
            if value > bound:
                return False
    return True


class _Rounds:
    """The rounds of the module docstring over one PathTable: the current assignment, the
    counts fixed so far, and the HiGHS model (built on the first round that needs it)."""

    def __init__(self, t: PathTable, A: int, assign: list[int], deadline: float):
        self.t, self.A, self.assign, self.deadline = t, A, list(assign), deadline
        self.fixes: list[tuple[str, int, int]] = []
        self.calls = 0
        self.model: _HighsModel | None = None
        self.open: list[dict] = []        # rounds left unproven: count found, proven bound
        self._columns: int | None = None
        self._counted: tuple[list[int], tuple] | None = None

    def value(self, layer: str, k: int) -> int:
        if self._counted is None or self._counted[0] is not self.assign:
            self._counted = (self.assign, counts(self.t, self.assign))   # once per solution
        load, level = self._counted[1]
        values = level.values() if layer == "jobs" else load
        return sum(1 for v in values if v >= k)

    def run(self, bounds: CutBounds, top_optimal: bool) -> tuple[bool, bool]:
        """Every round in order; (all proven, job layer proven)."""
        all_optimal = jobs_optimal = top_optimal
        fixed: dict[str, dict[int, int]] = {"jobs": {}, "links": {}}
        todo = [(layer, k) for layer in ("jobs", "links") for k in range(self.A, 1, -1)]
        for n, (layer, k) in enumerate(todo):
            current = self.value(layer, k)
            bound = (bounds.jobs(k, fixed["jobs"]) if layer == "jobs"
                     else bounds.links_after(k, fixed["jobs"], fixed["links"]))
            optimal, value = True, current
            if current > bound:
                share = (self.deadline - time.perf_counter()) / (len(todo) - n)
                optimal, value, proven = self.minimize(layer, k, bound, share)
                if not optimal:
                    self.open.append({"layer": layer, "k": k, "found": value,
                                      "bound": proven})
            all_optimal = all_optimal and optimal
            if layer == "jobs":
                jobs_optimal = jobs_optimal and optimal
            fixed[layer][k] = value
            self.fixes.append((layer, k, value))
            if self.model is not None:
                self.model.fix(layer, k, value)
        return all_optimal, jobs_optimal

    def minimize(self, layer: str, k: int, bound: int, budget_s: float
                 ) -> tuple[bool, int, int]:
        """One round in HiGHS from the current solution: (proven, the count kept, its proven
        lower bound)."""
        current = self.value(layer, k)
        if budget_s < 0.5 or self.columns() > MAX_HIGHS_COLUMNS:
            return False, current, bound
        if self.model is None:
            everyone_at_top = self.fixes[:1] == [("jobs", self.A, len(self.t.job_names))]
            self.model = _HighsModel(self.t, self.A, jobs_apart=not everyone_at_top)
            for fix in self.fixes:
                self.model.fix(*fix)
        self.calls += 1
        found, dual = self.model.solve(layer, k, self.assign, budget_s)
        if found is not None:
            found = descend(self.t, found)[0]
            load, level = counts(self.t, found)
            if sum(1 for v in (level.values() if layer == "jobs" else load) if v >= k) \
                    <= current:
                self.assign = found
        value = self.value(layer, k)
        return value <= max(bound, dual), value, max(bound, dual)

    def columns(self) -> int:
        """The path columns of the HiGHS model (a group per job and leaf pair)."""
        if self._columns is None:
            pairs = {(j, a, b) for a, b, j in zip(self.t.src, self.t.dst, self.t.job)}
            self._columns = sum(len(self.t.pair_paths[a, b]) for _, a, b in pairs)
        return self._columns


class _HighsModel:
    """The unary model of routing/mmf.py on a PathTable in HiGHS, kept across rounds:
    y[j,(a,b),p] integer (flows of job j's pair on path p), g[e,k] binary (link e at >= k),
    l[j,k] binary (job j at >= k), u[j,e] in [0, 1] (job j uses link e)."""

    def __init__(self, t: PathTable, A: int, jobs_apart: bool = True):
        """`jobs_apart` False: one job stands for all (valid once every job is at level A:
        no load above A can raise one), a model without per-job levels to tell apart."""
        self.t, self.A, self.jobs_apart = t, A, jobs_apart
        self.groups = (flow_groups(t, by_job=True) if jobs_apart else
                       {(0, *key): ids for key, ids in flow_groups(t).items()})
        self.m = Model()
        self._columns()
        self._constraints()

    def _columns(self) -> None:
        t, ks, m = self.t, range(2, self.A + 1), self.m
        self.y: dict[tuple, int] = {}
        self.on_link: dict[int, list[int]] = defaultdict(list)
        self.job_on: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
        keys = [(key, p) for key, ids in self.groups.items()
                for p in t.pair_paths[key[1], key[2]]]
        cols = m.add_columns(np.zeros(len(keys)),
                             [len(self.groups[key]) for key, _ in keys], True).tolist()
        for (key, p), c in zip(keys, cols):
            self.y[key, p] = c
            for e in t.path_links[p]:
                self.on_link[e].append(c)
                self.job_on[key[0], e].append((c, len(self.groups[key])))
        self.jobs = sorted({key[0] for key in self.groups})
        gk = [(e, k) for e in self.on_link for k in ks]
        self.g = dict(zip(gk, m.add_columns(np.zeros(len(gk)), np.ones(len(gk)), True).tolist()))
        lk = [(j, k) for j in self.jobs for k in ks]
        self.l = dict(zip(lk, m.add_columns(np.zeros(len(lk)), np.ones(len(lk)), True).tolist()))
        self.u = dict(zip(self.job_on, m.add_columns(np.zeros(len(self.job_on)),
                                                     np.ones(len(self.job_on)), False).tolist()))

    def _constraints(self) -> None:
        t, ks, rows = self.t, list(range(2, self.A + 1)), []
        for key, ids in self.groups.items():
            cols = [self.y[key, p] for p in t.pair_paths[key[1], key[2]]]
            rows.append((len(ids), len(ids), cols, [1.0] * len(cols)))
        for e, cols in self.on_link.items():
            gs = [self.g[e, k] for k in ks]
            rows.append((-np.inf, 1, cols + gs, [1.0] * len(cols) + [-1.0] * len(gs)))
            rows += [(-np.inf, 0, [self.g[e, k + 1], self.g[e, k]], [1.0, -1.0])
                     for k in ks[:-1]]
        for j in self.jobs:
            rows += [(-np.inf, 0, [self.l[j, k + 1], self.l[j, k]], [1.0, -1.0])
                     for k in ks[:-1]]
        for (j, e), uses in self.job_on.items():
            u = self.u[j, e]
            rows += [(-np.inf, 0, [c, u], [1.0, -float(n)]) for c, n in uses]
            rows += [(-np.inf, 1, [u, self.g[e, k], self.l[j, k]], [1.0, 1.0, -1.0])
                     for k in ks]
        self.m.add_rows(rows)

    def _terms(self, layer: str, k: int) -> list[int]:
        return ([self.l[j, k] for j in self.jobs] if layer == "jobs"
                else [self.g[e, k] for e in self.on_link])

    def fix(self, layer: str, k: int, value: int) -> None:
        """Count k of `layer` at most `value` from now on (jobs: only when apart)."""
        if layer == "jobs" and not self.jobs_apart:
            return
        cols = self._terms(layer, k)
        self.m.add_rows([(-np.inf, value, cols, [1.0] * len(cols))])

    def start(self, assign: list[int]) -> np.ndarray:
        """Every column's value in the solution `assign`."""
        x = np.zeros(self.m.n_cols)
        for key, ids in self.groups.items():
            for i in ids:
                x[self.y[key, assign[i]]] += 1
        load, level = counts(self.t, assign)
        for (e, k), c in self.g.items():
            x[c] = load[e] >= k
        for (j, k), c in self.l.items():
            x[c] = level.get(j, 0) >= k
        for (j, e), uses in self.job_on.items():
            x[self.u[j, e]] = any(x[c] > 0 for c, _ in uses)
        return x

    def solve(self, layer: str, k: int, assign: list[int],
              budget_s: float) -> tuple[list[int] | None, int]:
        """Minimize count k of `layer` from `assign` within budget_s seconds: (the solution
        found, or None; the proven lower bound on the count)."""
        cost = np.zeros(self.m.n_cols)
        cost[self._terms(layer, k)] = 1.0
        out = self.m.minimize(cost, self.start(assign), budget_s)
        dual = int(np.ceil(out.bound - 1e-6)) if np.isfinite(out.bound) else 0
        if out.x is None:
            return None, dual
        found = [-1] * len(self.t.flows)
        for key, ids in self.groups.items():
            pool = [p for p in self.t.pair_paths[key[1], key[2]]
                    for _ in range(int(round(out.x[self.y[key, p]])))]
            for i, p in zip(ids, pool):
                found[i] = p
        return (found if -1 not in found else None), dual

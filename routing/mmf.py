"""The "2-layered max-min" objective, by iterated ILPs (PuLP + CBC), leaf-spine.

Layer 1, jobs: the vector of the jobs' levels (a job's level: the most flows on any directed
leaf<->spine link one of its flows uses), sorted in decreasing order, is minimized
lexicographically. Layer 2, flows: with layer 1 kept, the sorted link-load vector likewise.
Rounds fix counts from the top level A (the min-max ILP's, routing/ilp.py) down: jobs at level
>= k (n_k), then links at >= k flows (G_k), each bounded from below by `Bounds`
(routing/mmf_bounds.py) and proven by the bound or by CBC. Statuses: "optimal" only when every
round is proven, else "feasible (job layer optimal)" or "feasible"; all CBC solves share
`time_limit_s`. The formulation (unary levels and loads, clean capacity cuts, the bounds,
symmetry breaking) and its measurements: docs/prediction.md, "mmf on two tiers".
"""
from __future__ import annotations

import time
from collections import defaultdict

import pulp

from testbed.fabric import Fabric
from traffic.collectives import Connection

from .base import (FlowTable, RoutingPlan, SolveStats, assignment_from_spine_of,
                   assignment_loads, flow_table, spine_of_from_assignment, table_lower_bound)
from .groups import assignment_counts, counts_to_assignment, flow_groups
from .ilp import cbc, solve_min_max, solved_values
from .mmf_bounds import (Bounds, clean_capacity, first_appearance_limits, job_levels,
                         leaf_sides, relabel_first_appearance, rename_towards, round_value,
                         spine_classes)


# -- the solver ----------------------------------------------------------------------------------
def route_mmf(fabric: Fabric, conns: list[Connection], seed: int = 0,
              previous: dict[int, str | None] | None = None,
              time_limit_s: float = 60.0) -> RoutingPlan:
    """Lexicographic max-min over jobs, then flows (see module docstring); seconds."""
    t0 = time.perf_counter()
    t = flow_table(fabric, conns)
    lb = table_lower_bound(t)
    if not t.flows:
        return RoutingPlan("mmf", spine_of_from_assignment(t, []),
                           SolveStats(time.perf_counter() - t0, "optimal", 0.0, lb,
                                      solver_ran=False, solver_calls=0))
    top = solve_min_max(t, seed, previous, time_limit_s)
    calls = int(top.solver_ran)
    assign = top.assign
    A = top.value
    top_proven = top.status == "optimal"
    all_optimal = jobs_optimal = top_proven
    if A >= 2:  # (at A = 1 every level and load is 1: nothing below the top to optimize)
        prefer = assignment_from_spine_of(t, previous) if previous else list(assign)
        deadline = t0 + time_limit_s
        rounds = MmfRounds(t, A, assign, prefer, deadline)
        bounds = Bounds(t, A, top_proven)
        job_fixes: dict[int, int] = {}
        todo = [(layer, k) for layer in ("jobs", "links") for k in range(A, 1, -1)]
        for n_round, (layer, k) in enumerate(todo):
            current = round_value(t, layer, k, rounds.assign)
            bound = (bounds.jobs(k, job_fixes) if layer == "jobs"
                     else bounds.links(k, job_fixes))
            if current <= bound:          # proven by the bound: nothing to solve
                value = current
            else:                         # an equal share of the time left
                share = (deadline - time.perf_counter()) / (len(todo) - n_round)
                n, optimal, value = rounds.minimize(layer, k, bound, share)
                calls += n
                all_optimal = all_optimal and optimal
                if layer == "jobs":
                    jobs_optimal = jobs_optimal and optimal
            rounds.fix(layer, k, value)
            if layer == "jobs":
                job_fixes[k] = value
        assign = rounds.result()
    if all_optimal:
        status = "optimal"
    elif A >= 2 and jobs_optimal:
        status = "feasible (job layer optimal)"
    else:
        status = "feasible"
    up, down = assignment_loads(t, assign)
    m = max(max(up), max(down))
    gap = 0.0 if (all_optimal or top_proven) else (m - lb) / m
    stats = SolveStats(time.perf_counter() - t0, status, gap, lb,
                       solver_ran=calls > 0, solver_calls=calls,
                       solver="cbc" if calls else None)
    return RoutingPlan("mmf", spine_of_from_assignment(t, assign), stats)


class MmfRounds:
    """The unary model of the module docstring, built on first use and re-solved per round
    with another objective and one more fixed count."""

    def __init__(self, t: FlowTable, A: int, assign: list[int], prefer: list[int],
                 deadline: float):
        self.t, self.A, self.prefer, self.deadline = t, A, prefer, deadline
        self.assign = list(assign)
        self.groups = flow_groups(t, by_job=True)
        self.order = sorted(self.groups)
        self.classes = spine_classes(t)
        self.fixes: list[tuple[str, int, int]] = []
        self.prob: pulp.LpProblem | None = None

    def fix(self, layer: str, k: int, value: int) -> None:
        """Keep count k of `layer` at most `value` in every later round."""
        self.fixes.append((layer, k, value))
        if self.prob is not None:
            self.prob += self.count_expr[layer][k] <= value, f"fix_{layer}_{k}"

    def result(self) -> list[int]:
        """The current solution, spines renamed within classes towards `prefer`."""
        if self.prob is None:          # never renamed
            return self.assign
        assign = rename_towards(self.t, self.classes, self.assign, self.prefer)
        counts = assignment_counts(self.groups, assign)
        return counts_to_assignment(self.t, self.groups, counts, self.prefer)

    def _build(self) -> None:
        t, A, S, groups = self.t, self.A, self.t.n_spines, self.groups
        self.assign = relabel_first_appearance(t, groups, self.order, self.classes, self.assign)
        allowed = first_appearance_limits(t, groups, self.order, self.classes)
        prob = pulp.LpProblem("mmf", pulp.LpMinimize)
        link_groups: dict[tuple[str, int], list[tuple]] = defaultdict(list)
        y: dict[tuple, pulp.LpVariable] = {}
        for key, ids in groups.items():
            j, a, b = key
            vs = []
            for s in t.pair_cand[a, b]:
                v = pulp.LpVariable(f"y_{j}_{a}_{b}_{s}", 0,
                                    len(ids) if s in allowed[key] else 0, cat="Integer")
                y[key, s] = v
                vs.append(v)
                link_groups["u", a * S + s].append((key, s))
                link_groups["d", b * S + s].append((key, s))
            prob += pulp.lpSum(vs) == len(ids), f"n_{j}_{a}_{b}"
        jobs = sorted(set(t.job))
        levels = range(2, A + 1)
        l = {(j, k): pulp.LpVariable(f"l_{j}_{k}", cat="Binary") for j in jobs for k in levels}
        for j in jobs:
            for k in range(2, A):
                prob += l[j, k + 1] <= l[j, k], f"lord_{j}_{k}"
        g: dict[tuple, pulp.LpVariable] = {}
        u: dict[tuple, pulp.LpVariable] = {}
        for e, gs in link_groups.items():
            name = f"{e[0]}{e[1]}"
            top = min(A, sum(len(groups[key]) for key, _ in gs))
            if top < 2:
                continue                       # never more than one flow: no level to track
            ks = range(2, top + 1)
            for k in ks:
                g[e, k] = pulp.LpVariable(f"g_{name}_{k}", cat="Binary")
            prob += (pulp.lpSum(y[x] for x in gs) <= 1 + pulp.lpSum(g[e, k] for k in ks),
                     f"load_{name}")
            for k in range(2, top):
                prob += g[e, k + 1] <= g[e, k], f"gord_{name}_{k}"
            js = sorted({key[0] for key, _ in gs})
            if len(js) == 1:
                for k in ks:
                    prob += g[e, k] <= l[js[0], k], f"lev_{name}_{k}"
                continue
            for j in js:
                uv = u[j, e] = pulp.LpVariable(f"u_{j}_{name}", 0, 1)
                for key, s in gs:
                    if key[0] == j:
                        prob += y[key, s] <= len(groups[key]) * uv
                for k in ks:
                    prob += uv + g[e, k] <= 1 + l[j, k], f"lev_{j}_{name}_{k}"
        for n_side, (dj, U) in enumerate(leaf_sides(t)):       # clean capacity cuts
            d = sum(dj.values())
            for k in levels:
                cap = clean_capacity(d, U, A, k)
                if d > cap:
                    prob += (pulp.lpSum(n * (1 - l[j, k]) for j, n in dj.items()) <= cap,
                             f"clean_{n_side}_{k}")
        self.prob, self.y, self.g, self.l, self.u = prob, y, g, l, u
        self.link_groups = link_groups
        self.count_expr = {
            "jobs": {k: pulp.lpSum(l[j, k] for j in jobs) for k in levels},
            "links": {k: pulp.lpSum(v for (_, kk), v in g.items() if kk == k) for k in levels}}
        for layer, k, value in self.fixes:
            prob += self.count_expr[layer][k] <= value, f"fix_{layer}_{k}"

    def _warm_start(self) -> None:
        """Initial values of every variable from the current solution."""
        t = self.t
        counts = assignment_counts(self.groups, self.assign)
        for (key, s), v in self.y.items():
            v.setInitialValue(counts[key].get(s, 0))
        up, down = assignment_loads(t, self.assign)
        for (e, k), v in self.g.items():
            v.setInitialValue(1 if (up if e[0] == "u" else down)[e[1]] >= k else 0)
        levels = job_levels(t, self.assign)
        for (j, k), v in self.l.items():
            v.setInitialValue(1 if levels.get(j, 0) >= k else 0)
        for (j, e), v in self.u.items():
            used = any(counts[key].get(s, 0) for key, s in self.link_groups[e] if key[0] == j)
            v.setInitialValue(1 if used else 0)

    def minimize(self, layer: str, k: int, bound: int,
                 budget_s: float) -> tuple[int, bool, int]:
        """Minimize count k of `layer` from the current solution, whose count is above the
        lower bound `bound`, in about `budget_s` seconds: (CBC solves, proven optimal, the
        count of the solution kept).

        From below first: is a solution at the bound there (CBC with the count capped at
        the bound, in half the budget)? One found is optimal; a proof that none exists
        raises the bound by one, and the next value is tried. Then, if undecided, from above:
        minimize from the current solution (warm start) in what is left."""
        current = round_value(self.t, layer, k, self.assign)
        if self.prob is None:
            self._build()
        end = min(self.deadline, time.perf_counter() + budget_s)
        expr = self.count_expr[layer][k]
        self.prob.setObjective(expr)
        calls = 0
        below_until = time.perf_counter() + budget_s / 2
        while bound < current:
            left = min(end, below_until) - time.perf_counter()
            if left < 1:
                break
            self.prob += expr <= bound, "target"
            try:
                calls += 1
                # any solution meets the bound, so it is optimal: stop at the first one
                self.prob.solve(cbc(left, warm=False, first_solution=True))
                status, sol = self.prob.status, self.prob.sol_status
            except pulp.PulpSolverError:
                status = sol = None
            finally:
                del self.prob.constraints["target"]
            if sol in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
                value = self._take(layer, k, current)
                return calls, value <= bound, value
            if status != pulp.LpStatusInfeasible:
                break                          # undecided in its time
            bound += 1                         # proven: nothing at the bound
        if bound >= current:                   # the start was optimal after all
            return calls, True, current
        left = end - time.perf_counter()
        if left < 1:
            return calls, False, current
        self._warm_start()
        try:
            calls += 1
            self.prob.solve(cbc(left, warm=True))
        except pulp.PulpSolverError:
            return calls, False, current
        sol = self.prob.sol_status
        if sol not in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
            return calls, False, current
        value = self._take(layer, k, current)
        return calls, sol == pulp.LpSolutionOptimal or value <= bound, value

    def _take(self, layer: str, k: int, current: int) -> int:
        """Keep CBC's solution unless its count is worse than `current`; the count kept."""
        t = self.t
        counts = {key: {s: solved_values(self.y, (key, s)) for s in t.pair_cand[key[1], key[2]]}
                  for key in self.groups}
        assign = counts_to_assignment(t, self.groups, counts, None)
        value = round_value(t, layer, k, assign)
        if value > current:
            return current
        self.assign = assign
        return value

"""The "2-layered max-min" objective, by iterated ILPs (PuLP + CBC). Our reading of the paper:

Layer 1, jobs. A job finishes an iteration when its slowest ring does, and a ring is as slow as
its most crowded link, so job j's congestion is L_j = the largest flow count on any directed
leaf<->spine link that one of j's flows uses. We minimize the vector (L_j) sorted in decreasing
order lexicographically (max-min fairness of job rates ~ 1 / L_j):
  round r: free jobs F, fixed jobs with caps c_j. Solve
        min (|F| + 1) * z + sum_{j in F} w_j
        s.t. L_j <= z - 1 + w_j (j in F, w_j binary),  L_j <= c_j (fixed j)
  i.e. first the smallest level z any free job must reach, then the fewest free jobs at z.
  Jobs with w_j = 1 are fixed at c_j = z; the others stay free (they are below z). Repeat
  until no job is free. A job is therefore never pushed above its level to shave a link of
  another job: the levels are fixed from the top down.
  "L_j <= cap" is linear: on a link only job j can use, load <= cap; on a link several jobs may
  use, a binary u[j,e] >= (j's flows on e) / (their number) switches on load_e <= cap + M(1-u).

Layer 2, flows. With every job's cap fixed, for t = (largest cap - 1) down to 1 we minimize the
total excess sum_e max(0, load_e - t) over directed links and then fix it: the link-load vector
is made lexicographically small from the top, so as few flows as possible share the most loaded
links (a flow's max-min fair rate is at most 1 / the load of its worst link).

Variables are aggregated per (job, leaf pair, spine) like the ILP (flows of a job between the
same leaves are interchangeable). Every solve is warm-started from the previous one (the first
from the greedy solution or `previous`), and all solves share `time_limit_s` seconds; when a
solve stops early the last feasible assignment is kept and the status says "feasible".
Layer 1's first level equals the ILP optimum of the max link flows, so `gap` is reported for it.
"""
from __future__ import annotations

import time
from collections import defaultdict

import pulp

from testbed.fabric import Fabric
from traffic.collectives import Connection

from .base import (RoutingPlan, SolveStats, assignment_from_spine_of, assignment_loads,
                   flow_table, spine_of_from_assignment, table_lower_bound)
from .ilp import (assignment_counts, cbc, counts_to_assignment, flow_groups, solved_values,
                  start_assignment)


def job_levels(t, assign: list[int]) -> dict[int, int]:
    """L_j per job index: the most flows on any link one of its flows uses."""
    S = t.n_spines
    up, down = assignment_loads(t, assign)
    out: dict[int, int] = defaultdict(int)
    for a, b, j, s in zip(t.src, t.dst, t.job, assign):
        m = max(up[a * S + s], down[b * S + s])
        if m > out[j]:
            out[j] = m
    return dict(out)


def route_mmf(fabric: Fabric, conns: list[Connection], seed: int = 0,
              previous: dict[int, str | None] | None = None,
              time_limit_s: float = 60.0) -> RoutingPlan:
    """Lexicographic max-min over jobs, then flows (see module docstring); seconds."""
    t0 = time.perf_counter()
    t = flow_table(fabric, conns)
    lb = table_lower_bound(t)
    if not t.flows:
        return RoutingPlan("mmf", spine_of_from_assignment(t, []),
                           SolveStats(time.perf_counter() - t0, "optimal", 0.0, lb))
    S = t.n_spines
    deadline = t0 + time_limit_s
    groups = flow_groups(t, by_job=True)
    assign = start_assignment(t, seed, previous)
    prefer = assignment_from_spine_of(t, previous) if previous else assign
    jobs = sorted(set(t.job))

    # which jobs can touch which link (link id: ('u', a*S+s) or ('d', b*S+s))
    link_groups: dict[tuple, list[tuple]] = defaultdict(list)
    for key in groups:
        j, a, b = key
        for s in t.pair_cand[a, b]:
            link_groups["u", a * S + s].append((key, s))
            link_groups["d", b * S + s].append((key, s))
    link_jobs = {e: sorted({key[0] for key, _ in gs}) for e, gs in link_groups.items()}

    all_optimal = True
    first_gap: float | None = None
    caps: dict[int, int] = {}

    def build(free: list[int], excess_fix: list[tuple[int, int]], excess_level: int | None):
        """Model with caps for fixed jobs, z/w for free jobs (layer 1) or an excess objective."""
        prob = pulp.LpProblem("mmf", pulp.LpMinimize)
        counts = assignment_counts(groups, assign)
        levels = job_levels(t, assign)
        y = {}
        for key, ids in groups.items():
            j, a, b = key
            vs = []
            for s in t.pair_cand[a, b]:
                v = pulp.LpVariable(f"y_{j}_{a}_{b}_{s}", 0, len(ids), cat="Integer")
                v.setInitialValue(counts[key].get(s, 0))
                y[key, s] = v
                vs.append(v)
            prob += pulp.lpSum(vs) == len(ids), f"n_{j}_{a}_{b}"
        load = {e: pulp.lpSum(y[g] for g in gs) for e, gs in link_groups.items()}
        z = w = None
        cap_expr = {j: caps[j] for j in caps}
        if free:
            top = max(levels.get(j, 0) for j in free)
            z = pulp.LpVariable("z", lowBound=max(1, lb if not caps else 1), upBound=top,
                                cat="Integer")
            z.setInitialValue(top)
            w = {}
            for j in free:
                w[j] = pulp.LpVariable(f"w_{j}", cat="Binary")
                w[j].setInitialValue(1 if levels.get(j, 0) >= top else 0)
                cap_expr[j] = z - 1 + w[j]
        for e, js in link_jobs.items():
            if len(js) == 1:
                prob += load[e] <= cap_expr[js[0]], f"cap_{e[0]}{e[1]}"
                continue
            big = sum(len(groups[key]) for key, _ in link_groups[e])
            used_now = {t.job[i] for key, s in link_groups[e] for i in groups[key]
                        if assign[i] == s}
            for j in js:
                u = pulp.LpVariable(f"u_{j}_{e[0]}{e[1]}", cat="Binary")
                u.setInitialValue(1 if j in used_now else 0)
                for key, s in link_groups[e]:
                    if key[0] == j:
                        prob += y[key, s] <= len(groups[key]) * u
                prob += load[e] <= cap_expr[j] + big * (1 - u), f"cap_{j}_{e[0]}{e[1]}"
        if excess_level is not None or excess_fix:
            for lvl, bound in excess_fix + ([(excess_level, None)] if excess_level else []):
                ex = []
                for e in link_groups:
                    v = pulp.LpVariable(f"x{lvl}_{e[0]}{e[1]}", lowBound=0)
                    prob += v >= load[e] - lvl
                    ex.append(v)
                if bound is None:
                    prob += pulp.lpSum(ex)
                else:
                    prob += pulp.lpSum(ex) <= bound, f"fix_excess_{lvl}"
        if free:
            prob += (len(free) + 1) * z + pulp.lpSum(w.values())
        return prob, y, z, w

    def solve(prob) -> bool:
        nonlocal all_optimal
        left = deadline - time.perf_counter()
        if left < 1:
            all_optimal = False
            return False
        try:
            prob.solve(cbc(left, warm=True))
        except pulp.PulpSolverError:
            all_optimal = False
            return False
        if prob.sol_status not in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
            all_optimal = False
            return False
        if prob.sol_status != pulp.LpSolutionOptimal:
            all_optimal = False
        return True

    def take(y) -> list[int]:
        counts = {key: {s: solved_values(y, (key, s)) for s in t.pair_cand[key[1], key[2]]}
                  for key in groups}
        return counts_to_assignment(t, groups, counts, prefer)

    # layer 1: job levels, from the top down
    free = list(jobs)
    stopped = False
    while free and not stopped:
        prob, y, z, w = build(free, [], None)
        if not solve(prob):
            stopped = True
            break
        zv = int(round(z.value()))
        optimal_round = prob.sol_status == pulp.LpSolutionOptimal
        assign = take(y)
        at_top = [j for j in free if w[j].value() is not None and w[j].value() > 0.5]
        if first_gap is None:
            first_gap = 0.0 if optimal_round else (zv - lb) / zv if zv else 0.0
        for j in at_top:
            caps[j] = zv
        free = [j for j in free if j not in at_top]
        if not at_top:  # cannot happen at optimum; guard against a stalled solver
            stopped = True
    if stopped:  # keep what we have: remaining jobs capped at their current level
        for j, lv in job_levels(t, assign).items():
            caps.setdefault(j, lv)
    # layer 2: flows, excess above each level from the top
    fixes: list[tuple[int, int]] = []
    top_cap = max(caps.values(), default=1)
    for lvl in range(top_cap - 1, 0, -1):
        if stopped:
            break
        prob, y, _, _ = build([], fixes, lvl)
        if not solve(prob):
            break
        assign = take(y)
        up, down = assignment_loads(t, assign)
        fixes.append((lvl, sum(max(0, v - lvl) for v in up) + sum(max(0, v - lvl) for v in down)))
    status = "optimal" if all_optimal else "feasible"
    if first_gap is None:
        up, down = assignment_loads(t, assign)
        m = max(max(up), max(down))
        first_gap = (m - lb) / m if m else 0.0
    stats = SolveStats(time.perf_counter() - t0, status, first_gap, lb)
    return RoutingPlan("mmf", spine_of_from_assignment(t, assign), stats)

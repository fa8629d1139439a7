"""Seeded simulated annealing over spine assignments (the paper's baseline).

State: one spine per inter-leaf flow. Move: take one flow (with probability `focus` a flow on a
link at the current maximum load, found by rejection sampling) and put it on another of its
usable spines: with probability `focus` the one whose worse link is least loaded (ties at
random), else one chosen uniformly. Energy: M the most flows on any directed leaf<->spine link, N the
number of links carrying M. The paper's E = M x N is available (`energy="product"`) but by
default we use E = M x (number of links + 1) + N (`energy="lex"`, the same order as (M, N)):
taken literally the product *rises* when the max drops (5 x 1 < 4 x 300), so at paper scale
it keeps the maximum from ever going down. Moves that do not raise E are
taken; worse ones with probability exp(-dE / T), T cooling geometrically from `t0` to `t1`.
The best state seen, in (M, N) lexicographic order, is returned. A move costs O(1): a histogram
of link loads gives M and N without scanning.

Start: the previous assignment where still usable (low-churn mode, `previous` given) with the
rest placed by greedy; otherwise a seeded uniformly random assignment (`init="random"`, the
paper's baseline) or the greedy solution (`init="greedy"`). In low-churn mode only strictly improving moves
are taken (a descent), so flows move only when that lowers the energy.

Budget: `max_iters` moves tried, by default `iteration_budget(movable flows)` = 100 per flow
that has more than one usable spine, at least 20,000 and at most 200,000; the cooling schedule
spans the budget. The search stops early when the best state meets the lower bound
(M = ceil(flows / live links) at the busiest leaf, N = the fewest links that must then carry
M), which no state can beat; and a low-churn descent on paths stops when no move of one flow
lowers the energy (checked after every 4,096 moves in a row that lowered nothing:
annealing_kernel._stuck), where it could take no move again: the routes of the whole
budget, sooner. Nothing depends on the clock, so one seed gives one answer on any
machine (the former 2 s time limit did not: 0.5 s and 2 s gave different routes, and a slower
run left more cases above the bound).

The three-tier search's move loop is compiled (routing/annealing_kernel.py), drawing the
same random numbers as `random.Random`, so it takes the same moves as the Python loop it
replaced.
"""
from __future__ import annotations

import math
import random
import time

import numpy as np

from testbed.fabric import Fabric
from traffic.collectives import Connection

from .base import (RoutingPlan, SolveStats, assignment_from_spine_of, assignment_loads,
                   flow_table, spine_of_from_assignment, table_lower_bound)
from .annealing_kernel import anneal_paths_kernel, kernel, mt_state, set_mt_state
from .greedy import greedy_assignment, greedy_fill, greedy_fill_paths
from .paths import (Path, assignment_of_paths, loads_of, path_link_arrays, path_lower_bound,
                    path_of_assignment, path_table)


#: Moves tried per movable flow, and the floor and ceiling of the budget (see iteration_budget).
ITERS_PER_FLOW = 100
MIN_ITERS = 20_000
MAX_ITERS = 200_000


def iteration_budget(movable_flows: int) -> int:
    """Moves the annealing tries: fixed by the problem size, never by the clock."""
    return max(MIN_ITERS, min(MAX_ITERS, ITERS_PER_FLOW * movable_flows))


def best_n_bound(t, M: int) -> int:
    """With every load at most M: the fewest links that carry M flows (per leaf side, d flows
    over U usable links need at least d - (M - 1) U of them at M)."""
    total = 0
    for ends in (t.src, t.dst):
        flows: dict[int, int] = {}
        links: dict[int, set] = {}
        for i, leaf in enumerate(ends):
            flows[leaf] = flows.get(leaf, 0) + 1
            links.setdefault(leaf, set()).update(t.cand[i])
        total += sum(max(0, d - (M - 1) * len(links[leaf])) for leaf, d in flows.items())
    return max(total, 1 if M >= 1 and t.flows else 0)


def _start_state(t, previous: dict | None, init: str, energy: str, rng: random.Random,
                 seed: int) -> tuple[list[int], list[int], list[int]]:
    """The first assignment (previous where usable and the rest by greedy; greedy's; or a
    seeded random one) and its up and down link loads; ValueError for an unknown option."""
    if previous:
        assign = assignment_from_spine_of(t, previous)
        up, down = assignment_loads(t, assign)
        greedy_fill(t, assign, up, down, seed)
    elif init == "greedy":
        assign = greedy_assignment(t, seed)
        up, down = assignment_loads(t, assign)
    elif init == "random":
        assign = [rng.choice(c) for c in t.cand]
        up, down = assignment_loads(t, assign)
    else:
        raise ValueError(f"annealing: init must be 'random' or 'greedy', not {init!r}")
    if energy not in ("lex", "product"):
        raise ValueError(f"annealing: energy must be 'lex' or 'product', not {energy!r}")
    return assign, up, down


def load_histogram(loads: list[int], n: int) -> tuple[list[int], int]:
    """(how many links carry each load, with room for n more flows; the highest load)."""
    top = max(loads)
    hist = [0] * (top + n + 2)
    for v in loads:
        hist[v] += 1
    return hist, top


def _pick_spine(rand, randrange, focus: float, movable: list[int], t, assign: list[int],
                up: list[int], down: list[int], M: int) -> tuple[int, int, int, int, int]:
    """One move of the spine search: a flow (with probability `focus` one on a link at the
    maximum M) and its new spine (with probability `focus` the one whose worse link is least
    loaded, else any candidate). Returns (flow, src leaf, dst leaf, spine, new spine)."""
    src, dst, cand, S = t.src, t.dst, t.cand, t.n_spines
    n_mov = len(movable)
    i = movable[randrange(n_mov)]
    if rand() < focus:
        for _ in range(64):
            a, b, s = src[i], dst[i], assign[i]
            if up[a * S + s] == M or down[b * S + s] == M:
                break
            i = movable[randrange(n_mov)]
    a, b, s = src[i], dst[i], assign[i]
    c = cand[i]
    if rand() < focus:
        s2, bestv = s, None
        ao, bo = a * S, b * S
        for x in c:
            if x != s:
                u, d = up[ao + x], down[bo + x]
                v = u if u > d else d
                if bestv is None or v < bestv or (v == bestv and rand() < 0.5):
                    s2, bestv = x, v
    else:
        s2 = c[randrange(len(c))]
    return i, a, b, s, s2


def _move(hist: list[int], up: list[int], down: list[int], ua: int, ub: int, va: int,
          vb: int) -> None:
    """One flow off uplink ua and downlink ub onto va and vb, the load histogram kept."""
    for arr, idx, d in ((up, ua, -1), (down, ub, -1), (up, va, 1), (down, vb, 1)):
        v = arr[idx]
        hist[v] -= 1
        arr[idx] = v + d
        hist[v + d] += 1


def route_annealing(fabric: Fabric, conns: list[Connection], seed: int = 0,
                    previous: dict[int, str | None] | None = None, *,
                    init: str = "random", energy: str = "lex", max_iters: int | None = None,
                    t0: float = 2.0, t1: float = 0.02, focus: float = 0.7) -> RoutingPlan:
    """Simulated annealing; see module docstring. `max_iters` None: `iteration_budget`."""
    start = time.perf_counter()
    t = flow_table(fabric, conns)
    rng = random.Random(seed)
    n = len(t.flows)
    S = t.n_spines
    lb = table_lower_bound(t)
    assign, up, down = _start_state(t, previous, init, energy, rng, seed)
    if n == 0:
        return RoutingPlan("annealing", spine_of_from_assignment(t, assign),
                           SolveStats(time.perf_counter() - start, "heuristic", None, lb))
    hist, M = load_histogram(up + down, n)
    # energy weight of the max: 'product' is M x N; 'lex' is M x (links + 1) + N
    K1 = len(up) + len(down) + 1
    lexi = energy == "lex"
    sticky = bool(previous)   # low-churn mode: strict descent from the previous assignment
    best_key = (M, hist[M])
    best = list(assign)
    movable = [i for i in range(n) if len(t.cand[i]) > 1]
    if M <= 1:
        movable = []          # one flow per link at most: nothing to improve
    if max_iters is None:
        max_iters = iteration_budget(len(movable))
    target = (lb, best_n_bound(t, lb))   # no state beats it: stop there
    alpha = (t1 / t0) ** (1.0 / max(1, max_iters))
    T = t0
    it = 0
    rand = rng.random
    randrange = rng.randrange
    if best_key <= target:
        movable = []
    while movable and it < max_iters:
        it += 1
        i, a, b, s, s2 = _pick_spine(rand, randrange, focus, movable, t, assign, up, down, M)
        if s2 == s:
            continue
        old_e = M * K1 + hist[M] if lexi else M * hist[M]
        ua, ub = a * S + s, b * S + s
        va, vb = a * S + s2, b * S + s2
        _move(hist, up, down, ua, ub, va, vb)
        newM = M
        if up[va] > newM:
            newM = up[va]
        if down[vb] > newM:
            newM = down[vb]
        while hist[newM] == 0 and newM > 0:
            newM -= 1
        new_e = newM * K1 + hist[newM] if lexi else newM * hist[newM]
        dE = new_e - old_e
        if dE < 0 or (not sticky and (dE == 0 or rand() < math.exp(-dE / T))):
            assign[i] = s2
            M = newM
            key = (M, hist[M])
            if key < best_key:
                best_key = key
                best = list(assign)
                if key <= target:
                    break
        else:  # undo
            _move(hist, up, down, va, vb, ua, ub)
        T *= alpha
    stats = SolveStats(time.perf_counter() - start, "heuristic", None, lb)
    return RoutingPlan("annealing", spine_of_from_assignment(t, best), stats)


# -- three tiers: the same search over paths ----------------------------------------------------
def _start_paths(t, previous: dict | None, init: str, rng: random.Random,
                 seed: int) -> list[int]:
    """The path search's first assignment: the previous plan filled greedily, or greedy, or
    random."""
    n = len(t.flows)
    if previous:
        assign = assignment_of_paths(t, previous)
        greedy_fill_paths(t, assign, loads_of(t, assign), seed)
        return assign
    if init == "greedy":
        return greedy_fill_paths(t, [-1] * n, [0] * t.n_links, seed)
    if init == "random":
        return [rng.choice(c) for c in t.cand]
    raise ValueError(f"annealing: init must be 'random' or 'greedy', not {init!r}")


def route_annealing_paths(fabric: Fabric, conns: list[Connection], seed: int = 0,
                          previous: dict[int, Path | None] | None = None, *,
                          init: str = "random", max_iters: int | None = None,
                          t0: float = 2.0, t1: float = 0.02, focus: float = 0.7) -> RoutingPlan:
    """The leaf-spine search on paths: a move puts one flow on another candidate path (links
    the two paths share keep their load); energy (M, N) lexicographic over every directed
    switch link; the same budget (`iteration_budget`), cooling and low-churn descent. Stops
    early when M reaches the path lower bound and N is 1 (a bound N cannot beat)."""
    start = time.perf_counter()
    t = path_table(fabric, conns)
    rng = random.Random(seed)
    n = len(t.flows)
    lb = path_lower_bound(t, fabric)
    assign = _start_paths(t, previous, init, rng, seed)
    load = loads_of(t, assign)
    if n == 0:
        return RoutingPlan("annealing", path_of_assignment(t, assign),
                           SolveStats(time.perf_counter() - start, "heuristic", None, lb))
    hist, M = load_histogram(load, n)
    movable = [i for i in range(n) if len(t.cand[i]) > 1] if M > 1 else []
    if max_iters is None:
        max_iters = iteration_budget(len(movable))
    if (M, hist[M]) <= (lb, 1):
        movable = []
    best = np.array(assign, dtype=np.int64)
    st = mt_state(rng)
    buf, pstart, hops, step = (np.ascontiguousarray(x, dtype=np.int64)
                               for x in path_link_arrays(t))
    kernel(anneal_paths_kernel)(st, np.array(movable, dtype=np.int64),
                    np.array([c.start for c in t.cand], dtype=np.int64),
                    np.array([c.stop for c in t.cand], dtype=np.int64), buf, pstart, hops, step,
                    best.copy(), np.array(load, dtype=np.int64), np.array(hist, dtype=np.int64),
                    best, M, len(load) + 1, bool(previous), lb, 1, max_iters, t0,
                    (t1 / t0) ** (1.0 / max(1, max_iters)), focus)
    set_mt_state(rng, st)
    stats = SolveStats(time.perf_counter() - start, "heuristic", None, lb)
    return RoutingPlan("annealing", path_of_assignment(t, best.tolist()), stats)

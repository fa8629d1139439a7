"""Seeded simulated annealing over paths (the paper's baseline), on every fabric.

State: one path per inter-leaf flow (on a leaf-spine, its spine). Move: take one flow (with
probability `focus` a flow on a link at the current maximum load, found by rejection
sampling) and put it on another of its candidate paths: with probability `focus` the one whose
most loaded link is least loaded (ties at random), else one chosen uniformly; links the two
paths share keep their load. Energy: (M, N), M the most flows on any directed switch link and
N the number of links carrying M, compared lexicographically (the paper's E = M x N, taken
literally, *rises* when the max drops, 5 x 1 < 4 x 300, so at paper scale it kept the maximum
from ever going down). Moves that do not raise the energy are taken; worse ones with
probability exp(-dE / T), dE in M x (links + 1) + N, T cooling geometrically from `t0` to
`t1`. The best state seen is returned. A move costs O(path length): a histogram of link
loads gives M and N without scanning.

Start: the previous paths where still usable (low-churn mode, `previous` given) with the rest
placed by greedy; otherwise a seeded uniformly random assignment (`init="random"`, the paper's
baseline) or the greedy solution (`init="greedy"`). In low-churn mode only strictly improving
moves are taken (a descent), so flows move only when that lowers the energy.

Budget: `max_iters` moves tried, by default `iteration_budget(movable flows)` = 100 per flow
that has more than one candidate path, at least 20,000 and at most 200,000; the cooling
schedule spans the budget. The search stops early when the best state meets the lower bound
(M = path_lower_bound, N = best_n_bound: the fewest links that must then carry M), which no
state can beat; and a low-churn descent stops when no move of one flow lowers the energy
(checked after every 4,096 moves in a row that lowered nothing: annealing_kernel._stuck),
where it could take no move again: the routes of the whole budget, sooner. Nothing depends on
the clock, so one seed gives one answer on any machine.

The move loop is compiled (routing/annealing_kernel.py), drawing the same random numbers as
`random.Random`. A leaf-spine search over spine indices in Python took the same routes on the
23 shipped leaf-spine configs (without `previous`) and was dropped: 1.3-6.7x slower on the
paper-scale ones (experiments/benchmarks/kernel_bench.py); with `previous`, greedy's fill of
the new flows breaks ties as greedy's path kernel does (paper-3jobs-d4-fail4's later epochs).
"""
from __future__ import annotations

import random
import time
from collections import Counter

import numpy as np

from testbed.fabric import Fabric
from traffic.collectives import Connection

from .base import RoutingPlan, SolveStats, lower_bound_link_flows
from .annealing_kernel import anneal_paths_kernel, kernel, mt_state, set_mt_state
from .greedy import greedy_fill_paths
from .paths import (Path, PathTable, assignment_of_paths, loads_of, path_link_arrays,
                    path_lower_bound, path_of_assignment, path_table)


#: Moves tried per movable flow, and the floor and ceiling of the budget (see iteration_budget).
ITERS_PER_FLOW = 100
MIN_ITERS = 20_000
MAX_ITERS = 200_000


def iteration_budget(movable_flows: int) -> int:
    """Moves the annealing tries: fixed by the problem size, never by the clock."""
    return max(MIN_ITERS, min(MAX_ITERS, ITERS_PER_FLOW * movable_flows))


def load_histogram(loads: list[int], n: int) -> tuple[list[int], int]:
    """(how many links carry each load, with room for n more flows; the highest load)."""
    top = max(loads)
    hist = [0] * (top + n + 2)
    for v in loads:
        hist[v] += 1
    return hist, top


def best_n_bound(t: PathTable, hops: tuple[np.ndarray, ...], M: int) -> int:
    """With every load at most M: the fewest links that carry M flows. Per leaf and direction,
    d flows over the U first (last) hops their candidate paths can take need at least
    d - (M - 1) U of them at M. `hops`: path_link_arrays(t)."""
    if not t.flows:
        return 0
    buf, start, n, step = hops
    total = 0
    for side, hop in ((0, buf[start]), (1, buf[start + (n - 1) * step])):
        ends = (t.src, t.dst)[side]
        links: dict[int, set] = {}
        for pair, r in t.pair_paths.items():
            links.setdefault(pair[side], set()).update(hop[r.start:r.stop].tolist())
        total += sum(max(0, d - (M - 1) * len(links[leaf]))
                     for leaf, d in Counter(ends).items())
    return max(total, 1 if M >= 1 else 0)


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
    """Simulated annealing over paths; see the module docstring. `max_iters` None:
    `iteration_budget`."""
    start = time.perf_counter()
    t = path_table(fabric, conns)
    rng = random.Random(seed)
    n = len(t.flows)
    lb = path_lower_bound(t, fabric)
    # reported: on a leaf-spine, the bound every leaf-spine kernel reports (flows per live
    # uplink); the path bound, at least as high, is where the search stops
    shown = lb if len(fabric.choice_points) > 1 else lower_bound_link_flows(fabric, conns)
    assign = _start_paths(t, previous, init, rng, seed)
    load = loads_of(t, assign)
    if n == 0:
        return RoutingPlan("annealing", path_of_assignment(t, assign),
                           SolveStats(time.perf_counter() - start, "heuristic", None, shown))
    hist, M = load_histogram(load, n)
    movable = [i for i in range(n) if len(t.cand[i]) > 1] if M > 1 else []
    if max_iters is None:
        max_iters = iteration_budget(len(movable))
    arrays = tuple(np.ascontiguousarray(x, dtype=np.int64) for x in path_link_arrays(t))
    target = (lb, best_n_bound(t, arrays, lb))      # no state beats it: stop there
    if (M, hist[M]) <= target:
        movable = []
    best = np.array(assign, dtype=np.int64)
    st = mt_state(rng)
    buf, pstart, hops, step = arrays
    kernel(anneal_paths_kernel)(st, np.array(movable, dtype=np.int64),
                    np.array([c.start for c in t.cand], dtype=np.int64),
                    np.array([c.stop for c in t.cand], dtype=np.int64), buf, pstart, hops, step,
                    best.copy(), np.array(load, dtype=np.int64), np.array(hist, dtype=np.int64),
                    best, M, len(load) + 1, bool(previous), *target, max_iters, t0,
                    (t1 / t0) ** (1.0 / max(1, max_iters)), focus)
    set_mt_state(rng, st)
    stats = SolveStats(time.perf_counter() - start, "heuristic", None, shown)
    return RoutingPlan("annealing", path_of_assignment(t, best.tolist()), stats)

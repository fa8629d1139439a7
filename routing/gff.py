"""Hedera's Global First Fit (Al-Fares et al., NSDI 2010), as a named baseline.

Hedera's controller estimates each large flow's *natural demand* (the rate it would get if only
the hosts' NICs limited it: max-min fair at the senders and receivers, Hedera's Fig. 7
estimator), then places flows one by one on the first candidate path whose every link still
has room for the flow's demand, reserving it there. A flow that fits nowhere keeps its ECMP
path, as in Hedera. Here demands and capacities are in units of the host link rate, flows are
placed in connection order, and candidates are tried in Fabric.switch_paths order. The
placement is a compiled loop (first_fit_kernel; first_fit_reference is the plain form, compared
in tests/unit/routing/test_gff.py). Both loops are built ahead of time (traffic/aot.py), else
compiled by numba on first use (`compiled`).
"""
from __future__ import annotations

import time
from collections import defaultdict

import numpy as np

from testbed.fabric import Fabric
from traffic.collectives import Connection
from traffic.jit import Loops

from .base import RoutingPlan, SolveStats
from .ecmp import hashed_path
from .paths import (Path, PathTable, path_link_arrays, path_lower_bound, path_of_assignment,
                    path_table)

#: Demands within this of each other are equal (the estimator's convergence test).
EPS = 1e-9


def natural_demands(pairs: list[tuple[str, str]], max_rounds: int = 1000) -> list[float]:
    """Hedera's demand estimator: per flow (src host, dst host), its max-min fair rate when
    only the hosts' NICs (capacity 1 each way) limit it. Compiled (sender_demands_kernel)
    while no receiver is over its NIC, else natural_demands_reference."""
    src_ptr, src_idx = _groups([s for s, _ in pairs])
    dst_ptr, dst_idx = _groups([d for _, d in pairs])
    demand, ok = compiled(sender_demands_kernel)(src_ptr, src_idx, dst_ptr, dst_idx,
                                                 len(pairs), max_rounds)
    return demand.tolist() if ok else natural_demands_reference(pairs, max_rounds)


def _groups(hosts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The flows by host, as CSR (ptr, idx): hosts in order of first appearance, each one's
    flows ascending (the estimator's dict of lists)."""
    ids: dict[str, int] = {}
    group = np.array([ids.setdefault(h, len(ids)) for h in hosts], dtype=np.int64)
    ptr = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum(np.bincount(group, minlength=len(ids)), out=ptr[1:])
    return ptr, np.argsort(group, kind="stable").astype(np.int64)


def sender_demands_kernel(src_ptr: np.ndarray, src_idx: np.ndarray, dst_ptr: np.ndarray,
                          dst_idx: np.ndarray, n: int, max_rounds: int):
    """natural_demands_reference's rounds, the same float operations in the same order,
    while every receiver's demands sum to at most 1 + EPS (the senders alone decide):
    (demand, True), or (partial, False) as soon as a receiver is over its NIC."""
    demand = np.zeros(n)
    converged = np.zeros(n, np.bool_)
    for _ in range(max_rounds):
        changed = False
        for g in range(src_ptr.size - 1):             # senders share what is left equally
            fixed, n_open = 0.0, 0
            for j in range(src_ptr[g], src_ptr[g + 1]):
                if converged[src_idx[j]]:
                    fixed += demand[src_idx[j]]
                else:
                    n_open += 1
            if n_open:
                share = max(0.0, 1.0 - fixed) / n_open
                for j in range(src_ptr[g], src_ptr[g + 1]):
                    i = src_idx[j]
                    if not converged[i] and abs(demand[i] - share) > EPS:
                        demand[i], changed = share, True
        for g in range(dst_ptr.size - 1):
            total = 0.0
            for j in range(dst_ptr[g], dst_ptr[g + 1]):
                total += demand[dst_idx[j]]
            if not total <= 1.0 + EPS:
                return demand, False
        if not changed:
            break
    return demand, True


def natural_demands_reference(pairs: list[tuple[str, str]], max_rounds: int = 1000
                              ) -> list[float]:
    """natural_demands in plain Python (receivers over their NIC cut the largest flows)."""
    n = len(pairs)
    demand = [0.0] * n
    converged = [False] * n
    by_src: dict[str, list[int]] = defaultdict(list)
    by_dst: dict[str, list[int]] = defaultdict(list)
    for i, (s, d) in enumerate(pairs):
        by_src[s].append(i)
        by_dst[d].append(i)
    for _ in range(max_rounds):
        changed = False
        for flows in by_src.values():           # senders share what is left equally
            fixed = sum(demand[i] for i in flows if converged[i])
            open_ = [i for i in flows if not converged[i]]
            if open_:
                share = max(0.0, 1.0 - fixed) / len(open_)
                for i in open_:
                    if abs(demand[i] - share) > EPS:
                        demand[i], changed = share, True
        for flows in by_dst.values():           # receivers cut the largest flows
            if sum(demand[i] for i in flows) <= 1.0 + EPS:
                continue
            rl = set(flows)
            below = 0.0                       # demand of the flows no longer receiver-limited
            share = 1.0 / len(rl)
            while True:
                small = {i for i in rl if demand[i] < share - EPS}
                if not small:
                    break
                rl -= small
                below += sum(demand[i] for i in small)
                share = (1.0 - below) / len(rl)
            for i in rl:
                converged[i] = True
                if abs(demand[i] - share) > EPS:
                    demand[i], changed = share, True
        if not changed:
            break
    return demand


def _ecmp_column(fabric: Fabric, t: PathTable, i: int, seed: int) -> int:
    """Flow i's ECMP path as its column among its pair's candidates (cached on the fabric by
    the 5-tuple: the hash and the pair's path order do not change while the fabric lives)."""
    c = t.flows[i]
    cache = fabric._path_cache.setdefault("gff-ecmp", {})
    key = (seed, c.src, c.dst, c.src_port, c.dst_port)
    col = cache.get(key)
    if col is None:
        want = hashed_path(fabric, c, seed)
        cand = t.cand[i]
        col = fabric.switch_paths(*(fabric.leaf_of(h) for h in (c.src, c.dst))).index(want)
        if col >= len(cand) or t.paths[cand[col]] != want:   # candidates in another order
            col = next(p for p in cand if t.paths[p] == want) - cand.start
        cache[key] = col
    return col


def first_fit_kernel(buf: np.ndarray, start: np.ndarray, hops: np.ndarray, step: np.ndarray,
                     cand0: np.ndarray, ncand: np.ndarray, demand: np.ndarray, cap: np.ndarray,
                     reserved: np.ndarray, assign: np.ndarray, i0: int) -> int:
    """Place flows i0, i0+1, ... on the first candidate path (path p's links:
    buf[start[p] + x * step[p]], x < hops[p]) where every link has room (reserved + demand <=
    cap + EPS), reserving it; returns the first flow that fits nowhere (its ECMP path is the
    caller's), or n."""
    for i in range(i0, len(cand0)):
        d = demand[i]
        fit = -1
        for p in range(cand0[i], cand0[i] + ncand[i]):
            ok = True
            for x in range(hops[p]):
                e = buf[start[p] + x * step[p]]
                if not reserved[e] + d <= cap[e] + EPS:
                    ok = False
                    break
            if ok:
                fit = p
                break
        if fit < 0:
            return i
        assign[i] = fit
        for x in range(hops[fit]):
            reserved[buf[start[fit] + x * step[fit]]] += d
    return len(cand0)


#: compiled(fn): sender_demands_kernel or first_fit_kernel built ahead of time (traffic/aot.py:
#: no numba), else compiled by numba on first use (numba's light start-up, then compiled or
#: loaded from its on-disk cache; error_model "numpy": no division checks, the loops divide
#: only by counts they test first); plain Python, with a warning, without numba.
compiled = Loops("gff places its flows", (sender_demands_kernel, first_fit_kernel), ())


def first_fit(fabric: Fabric, t: PathTable, demand: list[float], seed: int
              ) -> tuple[list[int], int]:
    """Hedera's placement in connection order (first_fit_kernel), each flow that fits
    nowhere on its ECMP path: (path id per flow, flows on ECMP)."""
    n = len(t.flows)
    buf, start, hops, step = path_link_arrays(t)
    cand0 = np.array([r.start for r in t.cand], dtype=np.int64)
    ncand = np.array([len(r) for r in t.cand], dtype=np.int64)
    cap = fabric._path_cache.get("gff-cap")
    if cap is None:    # per link of fabric.links (t.links), in host link rates
        host_rate = fabric.spec.host_link_mbps
        cap = fabric._path_cache["gff-cap"] = np.array(
            [fabric.capacity_mbps(u, v) / host_rate for u, v in t.links])
    reserved = np.zeros(t.n_links)
    d = np.array(demand, dtype=np.float64)
    assign = np.full(n, -1, dtype=np.int64)
    i, fallback = 0, 0
    while True:
        i = compiled(first_fit_kernel)(buf, start, hops, step, cand0, ncand, d, cap, reserved,
                                       assign, i)
        if i >= n:
            return assign.tolist(), fallback
        p = int(cand0[i]) + _ecmp_column(fabric, t, i, seed)   # Hedera leaves it on ECMP
        assign[i] = p
        for x in range(int(hops[p])):
            reserved[buf[start[p] + x * step[p]]] += d[i]
        fallback += 1
        i += 1


def first_fit_reference(fabric: Fabric, t: PathTable, demand: list[float], seed: int
                        ) -> tuple[list[int], int]:
    """first_fit as plain Python over the path tuples (the compiled kernel's reference)."""
    host_rate = fabric.spec.host_link_mbps
    cap = [fabric.capacity_mbps(u, v) / host_rate for u, v in t.links]
    reserved = [0.0] * t.n_links
    assign, fallback = [], 0
    for i, c in enumerate(t.flows):
        fit = next((p for p in t.cand[i]
                    if all(reserved[e] + demand[i] <= cap[e] + EPS for e in t.path_links[p])),
                   None)
        if fit is None:   # Hedera leaves it on its ECMP path
            want = hashed_path(fabric, c, seed)
            fit = next(p for p in t.cand[i] if t.paths[p] == want)
            fallback += 1
        for e in t.path_links[fit]:
            reserved[e] += demand[i]
        assign.append(fit)
    return assign, fallback


def route_gff(fabric: Fabric, conns: list[Connection], seed: int = 0,
              previous: dict[int, Path | None] | None = None) -> RoutingPlan:
    t0 = time.perf_counter()
    t = path_table(fabric, conns)
    demand = natural_demands([(c.src, c.dst) for c in t.flows])
    assign, fallback = first_fit(fabric, t, demand, seed)
    stats = SolveStats(time.perf_counter() - t0,
                       "first-fit" + (f" ({fallback} flows on ECMP)" if fallback else ""),
                       None, path_lower_bound(t, fabric))
    return RoutingPlan("gff", path_of_assignment(t, assign), stats)

"""Bounds the CLI checks that depend on a whole experiment: how long any prediction of it
can last (`duration_upper_bound_s`), which bounds `predict --util-bin-s`.
"""
from __future__ import annotations

import math

from traffic.collectives import plan_jobs

from .limits import MAX_DURATION_S, MIN_UTIL_BIN_S, MAX_UTIL_CELLS
from .readers import ConfigError, quote
from .records import Experiment


# -- bounds the CLI checks -------------------------------------------------------------------
def _longest_chain_bytes(plan) -> int:
    """The heaviest path of one iteration's transfer DAG, in bytes: a transfer waits for its
    deps and for the previous transfer on its connection (traffic/predictor.py)."""
    ts = plan.transfers
    pos = {t.tid: i for i, t in enumerate(ts)}
    preds: list[set[int]] = [set() for _ in ts]
    last: dict[int, int] = {}
    for i, t in enumerate(ts):
        preds[i].update(pos[d] for d in t.deps)
        if t.conn_id in last:
            preds[i].add(last[t.conn_id])
        last[t.conn_id] = i
    succ: list[list[int]] = [[] for _ in ts]
    indeg = [len(p) for p in preds]
    for i, p in enumerate(preds):
        for j in p:
            succ[j].append(i)
    finish = [0] * len(ts)
    ready = [i for i, n in enumerate(indeg) if n == 0]
    while ready:
        i = ready.pop()
        finish[i] += ts[i].size_bytes
        for k in succ[i]:
            finish[k] = max(finish[k], finish[i])
            indeg[k] -= 1
            if indeg[k] == 0:
                ready.append(k)
    return max(finish, default=0)


def duration_upper_bound_s(exp: Experiment, goodput_factor: float = 1.0) -> float:
    """No prediction of `exp` lasts longer than this, whatever the routing and the events.

    Max-min: every active flow has a saturated bottleneck link on which no flow is faster,
    so it moves at least that link's capacity / the flows on it. At most one transfer per
    connection is active, so a flow moves at least r = the smallest of host rate / the most
    connections leaving or entering one host, and spine-link rate / the most connections
    leaving or entering one leaf for another (any routing, any failures; in three tiers an
    agg-core link may carry every inter-leaf connection). An iteration then
    lasts at most its heaviest chain of dependent transfers at r, and a job ends by start_s +
    iterations x (that + compute_s)."""
    f = exp.fabric
    plans = plan_jobs(exp.jobs)
    per_host: dict[tuple[str, str], int] = {}
    per_leaf: dict[tuple[str, str], int] = {}
    for p in plans:
        for c in p.connections:
            for k in (("out", c.src), ("in", c.dst)):
                per_host[k] = per_host.get(k, 0) + 1
            a, b = f.leaf_of(c.src), f.leaf_of(c.dst)
            if a != b:
                for k in (("out", a), ("in", b)):
                    per_leaf[k] = per_leaf.get(k, 0) + 1
    rate = f.spec.host_link_mbps / max(per_host.values(), default=1)
    up = min(r for tier, r in f.spec.rates_mbps().items() if tier != "host")
    if per_leaf and len(f.choice_points) == 1:   # every path crosses one uplink each side
        rate = min(rate, up / max(per_leaf.values()))
    elif per_leaf:   # an upper link may carry every inter-leaf flow of the fabric
        crossing = sum(n for (side, _), n in per_leaf.items() if side == "out")
        rate = min(rate, up / crossing)
    bps = rate * 1e6 * goodput_factor
    # (1 + 1e-9): where the bound is met exactly (rings that never leave their leaf), the
    # model's sum of float steps came out 4e-15 s above it
    return (1 + 1e-9) * max(p.spec.start_s + p.spec.iterations
                            * (_longest_chain_bytes(p) * 8 / bps + p.spec.compute_s)
                            for p in plans)


def check_util_bin_s(exp: Experiment, util_bin_s: float | None,
                     goodput_factor: float = 1.0) -> None:
    """`predict --util-bin-s`: at least MIN_UTIL_BIN_S, and at most MAX_UTIL_CELLS bins x
    links over `duration_upper_bound_s`; raises ConfigError naming --util-bin-s."""
    if util_bin_s is None:
        return
    if not math.isfinite(util_bin_s) or not MIN_UTIL_BIN_S <= util_bin_s <= MAX_DURATION_S:
        raise ConfigError(f"--util-bin-s: must be from {MIN_UTIL_BIN_S:g} to "
                          f"{MAX_DURATION_S:,.0f} s, got {quote(util_bin_s)}")
    links = len(exp.fabric.links)
    bound = duration_upper_bound_s(exp, goodput_factor)
    cells = math.ceil(bound / util_bin_s) * links
    if cells > MAX_UTIL_CELLS:
        least = bound * links / MAX_UTIL_CELLS
        raise ConfigError(f"--util-bin-s: {util_bin_s:g} s gives up to "
                          f"{math.ceil(bound / util_bin_s):,} bins x {links:,} links (this "
                          f"config can last up to {bound:,.0f} s); at most "
                          f"{MAX_UTIL_CELLS:,} cells: give at least {least:.3g} s")

"""The predictor's kernels in plain numpy (no numba): traffic/waterfill.py's functions with
the same names, arguments and results, bit for bit, for predictions too small to pay for
numba's start-up.

Pure code (numpy, no root). A process that imports numba and loads the compiled kernels from
its cache spends ~0.5 s of CPU before the first batch; the floodns cases with ring size 2
predict in 93 batches, which these functions run in a few hundredths of a second. Larger
predictions take the compiled kernels (traffic/jit.py's `kernels` chooses by size).

Same float operations as the compiled kernels, element by element: the water-filling is
progressive filling recomputing the shares of the links the flows cross every round (the
compiled fill_with updates only the links that change; tests/unit/traffic/test_predictor.py checks
that the two agree bit for bit), per-link sums are np.bincount over the flows in order (the
compiled loop's order), and no weights: per-packet spraying (weighted links) always takes the
compiled kernels.
"""
from __future__ import annotations

import numpy as np

from .kernel_abi import NO_FINITE_LINK, NO_WEIGHTS, OK  # noqa: F401 (this API's)


def warm() -> None:
    """Nothing to compile or load (traffic/waterfill.py's warm does)."""


def scratch(n_links: int) -> tuple:
    """No per-link scratch (the rounds work on the links the flows cross): a counter of the
    rounds fill_with ran, which traffic/jit.py's `outgrown` reads."""
    return (np.zeros(1, np.int64),)


def _unweighted(weights: np.ndarray) -> None:
    if weights.shape[0]:
        raise ValueError("traffic.waterfill_np: weighted links (per-packet spraying) take "
                         "the compiled kernels")


def fill_with(flow_links: np.ndarray, capacity_mbps: np.ndarray, rel_tol: float,
              rates: np.ndarray, weights: np.ndarray, *scratch) -> int:
    """Max-min rates (Mbit/s) into rates[F] by progressive filling; flow_links (F, K)
    indexes capacity_mbps. Every round raises the unfrozen flows to the smallest fair share
    (remaining capacity / flows) and freezes the flows crossing a link within rel_tol of it;
    scratch (from `scratch`, optional) counts the rounds. Returns OK, or NO_FINITE_LINK when
    unfrozen flows cross only infinite links."""
    _unweighted(weights)
    n_flows = flow_links.shape[0]
    if n_flows == 0:
        return OK
    used, fl = np.unique(flow_links, return_inverse=True)   # the links crossed, dense ids
    fl = fl.reshape(flow_links.shape)
    n_links = used.size
    remaining = capacity_mbps[used].astype(np.float64)
    count = np.bincount(fl.ravel(), minlength=n_links).astype(np.float64)
    idx = np.arange(n_flows)
    share = np.empty(n_links)
    while idx.size:
        share.fill(np.inf)
        np.divide(remaining, count, out=share, where=count > 0)
        m = share.min()
        if not m < np.inf:
            return NO_FINITE_LINK
        hit = (share <= m * (1.0 + rel_tol))[fl].any(axis=1)
        rates[idx[hit]] = m
        dec = np.bincount(fl[hit].ravel(), minlength=n_links)
        remaining -= dec * m
        np.maximum(remaining, 0.0, out=remaining)
        count -= dec
        keep = ~hit
        fl, idx = fl[keep], idx[keep]
        if scratch:
            scratch[0][0] += 1
    return OK


def fill(flow_links: np.ndarray, capacity_mbps: np.ndarray, rel_tol: float,
         rates: np.ndarray, weights: np.ndarray) -> int:
    """fill_with without scratch (traffic/waterfill.py's fill)."""
    return fill_with(flow_links, capacity_mbps, rel_tol, rates, weights)


def _seconds_left(rem: np.ndarray, rates: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return rem * 8.0 / (rates * 1e6)


def horizon(rem: np.ndarray, rates: np.ndarray) -> float:
    """Seconds until the first flow ends at the current rates (bytes, Mbit/s); nan when a
    flow has nothing left and no rate."""
    left = _seconds_left(rem, rates)
    if left.size == 0:
        return np.inf
    nan = np.isnan(left)
    return float(left[nan][0]) if nan.any() else float(left.min())


def advance(rem: np.ndarray, rates: np.ndarray, links: np.ndarray, dt: float,
            done_by_s: float, util_integral: np.ndarray, util_max: np.ndarray,
            load: np.ndarray, done: np.ndarray, weights: np.ndarray) -> int:
    """Move the fluid dt seconds: per link load (Mbit/s, into load) and its integral and
    maximum when dt > 0; done[f] when flow f had at most done_by_s seconds left; rem[f] minus
    what it sent. Returns how many are done."""
    _unweighted(weights)
    if dt > 0:
        width = links.shape[1]
        load[:] = np.bincount(links.ravel(), weights=np.repeat(rates, width),
                              minlength=load.size)
        util_integral += load * dt
        np.fmax(util_max, load, out=util_max)
    done[:] = _seconds_left(rem, rates) <= done_by_s
    rem -= rates * 1e6 / 8.0 * dt
    return int(np.count_nonzero(done))


def compact(done: np.ndarray, job: np.ndarray, tid: np.ndarray, rem: np.ndarray,
            row: np.ndarray, links: np.ndarray) -> int:
    """Drop the done flows in place, keeping order; negative remaining bytes become 0 (nan
    kept). Returns the new number of flows."""
    keep = ~done
    n = int(np.count_nonzero(keep))
    job[:n], tid[:n], row[:n], links[:n] = job[keep], tid[keep], row[keep], links[keep]
    left = rem[keep]
    rem[:n] = np.where(left <= 0.0, 0.0, left)
    return n

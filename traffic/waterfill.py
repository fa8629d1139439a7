"""The predictor's water-filling, compiled: max-min fair rates by progressive filling.

Pure code (numba, no root). `fill` is called once per event batch of a prediction, thousands
of times per iteration when ECMP's collisions spread completions apart, so it is compiled
(numba, cached beside this file) rather than written as ~25 numpy calls per round: on the
2,048-NIC clos3 each numpy call's fixed cost, not the arithmetic, was the time.

Every round raises all unfrozen flows equally until the tightest link saturates, then freezes
every flow crossing a link whose fair share is within rel_tol of that minimum. Only the links
of the flows just frozen get a new remaining capacity, count and share; the float operations
are those of the numpy kernel they replace (no fast-math, no fused multiply-add), so rates
are bit-for-bit the same (tests/unit/test_predictor.py checks against a full recomputation).
"""
from __future__ import annotations

import numba
import numpy as np

#: fill()'s return codes
OK, NO_FINITE_LINK = 0, 1


@numba.njit(cache=True, error_model="numpy")
def fill(flow_links: np.ndarray, capacity_mbps: np.ndarray, rel_tol: float,
         rates: np.ndarray) -> int:
    """Write max-min rates (Mbit/s) into rates[F]; flow_links (F, K) indexes capacity_mbps.

    Returns OK, or NO_FINITE_LINK when an unfrozen flow crosses only infinite links."""
    n_flows, width = flow_links.shape
    lut = np.full(capacity_mbps.size, -1, np.int64)       # link id -> dense id
    used = np.empty(n_flows * width, np.int64)
    fl = np.empty((n_flows, width), np.int64)
    n_links = 0
    for f in range(n_flows):
        for k in range(width):
            link = flow_links[f, k]
            d = lut[link]
            if d < 0:
                d = n_links
                lut[link] = d
                used[d] = link
                n_links += 1
            fl[f, k] = d
    remaining = np.empty(n_links)
    count = np.zeros(n_links)
    ptr = np.zeros(n_links + 1, np.int64)
    for d in range(n_links):
        remaining[d] = capacity_mbps[used[d]]
    for f in range(n_flows):
        for k in range(width):
            count[fl[f, k]] += 1.0
            ptr[fl[f, k] + 1] += 1
    share = remaining / count                             # every dense link has a flow
    for d in range(n_links):                              # link -> its flows (CSR)
        ptr[d + 1] += ptr[d]
    fill_at = ptr[:-1].copy()
    by_link = np.empty(n_flows * width, np.int64)
    for f in range(n_flows):
        for k in range(width):
            d = fl[f, k]
            by_link[fill_at[d]] = f
            fill_at[d] += 1
    frozen = np.zeros(n_flows, np.bool_)
    hit = np.empty(n_flows, np.int64)
    dec = np.zeros(n_links, np.int64)
    touched = np.empty(n_links, np.int64)
    live = np.arange(n_links)            # links that still carry an unfrozen flow
    n_live = n_links
    near = np.empty(n_links, np.int64)   # links within rel_tol of the running minimum
    left = n_flows
    while left > 0:
        # one pass: the minimum share, the links near it, and drop links left without flows
        m = np.inf
        limit = np.inf
        n_near = 0
        kept = 0
        for i in range(n_live):
            d = live[i]
            if count[d] == 0:
                continue
            live[kept] = d
            kept += 1
            s = share[d]
            if s < m:
                m = s
                limit = m * (1.0 + rel_tol)
            if s <= limit:
                near[n_near] = d
                n_near += 1
        n_live = kept
        if not m < np.inf:
            return NO_FINITE_LINK
        n_hit = 0
        for i in range(n_near):
            d = near[i]
            if share[d] <= limit:
                for p in range(ptr[d], ptr[d + 1]):
                    f = by_link[p]
                    if not frozen[f]:
                        frozen[f] = True
                        rates[f] = m
                        hit[n_hit] = f
                        n_hit += 1
        left -= n_hit
        n_touched = 0
        for h in range(n_hit):
            for k in range(width):
                d = fl[hit[h], k]
                if dec[d] == 0:
                    touched[n_touched] = d
                    n_touched += 1
                dec[d] += 1
        for i in range(n_touched):
            d = touched[i]
            n_off = dec[d]
            dec[d] = 0
            rem = remaining[d] - n_off * m
            if rem < 0.0:
                rem = 0.0
            remaining[d] = rem
            cnt = count[d] - n_off
            count[d] = cnt
            share[d] = np.inf if cnt == 0 else rem / cnt
    return OK

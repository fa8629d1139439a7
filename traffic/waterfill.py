"""The predictor's water-filling, compiled: max-min fair rates by progressive filling.

Pure code (numba, no root). `fill` is called once per event batch of a prediction, thousands
of times per iteration when ECMP's collisions spread completions apart, so it is compiled
(numba, cached beside this file) rather than written as ~25 numpy calls per round: on the
2,048-NIC clos3 each numpy call's fixed cost, not the arithmetic, was the time.

Every round raises all unfrozen flows equally until the tightest link saturates, then freezes
every flow crossing a link whose fair share is within rel_tol of that minimum. Only the links
of the flows just frozen get a new remaining capacity, count and share; the float operations
are those of the numpy kernel they replace (no fast-math, no fused multiply-add), so rates
are bit-for-bit the same (tests/unit/traffic/test_predictor.py checks against a full recomputation).
"""
from __future__ import annotations

import numba
import numpy as np

from .kernel_abi import NO_FINITE_LINK, NO_WEIGHTS, OK, scratch  # noqa: F401 (this API's)


@numba.njit(cache=True)
def _freeze(flows: np.ndarray, m: float, frozen: np.ndarray, rates: np.ndarray,
            hit: np.ndarray, n_hit: int) -> int:
    """Freeze the unfrozen `flows` at rate m, appending them to hit; returns the new count."""
    for f in flows:
        if not frozen[f]:
            frozen[f] = True
            rates[f] = m
            hit[n_hit] = f
            n_hit += 1
    return n_hit


#: fill_with finds each round's links at the minimum share from a heap past this many shared
#: links, by a scan below (per fill, 9,000 flows over 1,500 links: the heap 0.75-0.9x the
#: scan's speed; 12,000-18,000 flows over 8,000-18,000 links: 1.5x)
HEAP_LINKS = 4096


@numba.njit(cache=True)
def _push(key: np.ndarray, val: np.ndarray, size: int, k: float, v: int) -> int:
    """Add (k, v) to the binary min-heap key[:size] (val alongside); returns the new size."""
    i = size
    key[i], val[i] = k, v
    while i > 0:
        up = (i - 1) >> 1
        if key[up] <= key[i]:
            break
        key[up], key[i] = key[i], key[up]
        val[up], val[i] = val[i], val[up]
        i = up
    return size + 1


@numba.njit(cache=True)
def _pop(key: np.ndarray, val: np.ndarray, size: int) -> int:
    """Remove the heap's top; returns the new size."""
    size -= 1
    key[0], val[0] = key[size], val[size]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and key[c + 1] < key[c]:
            c += 1
        if key[i] <= key[c]:
            break
        key[c], key[i] = key[i], key[c]
        val[c], val[i] = val[i], val[c]
        i = c
    return size


@numba.njit(cache=True)
def _settle(key: np.ndarray, val: np.ndarray, size: int, low: np.ndarray, share: np.ndarray,
            count: np.ndarray, limit: float) -> int:
    """Pop entries at the top (while their key <= limit) until the top is a link's entry at
    its current share: drop links without flows and entries not their link's low, put a
    risen link's entry back at its share. Returns the new size."""
    while size > 0 and key[0] <= limit:
        k, d = key[0], val[0]
        if k == low[d] and k == share[d] and count[d] != 0:
            break
        size = _pop(key, val, size)
        if k == low[d] and count[d] != 0 and share[d] == share[d]:     # risen since pushed
            size = _push(key, val, size, share[d], d)
            low[d] = share[d]
        elif k == low[d]:
            low[d] = np.inf                   # no flows left, or a nan share: never a minimum
    return size


@numba.njit(cache=True)
def _scan(live: np.ndarray, n_live: int, count: np.ndarray, share: np.ndarray,
          rel_tol: float, near: np.ndarray) -> tuple[int, int, float]:
    """The minimum share over the live links and the links within rel_tol of the running
    minimum (into near, in link order), dropping links left without flows from live.
    Returns (links still live, links near, the minimum)."""
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
    return kept, n_near, m


@numba.njit(cache=True)
def _take(key: np.ndarray, val: np.ndarray, size: int, low: np.ndarray, share: np.ndarray,
          count: np.ndarray, limit: float, near: np.ndarray) -> tuple[int, int]:
    """Pop every link whose share is at most limit into near, in link order (as _scan finds
    them). Returns (the heap's new size, links taken)."""
    n_near = 0
    while True:
        size = _settle(key, val, size, low, share, count, limit)
        if size == 0 or key[0] > limit:
            break
        d = val[0]
        size = _pop(key, val, size)
        low[d] = np.inf                       # its flows freeze: pushed again if any are left
        near[n_near] = d
        n_near += 1
    _sort_ids(near[:n_near])
    return size, n_near


@numba.njit(cache=True)
def _sort_ids(ids: np.ndarray) -> None:
    """Sort distinct ids in place, in O(n log n) always: numba's quicksort took ~20 ms on the
    16,000 links a heap hands out at one level (in pop order: the first, then the rest
    reversed), ~1,000x a merge sort. Distinct values: any sort gives the same order."""
    if ids.size > 16:
        ids[:] = ids[np.argsort(ids, kind="mergesort")]
    else:
        ids.sort()


@numba.njit(cache=True, inline="always")
def _w(weights: np.ndarray, f: int, k: int) -> float:
    """Flow f's use of its k-th link per unit of its rate: 1, or weights[f, k] when given."""
    return 1.0 if weights.shape[0] == 0 else weights[f, k]


@numba.njit(cache=True, error_model="numpy")
def _shared_links(flow_links: np.ndarray, capacity_mbps: np.ndarray, weights: np.ndarray,
                  on: np.ndarray, weight: np.ndarray, lut: np.ndarray):
    """fill()'s start: each flow's cap from its private links (those only it crosses), the
    shared links as dense ids (fl, -1: private or infinite) with their remaining capacity,
    weighted flow count and fair share, and each shared link's flows (by_link[ptr[d]:...]).
    Links of infinite capacity (the rows' padding) take no part: their share is never the
    minimum, and skipping them spares most of the work when short paths are padded (in a
    384-rank ring on 64-NIC leaves, ~60% of the row entries).
    on, weight, lut: per link scratch (0, 0.0, -1 on entry; left so on return)."""
    n_flows, width = flow_links.shape
    unweighted = weights.shape[0] == 0                    # weight = on: not summed
    for f in range(n_flows):
        for k in range(width):
            link = flow_links[f, k]
            if capacity_mbps[link] < np.inf:
                on[link] += 1
                if not unweighted:
                    weight[link] += weights[f, k]
    own_cap = np.full(n_flows, np.inf)                    # min over a flow's private links
    most = min(n_flows * width, capacity_mbps.size)       # shared links, at most
    used = np.empty(most, np.int64)                       # lut: shared link id -> dense id
    fl = np.full((n_flows, width), -1, np.int64)          # dense ids; -1: private or infinite
    ptr = np.empty(most + 1, np.int64)                    # CSR, in dense id order
    fill_at = np.empty(most, np.int64)
    by_link = np.empty(n_flows * width, np.int64)         # shared link -> its flows (CSR)
    ptr[0] = 0
    n_links = 0
    for f in range(n_flows):                  # one pass: dense ids, own caps and the CSR
        for k in range(width):
            link = flow_links[f, k]
            if on[link] == 0:                             # infinite: never a bottleneck
                continue
            if on[link] == 1:                 # private: its only visit puts it back
                own_cap[f] = min(own_cap[f], capacity_mbps[link] / _w(weights, f, k))
                on[link] = 0
                if not unweighted:
                    weight[link] = 0.0
                continue
            d = lut[link]
            if d < 0:                         # first seen: its segment after the last one's
                d = n_links
                lut[link] = d
                used[d] = link
                fill_at[d] = ptr[d]
                ptr[d + 1] = ptr[d] + on[link]
                n_links += 1
            fl[f, k] = d
            by_link[fill_at[d]] = f
            fill_at[d] += 1
    remaining = np.empty(n_links)
    count = np.empty(n_links)
    for d in range(n_links):
        link = used[d]
        remaining[d] = capacity_mbps[link]
        count[d] = on[link] if unweighted else weight[link]
        on[link] = 0                                      # the scratch back as it came
        weight[link] = 0.0
        lut[link] = -1
    share = remaining / count
    return own_cap, fl, remaining, count, ptr[:n_links + 1], share, by_link


#: _cap_order buckets the flows' own caps when they take at most this many distinct values
CAP_BUCKETS = 8


@numba.njit(cache=True)
def _cap_order(own_cap: np.ndarray, unweighted: bool) -> np.ndarray:
    """The flows by ascending own cap. Unweighted flows frozen in one round add 1 each to
    their links' counts, in any order, so ties may come in any order: with at most
    CAP_BUCKETS distinct caps (host links at one or two rates) a counting sort, O(flows),
    replaces argsort's O(flows log flows) (~0.16 ms at 9,000 flows)."""
    n = own_cap.size
    if unweighted:
        vals = np.empty(CAP_BUCKETS)
        nv = 0
        for f in range(n):
            v = own_cap[f]
            if v != v:                                    # nan: argsort's order
                nv = CAP_BUCKETS + 1
                break
            i = 0
            while i < nv and vals[i] != v:
                i += 1
            if i == nv:
                if nv == CAP_BUCKETS:
                    nv += 1
                    break
                vals[nv] = v
                nv += 1
        if nv <= CAP_BUCKETS:
            vals = np.sort(vals[:nv])
            at = np.zeros(nv + 1, np.int64)
            bucket = np.empty(n, np.int64)
            for f in range(n):
                i = 0
                while vals[i] != own_cap[f]:
                    i += 1
                bucket[f] = i
                at[i + 1] += 1
            for i in range(nv):
                at[i + 1] += at[i]
            order = np.empty(n, np.int64)
            for f in range(n):
                order[at[bucket[f]]] = f
                at[bucket[f]] += 1
            return order
    return np.argsort(own_cap)


@numba.njit(cache=True, error_model="numpy")
def fill(flow_links: np.ndarray, capacity_mbps: np.ndarray, rel_tol: float,
         rates: np.ndarray, weights: np.ndarray) -> int:
    """fill_with and its per-link scratch made for this call."""
    n = capacity_mbps.size
    return fill_with(flow_links, capacity_mbps, rel_tol, rates, weights,
                     np.zeros(n, np.int64), np.zeros(n), np.full(n, -1, np.int64))


@numba.njit(cache=True, error_model="numpy")
def fill_with(flow_links: np.ndarray, capacity_mbps: np.ndarray, rel_tol: float,
              rates: np.ndarray, weights: np.ndarray, on: np.ndarray, weight: np.ndarray,
              lut: np.ndarray, heap_first: bool = False) -> int:
    """Write max-min rates (Mbit/s) into rates[F]; flow_links (F, K) indexes capacity_mbps.

    weights (F, K): what flow f puts on its k-th link per unit of its rate (a sprayed flow:
    the share of its paths crossing the link); an empty (0, 0) array: 1 everywhere. A link
    only one flow crosses (most host links) is that flow's own cap; each round takes the
    shared links at the minimum share (by a scan, then from a heap: below) and the caps in
    ascending order (heap_first: from the heap at any size, for tests). Returns OK,
    or NO_FINITE_LINK when an unfrozen flow crosses only infinite links."""
    n_flows, width = flow_links.shape
    own_cap, fl, remaining, count, ptr, share, by_link = _shared_links(
        flow_links, capacity_mbps, weights, on, weight, lut)
    n_links = remaining.size
    by_cap = _cap_order(own_cap, weights.shape[0] == 0)
    cap_head = 0                                          # by_cap[:cap_head] are frozen
    frozen = np.zeros(n_flows, np.bool_)
    hit = np.empty(n_flows, np.int64)
    dec = np.zeros(n_links)                               # weight frozen per link this round
    touched = np.empty(n_links, np.int64)
    near = np.empty(n_links, np.int64)                    # links at the minimum this round
    # Each round finds the shared links at the minimum share: by a scan of the links with
    # flows when they are few (up to HEAP_LINKS), else from a heap holding for every link
    # with flows an entry whose key (low[d]) is at most its share (a scan per round cost
    # ~10 ms per fill at 18,000 links and 150 rounds). A share that rises (the usual change)
    # keeps its entry, lazily: when it surfaces it goes back in at the current share; one
    # that falls (by rounding) is pushed at once. Both find the same links.
    live = np.arange(n_links)                             # scan: links that may have flows
    n_live = n_links
    heap = heap_first or n_links > HEAP_LINKS
    # at most: every link with flows, and one push per (flow, shared link) as flows freeze
    key = np.empty(n_links + ptr[n_links] + 1 if heap else 0)
    val = np.empty(key.size, np.int64)
    low = np.full(n_links if heap else 0, np.inf)
    size = _heap_of(key, val, low, share, count) if heap else 0
    left = n_flows
    while left > 0:
        m = np.inf
        n_near = 0
        if heap:
            size = _settle(key, val, size, low, share, count, np.inf)
            if size > 0:
                m = key[0]
        else:
            n_live, n_near, m = _scan(live, n_live, count, share, rel_tol, near)
        while cap_head < n_flows and frozen[by_cap[cap_head]]:
            cap_head += 1
        if cap_head < n_flows:
            m = min(m, own_cap[by_cap[cap_head]])
        if not m < np.inf:
            return NO_FINITE_LINK
        limit = m * (1.0 + rel_tol)
        if heap:
            size, n_near = _take(key, val, size, low, share, count, limit, near)
        else:
            n_near = _within(near, n_near, share, limit)
        n_hit = 0
        for i in range(n_near):
            n_hit = _freeze(by_link[ptr[near[i]]:ptr[near[i] + 1]], m, frozen, rates, hit,
                            n_hit)
        i = cap_head
        while i < n_flows and own_cap[by_cap[i]] <= limit:
            i += 1
        n_hit = _freeze(by_cap[cap_head:i], m, frozen, rates, hit, n_hit)
        left -= n_hit
        n_touched = _weigh_frozen(hit, n_hit, fl, weights, dec, touched)
        size = _release(touched, n_touched, dec, m, remaining, count, share, heap, key, val,
                        low, size)
    return OK


@numba.njit(cache=True)
def _heap_of(key: np.ndarray, val: np.ndarray, low: np.ndarray, share: np.ndarray,
             count: np.ndarray) -> int:
    """The heap of every link with flows at its share (low[d]: its key); the heap's size."""
    size = 0
    for d in range(low.size):
        if count[d] != 0 and share[d] == share[d]:
            size = _push(key, val, size, share[d], d)
            low[d] = share[d]
    return size


@numba.njit(cache=True)
def _within(near: np.ndarray, n_near: int, share: np.ndarray, limit: float) -> int:
    """Keep the links of near[:n_near] whose share is at most `limit`; how many."""
    kept = 0
    for i in range(n_near):
        if share[near[i]] <= limit:
            near[kept] = near[i]
            kept += 1
    return kept


@numba.njit(cache=True)
def _weigh_frozen(hit: np.ndarray, n_hit: int, fl: np.ndarray, weights: np.ndarray,
                  dec: np.ndarray, touched: np.ndarray) -> int:
    """Add the weight each flow frozen this round (hit[:n_hit]) put on each of its links
    to dec[link]; the links touched, in touched[:n]; returns n."""
    n_touched = 0
    for h in range(n_hit):
        for k in range(fl.shape[1]):
            d = fl[hit[h], k]
            if d < 0:
                continue
            if dec[d] == 0:
                touched[n_touched] = d
                n_touched += 1
            dec[d] += _w(weights, hit[h], k)
    return n_touched


@numba.njit(cache=True, error_model="numpy")
def _release(touched: np.ndarray, n_touched: int, dec: np.ndarray, m: float,
             remaining: np.ndarray, count: np.ndarray, share: np.ndarray, heap: bool,
             key: np.ndarray, val: np.ndarray, low: np.ndarray, size: int) -> int:
    """Take the frozen flows (rate m, weights dec) off the touched links: their remaining
    capacity, flow weight and share; a share that fell goes into the heap. The heap's size."""
    for i in range(n_touched):
        d = touched[i]
        n_off = dec[d]
        dec[d] = 0.0
        rem = remaining[d] - n_off * m
        if rem < 0.0:
            rem = 0.0
        remaining[d] = rem
        cnt = count[d] - n_off
        if cnt < 1e-12 * n_off:           # weights that do not sum back to 0 exactly
            cnt = 0.0
        count[d] = cnt
        share[d] = np.inf if cnt == 0 else rem / cnt
        if heap and cnt != 0 and share[d] < low[d]:
            size = _push(key, val, size, share[d], d)
            low[d] = share[d]
    return size


@numba.njit(cache=True, error_model="numpy")
def horizon(rem: np.ndarray, rates: np.ndarray) -> float:
    """Seconds until the first flow ends at the current rates (bytes, Mbit/s); nan as numpy's
    min would give it (a flow with nothing left and no rate)."""
    m = np.inf
    for f in range(rem.size):
        left = rem[f] * 8.0 / (rates[f] * 1e6)
        if left != left:
            return left
        if left < m:
            m = left
    return m


@numba.njit(cache=True, error_model="numpy")
def advance(rem: np.ndarray, rates: np.ndarray, links: np.ndarray, dt: float,
            done_by_s: float, util_integral: np.ndarray, util_max: np.ndarray,
            load: np.ndarray, done: np.ndarray, weights: np.ndarray) -> int:
    """Move the fluid dt seconds: per link load (Mbit/s, into load; weights as in fill) and
    its integral and maximum when dt > 0; done[f] when flow f had at most done_by_s seconds
    left; rem[f] minus what it sent. Returns how many are done."""
    n_flows, width = links.shape
    if dt > 0:
        load[:] = 0.0
        for f in range(n_flows):
            for k in range(width):
                load[links[f, k]] += rates[f] * _w(weights, f, k)
        for d in range(load.size):
            util_integral[d] += load[d] * dt
            if load[d] > util_max[d]:
                util_max[d] = load[d]
    n_done = 0
    for f in range(n_flows):
        done[f] = rem[f] * 8.0 / (rates[f] * 1e6) <= done_by_s
        n_done += done[f]
        rem[f] = rem[f] - rates[f] * 1e6 / 8.0 * dt
    return n_done


@numba.njit(cache=True)
def compact(done: np.ndarray, job: np.ndarray, tid: np.ndarray, rem: np.ndarray,
            row: np.ndarray, links: np.ndarray) -> int:
    """Drop the done flows in place, keeping order; negative remaining bytes become 0.
    Returns the new number of flows."""
    n = 0
    for f in range(done.size):
        if done[f]:
            continue
        rem[n] = 0.0 if rem[f] <= 0.0 else rem[f]       # np.maximum(rem, 0): nan kept
        if n != f:                  # element by element: a row slice per flow cost ~15 ns
            job[n], tid[n], row[n] = job[f], tid[f], row[f]
            for k in range(links.shape[1]):
                links[n, k] = links[f, k]
        n += 1
    return n


_warm = False


def warm() -> None:
    """Compile the kernels, or load them from numba's cache, on a one-flow case, so that
    a run's first timed prediction does not pay for it (once per process)."""
    global _warm
    if _warm:
        return
    from traffic.numba_start import registries
    registries()                      # numba's NumPy registries without scipy.linalg
    links = np.zeros((1, 1), np.int64)
    cap, rates, rem = np.ones(1), np.zeros(1), np.ones(1)
    fill(links, cap, 1e-9, rates, NO_WEIGHTS)
    fill_with(links, cap, 1e-9, rates, NO_WEIGHTS, *scratch(1))
    horizon(rem, rates)
    advance(rem, rates, links, 0.0, 0.0, np.zeros(1), np.zeros(1), np.zeros(1),
            np.zeros(1, np.bool_), NO_WEIGHTS)
    compact(np.zeros(1, np.bool_), np.zeros(1, np.int64), np.zeros(1, np.int64), rem,
            np.zeros(1, np.int64), links)
    _warm = True

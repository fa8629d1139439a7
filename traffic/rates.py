"""The max-min fair rates of a set of flows over link capacities: progressive filling,
vectorized with numpy over an active-flows x links incidence given as index arrays (the
reference; traffic/waterfill.py is the compiled kernel the predictor runs).
"""
from __future__ import annotations

import numpy as np

from .prediction import PredictorError


def max_min_rates(flow_links: np.ndarray, capacity_mbps: np.ndarray,
                  rel_tol: float = 1e-9, out: np.ndarray | None = None,
                  weights: np.ndarray | None = None, scratch: tuple | None = None,
                  kernels=None) -> np.ndarray:
    """Max-min fair rates (Mbit/s) by progressive filling (traffic/waterfill.py, compiled),
    written into `out` when given (F floats).

    flow_links: (F, K) int array, row f = indices into capacity_mbps of the links flow f
    crosses (pad with the index of an entry whose capacity is inf). capacity_mbps: (L,) floats.
    weights: (F, K) floats, what flow f puts on link flow_links[f, k] per unit of its rate
    (None: 1; a flow sprayed over P paths puts 1/P on each path's own links).
    Every round raises all unfrozen flows equally until the tightest link saturates, then
    freezes every flow crossing a link whose fair share is within rel_tol of that minimum.
    scratch: the kernels' scratch(L), reused across calls (None: made per call). kernels:
    traffic/waterfill.py (None: those, compiled) or traffic/waterfill_np.py.
    """
    if kernels is None:
        from traffic import waterfill as kernels   # numba's import (~0.3 s) only when here
    waterfill = kernels
    rates = np.zeros(flow_links.shape[0]) if out is None else out
    if rates.size == 0:
        return rates
    links = np.ascontiguousarray(flow_links, dtype=np.int64)
    cap = np.ascontiguousarray(capacity_mbps, dtype=np.float64)
    w = (waterfill.NO_WEIGHTS if weights is None
         else np.ascontiguousarray(weights, dtype=np.float64))
    status = (waterfill.fill(links, cap, float(rel_tol), rates, w) if scratch is None else
              waterfill.fill_with(links, cap, float(rel_tol), rates, w, *scratch))
    if status != waterfill.OK:
        raise PredictorError("a flow crosses no link of finite capacity")
    return rates

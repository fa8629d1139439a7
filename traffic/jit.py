"""The predictor's choice between its compiled kernels (traffic/waterfill.py,
traffic/dag_kernel.py; numba's start-up: traffic/numba_start.py) and their numpy twins
(traffic/waterfill_np.py), by size.
"""
from __future__ import annotations

import sys

#: The predictor's kernels: "auto" (by size, below), "compiled" or "numpy" (every prediction).
KERNELS = "auto"
#: "auto": a prediction of fewer flow completions than this (transfers x iterations over its
#: jobs) runs the numpy kernels (traffic/waterfill_np.py) and the Python DAG step, and so
#: never imports numba, unless this process has the compiled kernels ready already (the
#: measurements that set it: docs/prediction.md, "Small predictions without numba").
NUMPY_MAX_COMPLETIONS = 20_000
#: ... on a fabric of at most this many directed links: every batch moves the fluid over every
#: link, which the numpy kernels do 2-3x slower per link than the compiled loop.
NUMPY_MAX_LINKS = 16_384


def compiled_ready() -> bool:
    """Whether this process has loaded (or compiled) the predictor's compiled kernels."""
    waterfill = sys.modules.get("traffic.waterfill")
    return waterfill is not None and getattr(waterfill, "_warm", False)


def use_compiled(completions: int, weighted: bool, links: int = 0) -> bool:
    """Whether a prediction of about `completions` flow completions over a fabric of `links`
    directed links runs the compiled kernels (traffic/waterfill.py, traffic/dag_kernel.py):
    always with weighted links (per-packet spraying, which the numpy kernels do not model),
    when KERNELS says so, from NUMPY_MAX_COMPLETIONS or past NUMPY_MAX_LINKS, and when this
    process has them ready (numba's start-up paid:
    they are then faster at any size); otherwise the numpy kernels. Both paths give the same
    results bit for bit; results.json's predict_kernels says which one ran."""
    if weighted or KERNELS == "compiled":
        return True
    if KERNELS == "numpy":
        return False
    return (completions >= NUMPY_MAX_COMPLETIONS or links > NUMPY_MAX_LINKS
            or compiled_ready())


def kernels(completions: int, weighted: bool, links: int = 0) -> tuple:
    """(water-filling kernels, DAG kernel or None): the compiled ones, made ready (compiled
    or loaded from numba's cache), or traffic/waterfill_np.py and None (the Python DAG
    step)."""
    if use_compiled(completions, weighted, links):
        from traffic import dag_kernel, waterfill
        waterfill.warm()
        dag_kernel.warm()
        return waterfill, dag_kernel
    from traffic import waterfill_np
    return waterfill_np, None

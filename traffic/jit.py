"""numba's start-up for the compiled kernels (routing/greedy.py, traffic/waterfill.py,
traffic/dag_kernel.py), without the part they never use; and the predictor's choice between
its compiled kernels and their numpy twins (traffic/waterfill_np.py), by size.

numba's first compile or cache load imports its NumPy registries; one of them,
numba.np.arraymath, imports scipy.linalg (0.2 s of CPU, a tenth of a small `predict` command)
only to learn whether BLAS is there for np.correlate and np.convolve, which no kernel of
ours calls. `registries()` imports that module with scipy.linalg held off, so numba takes
its own BLAS-free inner product (the same arithmetic loop) for those two functions in this
process; scipy.linalg imports normally afterwards. A process that has already imported
scipy.linalg (or the registry) is left as it is.
"""
from __future__ import annotations

import sys

_BLOCKED = "scipy.linalg"


def registries() -> bool:
    """Import numba's NumPy registries without scipy.linalg (once per process); True when
    this call held scipy.linalg off."""
    if "numba.np.arraymath" in sys.modules or _BLOCKED in sys.modules:
        return False
    try:
        import numba  # noqa: F401
    except ImportError:                      # pragma: no cover - numba is in requirements.txt
        return False
    sys.modules[_BLOCKED] = None          # `import scipy.linalg` raises ImportError
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        if _BLOCKED in sys.modules and sys.modules[_BLOCKED] is None:
            del sys.modules[_BLOCKED]
    return True


#: The predictor's kernels: "auto" (by size, below), "compiled" or "numpy" (every prediction).
KERNELS = "auto"
#: "auto": a prediction of fewer flow completions than this (transfers x iterations over its
#: jobs) runs the numpy kernels (traffic/waterfill_np.py) and the Python DAG step, and so
#: never imports numba, unless this process has the compiled kernels ready already.
#: Measured (floodns cases, CPU of the predictions with numba's start-up, load 3.2): 2,112
#: completions 0.06 s numpy against 0.45 s compiled; 46,464: 1.30 against 0.96 s; 59,136:
#: 1.27 against 0.74 s (numpy ~25 us a completion, compiled ~0.4-0.7 s once + ~6 us).
NUMPY_MAX_COMPLETIONS = 20_000
#: ... on a fabric of at most this many directed links: every batch moves the fluid over every
#: link (np.bincount, the integral and the maximum), 2-3x the compiled loop's time per link.
#: Measured on 8,192 links (floodns's fat-tree, the paper's 2,048-NIC leaf-spine: 19,008
#: completions 0.37 s numpy against 0.55 s compiled); larger fabrics take the compiled kernels.
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

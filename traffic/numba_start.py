"""numba's start-up for the compiled kernels (routing/greedy.py, traffic/waterfill.py,
traffic/dag_kernel.py), without the part they never use.

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
from typing import Callable

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


def njit(fn: Callable, what: str) -> Callable:
    """`fn` compiled by numba, cached on disk, without the GIL and its division checks
    (error_model "numpy"; no fastmath, so floats match Python's); plain `fn` with a warning
    saying that `what` in plain Python when numba is missing."""
    try:
        import numba
    except ImportError:                      # pragma: no cover - numba is in requirements.txt
        import warnings
        warnings.warn(f"numba is not installed: {what} in plain Python (slow); "
                      "pip install -r requirements.txt")
        return fn
    return numba.njit(cache=True, nogil=True, error_model="numpy")(fn)

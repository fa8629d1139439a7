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

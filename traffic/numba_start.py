"""numba's start-up for the compiled kernels (routing/greedy.py, traffic/waterfill.py,
traffic/dag_kernel.py), without the parts they never use.

Loading a kernel from numba's cache: numba's Cache.load_overload first refreshes the whole
CPU target context, which imports and installs every typing and lowering registry numba has
(random generators, typed containers, jitclass, linalg: ~0.1 s of CPU, a sixth of a small
`predict` command) although a cached kernel is machine code that needs only numba's runtime
(NRT) to run. `registries()` makes a cache load initialise the runtime only; a compile (a
cache miss) refreshes the contexts itself (numba's CompilerBase), as before.

Compiling: one of those registries, numba.np.arraymath, imports scipy.linalg (0.2 s of CPU)
only to learn whether BLAS is there for np.correlate and np.convolve, which no kernel of ours
calls. The full refresh imports that module with scipy.linalg held off, so numba takes its
own BLAS-free inner product (the same arithmetic loop) for those two functions in this
process; scipy.linalg imports normally afterwards. A process that has already imported
scipy.linalg (or the registry) is left as it is.
"""
from __future__ import annotations

import sys
from typing import Callable

_BLOCKED = "scipy.linalg"
#: Whether this process's numba loads its cached kernels without the full refresh.
_INSTALLED = False
#: Whether a kernel came from numba's cache through the light load (numba's start-up paid).
_LOADED = False


def registries() -> bool:
    """numba's start-up made light (once per process, before the first kernel is called):
    cache loads initialise numba's runtime only (`_light_load_overload`), and the full
    refresh a compile makes imports numba.np.arraymath without scipy.linalg. True when this
    call changed how this process starts numba."""
    global _INSTALLED
    if _INSTALLED:
        return False
    try:
        import numba  # noqa: F401
        from numba.core import caching, cpu
    except ImportError:                      # pragma: no cover - numba is in requirements.txt
        return False
    cache, context = caching.Cache, cpu.CPUContext
    if not all(hasattr(cache, a) for a in ("load_overload", "_load_overload",
                                           "_guard_against_spurious_io_errors")):
        return False                          # pragma: no cover - another numba: as it is
    cache.load_overload = _light_load_overload(cache.load_overload)
    context.refresh = _refresh_without_scipy_linalg(context.refresh)
    _INSTALLED = True
    return True


def _light_load_overload(full: Callable) -> Callable:
    """numba's Cache.load_overload(sig, target_context) for the CPU target, with numba's
    runtime initialised in place of the refresh of every registry; `full` for others."""
    from numba.core.cpu import CPUContext
    from numba.core.runtime import rtsys

    def load_overload(self, sig, target_context):
        global _LOADED
        if not isinstance(target_context, CPUContext):
            return full(self, sig, target_context)
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            loaded = self._load_overload(sig, target_context)
            _LOADED = _LOADED or loaded is not None
            return loaded
    return load_overload


def _refresh_without_scipy_linalg(full: Callable) -> Callable:
    """CPUContext.refresh, with numba.np.arraymath imported first without scipy.linalg."""
    def refresh(self):
        _arraymath_without_scipy_linalg()
        return full(self)
    return refresh


def _arraymath_without_scipy_linalg() -> bool:
    """Import numba.np.arraymath with `import scipy.linalg` failing; True when it did."""
    if "numba.np.arraymath" in sys.modules or _BLOCKED in sys.modules:
        return False
    sys.modules[_BLOCKED] = None          # `import scipy.linalg` raises ImportError
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        if _BLOCKED in sys.modules and sys.modules[_BLOCKED] is None:
            del sys.modules[_BLOCKED]
    return True


def started() -> bool:
    """Whether this process has paid numba's start-up: a kernel loaded from numba's cache,
    or numba's registries imported (a compile, or a full refresh)."""
    return _LOADED or "numba.np.arraymath" in sys.modules


def njit(fn: Callable, what: str, **options) -> Callable:
    """`fn` compiled by numba, cached on disk, without the GIL and its division checks
    (error_model "numpy"; no fastmath, so floats match Python's), or with numba's `options`
    in their place; plain `fn` with a warning saying that `what` in plain Python when numba
    is missing."""
    try:
        import numba
    except ImportError:                      # pragma: no cover - numba is in requirements.txt
        import warnings
        warnings.warn(f"numba is not installed: {what} in plain Python (slow); "
                      "pip install -r requirements.txt")
        return fn
    return numba.njit(**{"cache": True, "nogil": True, "error_model": "numpy", **options})(fn)


def njit_calling(fn: Callable, helpers: tuple[str, ...], what: str, **options) -> Callable:
    """`fn` compiled by `njit` (with `options`) once the functions of its module it calls,
    named in `helpers`, are compiled in their place there (with the same options): numba
    compiles a call only to a numba function."""
    scope = fn.__globals__
    for name in helpers:
        if not hasattr(scope[name], "py_func"):
            scope[name] = njit(scope[name], what, **options)
    return njit(fn, what, **options)

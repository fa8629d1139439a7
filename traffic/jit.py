"""The predictor's choice between its compiled kernels (traffic/waterfill.py,
traffic/dag_kernel.py: built ahead of time by traffic/aot.py, else by numba at run time,
whose start-up is traffic/numba_start.py) and their numpy twins (traffic/waterfill_np.py),
by size when only numba's are there.
"""
from __future__ import annotations

import sys
from typing import Callable

#: The predictor's kernels: "auto" (by size, below), "compiled" or "numpy" (every prediction).
KERNELS = "auto"
#: Whether the compiled kernels come from the module built ahead of time when there is one
#: (traffic/aot.py; no numba at run time), else from numba.
AHEAD_OF_TIME = True
#: "auto": a prediction of fewer flow completions than this (transfers x iterations over its
#: jobs) runs the numpy kernels (traffic/waterfill_np.py) and the Python DAG step, and so
#: never imports numba, unless this process has the compiled kernels ready already (the
#: measurements that set it: docs/prediction.md, "Small predictions without numba").
NUMPY_MAX_COMPLETIONS = 20_000
#: ... on a fabric of at most this many directed links: every batch moves the fluid over every
#: link, which the numpy kernels do 2-3x slower per link than the compiled loop.
NUMPY_MAX_LINKS = 16_384
#: ... and a prediction that took the numpy kernels moves to the compiled ones once their
#: water-filling has run this many rounds (each round is ~25 numpy calls over the flows in
#: flight, ~25 us; ECMP's collisions on a 2,048-NIC clos3 gave 80 rounds a batch over 6,578
#: batches: 15 s in numpy, 1.7 s compiled): about numba's start-up (0.4-0.7 s) of numpy work.
NUMPY_MAX_ROUNDS = 20_000
#: ... or this many once numba's start-up is paid in this process (a routing's compiled loops
#: loaded numba and its NumPy registries): the compiled kernels then cost only their load
#: from numba's cache, ~0.1 s, about this many rounds of numpy work at 2,048 NICs (89 us a
#: round over ~1,400 flows); the shipped configs small enough for numpy run at most 206.
NUMPY_MAX_ROUNDS_STARTED = 1_000


def compiled_ready() -> bool:
    """Whether the predictor's compiled kernels cost nothing more to start: built ahead of
    time, or loaded (or compiled) by numba in this process already."""
    if ahead_of_time() is not None:
        return True
    waterfill = sys.modules.get("traffic.waterfill")
    return waterfill is not None and getattr(waterfill, "_warm", False)


def ahead_of_time() -> tuple | None:
    """The kernels built ahead of time for these sources (traffic/aot.py), or None."""
    if not AHEAD_OF_TIME:
        return None
    from traffic import aot
    return aot.load()


def built_ahead(fn: Callable) -> Callable | None:
    """The export of the kernel named as `fn` from the module built ahead of time
    (traffic/aot.py), unless AHEAD_OF_TIME is off; None when there is none (the caller
    takes numba's)."""
    if not AHEAD_OF_TIME:
        return None
    from traffic import aot
    return aot.exports().get(fn.__name__)


class Loops:
    """A routing module's compiled loops `fns`, each made once into `made` (by name): its
    export built ahead of time (`built_ahead`: no numba), else numba's (`numba`) after
    numba's light start-up (traffic/numba_start.py's registries). Called with a loop, it
    returns the loop to run."""

    def __init__(self, what: str, fns: tuple[Callable, ...], helpers: tuple[str, ...],
                 **options):
        self.what, self.helpers, self.options = what, helpers, options
        self.fns = {fn.__name__: fn for fn in fns}
        self.made: dict[str, Callable] = {}

    def __call__(self, fn: Callable) -> Callable:
        name = fn.__name__
        if name not in self.made:
            kernel = built_ahead(fn)
            if kernel is None:
                from traffic.numba_start import registries
                registries()
                kernel = self.numba(name)
            self.made[name] = kernel
        return self.made[name]

    def numba(self, name: str) -> Callable:
        """The loop `name` compiled by numba on first use (or loaded from its on-disk cache)
        with the module's `helpers` it calls, all with `options` (traffic/aot.py's maker);
        plain Python, with a warning saying `what`, without numba."""
        from traffic.numba_start import njit_calling
        return njit_calling(self.fns[name], self.helpers, self.what, **self.options)


def use_compiled(completions: int, weighted: bool, links: int = 0) -> bool:
    """Whether a prediction of about `completions` flow completions over a fabric of `links`
    directed links runs the compiled kernels (traffic/waterfill.py, traffic/dag_kernel.py):
    always with weighted links (per-packet spraying, which the numpy kernels do not model),
    when KERNELS says so, from NUMPY_MAX_COMPLETIONS or past NUMPY_MAX_LINKS, and when they
    are ready (built ahead of time, or numba's start-up paid: they are then faster at any
    size); otherwise the numpy kernels. Both paths give the same
    results bit for bit; results.json's predict_kernels says which one ran."""
    if weighted or KERNELS == "compiled":
        return True
    if KERNELS == "numpy":
        return False
    return (completions >= NUMPY_MAX_COMPLETIONS or links > NUMPY_MAX_LINKS
            or compiled_ready())


def numba_started() -> bool:
    """Whether this process has paid numba's start-up (a kernel loaded from numba's cache,
    or compiled: traffic/numba_start.py)."""
    from traffic.numba_start import started
    return started()


def outgrown(scratch: tuple) -> bool:
    """Whether a prediction running the numpy kernels (their `scratch`: the rounds run so
    far) goes on with the compiled ones ("auto" only; the same results bit for bit): past
    NUMPY_MAX_ROUNDS, or NUMPY_MAX_ROUNDS_STARTED once numba is started."""
    if KERNELS != "auto" or not scratch:
        return False
    rounds = int(scratch[0][0])
    return rounds >= NUMPY_MAX_ROUNDS or (rounds >= NUMPY_MAX_ROUNDS_STARTED
                                          and numba_started())


def compiled() -> tuple:
    """(water-filling kernels, DAG kernel): those built ahead of time, else
    (traffic/waterfill.py, traffic/dag_kernel.py) made ready (compiled or loaded)."""
    built = ahead_of_time()
    if built is not None:
        return built
    from traffic import dag_kernel, waterfill
    waterfill.warm()
    dag_kernel.warm()
    return waterfill, dag_kernel


def kernels(completions: int, weighted: bool, links: int = 0) -> tuple:
    """(water-filling kernels, DAG kernel or None): the compiled ones, made ready (compiled
    or loaded from numba's cache), or traffic/waterfill_np.py and None (the Python DAG
    step)."""
    if use_compiled(completions, weighted, links):
        return compiled()
    from traffic import waterfill_np
    return waterfill_np, None

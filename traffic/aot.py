"""The predictor's compiled kernels and the routings' loops (greedy, gff, annealing, mmf)
built ahead of time into one extension module, so that a command runs them without numba
(whose import and cache load cost ~0.25 s of CPU a command).

`python -m experiments.warm` (run by `make setup`) builds `mlfabric_kernels_<key>.so` in the
virtual environment with numba's ahead-of-time compiler (numba.pycc, a C compiler and
Python's headers). Each export is a two-line function calling the numba kernel of
traffic/waterfill.py, traffic/dag_kernel.py, routing/greedy.py, routing/gff.py,
routing/annealing_kernel.py, routing/mmf_search.py or routing/mmf_descent.py (compiled as
each module compiles it), so the machine code is
numba's, compiled with each kernel's own options, for this machine's CPU. key: sha256 of
those sources, the exports' signatures, numpy's version and Python's. `exports` imports the
module whose key matches; without one (not built, sources changed since, no compiler, a
numba without pycc: pycc is pending deprecation in numba, with a replacement announced) the
kernels are numba's at run time as before (traffic/jit.py).

An exported function reads its arguments as the types it was built for, whatever it is
handed, so each sits behind a check (`_checked`): a wrong dtype, number of dimensions or
memory order raises TypeError, as numba's dispatcher would compile another version instead.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import inspect
import os
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

import numpy as np

from . import kernel_abi

ROOT = Path(__file__).resolve().parents[1]
#: Where the module is built: the virtual environment (one per checkout's .venv).
FOLDER = Path(sys.prefix) / "mlfabric-kernels"
#: The sources the module is built from (and EXPORTS).
SOURCES = ("traffic/waterfill.py", "traffic/dag_kernel.py", "traffic/kernel_abi.py",
           "routing/greedy.py", "routing/gff.py", "routing/annealing_kernel.py",
           "routing/mmf_search.py", "routing/mmf_descent.py")
PREFIX = "mlfabric_kernels_"

_I, _F, _B = np.dtype(np.int64), np.dtype(np.float64), np.dtype(np.bool_)
#: numba's names of the argument types below
_NUMBA = {("i", 0): "i8", ("f", 0): "f8", ("b", 0): "b1", ("i", 1): "i8[::1]",
          ("f", 1): "f8[::1]", ("b", 1): "b1[::1]", ("i", 2): "i8[:,::1]",
          ("f", 2): "f8[:,::1]"}
_DTYPE = {"i": _I, "f": _F, "b": _B}


@dataclass(frozen=True)
class Export:
    """One kernel built into the module: its module and function, its arguments (a letter per
    argument: i int64, f float64, b bool; a digit: 0 a scalar, 1 or 2 a C-ordered array of
    that many dimensions), its result in numba's notation, and the module's function that
    makes its numba version from its name ("": the function itself when numba's, else
    numba_start.njit)."""
    module: str
    name: str
    args: tuple[str, ...]
    result: str
    maker: str = ""

    def signature(self) -> str:
        return f"{self.result}({', '.join(_NUMBA[a[0], int(a[1])] for a in self.args)})"


_FILL = ("i2", "f1", "f0", "f1", "f2")
_W, _DAG = "traffic.waterfill", "traffic.dag_kernel"
_SEARCH, _DESCENT = "routing.mmf_search", "routing.mmf_descent"
_SIDES = ("i1",) * 4             # mmf's sides: starts, jobs, ns, Us
#: What is built: the kernels a prediction and the routings call, with the types they pass.
EXPORTS = (
    Export(_W, "fill", _FILL, "i8"),
    Export(_W, "fill_with", (*_FILL, "i1", "f1", "i1", "b0"), "i8"),
    Export(_W, "horizon", ("f1", "f1"), "f8"),
    Export(_W, "advance", ("f1", "f1", "i2", "f0", "f0", "f1", "f1", "f1", "b1", "f2"), "i8"),
    Export(_W, "compact", ("b1", "i1", "i1", "f1", "i1", "i2"), "i8"),
    Export(_DAG, "complete", ("i0", "b1", "i1", "i1", "f0", *["i1"] * 8, "f1", "f1", "i1",
                              "i1", "b1", "i1", "i1", "i0"), "UniTuple(i8, 5)"),
    Export("routing.greedy", "order_kernel", ("i1", "i1", "b1", "i0"),
           "UniTuple(i8[::1], 3)"),
    Export("routing.greedy", "place_flows", ("i1",) * 8, "none"),
    Export("routing.greedy", "improve_kernel", ("i1",) * 8 + ("i0",), "i8"),
    Export("routing.gff", "sender_demands_kernel", ("i1",) * 4 + ("i0", "i0"),
           "Tuple((f8[::1], b1))"),
    Export("routing.gff", "first_fit_kernel", ("i1",) * 6 + ("f1",) * 3 + ("i1", "i0"), "i8"),
    Export("routing.annealing_kernel", "anneal_paths_kernel", ("i1",) * 12
           + ("i0", "i0", "b0", "i0", "i0", "i0", "f0", "f0", "f0"), "i8",
           maker="numba_kernel"),
    Export(_SEARCH, "fits_kernel", ("i1", "i0", *_SIDES), "b1", maker="numba_kernel"),
    Export(_SEARCH, "hot_kernel", ("i1", "i0", "i0", *_SIDES), "i8", maker="numba_kernel"),
    Export(_SEARCH, "search_kernel", ("i0", "i0", "i0", "i1", "i1", "i1", "i0", *_SIDES, "i0",
                                      "i1", "i1", "i1"), "Tuple((b1, i8))", maker="numba_kernel"),
    Export(_DESCENT, "descend_kernel", ("i2", "i1", "i1", "i1", "i0", "i0", "i1", "i0"), "i8",
           maker="numba_kernel"),
    Export(_DESCENT, "link_matrix_kernel", ("i1",) * 4 + ("i0",), "i8[:,::1]",
           maker="numba_kernel"),
)


class BuildError(RuntimeError):
    """The module could not be built here (no compiler, no Python headers, no numba.pycc)."""


def key() -> str:
    """The module's key: sha256 of SOURCES, EXPORTS, numpy's version and Python's (16 hex
    digits)."""
    h = hashlib.sha256(f"{np.__version__} {sys.version} {sys.platform} {EXPORTS}".encode())
    for name in SOURCES:
        h.update(name.encode() + (ROOT / name).read_bytes())
    return h.hexdigest()[:16]


def built(folder: Path | None = None) -> Path | None:
    """The module built for these sources in `folder` (None: FOLDER), or None."""
    folder = folder or FOLDER
    found = sorted(folder.glob(f"{PREFIX}{key()}.*.so")) if folder.is_dir() else []
    return found[0] if found else None


def build(folder: Path | None = None) -> Path:
    """Build the module into `folder` (None: FOLDER), replacing those of other keys; its
    path. Raises BuildError when numba.pycc or the compiler fails."""
    folder = folder or FOLDER
    name = PREFIX + key()
    try:
        with warnings.catch_warnings():     # pending deprecation: load() falls back to numba
            warnings.simplefilter("ignore")
            from numba.pycc import CC
    except ImportError as e:                    # pragma: no cover - a numba without pycc
        raise BuildError(f"numba has no ahead-of-time compiler (numba.pycc): {e}") from e
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder, prefix=".build-") as tmp:
            _compile(CC(name), Path(tmp))
            out = next(Path(tmp).glob(f"{name}.*.so"))
            for old in folder.glob(f"{PREFIX}*.so"):
                if old.name != out.name:
                    old.unlink(missing_ok=True)
            os.replace(out, folder / out.name)  # whole, or not at all
    except Exception as err:                    # OS, distutils' and numba's errors alike
        raise BuildError(f"building {name} in {folder}: {type(err).__name__}: "
                         f"{' '.join(str(err).split())}") from err
    return folder / out.name


def _compile(cc, into: Path) -> None:
    """Every export into numba.pycc's CC `cc`, compiled and linked into `into`. pycc makes
    its build folder with tempfile and removes it only when the link succeeds: it is made
    inside `into` (tempfile.tempdir, put back after), which build() removes either way."""
    cc.output_dir, cc.target_cpu, cc.verbose = str(into), "host", False
    for e in EXPORTS:
        cc.export(e.name, e.signature())(_forward(_kernel(e)))
    before, tempfile.tempdir = tempfile.tempdir, str(into)
    try:
        cc.compile()
    finally:
        tempfile.tempdir = before


def _kernel(e: Export) -> Callable:
    """e's numba function: its maker's, the module's, or its plain function compiled as the
    routings compile theirs."""
    module = importlib.import_module(e.module)
    if e.maker:
        return getattr(module, e.maker)(e.name)
    fn = getattr(module, e.name)
    if hasattr(fn, "py_func"):
        return fn
    from traffic.numba_start import njit
    return njit(fn, e.name)


def _forward(kernel: Callable) -> Callable:
    """A plain function of the kernel's parameters that calls it (what pycc compiles; the
    kernel keeps its own numba options, e.g. error_model "numpy")."""
    names = ", ".join(inspect.signature(getattr(kernel, "py_func", kernel)).parameters)
    scope = {"kernel": kernel}
    exec(f"def forward({names}):\n    return kernel({names})\n", scope)  # noqa: S102
    return scope["forward"]


_loaded: dict[str, Callable] | None = None


def exports() -> dict[str, Callable]:
    """Every export of the module built for these sources in FOLDER, by function name,
    each behind its check; {} when there is none or it does not import (a warning). Once
    per process."""
    global _loaded
    if _loaded is None:
        path = built()
        try:
            _loaded = {} if path is None else _exports(path)
        except (ImportError, OSError) as e:
            warnings.warn(f"the kernels built ahead of time ({path}) do not load ({e}); "
                          "numba compiles them at run time: make setup rebuilds them")
            _loaded = {}
    return _loaded


@functools.cache
def load() -> tuple[SimpleNamespace, SimpleNamespace] | None:
    """The predictor's (water-filling kernels, DAG kernel) from `exports`, or None."""
    found = exports()
    return _namespaces(found) if found else None


def namespaces(path: Path) -> tuple[SimpleNamespace, SimpleNamespace]:
    """The module at `path` as (water-filling kernels, DAG kernel), in the shape of
    traffic/waterfill.py and traffic/dag_kernel.py."""
    return _namespaces(_exports(path))


def _exports(path: Path) -> dict[str, Callable]:
    spec = importlib.util.spec_from_file_location(path.name.split(".")[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {e.name: _checked(getattr(module, e.name), e) for e in EXPORTS}


def _namespaces(kernels: dict[str, Callable]) -> tuple[SimpleNamespace, SimpleNamespace]:
    fill_with = kernels["fill_with"]
    waterfill = SimpleNamespace(
        **{k: kernels[k] for k in ("fill", "horizon", "advance", "compact")},
        fill_with=lambda *a, heap_first=False: fill_with(*a, heap_first),
        OK=kernel_abi.OK, NO_FINITE_LINK=kernel_abi.NO_FINITE_LINK,
        NO_WEIGHTS=kernel_abi.NO_WEIGHTS, scratch=kernel_abi.scratch, warm=lambda: None)
    dag = SimpleNamespace(complete=kernels["complete"], SCANNED=kernel_abi.SCANNED,
                          ITERATION_ENDED=kernel_abi.ITERATION_ENDED,
                          PYTHON=kernel_abi.PYTHON, FULL=kernel_abi.FULL, warm=lambda: None)
    return waterfill, dag


def _checked(fn: Callable, e: Export) -> Callable:
    """fn behind a check of its array arguments (dtype, dimensions, C order), one
    condition per argument written out (a loop over them cost ~10 us a batch)."""
    names = [f"a{i}" for i in range(len(e.args))]
    tests = [f"(type({n}) is ndarray and ({n}.dtype is {a[0]} or {n}.dtype == {a[0]}) "
             f"and {n}.ndim == {a[1]} and {n}.flags.c_contiguous)"
             for n, a in zip(names, e.args) if a[1] != "0"]
    scope = {"fn": fn, "ndarray": np.ndarray, "wrong": _wrong(e), **_DTYPE}
    exec(f"def {e.name}({', '.join(names)}):\n"                       # noqa: S102
         f"    if not ({' and '.join(tests)}):\n"
         f"        wrong({', '.join(names)})\n"
         f"    return fn({', '.join(names)})\n", scope)
    checked = scope[e.name]
    checked.ahead_of_time = True
    return checked


def _wrong(e: Export) -> Callable:
    """What raises the TypeError naming the first wrong argument of e."""
    def wrong(*args):
        for i, (a, want) in enumerate(zip(args, e.args)):
            dtype, ndim = _DTYPE[want[0]], int(want[1])
            if ndim and not (isinstance(a, np.ndarray) and a.dtype == dtype
                             and a.ndim == ndim and a.flags.c_contiguous):
                raise TypeError(f"{e.name}: argument {i} must be a C-ordered {dtype} array "
                                f"of {ndim} dimension(s), not {_describe(a)}")
    return wrong


def _describe(a) -> str:
    if isinstance(a, np.ndarray):
        order = "C-ordered" if a.flags.c_contiguous else "not C-ordered"
        return f"a {order} {a.dtype} array of {a.ndim} dimension(s)"
    return type(a).__name__

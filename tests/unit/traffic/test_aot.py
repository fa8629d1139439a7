"""traffic/aot.py: the predictor's kernels built ahead of time predict what numba's predict,
bit for bit, refuse arguments of other types, and are found only for the sources they were
built from."""
from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys

import numpy as np
import pytest

from traffic import aot, jit, waterfill
from tests.unit.traffic import test_dag_kernel

pytestmark = pytest.mark.skipif(shutil.which("cc") is None,
                                reason="no C compiler (make setup installs gcc)")


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    """The module built into a folder of this test's (~10-20 s)."""
    return aot.build(tmp_path_factory.mktemp("aot"))


@pytest.fixture(scope="module")
def built(module):
    """(water-filling kernels, DAG kernel) of `module`."""
    return aot.namespaces(module)


@pytest.mark.parametrize("config,sets,routings", test_dag_kernel.CASES)
def test_they_predict_as_numbas_kernels(config, sets, routings, built, monkeypatch):
    monkeypatch.setattr(jit, "KERNELS", "compiled")
    for routing in routings:
        monkeypatch.setattr(jit, "AHEAD_OF_TIME", False)
        want = test_dag_kernel.predict_case(config, sets, routing)
        monkeypatch.setattr(jit, "AHEAD_OF_TIME", True)
        monkeypatch.setattr(aot, "load", lambda: built)
        assert test_dag_kernel.predict_case(config, sets, routing) == want, (config, routing)


@pytest.mark.parametrize("heap_first", [False, True])
def test_the_water_filling_gives_numbas_rates(built, heap_first):
    rng = np.random.default_rng(7)
    links = rng.integers(0, 40, size=(300, 4))
    cap = np.append(rng.uniform(1.0, 10.0, 40), np.inf)
    weights = rng.uniform(0.1, 1.0, size=(300, 4))
    for w in (waterfill.NO_WEIGHTS, weights):
        want, got = np.zeros(300), np.zeros(300)
        waterfill.fill_with(links, cap, 1e-9, want, w, *waterfill.scratch(41),
                            heap_first=heap_first)
        built[0].fill_with(links, cap, 1e-9, got, w, *built[0].scratch(41),
                           heap_first=heap_first)
        assert got.tobytes() == want.tobytes() and want.min() > 0


def test_an_argument_of_another_type_is_refused(built):
    wf = built[0]
    rem, rates = np.ones(4), np.ones(4)
    assert wf.horizon(rem, rates) == 8 / 1e6           # 1 byte at 1 Mbit/s
    for bad in (np.ones(4, np.int64), np.ones(8)[::2], np.ones((2, 2)), [1.0] * 4):
        with pytest.raises(TypeError, match="horizon: argument 0 must be a C-ordered float64"):
            wf.horizon(bad, rates)


def test_a_machine_without_a_compiler_gets_a_build_error_and_no_module(tmp_path,
                                                                       monkeypatch):
    import tempfile
    from pathlib import Path
    monkeypatch.setenv("CC", "/bin/false")                  # what distutils compiles with
    builds, tempdir = set(Path(tempfile.gettempdir()).glob("pycc-build-*")), tempfile.tempdir
    with pytest.raises(aot.BuildError, match="building mlfabric_kernels_"):
        aot.build(tmp_path)
    assert aot.built(tmp_path) is None and list(tmp_path.iterdir()) == []
    assert set(Path(tempfile.gettempdir()).glob("pycc-build-*")) == builds   # pycc's, gone
    assert tempfile.tempdir == tempdir
    monkeypatch.delenv("CC")
    (tmp_path / "file").write_text("")
    with pytest.raises(aot.BuildError, match="FileExistsError|NotADirectoryError"):
        aot.build(tmp_path / "file")                        # a folder it cannot make


def test_only_the_module_of_these_sources_is_found(tmp_path, monkeypatch, built):
    other = tmp_path / f"{aot.PREFIX}{'0' * 16}.cpython-311-x86_64-linux-gnu.so"
    other.write_bytes(b"")
    assert aot.built(tmp_path) is None                      # another key: not this one
    key = aot.key()
    monkeypatch.setattr(aot, "SOURCES", aot.SOURCES[:-1])
    assert aot.key() != key                                 # the key covers every source


def test_greedys_loops_place_as_numbas(module, monkeypatch):
    """greedy's three loops from the module route every case as numba's do."""
    from routing import greedy
    exported = aot._exports(module)
    kernels = {name: exported[name] for name in ("order_kernel", "place_flows",
                                                  "improve_kernel")}
    assert all(k.ahead_of_time for k in kernels.values())
    monkeypatch.setattr(jit, "AHEAD_OF_TIME", False)
    monkeypatch.setattr(greedy.compiled, "made", {})
    want = [_greedy(seed) for seed in range(12)]
    assert not any(getattr(k, "ahead_of_time", False) for k in greedy.compiled.made.values())
    monkeypatch.setattr(greedy.compiled, "made", kernels)
    assert [_greedy(seed) for seed in range(12)] == want


def _greedy(seed: int) -> tuple:
    """greedy's routes of a random three-tier case, and improve_max_paths' moves from a
    random start (test_greedy_kernel's cases)."""
    from routing import route
    from routing.greedy import improve_max_paths
    from routing.paths import loads_of, path_table
    from tests.unit.routing.test_paths_properties import random_case
    f, conns = random_case(seed)
    t = path_table(f, conns)
    start = [random.Random(seed).choice(list(c)) for c in t.cand]
    assign, load = list(start), loads_of(t, start)
    moves = improve_max_paths(t, assign, load)
    return route("greedy", f, conns, seed=seed % 5).path_of, moves, assign


@pytest.mark.parametrize("routing", ["gff", "annealing"])
def test_gffs_and_annealings_loops_route_as_numbas(routing, module, monkeypatch):
    """gff's two loops (the demand estimator, the first fit) and annealing's search from the
    module route random three-tier cases as numba's do."""
    from routing import annealing_kernel, gff
    from routing import route
    from tests.unit.routing.test_paths_properties import random_case
    loops = gff.compiled if routing == "gff" else annealing_kernel.kernel
    exported = aot._exports(module)
    kernels = {name: exported[name] for name in loops.fns}

    def routes() -> list:
        return [route(routing, *random_case(seed), seed=seed % 5).path_of
                for seed in range(8)]
    monkeypatch.setattr(jit, "AHEAD_OF_TIME", False)
    monkeypatch.setattr(loops, "made", {})
    want = routes()
    assert loops.made and not any(getattr(k, "ahead_of_time", False)
                                  for k in loops.made.values())
    monkeypatch.setattr(loops, "made", kernels)
    assert routes() == want


def test_a_command_with_them_imports_no_numba(module, tmp_path):
    """The module alone runs its kernels: a process that loads it imports no numba."""
    program = ("import sys, numpy as np; from traffic import aot; "
               "wf, dk = aot.namespaces(__import__('pathlib').Path(sys.argv[1])); "
               "r = np.zeros(2); wf.fill(np.array([[0], [0]]), np.array([2.0, np.inf]), "
               "1e-9, r, wf.NO_WEIGHTS); print(r.tolist(), 'numba' in sys.modules)")
    path = str(module)
    done = subprocess.run([sys.executable, "-c", program, path], capture_output=True,
                          text=True, timeout=60, cwd=test_dag_kernel.ROOT)
    assert done.returncode == 0, done.stderr[-1000:]
    assert done.stdout.split() == ["[1.0,", "1.0]", "False"]


def _bounds_results(seed: int) -> list:
    """The side checks (fits_kernel, hot_kernel) and both bound searches (search_kernel) of
    random sides, levels, fixes and budgets (test_mmf_paths' cases), as Bounds calls them."""
    from tests.unit.mmf_cases import random_bounds
    rng = random.Random(seed)
    b, A, J, fixes = random_bounds(rng)
    levels = [rng.randint(0, A) for _ in range(J)]
    return [b._fits(levels), *[(b._hot(levels, k), b._search_compiled("jobs", k, fixes),
                                b._search_compiled("links", k, fixes)) for k in range(2, A + 2)]]


def _descents(seed: int) -> tuple:
    """mmf's descent (descend_kernel over link_matrix_kernel's matrix) from a random start
    on a random three-tier case: (assignment, moves)."""
    from routing.mmf_cuts import descend
    from routing.paths import path_table
    from tests.unit.routing.test_paths_properties import random_case
    t = path_table(*random_case(seed))
    rng = random.Random(seed)
    return descend(t, [rng.choice(list(c)) for c in t.cand])


def test_mmfs_loops_give_numbas_results(module, monkeypatch):
    """mmf's bound search and side checks (routing/mmf_search.py) and its descent
    (routing/mmf_descent.py) from the module give numba's results on random cases."""
    from routing import mmf_descent, mmf_search
    exported = aot._exports(module)
    owners = {mmf_search: ("fits_kernel", "hot_kernel", "search_kernel"),
              mmf_descent: ("descend_kernel", "link_matrix_kernel")}

    def results() -> list:
        return [[_bounds_results(seed) for seed in range(150)],
                [_descents(seed) for seed in range(25)]]
    monkeypatch.setattr(jit, "AHEAD_OF_TIME", False)
    for owner in owners:
        monkeypatch.setattr(owner.kernel, "made", {})
    want = results()
    for owner, names in owners.items():
        assert sorted(owner.kernel.made) == sorted(names)
        assert all(hasattr(k, "py_func") for k in owner.kernel.made.values())   # numba's
        monkeypatch.setattr(owner.kernel, "made", {n: exported[n] for n in names})
    assert results() == want
    searched = [found for case in want[0] for _, *both in case[1:] for found in both]
    assert sum(moves for _, moves in want[1]) > 0               # not all trivial
    assert None in searched and any(found for found in searched)


def test_an_mmf_argument_of_another_type_is_refused(module):
    exported = aot._exports(module)
    ints = np.zeros(3, np.int64)
    matrix = exported["link_matrix_kernel"](np.arange(4), ints, ints + 2, ints + 1, 2)
    assert matrix.tolist() == [[0, 1]] * 3 and matrix.flags.c_contiguous
    with pytest.raises(TypeError, match="link_matrix_kernel: argument 1 must be a C-ordered "
                                        "int64 array of 1 dimension"):
        exported["link_matrix_kernel"](np.arange(4), ints.astype(np.int32), ints, ints, 2)
    with pytest.raises(TypeError, match="descend_kernel: argument 0 must be a C-ordered int64 "
                                        "array of 2 dimension.*not C-ordered"):
        exported["descend_kernel"](np.zeros((4, 2), np.int64).T, ints, ints, ints, 1, 4,
                                   ints, 10)
    with pytest.raises(TypeError, match="fits_kernel: argument 0 must be a C-ordered int64"):
        exported["fits_kernel"](np.zeros(1), 2, ints, ints, ints, ints)


_HOSTS = [f"h{i}" for i in range(1, 9)]
#: A small three-tier prediction routed by mmf (its bound search, side checks and descent).
MMF_DOC = {"name": "mmf", "seed": 1, "routing": ["mmf"],
           "fabric": {"topology": "clos3", "pods": 2, "leaves_per_pod": 2, "aggs_per_pod": 2,
                      "cores_per_plane": 2, "hosts_per_leaf": 2, "host_link_mbps": 100,
                      "leaf_agg_mbps": 100, "agg_core_mbps": 50},
           "jobs": [{"name": "ring", "collective": "allreduce", "hosts": _HOSTS[0::2],
                     "size_bytes": 4_000_000, "iterations": 2},
                    {"name": "a2a", "collective": "alltoall", "hosts": _HOSTS[1::2],
                     "size_bytes": 4_000_000, "iterations": 1}]}
_MMF_PREDICTION = """
import json, sys, tempfile
from pathlib import Path
from traffic import aot
aot.FOLDER = Path(sys.argv[1])                 # the module built for the test
from experiments.config import parse
from experiments.predict import predict_experiment
from routing import mmf_descent, mmf_search
with tempfile.TemporaryDirectory() as tmp:
    run = predict_experiment(parse(json.loads(sys.argv[2])), Path(tmp), log=print)["runs"][0]
kernels = {**mmf_search.kernel.made, **mmf_descent.kernel.made}
print(json.dumps({"cct_s": run["cct_s"], "kernels": sorted(kernels),
                  "ahead": all(k.ahead_of_time for k in kernels.values()),
                  "numba": "numba" in sys.modules}))
"""


def _predict_mmf(tmp_path) -> list:
    """MMF_DOC's completion times, predicted in this process (numba's kernels here)."""
    from experiments.config import parse
    from experiments.predict import predict_experiment
    return predict_experiment(parse(MMF_DOC), tmp_path, log=lambda s: None)["runs"][0]["cct_s"]


def test_an_mmf_prediction_with_them_imports_no_numba(module, tmp_path, monkeypatch):
    """A process that finds the module routes by mmf on three tiers with the module's mmf
    kernels, predicts what numba's kernels predict, and imports no numba."""
    done = subprocess.run([sys.executable, "-c", _MMF_PREDICTION, str(module.parent),
                           json.dumps(MMF_DOC)], capture_output=True, text=True, timeout=120,
                          cwd=test_dag_kernel.ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.splitlines()[-1])
    assert got["kernels"] == ["descend_kernel", "fits_kernel", "hot_kernel",
                              "link_matrix_kernel", "search_kernel"]
    assert got["ahead"] and not got["numba"]
    from routing import mmf_descent, mmf_search
    monkeypatch.setattr(jit, "AHEAD_OF_TIME", False)
    for owner in (mmf_search, mmf_descent):
        monkeypatch.setattr(owner.kernel, "made", {})
    assert got["cct_s"] == _predict_mmf(tmp_path) and got["cct_s"]

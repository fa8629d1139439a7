"""The predictor's two code paths (traffic/jit.py): the compiled kernels (numba) and their
numpy twins (traffic/waterfill_np.py) with the Python DAG step. Same predictions bit for
bit on every DAG case of test_dag_kernel, the same kernel results on random inputs, the
choice by size, and a small `predict` that never imports numba and says which path ran."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from traffic import aot, jit, waterfill, waterfill_np

from tests.regression import test_house_regression as house
from tests.unit.traffic import test_dag_kernel

ROOT = Path(__file__).resolve().parents[3]
DIGEST = test_dag_kernel.digest


def _predicted(config: str, sets: list[str], routing: str, path: str, monkeypatch,
               says: str | None = None) -> str:
    """test_dag_kernel's digest of one routing's prediction by `path` ("compiled", "numpy"
    or "auto"), which the prediction must say it took (or `says`)."""
    def digest(pred):
        assert pred.stats.pop("kernels") == (says or path)
        return DIGEST(pred)
    monkeypatch.setattr(jit, "KERNELS", path)
    monkeypatch.setattr(test_dag_kernel, "digest", digest)
    return test_dag_kernel.predict_case(config, sets, routing)


@pytest.mark.parametrize("config,sets,routings", test_dag_kernel.CASES)
def test_numpy_kernels_predict_as_the_compiled(config, sets, routings, monkeypatch):
    for routing in routings:
        assert (_predicted(config, sets, routing, "numpy", monkeypatch)
                == _predicted(config, sets, routing, "compiled", monkeypatch)), \
            (config, sets, routing)


@pytest.mark.parametrize("config,sets,routings", test_dag_kernel.CASES)
def test_a_numpy_prediction_that_outgrows_them_goes_on_compiled(config, sets, routings,
                                                                 monkeypatch):
    """Past NUMPY_MAX_ROUNDS water-filling rounds ("auto") a prediction begun on the numpy
    kernels moves to the compiled ones mid-run: the same prediction bit for bit."""
    from traffic import predictor
    moved = []
    to_compiled = predictor._Simulation._to_compiled
    monkeypatch.setattr(predictor._Simulation, "_to_compiled",
                        lambda sim: (moved.append(sim.batches), to_compiled(sim)))
    for routing in routings:
        want = _predicted(config, sets, routing, "compiled", monkeypatch)
        monkeypatch.setattr(jit, "NUMPY_MAX_ROUNDS", 3)
        monkeypatch.setattr(jit, "NUMPY_MAX_COMPLETIONS", 10 ** 9)     # auto starts on numpy
        monkeypatch.setattr(jit, "NUMPY_MAX_LINKS", 10 ** 9)
        monkeypatch.setattr(jit, "AHEAD_OF_TIME", False)             # numba's only
        monkeypatch.setattr(waterfill, "_warm", False)
        moved.clear()
        assert _predicted(config, sets, routing, "auto", monkeypatch, "compiled") == want, \
            (config, sets, routing)
        assert moved and moved[0] >= 1, (config, sets, routing)  # begun on numpy, then moved
        monkeypatch.undo()
        monkeypatch.setattr(predictor._Simulation, "_to_compiled",
                            lambda sim: (moved.append(sim.batches), to_compiled(sim)))


def test_the_numpy_kernels_count_their_rounds():
    rows, cap = np.array([[0, 1], [1, 2], [2, 3]]), np.array([1.0, 2.0, 4.0, np.inf])
    counter = waterfill_np.scratch(cap.size)
    rates = np.zeros(3)
    waterfill_np.fill_with(rows, cap, 1e-9, rates, waterfill_np.NO_WEIGHTS, *counter)
    assert rates.tolist() == [1.0, 1.0, 3.0] and counter[0][0] == 2
    assert not jit.outgrown(counter) and jit.outgrown((np.array([jit.NUMPY_MAX_ROUNDS]),))
    assert not jit.outgrown(waterfill.scratch(4))              # the compiled path's scratch


def test_a_started_numba_moves_a_numpy_prediction_sooner(monkeypatch):
    """NUMPY_MAX_ROUNDS_STARTED rounds move to the compiled kernels only once numba's
    start-up is paid (a routing's kernels loaded it); NUMPY_MAX_ROUNDS in any case."""
    assert jit.NUMPY_MAX_ROUNDS_STARTED < jit.NUMPY_MAX_ROUNDS
    sooner = (np.array([jit.NUMPY_MAX_ROUNDS_STARTED]),)
    for started in (False, True):
        monkeypatch.setattr(jit, "numba_started", lambda: started)
        assert jit.outgrown(sooner) is started
        assert not jit.outgrown((np.array([jit.NUMPY_MAX_ROUNDS_STARTED - 1]),))
        assert jit.outgrown((np.array([jit.NUMPY_MAX_ROUNDS]),))
    monkeypatch.setattr(jit, "KERNELS", "numpy")
    assert not jit.outgrown(sooner)


def _random_flows(rng, n_links: int, n_flows: int, width: int) -> np.ndarray:
    rows = np.full((n_flows, width), n_links)          # the pad link (infinite)
    for f in range(n_flows):
        k = int(rng.integers(1, width + 1))
        rows[f, :k] = rng.choice(n_links, k, replace=False)
        if k >= 2 and f % 5 == 0:
            rows[f, 1] = rows[f, 0]                    # a link crossed twice
    return rows


@pytest.mark.parametrize("seed", range(60))
def test_numpy_water_filling_as_the_compiled(seed):
    """Rates and status bit for bit: ties within rel_tol, zero capacity, private links."""
    rng = np.random.default_rng(1000 + seed)
    n_links = int(rng.integers(3, 200))
    cap = (rng.choice([10.0, 25.0, 100.0, 100.0 * (1 + 1e-10)], n_links) if seed % 2
           else rng.uniform(1.0, 100.0, n_links))
    if seed % 7 == 0:
        cap[0] = 0.0
    cap = np.append(cap, np.inf)
    rows = _random_flows(rng, n_links, int(rng.integers(1, 300)), int(rng.integers(2, 7)))
    got, want = np.zeros(len(rows)), np.zeros(len(rows))
    s_np = waterfill_np.fill_with(rows, cap, 1e-9, got, waterfill_np.NO_WEIGHTS,
                                  *waterfill_np.scratch(cap.size))
    s_c = waterfill.fill_with(rows, cap, 1e-9, want, waterfill.NO_WEIGHTS,
                              *waterfill.scratch(cap.size))
    assert s_np == s_c == waterfill.OK
    assert got.tobytes() == want.tobytes()


def test_numpy_water_filling_with_only_infinite_links_is_refused_as_compiled():
    rows, cap = np.array([[1, 1]]), np.array([5.0, np.inf])
    assert (waterfill_np.fill(rows, cap, 1e-9, np.zeros(1), waterfill_np.NO_WEIGHTS)
            == waterfill.fill(rows, cap, 1e-9, np.zeros(1), waterfill.NO_WEIGHTS)
            == waterfill.NO_FINITE_LINK)


@pytest.mark.parametrize("seed", range(30))
def test_numpy_fluid_step_as_the_compiled(seed):
    """horizon, advance (loads, their integral and maximum, done flows, bytes left) and
    compact, bit for bit, with zero rates, finished flows and dt = 0."""
    rng = np.random.default_rng(seed)
    n_links, n_flows = 40, int(rng.integers(1, 60))
    links = _random_flows(rng, n_links, n_flows, 4)
    rates = rng.choice([0.0, 10.0, 33.3, 100.0 / 3], n_flows)
    rem = rng.choice([0.0, 1.0, 12500.0, 4e6 / 3], n_flows)
    dt = [0.0, 1e-3, 0.37][seed % 3]
    out = []
    for k in (waterfill_np, waterfill):
        r, ln = rem.copy(), links.copy()
        integral, peak, load = np.ones(n_links + 1), np.zeros(n_links + 1), np.zeros(n_links + 1)
        done = np.zeros(n_flows, np.bool_)
        with np.errstate(divide="ignore", invalid="ignore"):
            h = k.horizon(r, rates)
        n_done = k.advance(r, rates, ln, dt, 1e-3, integral, peak, load, done, k.NO_WEIGHTS)
        job, tid, row = np.arange(n_flows), np.arange(n_flows) * 2, np.arange(n_flows) * 3
        n = k.compact(done.copy(), job, tid, r, row, ln)
        out.append((float(h).hex(), n_done, n, [a.tobytes() for a in
                    (integral, peak, load, done, r[:n], job[:n], tid[:n], row[:n], ln[:n])]))
    assert out[0] == out[1]


def test_the_choice_is_by_size_and_spraying_is_compiled(monkeypatch):
    monkeypatch.setattr(jit, "KERNELS", "auto")
    monkeypatch.setattr(jit, "AHEAD_OF_TIME", False)           # numba's kernels only
    monkeypatch.setattr(waterfill, "_warm", False)             # not loaded in this process
    assert not jit.use_compiled(jit.NUMPY_MAX_COMPLETIONS - 1, False)
    assert jit.use_compiled(jit.NUMPY_MAX_COMPLETIONS, False)
    assert jit.use_compiled(1, True)                     # weighted links: compiled only
    assert not jit.use_compiled(1, False, jit.NUMPY_MAX_LINKS)
    assert jit.use_compiled(1, False, jit.NUMPY_MAX_LINKS + 1)    # a large fabric
    monkeypatch.setattr(waterfill, "_warm", True)              # loaded: faster at any size
    assert jit.use_compiled(1, False)
    monkeypatch.setattr(jit, "KERNELS", "compiled")
    monkeypatch.setattr(waterfill, "_warm", False)
    assert jit.use_compiled(1, False)
    monkeypatch.setattr(jit, "KERNELS", "numpy")
    assert not jit.use_compiled(10 ** 9, False)
    assert jit.kernels(1, False) == (waterfill_np, None)


def test_kernels_built_ahead_of_time_are_taken_at_any_size(monkeypatch):
    """With the module built ahead of time there is no start-up to spare: "auto" takes it
    for every prediction, and "numpy" still the numpy kernels."""
    built = (object(), object())
    monkeypatch.setattr(aot, "load", lambda: built)
    monkeypatch.setattr(waterfill, "_warm", False)
    assert jit.use_compiled(1, False) and jit.kernels(1, False) == built
    monkeypatch.setattr(jit, "AHEAD_OF_TIME", False)
    assert not jit.use_compiled(1, False)
    monkeypatch.setattr(jit, "AHEAD_OF_TIME", True)
    monkeypatch.setattr(jit, "KERNELS", "numpy")
    assert jit.kernels(1, False) == (waterfill_np, None)


SMALL_PREDICT = """
import json, sys
from experiments.__main__ import main
code = main(["predict", sys.argv[1], "--out", sys.argv[2], "--no-plots", "--set",
             "routing=[nonblocking, ecmp]"])
print(json.dumps({"code": code, "numba": "numba" in sys.modules}))
"""


def test_a_small_predict_never_imports_numba_and_records_its_path(tmp_path):
    """quickstart (the non-blocking reference, ECMP): numba never imported by the whole
    command, and every run of results.json on one path: the kernels built ahead of time
    ("compiled") where `make setup` built them, else the numpy kernels."""
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", SMALL_PREDICT,
                           str(ROOT / "experiments" / "configs" / "quickstart.yaml"), str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    status = json.loads(done.stdout.strip().splitlines()[-1])
    runs = json.loads((out / "results.json").read_text())["runs"]
    path = "compiled" if aot.built() else "numpy"
    assert [r["predict_kernels"] for r in runs] == [path] * len(runs) and len(runs) >= 2
    assert status == {"code": 0, "numba": False}


def _small(config: Path) -> bool:
    """Few enough completions for the numpy path, on a fabric of at most 64 hosts (the
    2,048-NIC configs' solves take minutes)."""
    from experiments.config import load
    exp = load(config)
    return (len(exp.fabric.hosts) <= 64 and sum(len(p.transfers) * p.spec.iterations
                                                 for p in exp.plans()) < jit.NUMPY_MAX_COMPLETIONS)


HOUSE = [c for c in house.BASELINE if _small(c)]


def test_most_shipped_configs_are_small_enough_for_the_numpy_kernels():
    assert len(HOUSE) >= 8


@pytest.mark.parametrize("config", HOUSE, ids=[c.stem for c in HOUSE])
def test_numpy_kernels_predict_the_house_baseline(config, monkeypatch):
    """Every shipped config small enough for the numpy path predicts through it exactly the
    CCTs (and routes, epochs) tests/regression's baseline holds (written by the compiled
    path before the numpy one existed)."""
    monkeypatch.setattr(jit, "KERNELS", "numpy")
    want = house.EXPECTED_DOC["predictions"][config.name]
    assert json.loads(json.dumps(house.digest(config))) == want

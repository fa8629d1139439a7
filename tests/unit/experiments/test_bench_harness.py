"""The benchmark harness's arithmetic (spreads, A/B alternation, the ratio of medians), and the
benchmarks as one set: no sys.path, short functions, conditions printed, all listed in the docs."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from experiments.benchmarks import harness
from experiments.benchmarks.harness import Spread, alternate, ratio_of_medians, repeat


def test_spread_is_min_median_max():
    s = Spread.of([3.0, 1.0, 2.0, 10.0])
    assert (s.low, s.median, s.high, s.n) == (1.0, 2.5, 10.0, 4)


def test_spread_of_nothing_is_refused():
    with pytest.raises(ValueError, match="no values"):
        Spread.of([])


def test_alternation_runs_abab_and_keeps_the_last_results():
    seen: list[str] = []
    counts = {"a": 0, "b": 0}

    def call(side):
        def fn():
            seen.append(side)
            counts[side] += 1
            return counts[side]
        return fn

    ab = alternate(call("a"), call("b"), 3)
    assert seen == ["a", "b", "a", "b", "a", "b"]
    assert ab.order == "ABABAB"
    assert (len(ab.a.wall), len(ab.b.wall), len(ab.a.cpu)) == (3, 3, 3)
    assert (ab.results_a, ab.results_b) == ([1, 2, 3], [1, 2, 3])
    assert (ab.last_a, ab.last_b) == (3, 3)


def test_ratio_is_of_the_medians_not_the_means():
    a, b = [1.0, 1.0, 100.0], [2.0, 3.0, 3.0]          # an outlier on A's side
    assert ratio_of_medians(b, a) == pytest.approx(3.0)
    assert ratio_of_medians(a, b) == pytest.approx(1 / 3)
    assert ratio_of_medians([1.0], [0.0]) > 1e9          # a zero time does not divide by zero


def test_repeat_counts_calls_and_refuses_zero():
    calls, out = repeat(lambda: "x", 4)
    assert (len(calls.wall), out) == (4, "x")
    assert calls.wall_spread().n == 4
    with pytest.raises(ValueError, match="repeats"):
        repeat(lambda: None, 0)
    with pytest.raises(ValueError, match="repeats"):
        alternate(lambda: None, lambda: None, 0)


def test_conditions_print_first_and_the_load_at_the_end(capsys):
    with harness.conditions(kernels=False):
        print("figures")
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("conditions: load average ") and "numpy" in out[0]
    assert out[1] == "figures"
    assert out[-1].startswith("end: load average ")


# -- the benchmarks as one set ---------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / "experiments" / "benchmarks"
SCRIPTS = sorted(p for p in BENCH.glob("*.py") if '__name__ == "__main__"' in p.read_text())
#: Scripts that measure nothing (tables read from finished sweep folders): no conditions.
MEASURE_NOTHING = {"sweep_tables"}


def test_no_benchmark_changes_sys_path():
    for path in BENCH.glob("*.py"):
        tree = ast.parse(path.read_text())
        touched = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                   and n.attr == "path" and isinstance(n.value, ast.Name) and n.value.id == "sys"]
        assert not touched, f"{path.name}: sys.path at lines {touched}"


def test_benchmark_functions_under_80_lines_and_modules_under_600():
    for path in BENCH.glob("*.py"):
        text = path.read_text()
        assert len(text.splitlines()) < 600, path.name
        for n in ast.walk(ast.parse(text)):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert n.end_lineno - n.lineno + 1 < 80, f"{path.name}: {n.name}"


def test_every_measuring_script_prints_its_conditions_through_the_harness():
    for path in SCRIPTS:
        if path.stem not in MEASURE_NOTHING:
            assert "from experiments.benchmarks.harness import" in path.read_text(), path.name


def test_docs_list_every_script_and_name_only_scripts_that_exist():
    listed = (ROOT / "docs" / "benchmarks.md").read_text()
    for path in SCRIPTS:
        assert f"| `{path.stem}" in listed, f"{path.stem} not in docs/benchmarks.md"
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text()
        named = set(re.findall(r"experiments/benchmarks/(\w+)\.py", text))
        named |= set(re.findall(r"experiments\.benchmarks\.(\w+)", text))
        missing = sorted(n for n in named - {"NAME"} if not (BENCH / f"{n}.py").is_file())
        assert not missing, f"{page.name} names {missing}"


def test_predict_experiment_timed_runs_the_command_code_and_leaves_nothing(tmp_path, monkeypatch):
    from experiments.config import load
    monkeypatch.setattr(harness.tempfile, "tempdir", str(tmp_path))
    calls, res = harness.predict_experiment_timed(load(ROOT / "experiments" / "configs"
                                                       / "quickstart.yaml"), 2)
    assert len(calls.wall) == len(calls.cpu) == 2
    assert {r["routing"] for r in res["runs"]} >= {"ecmp"}
    assert list(tmp_path.iterdir()) == []

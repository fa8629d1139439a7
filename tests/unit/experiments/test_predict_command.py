"""The whole `predict` command's start-up (issue 28, deliverable 5): `--no-plots` writes the
results without importing matplotlib or pandas, results.csv is pandas' bytes without pandas,
and environment.json's package versions are what importlib.metadata's e-mail parse gives."""
import json
import math
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pandas as pd
import pytest

from experiments import tidy

ROOT = Path(__file__).resolve().parents[3]


def _predict_in_a_new_interpreter(out: Path, *flags: str) -> subprocess.CompletedProcess:
    """`predict` on the quickstart by main(), in a fresh interpreter; prints the heavy
    modules it imported."""
    script = textwrap.dedent(f"""
        import sys
        from experiments.__main__ import main
        code = main(["predict", "experiments/configs/quickstart.yaml", "--set", "routing=[ecmp]",
                     "--out", {str(out)!r},
                     *{list(flags)!r}])
        print("imported:", sorted(m for m in ("matplotlib", "pandas", "pulp", "scipy.linalg")
                                  if m in sys.modules))
        sys.exit(code)
    """)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def test_predict_without_plots_imports_neither_matplotlib_nor_pandas(tmp_path):
    out = _predict_in_a_new_interpreter(tmp_path / "p", "--no-plots")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "imported: []", out.stdout   # ecmp: no pulp
    assert (tmp_path / "p" / "results.csv").is_file()
    assert (tmp_path / "p" / "results.json").is_file()
    assert not (tmp_path / "p" / "plots").exists()


#: A kernel cached by numba in a module of its own (NUMBA_CACHE_DIR: the test's folder).
KERNEL = """
import numba
import numpy as np

@numba.njit(cache=True)
def total(x):
    s = 0.0
    for v in x:
        s += v
    return s
"""
#: Start numba as `predict` does, call the kernel, say what was imported.
CALLER = """
import sys
from traffic import numba_start
changed = numba_start.registries()
import kernel_mod
print(kernel_mod.total(__import__("numpy").arange(5.0)), changed, numba_start.started(),
      "numba.np.arraymath" in sys.modules, "scipy.linalg" in sys.modules)
if "numba.np.arraymath" in sys.modules:
    import numba.np.arraymath as am
    print(am._HAVE_BLAS)
import scipy.linalg
print(scipy.linalg.norm([3.0, 4.0]))
"""


def test_numba_compiles_without_scipy_linalg_and_loads_from_its_cache_without_registries(
        tmp_path):
    """The first process compiles the kernel (numba's registries, without scipy.linalg,
    which imports afterwards); the second loads it from numba's cache without them, and
    both get the same sum."""
    (tmp_path / "kernel_mod.py").write_text(KERNEL)
    env = {**__import__("os").environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": f"{tmp_path}:{ROOT}"}
    runs = [subprocess.run([sys.executable, "-c", CALLER], capture_output=True, text=True,
                           cwd=ROOT, timeout=120, env=env) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert runs[0].stdout.split("\n")[:3] == ["10.0 True True True False", "False", "5.0"]
    assert runs[1].stdout.split("\n")[:2] == ["10.0 True True False False", "5.0"]


def test_predict_with_plots_draws_them_in_its_figure_worker(tmp_path):
    """The default is unchanged: the figures are drawn, by the figure worker (which imports
    matplotlib: the command itself does not)."""
    out = _predict_in_a_new_interpreter(tmp_path / "p")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "imported: []", out.stdout
    assert (tmp_path / "p" / "plots" / "cct_cdf.png").is_file()


def _results(runs: list[list[dict]]) -> dict:
    return {"name": "t", "seed": 3, "repetition": 2, "source_port_offset": 7,
            "runs": [{"mode": "predicted", "routing": f"r{i}", "jobs": jobs}
                     for i, jobs in enumerate(runs)]}


JOB = {"name": "ring", "cct_s": [0.1, 2.0, 1 / 3], "ideal_cct_s": 0.05}
CASES = {
    "predicted": (_results([[JOB, dict(JOB, name="b,c")]]), None),
    "emulated": (_results([[dict(JOB, predicted_cct_s=[0.1, 0.2, 0.3],
                                 iteration_end_s=[1, 2.5, 3])]]), None),
    "int ccts": (_results([[dict(JOB, cct_s=[1, 2, 3], ideal_cct_s=1)]]), None),
    "a missing prediction": (_results([[dict(JOB, predicted_cct_s=[0.1])]]), None),
    "extra columns": (_results([[JOB]]), {"fabric.spine_link_mbps": 10, "routing": ["a", "b"],
                                          "x": 1e-7, "flag": True, "none": None,
                                          "big": 123456789012, "s": 'q"uote'}),
    "no rows": (_results([]), {"a": 1}),
    "nan and inf": (_results([[dict(JOB, cct_s=[math.nan, math.inf, -0.0])]]), None),
    "huge ints": (_results([[dict(JOB, cct_s=[2**60, 0.5, 1])]]), None),
    "bools and none": (_results([[dict(JOB, cct_s=[True, None, 1.5])]]), None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_results_csv_is_the_bytes_pandas_writes(tmp_path, case):
    results, extra = CASES[case]
    path = tidy.write_results_csv(tmp_path, results, extra)
    header = tidy.BASE_COLUMNS + [tidy.column(k) for k in (extra or {})]
    pd.DataFrame(tidy.rows(results, extra), columns=header).to_csv(
        tmp_path / "pandas.csv", index=False, float_format="%.9g")
    assert path.read_bytes() == (tmp_path / "pandas.csv").read_bytes()


def test_csv_cells_leaves_object_columns_to_pandas():
    assert tidy._csv_cells([1.5, "a"]) is None           # str of a float, not "%.9g"
    assert tidy._csv_cells([True, 1]) is None
    assert tidy._csv_cells([2**63]) is None                 # beyond int64
    assert tidy._csv_cells([1, None]) == ["1", ""]          # float64: "%.9g"
    assert tidy._csv_cells([1234567890, 0.5]) == ["1.23456789e+09", "0.5"]


def test_installed_packages_as_the_email_parse_reads_them():
    seen: dict[str, str] = {}
    for d in metadata.distributions():
        name = d.metadata.get("Name")
        if name and name not in seen:
            seen[name] = d.version
    assert tidy.installed_packages() == dict(sorted(seen.items(), key=lambda kv: kv[0].lower()))
    assert "PyYAML" in tidy.installed_packages()


def test_name_version_falls_back_on_a_folded_name(tmp_path):
    info = tmp_path / "odd-1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: odd\n  folded\n"
                                   "Version: 1\nLicense: a\n  b\n\nbody\n")
    d = metadata.PathDistribution(info)
    assert tidy._name_version(d) == (d.metadata.get("Name"), d.metadata.get("Version"))
    (info / "METADATA").write_text("Name: odd\nLicense: a\n  b\nVersion: 2 \n\nName: x\n")
    assert tidy._name_version(d) == ("odd", "2 ") == (d.metadata["Name"], d.version)
    (info / "METADATA").write_text("name: odd\nVERSION:3\nName: x\n")
    assert tidy._name_version(d) == ("odd", "3") == (d.metadata["Name"], d.version)


def test_environment_json_still_lists_the_packages(tmp_path):
    start = tidy.start_record(["x"])
    tidy.finish_environment(tmp_path, start)
    env = json.loads((tmp_path / "environment.json").read_text())
    assert env["installed_packages"]["PyYAML"] == metadata.version("PyYAML")


def test_environment_json_names_the_kernels_built_ahead_of_time_it_ran(tmp_path,
                                                                       monkeypatch):
    from traffic import aot
    module = tmp_path / "mlfabric_kernels_0123456789abcdef.cpython-311-x86_64-linux-gnu.so"
    for exports, want in (({}, None), ({"fill": object()}, module.name)):
        monkeypatch.setattr(aot, "exports", lambda found=exports: found)
        monkeypatch.setattr(aot, "built", lambda: module)
        tidy.finish_environment(tmp_path, tidy.start_record(["x"]))
        env = json.loads((tmp_path / "environment.json").read_text())
        assert env["kernels_built_ahead_of_time"] == want


@pytest.mark.parametrize("repeat", [1, 2])
def test_predict_draws_without_pandas_the_figures_report_draws(tmp_path, repeat):
    """`predict`'s figures (experiments/report.py's draw_predicted: json and csv modules,
    no pyplot) are pixel for pixel those `report` draws from the same folder with pandas
    (with --repeat 2: over both rep-N folders; pandas then merges their results.csv)."""
    import matplotlib.image
    import numpy as np
    from experiments.report import draw_report
    out = _predict_in_a_new_interpreter(tmp_path / "p", "--set", "routing=[ecmp, greedy]",
                                        "--repeat", str(repeat))
    assert out.returncode == 0, out.stderr
    assert ("pandas" in out.stdout.strip().splitlines()[-1]) == (repeat > 1), out.stdout
    ours = sorted(p.name for p in (tmp_path / "p" / "plots").glob("*.png"))
    theirs = draw_report([tmp_path / "p"], tmp_path / "r", fmt=("png",))
    assert ours == sorted(f"{s}.png" for s in theirs) and len(ours) == 5
    for name in ours:
        a = matplotlib.image.imread(tmp_path / "p" / "plots" / name)
        b = matplotlib.image.imread(tmp_path / "r" / name)
        assert a.shape == b.shape and np.array_equal(a, b), name

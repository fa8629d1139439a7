"""`report`: run, --repeat and sweep-like folders merged into one CSV and every figure; the
95% interval; the timeline of an emulated run shares its y axis and shows every job."""
from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from experiments.__main__ import main
from experiments.report import ci95, efficiency_table, find_runs, t975

ROOT = Path(__file__).resolve().parents[3]
QUICK = str(ROOT / "experiments" / "configs" / "quickstart.yaml")
#: `predict`'s figures of one configuration, and `report`'s over a predicted run, a --repeat
#: folder at another rate (a swept column: the efficiency against it, no pooled CCT CDF) and
#: an emulated run.
FIGURES = {"efficiency", "slowdown_cdf", "cct_cdf", "fct_cdf", "load_heatmap",
           "link_utilization"}
REPORT_FIGURES = {"efficiency_sweep", "efficiency", "slowdown_cdf", "fct_cdf",
                  "emulated_vs_predicted", "load_heatmap", "flow_heatmap", "link_utilization",
                  "timeline"}


def cli(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


def emulated_like(predicted: Path, folder: Path) -> Path:
    """An emulated run folder with results.json only (no results.csv): the predicted runs
    relabelled, CCTs 5% slower than the model's, as runner.py writes them."""
    doc = json.loads((predicted / "results.json").read_text())
    emu = copy.deepcopy(doc)
    for run in emu["runs"]:
        run["mode"] = "emulated"
        run["predicted_cct_s"] = run["cct_s"]
        run["cct_s"] = [c * 1.05 for c in run["cct_s"]]
        run["link_flows"] = [{"link": [f"leaf{i}", f"spine{k}"], "flows": (i + k) % 3}
                             for i in range(1, 5) for k in range(1, 5)]
        for j in run["jobs"]:
            j["predicted_cct_s"] = j["cct_s"]
            j["cct_s"] = [c * 1.05 for c in j["cct_s"]]
            j["iteration_end_s"] = [sum(j["cct_s"][:i + 1]) for i in range(len(j["cct_s"]))]
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps(emu))
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A predicted run with utilization bins, a --repeat 2 folder at another rate, and an
    emulated-like folder."""
    base = tmp_path_factory.mktemp("runs")
    assert main(["predict", QUICK, "--out", str(base / "one"), "--util-bin-s", "0.5"]) == 0
    assert main(["predict", QUICK, "--out", str(base / "rep"), "--repeat", "2",
                 "--set", "fabric.spine_link_mbps=10"]) == 0
    emulated_like(base / "one", base / "emu")
    return base


def test_predict_writes_tidy_rows_and_its_own_figures(runs):
    table = pd.read_csv(runs / "one" / "results.csv")
    assert list(table.columns[:7]) == ["point", "name", "mode", "routing", "job", "iteration",
                                       "cct_s"]
    assert len(table) == 2 * 4 * 3               # routings x jobs x iterations
    assert set(table["seed"]) == {1} and set(table["repetition"]) == {1}
    plots = {p.stem for p in (runs / "one" / "plots").glob("*.png")}
    assert plots == FIGURES
    assert not list((runs / "one" / "plots").glob("*.svg"))     # SVG: from `report`


def test_repeat_writes_one_run_folder_per_repetition_with_its_own_ports(runs):
    reps = sorted(p.name for p in (runs / "rep").iterdir() if p.name.startswith("rep-"))
    assert reps == ["rep-1", "rep-2"]
    docs = [json.loads((runs / "rep" / r / "results.json").read_text()) for r in reps]
    assert [d["repetition"] for d in docs] == [1, 2]
    assert docs[0]["source_port_offset"] == 0 and docs[1]["source_port_offset"] == 2 * 16
    table = pd.read_csv(runs / "rep" / "results.csv")
    assert len(table) == 2 * 24 and set(table["fabric.spine_link_mbps"]) == {10}


def test_report_merges_every_kind_of_folder_and_draws_every_figure(runs, tmp_path, capsys):
    code, out, err = cli(capsys, ["report", str(runs / "one"), str(runs / "rep"),
                                  str(runs / "emu"), "--out", str(tmp_path / "r")])
    assert code == 0 and err == [], err
    assert "4 run folders" in out
    table = pd.read_csv(tmp_path / "r" / "results.csv")
    assert len(table) == 4 * 24 and set(table["mode"]) == {"predicted", "emulated"}
    assert table["run_dir"].nunique() == 4
    assert {p.stem for p in (tmp_path / "r" / "plots").glob("*.png")} == REPORT_FIGURES
    for stem in REPORT_FIGURES:
        for ext in ("png", "svg"):
            assert (tmp_path / "r" / "plots" / f"{stem}.{ext}").stat().st_size > 1000
    eff = pd.read_csv(tmp_path / "r" / "efficiency.csv")
    assert {"efficiency_mean", "efficiency_ci95_low", "efficiency_ci95_high", "runs"} \
        <= set(eff.columns)
    # the two repetitions at 10 Mbit/s: one group per routing with n = 2
    rep = eff[eff["fabric.spine_link_mbps"] == 10]
    assert sorted(rep["runs"]) == [2, 2]
    assert (eff["efficiency_ci95_low"] <= eff["efficiency_mean"]).all()


def test_report_on_a_folder_without_runs_is_one_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code, out, err = cli(capsys, ["report", str(tmp_path / "empty"), "--out",
                                  str(tmp_path / "r")])
    assert code == 2 and len(err) == 1 and "holds no run folder" in err[0]
    assert not (tmp_path / "r").exists()


def test_failed_sweep_points_are_left_out(runs, tmp_path):
    import shutil
    for name, status in (("a", "ok"), ("b", "failed")):
        shutil.copytree(runs / "one", tmp_path / "points" / name)
        (tmp_path / "points" / name / "point.json").write_text(json.dumps({"status": status}))
    assert [p.name for p in find_runs([tmp_path])] == ["a"]


def test_ci95_is_students_t():
    m, lo, hi = ci95([1.0, 2.0, 3.0])
    assert m == 2.0 and math.isclose(hi - m, 4.303 / math.sqrt(3), rel_tol=1e-6)
    assert ci95([0.5]) == (0.5, 0.5, 0.5)
    assert abs(t975(60) - 2.000) < 0.003 and abs(t975(120) - 1.980) < 0.003


def test_efficiency_is_the_lowest_jobs_ideal_over_mean(runs):
    from experiments.report import run_table
    t = run_table(runs / "one")
    eff = efficiency_table(t).set_index("routing")
    doc = json.loads((runs / "one" / "results.json").read_text())
    for run in doc["runs"]:
        assert math.isclose(eff.loc[run["routing"], "efficiency_mean"], run["efficiency"],
                            rel_tol=1e-6)


def test_timeline_shares_y_and_shows_every_job(runs, tmp_path, monkeypatch):
    import matplotlib.figure
    from experiments import plots
    doc = json.loads((runs / "emu" / "results.json").read_text())
    seen = {}
    real_savefig = matplotlib.figure.Figure.savefig

    def spy(fig, path, **kw):
        axes = fig.axes
        seen["ylims"] = {ax.get_ylim() for ax in axes}
        seen["labels"] = [sorted(ax.get_legend_handles_labels()[1]) for ax in axes]
        seen["markers"] = [sorted({line.get_marker() for line in ax.lines
                                   if line.get_label() != "ideal CCT"}) for ax in axes]
        return real_savefig(fig, path, **kw)
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy)
    plots.timeline(doc, tmp_path / "timeline.png")
    assert (tmp_path / "timeline.png").is_file()
    assert len(seen["ylims"]) == 1                   # one shared y axis
    jobs = sorted(["ring-a", "ring-b", "ring-c", "ring-d", "ideal CCT"])
    assert seen["labels"] == [jobs, jobs]
    assert all(len(m) == 4 for m in seen["markers"])  # a marker of its own per ring


def test_a_sweep_folder_reports_the_points_its_sweep_json_lists(runs, tmp_path):
    import shutil
    for name in ("now", "earlier"):           # "earlier": a point of another sweep
        shutil.copytree(runs / "one", tmp_path / "points" / name)
        (tmp_path / "points" / name / "point.json").write_text('{"status": "ok"}')
    (tmp_path / "sweep.json").write_text(json.dumps(
        {"point_status": [{"name": "now", "status": "ok"}]}))
    assert [p.name for p in find_runs([tmp_path])] == ["now"]


def test_the_results_own_csvs_are_read_past_the_input_file_bound(runs, monkeypatch):
    """fct.csv has a row per transfer: at 10 M transfers it is ~0.8 GB, over the 256 MiB an
    input file of another tool may have; the report streams it up to its own bound."""
    from experiments import report
    from experiments.config import ConfigError
    from traffic import files
    fct = next((runs / "one").glob("*/fct.csv"))
    rows = len(fct.read_text().splitlines()) - 1
    monkeypatch.setattr(files, "MAX_INPUT_BYTES", 16)
    assert len(report._read_csv(fct, usecols=["fct_mean_s"])) == rows > 0
    monkeypatch.setattr(report, "MAX_RESULT_CSV_BYTES", fct.stat().st_size - 1)
    with pytest.raises(ConfigError, match=r"fct\.csv: [0-9,]+ bytes; at most"):
        report._read_csv(fct, usecols=["fct_mean_s"])

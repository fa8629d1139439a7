"""One look per routing across every figure (the artists' colours read back), numeric sweep
axes in numeric order, the speed-up, flag and unit columns, and the --repeat summary."""
from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest
from matplotlib.colors import to_hex

from experiments import answer_figures, drawing
from experiments.__main__ import main
from experiments.look import ECMP, REFERENCE, looks, order
from experiments.results import rate_column, repeat_summary, seconds_column, speedups, table
from experiments.tidy import rows

ROOT = Path(__file__).resolve().parents[3]
QUICK = str(ROOT / "experiments" / "configs" / "quickstart.yaml")
#: ECMP last in the config: it still takes the first look.
ROUTINGS = ["ilp", "greedy", "ecmp"]


def test_ecmp_comes_first_then_config_order_and_the_reference_is_grey():
    assert order(["ilp", "greedy (emulated)", "ecmp", "ilp"]) == ["ecmp", "ilp", "greedy"]
    t = looks(["ilp", "nonblocking", "ecmp", "greedy"])
    assert list(t) == ["ecmp", "ilp", "nonblocking", "greedy"]
    assert t["nonblocking"] == REFERENCE
    colours = [t[r].color for r in ("ecmp", "ilp", "greedy")]
    assert len(set(colours)) == 3 and t[ECMP].color == "#0072B2"


def _legend_colours(fig) -> dict[str, set[str]]:
    """routing -> the colours its legend entries are drawn in, over the figure's axes."""
    seen: dict[str, set[str]] = {}
    for ax in fig.axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            routing = label.split(" (")[0].split(":")[0]
            if routing not in ROUTINGS:
                continue
            if hasattr(h, "patches"):                     # a bar container
                colour = h.patches[0].get_facecolor()
            elif hasattr(h, "get_edgecolor") and not hasattr(h, "get_color"):
                colour = h.get_edgecolor()[0]
            elif hasattr(h, "get_offsets"):               # scatter: open markers
                colour = h.get_edgecolor()[0]
            else:
                colour = h.get_color()
            seen.setdefault(routing, set()).add(to_hex(colour))
    return seen


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    base = tmp_path_factory.mktemp("look")
    args = ["--set", f"routing=[{', '.join(ROUTINGS)}]"]
    assert main(["predict", QUICK, "--out", str(base / "p"), "--util-bin-s", "0.5",
                 "--no-plots", *args]) == 0
    assert main(["predict", QUICK, "--out", str(base / "q"), "--no-plots", *args,
                 "--set", "fabric.spine_link_mbps=10"]) == 0
    doc = json.loads((base / "p" / "results.json").read_text())
    emu = copy.deepcopy(doc)
    for run in emu["runs"]:
        run["mode"] = "emulated"
        run["fidelity"] = {"ok": run["routing"] != "ilp", "cause": "starved"}
        for j in run["jobs"]:
            j["predicted_cct_s"] = j["cct_s"]
            j["cct_s"] = [c * 1.1 for c in j["cct_s"]]
    (base / "e").mkdir()
    (base / "e" / "results.json").write_text(json.dumps(emu))
    return base


def test_every_figure_draws_each_routing_in_its_one_colour(folders, tmp_path, monkeypatch):
    from experiments.report import draw_report
    drawn: dict[str, dict[str, set[str]]] = {}
    real = drawing._save

    def spy(fig, out, fmt, stem):
        drawn[stem] = _legend_colours(fig)
        return real(fig, out, fmt, stem)
    monkeypatch.setattr(drawing, "_save", spy)
    stems = draw_report([folders], tmp_path / "plots", fmt=("png",))
    expected = {r: to_hex(looks(ROUTINGS)[r].color) for r in ROUTINGS}
    with_routings = {s for s, c in drawn.items() if c}
    assert {"efficiency", "efficiency_sweep", "slowdown_cdf", "fct_cdf",
            "emulated_vs_predicted", "link_utilization"} <= with_routings, stems
    for stem in with_routings:
        for routing, colours in drawn[stem].items():
            assert colours == {expected[routing]}, (stem, routing, colours)


def test_a_heatmap_row_order_follows_the_looks(folders, tmp_path, monkeypatch):
    from experiments.report import link_loads
    titles = []
    real = drawing._save

    def spy(fig, out, fmt, stem):
        titles.extend(ax.get_title() for ax in fig.axes if ax.get_title())
        return real(fig, out, fmt, stem)
    monkeypatch.setattr(drawing, "_save", spy)
    loads = link_loads([folders / "p"])
    assert list(loads) == sorted(loads)                 # read in folder (alphabetical) order
    drawing.load_heatmap(loads, 1, tmp_path, "t", ("png",), ROUTINGS)
    firsts = [t.split(":")[0] for t in titles]
    assert list(dict.fromkeys(firsts)) == ["ecmp", "ilp", "greedy"]


def test_numeric_sweep_axes_are_sorted_as_numbers(tmp_path, monkeypatch):
    assert answer_figures.sort_values([10, 2.5, 5, 2.5]) == [2.5, 5, 10]
    assert answer_figures.sort_values(["b", "a", 1]) == [1, "a", "b"]
    eff = [{"name": "x", "k": v, "routing": r, "mode": "predicted", "efficiency_mean": e,
            "efficiency_ci95_low": e, "efficiency_ci95_high": e, "runs": 1}
           for v, e in ((10, 0.9), (2.5, 0.5), (5, 0.7)) for r in ("ecmp", "ilp")]
    seen = {}
    real = drawing._save

    def spy(fig, out, fmt, stem):
        ax = fig.axes[0]
        seen[stem] = (ax, [list(line.get_xdata()) for line in ax.lines
                           if line.get_label() in ("ecmp", "ilp")],
                      [t.get_text() for t in ax.get_xticklabels()])
        return real(fig, out, fmt, stem)
    monkeypatch.setattr(drawing, "_save", spy)
    answer_figures.efficiency_sweep(eff, ["name", "k"], tmp_path, "t", ("png",))
    _, xs, _ = seen["efficiency_sweep"]
    assert xs == [[2.5, 5.0, 10.0], [2.5, 5.0, 10.0]]
    drawing.efficiency_bars(eff, ["name", "k"], tmp_path, "t", ("png",))
    _, _, ticks = seen["efficiency"]
    assert ticks == ["k=2.5", "k=5", "k=10"]           # whole labels, numeric order


def test_speedups_over_ecmp_and_the_best_hashed_scheme():
    doc = {"runs": [{"routing": "ecmp", "mode": "predicted", "cct_mean_s": 6.0},
                    {"routing": "spray", "mode": "predicted", "cct_mean_s": 4.0},
                    {"routing": "ilp", "mode": "predicted", "cct_mean_s": 2.0},
                    {"routing": "ilp", "mode": "emulated", "cct_mean_s": 2.0}]}
    s = speedups(doc)
    assert s[("ilp", "predicted")] == {"speedup_over_ecmp": 3.0,
                                       "speedup_over_best_hashed": 2.0}
    assert s[("ilp", "emulated")] == {"speedup_over_ecmp": None,
                                      "speedup_over_best_hashed": None}


def test_results_csv_rows_carry_flag_and_error_columns(folders):
    doc = json.loads((folders / "e" / "results.json").read_text())
    doc["runs"][0]["prediction_error_fraction"] = 0.1
    by = {(r["routing"]): r for r in rows(doc)}
    assert by["ilp"]["flagged"] is True and by["ilp"]["flag_reason"] == "starved by other work"
    assert by["ecmp"]["flagged"] is False and by["ecmp"]["flag_reason"] is None
    assert by[doc["runs"][0]["routing"]]["prediction_error_fraction"] == 0.1
    assert math.isclose(by["ecmp"]["speedup_over_ecmp"], 1.0)


def test_columns_keep_one_unit_and_fixed_decimals():
    assert seconds_column([7.2, 6.187, None]) == ["7.200 s", "6.187 s", "-"]
    assert seconds_column([0.0123, 0.5]) == ["12.3 ms", "500.0 ms"]   # 4 digits of 500
    assert rate_column([66666.667, 5000.0]) == ("Gbit/s", ["66.67", "5.00"])
    assert rate_column([3.3333, None]) == ("Mbit/s", ["3.33", "-"])


def test_the_table_names_why_the_emulator_was_flagged(folders):
    doc = json.loads((folders / "e" / "results.json").read_text())
    text = table(doc)
    assert "vs ECMP" in text and "SATURATED" not in text
    line = next(x for x in text.splitlines() if x.startswith("ilp "))
    assert line.endswith("flagged: starved by other work")
    assert next(x for x in text.splitlines() if x.startswith("ecmp ")).endswith("faithful")


def test_repeat_summary_is_min_median_max_per_routing():
    def doc(ecmp: float, ilp: float) -> dict:
        return {"runs": [{"routing": "ecmp", "mode": "predicted", "cct_mean_s": ecmp,
                          "efficiency": 1 / ecmp},
                         {"routing": "ilp", "mode": "predicted", "cct_mean_s": ilp,
                          "efficiency": 1 / ilp}]}
    text = repeat_summary([doc(4.0, 2.0), doc(6.0, 2.0), doc(3.0, 1.0)])
    lines = {tuple(x.split()[:4]): x.split()[4:] for x in text.splitlines()[3:]}
    # ecmp mean CCT: 3, 4, 6; ilp's speed-up over ECMP: 2, 3, 3
    assert lines[("ecmp", "predicted", "mean", "CCT")] == ["(s)", "3.0000", "4.0000",
                                                          "6.0000", "3"]
    assert lines[("ilp", "predicted", "vs", "ECMP")] == ["2.00x", "3.00x", "3.00x", "3"]
    assert lines[("ecmp", "predicted", "efficiency", "0.167")] == ["0.250", "0.333", "3"]
    assert text.startswith("over 3 repetitions")


def test_a_mixed_solve_status_is_one_short_phrase():
    from experiments.results import short_status
    gff = "mixed: " + ", ".join(["first-fit"] + [f"first-fit ({n} flows on ECMP)"
                                                 for n in (1168, 192, 1680, 432)])
    assert short_status(gff) == "mixed: first-fit, first-fit (192 to 1680 flows on ECMP)"
    assert short_status("mixed: heuristic, heuristic-sticky") == \
        "mixed: heuristic, heuristic-sticky"
    assert short_status("optimal") == "optimal"

"""sweep_tables lb and ringflow: the tables read from finished sweep folders equal the figures
computed directly from `predict` on the same configs (what the lb_bench and ring_flow_bench
scripts printed before they became sweep files)."""
from __future__ import annotations

import statistics
from pathlib import Path

import yaml

from experiments.benchmarks import sweep_tables
from experiments.config import parse, read_yaml
from experiments.predict import predict_experiment
from experiments.sweep import load_sweep, run_point, write_point

ROOT = Path(__file__).resolve().parents[3]
MIXED = ROOT / "experiments" / "configs" / "fidelity-mixed.yaml"


def swept(tmp_path: Path, doc: dict) -> Path:
    """A sweep of fidelity-mixed run point by point through the sweep's own functions (no
    Dask cluster): its output folder."""
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"base": str(MIXED), "mode": "predict", **doc}))
    s, out = load_sweep(path), tmp_path / "out"
    for p in s.points:
        result = run_point(p.doc, s.mode, p.repetition, s.util_bin_s, p.columns(), p.name, [],
                           str(s.base.parent))
        assert result["status"] == "ok", result["error"]
        write_point(out, p, p.fingerprint(s.mode, s.util_bin_s), result)
    return out


def direct(tmp_path: Path, changes: dict) -> dict:
    """fidelity-mixed with `changes`, predicted directly: its results.json record."""
    exp = parse({**read_yaml(MIXED), **changes}, base_dir=MIXED.parent)
    out = tmp_path / f"direct-{len(list(tmp_path.glob('direct-*')))}"
    return predict_experiment(exp, out, log=lambda _line: None)


def test_lb_rows_are_medians_over_seeds_of_direct_predictions(tmp_path):
    out = swept(tmp_path, {
        "set": {"split_piece_bytes": 16384},
        "grid": {"routing": [["ecmp"]], "subflows": [1, 2], "seed": [1, 2, 3]},
        "points": [{"routing": ["spray", "greedy"], "subflows": 2},
                   {"routing": ["greedy"], "subflows": 1, "semantics": {"recompute": "flows"}}]})
    rows = {(r["routing"], r["subflows"], r["recompute"]): r
            for r in sweep_tables.lb_rows(out)}
    assert set(rows) == {("ecmp", 1, "epochs"), ("ecmp", 2, "epochs"), ("spray", 2, "epochs"),
                         ("greedy", 2, "epochs"), ("greedy", 1, "flows")}
    for k in (1, 2):
        runs = [direct(tmp_path, {"routing": ["ecmp"], "subflows": k, "seed": seed,
                                  "split_piece_bytes": 16384})["runs"][0] for seed in (1, 2, 3)]
        effs = [r["efficiency"] for r in runs]
        mid = sorted(runs, key=lambda r: r["network_efficiency"])[1]
        row = rows[("ecmp", k, "epochs")]
        assert (row["efficiency"], row["efficiency_min"], row["efficiency_max"]) == (
            statistics.median(effs), min(effs), max(effs))
        assert row["network_efficiency"] == statistics.median(
            r["network_efficiency"] for r in runs)
        assert (row["link_load_imbalance"], row["max_link_flows"]) == (
            mid["link_load_imbalance"], mid["max_link_flows"])
        assert row["seeds"] == 3 and row["connections"] == 23 * k
    assert rows[("ecmp", 1, "epochs")]["efficiency_min"] < rows[("ecmp", 1, "epochs")][
        "efficiency_max"]                                   # the seeds hash apart
    flows = direct(tmp_path, {"routing": ["greedy"], "semantics": {"recompute": "flows"}})
    assert rows[("greedy", 1, "flows")]["efficiency"] == flows["runs"][0]["efficiency"]
    planned = direct(tmp_path, {"routing": ["spray", "greedy"], "subflows": 2})["runs"]
    for run in planned:
        assert rows[(run["routing"], 2, "epochs")]["network_efficiency"] == run[
            "network_efficiency"]
    lines = sweep_tables.lb_table(sweep_tables.lb_rows(out))
    assert [line.split()[1] for line in lines[1:]] == ["ecmp", "ecmp", "spray", "greedy",
                                                     "greedy"]


def test_subflows_needed_is_the_smallest_ecmp_k_within_90_percent_of_a_planner():
    def row(routing, k, net, recompute="epochs"):
        return {"config": "c", "routing": routing, "subflows": k, "split": "even",
                "recompute": recompute, "network_efficiency": net}
    rows = [row("ecmp", 1, 0.5), row("ecmp", 2, 0.85), row("ecmp", 4, 0.95),
            row("greedy", 1, 0.8), row("ilp", 1, 1.0), row("greedy", 1, 2.0, "flows")]
    assert sweep_tables.subflows_needed(rows)[1].endswith("planner 1.000: K = 4")
    assert sweep_tables.subflows_needed(rows[:2] + rows[3:])[1].endswith(
        "not reached by K = 2")


def test_ringflow_pairs_each_job_across_steps_and_flows(tmp_path, capsys):
    out = swept(tmp_path, {"grid": {"semantics": [{"ring_sync": "rank"}, {"ring_sync": "flow"}],
                                    "routing": [["edge-coloring"]]}})
    rs = sweep_tables.ring_runs(out)
    steps = direct(tmp_path, {"routing": ["edge-coloring"]})["runs"][0]
    flows = direct(tmp_path, {"routing": ["edge-coloring"],
                              "semantics": {"ring_sync": "flow"}})["runs"][0]
    assert rs.steps["edge-coloring"]["jobs"] == steps["jobs"]
    assert rs.flows["edge-coloring"]["jobs"] == flows["jobs"]
    ratios = [b["cct_mean_s"] / a["cct_mean_s"] for a, b in zip(steps["jobs"], flows["jobs"])]
    assert min(ratios) < 1 < max(ratios)                   # the case where the two differ
    assert rs.transfers[0] > rs.transfers[1] > 0
    assert sweep_tables.main(["ringflow", str(out)]) == 0
    printed = capsys.readouterr().out
    assert (f"median {statistics.median(ratios):.4f} (min {min(ratios):.4f}, "
            f"max {max(ratios):.4f}, 3 jobs)") in printed


def test_a_folder_without_finished_points_is_exit_2(tmp_path, capsys):
    (tmp_path / "points").mkdir()
    assert sweep_tables.main(["lb", str(tmp_path)]) == 2
    assert sweep_tables.main(["ringflow", str(tmp_path)]) == 2
    assert "no finished points" in capsys.readouterr().err

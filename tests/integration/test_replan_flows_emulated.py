"""recompute: flows on the real emulator: the agents report every transfer as it lands, the
controller re-plans the flows still in flight and moves one of them, live, and the step
shortens as the model says (hand case: tests/unit/experiments/test_replan_flows.py, 2 s -> 1.5 s)."""
from __future__ import annotations

from experiments.config import parse
from experiments.runner import run_experiment

from .helpers import NOTHING, leftovers

DOC = {
    "name": "itest-replan", "seed": 1,
    "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 3, "host_link_mbps": 10,
               "spine_link_mbps": 10},
    "jobs": [{"name": "trio", "collective": "flows",
              "groups": [["h1", "h4"], ["h2", "h5"], ["h3", "h6"]], "size_bytes": 1_250_000,
              "iterations": 2}],
    "routing": ["greedy"],
}


def _run(tmp_path, recompute: str) -> dict:
    doc = {**DOC, "semantics": {"recompute": recompute}}
    res = run_experiment(parse(doc), tmp_path / recompute, log=lambda s: None)
    run, = res["runs"]
    return run


def test_moving_a_flow_when_another_ends_shortens_the_step(tmp_path):
    static = _run(tmp_path, "epochs")
    replanned = _run(tmp_path, "flows")
    moves = [e for e in replanned["epochs"] if e["reason"] == "flows"]
    assert len(moves) == 2 and all(e["flows_moved"] == 1 for e in moves)   # one per step
    assert not [e for e in static["epochs"] if e["reason"] == "flows"]
    # a moved flow was given both spines, and its bytes crossed both (the run verifies
    # every flow's counters against the paths it was given)
    moved = [p for p in replanned["paths"] if len(p["planned_paths"]) == 2]
    assert moved and all(min(p["switch_bytes"].get(s, 0) for s in ("spine1", "spine2")) > 0
                         for p in moved), moved
    ratio = replanned["cct_mean_s"] / static["cct_mean_s"]
    assert 0.65 < ratio < 0.85, ratio                                       # model: 0.75
    for run in (static, replanned):
        assert all(j["bytes_verified"] for j in run["jobs"])
        assert abs(run["prediction_error_fraction"]) < 0.08, run["prediction_error_fraction"]
    assert leftovers() == NOTHING

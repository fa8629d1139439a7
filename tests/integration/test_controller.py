"""Issue 6 on the real fabric: failures mid-collective, jobs arriving mid-run, and
host-enforced routes, each checked against what the switches' counters saw."""
from __future__ import annotations

import pytest

from experiments.config import parse
from experiments.runner import run_experiment

from .helpers import NOTHING, leftovers


def config(routing: list[str], events: list[dict] | None = None, **jobs_b) -> dict:
    """3 spines, 2 leaves, 2 hosts per leaf; ring-a from 0 s, ring-b as given."""
    doc = {
        "name": "ctl", "seed": 11,
        "fabric": {"spines": 3, "leaves": 2, "hosts_per_leaf": 2, "host_link_mbps": 20,
                   "spine_link_mbps": 20},
        "jobs": [
            {"name": "ring-a", "collective": "allreduce", "hosts": ["h1", "h3"],
             "size_bytes": 2_000_000, "iterations": 6},
            {"name": "ring-b", "collective": "allreduce", "hosts": ["h2", "h4"],
             "size_bytes": 2_000_000, "iterations": 3, **jobs_b},
        ],
        "routing": routing,
    }
    if events:
        doc["events"] = events
    return doc


@pytest.mark.parametrize("routing", ["ecmp", "ilp"])
def test_spine_failure_mid_allreduce_keeps_every_byte(tmp_path, routing):
    # each iteration takes ~0.8 s: the failure lands inside ring-a's second iteration
    exp = parse(config([routing], [{"at_s": 1.2, "fail_spine": "spine1"}]))
    run = run_experiment(exp, tmp_path, log=lambda s: None)["runs"][0]
    assert all(j["bytes_verified"] for j in run["jobs"])
    assert [len(j["cct_s"]) for j in run["jobs"]] == [6, 3]
    (ev,) = run["events"]
    assert ev["kind"] == "fail_spine" and ev["target"] == ["spine1"]
    assert 0 < ev["reroute_s"] < 5.0
    # after the failure no flow may gain a byte on spine1: every flow that kept sending
    # after it shows its later bytes on the surviving spines (the after_events paths)
    after = run["after_events"]
    assert after["jobs"], "some iterations must start after the failure"
    for j in after["jobs"]:
        assert abs(j["prediction_error_fraction"]) < 0.5
    if routing == "ilp":
        for p in run["paths"]:
            assert p["final_path"][1] != "spine1", p         # rerouted off the failed spine
            assert {q[1] for q in p["planned_paths"]} - {"spine1"}, p
    assert run["unfired_events"] == []
    assert leftovers() == NOTHING


def test_job_arriving_mid_run_moves_only_what_it_must(tmp_path):
    exp = parse(config(["ilp"], start_s=1.0))
    run = run_experiment(exp, tmp_path, log=lambda s: None)["runs"][0]
    epochs = run["epochs"]
    assert [e["reason"] for e in epochs[:2]] == ["start ring-a", "start ring-b"]
    first, arrival = epochs[0], epochs[1]
    assert first["rules_added"] == 2 and first["flows_moved"] == 0
    # ring-b's two inter-leaf flows get a rule each; ring-a's flows are left untouched
    assert arrival["rules_added"] == 2 and arrival["rules_removed"] == 0
    assert arrival["flows_moved"] == 0
    assert 0.9 < arrival["at_s"] < 1.5
    finish_b = next(e for e in epochs if e["reason"] == "finish ring-b")
    assert finish_b["rules_removed"] == 2 and finish_b["rules_added"] == 0
    assert all(len(p["planned_paths"]) == 1 for p in run["paths"])


def test_host_enforced_routes_match_static_rules(tmp_path):
    exp = parse(config(["ilp", "ilp@host"]))
    static, host = run_experiment(exp, tmp_path, log=lambda s: None)["runs"]
    assert host["enforcement"] == "host" and static["enforcement"] == "switch"
    # same plan, other mechanism: every flow crossed its planned spine both ways
    for run in (static, host):
        for p in run["paths"]:
            assert [p["observed_path"]] == p["planned_paths"]
    assert {p["conn_id"]: p["observed_path"] for p in static["paths"]} == \
        {p["conn_id"]: p["observed_path"] for p in host["paths"]}
    # no per-flow state at the leaves: one port rule per live spine instead
    leaf_rules = host["rules"]["peak_per_switch"]["leaf1"]
    assert leaf_rules == static["rules"]["peak_per_switch"]["leaf1"] - 2 + 3
    assert all(p["src_port"] & 0x8000 for p in host["paths"])
    assert host["cct_mean_s"] == pytest.approx(static["cct_mean_s"], rel=0.15)

"""Run-level metrics compare each job with its own ideal, and `solve` describes the solves
that the run (or its prediction) really used."""
import pytest

from experiments.config import parse
from experiments.predict import predict_experiment
from experiments.results import solve_block

MIXED = {
    "name": "mixed", "seed": 1,
    "fabric": {"spines": 1, "leaves": 4, "hosts_per_leaf": 2, "host_link_mbps": 10,
               "spine_link_mbps": 2},
    "jobs": [
        {"name": "pipe", "collective": "pipeline", "hosts": ["h1", "h2"],
         "size_bytes": 3_000_000},
        {"name": "ring", "collective": "allreduce", "hosts": ["h3", "h5", "h7"],
         "size_bytes": 1_200_000},
    ],
    "routing": ["ecmp", "ilp"],
}


def test_run_efficiency_is_the_lowest_jobs_not_one_ideal_over_another_jobs_time(tmp_path):
    """The outside pass's example: per-job 1.0 and 0.2; the old formula (largest ideal over
    the slowest job's time) reported 2.4 s / 6.4 s = 0.375."""
    res = predict_experiment(parse(MIXED), tmp_path, log=lambda s: None)
    for run in res["runs"]:
        eff = {j["name"]: j["efficiency"] for j in run["jobs"]}
        assert eff["pipe"] == pytest.approx(1.0)      # on its own leaf, at host-link rate
        assert eff["ring"] == pytest.approx(0.2)      # 2 Mbit/s spine links vs 10 host links
        assert run["efficiency"] == pytest.approx(0.2) and run["efficiency_job"] == "ring"
        assert run["ideal_cct_s"] / run["cct_mean_s"] == pytest.approx(0.375)   # the old one
        assert run["network_efficiency"] == pytest.approx(0.6)


def test_solve_reports_every_epoch_of_a_re_solving_strategy(tmp_path):
    doc = {**MIXED, "jobs": [dict(MIXED["jobs"][0], start_s=0.0),
                             dict(MIXED["jobs"][1], start_s=1.0)]}
    res = predict_experiment(parse(doc), tmp_path, log=lambda s: None)
    ecmp, ilp = res["runs"]
    assert ecmp["solve"]["scope"] == "one plan" and ecmp["solve"]["status"] == "hash"
    s = ilp["solve"]
    assert s["scope"] == "epochs"
    # two starts and two finishes, each re-solved
    assert [e["reason"] for e in s["epochs"]] == ["start pipe", "start ring", "finish pipe",
                                                  "finish ring"]
    assert s["count"] == 4
    assert s["time_s"] == pytest.approx(sum(e["time_s"] for e in s["epochs"]))
    assert s["time_s_max"] == max(e["time_s"] for e in s["epochs"])
    assert max(e["max_link_flows"] for e in s["epochs"]) == ilp["max_link_flows"]


def test_solve_block_summarises_statuses_and_solver_runs():
    epochs = [{"time_s": 0.5, "status": "optimal", "gap": 0.0, "lower_bound_link_flows": 2,
               "solver_ran": False, "solver_calls": 0},
              {"time_s": 1.5, "status": "feasible", "gap": 0.1, "lower_bound_link_flows": 3,
               "solver_ran": True, "solver_calls": 2}]
    b = solve_block({}, epochs)
    assert (b["time_s"], b["time_s_max"], b["status"]) == (2.0, 1.5, "mixed: feasible, optimal")
    assert (b["gap"], b["lower_bound_link_flows"], b["solver_ran"], b["solver_calls"]) == (
        0.1, 3, True, 2)
    assert solve_block({"time_s": 0.0, "status": "hash"}, [])["scope"] == "one plan"


def test_git_state_reads_the_checkout_without_writing_its_index(tmp_path, monkeypatch):
    """Every run records the commit and whether the tree is dirty; `git status` would refresh
    (rewrite) the index of a checkout whose files' times changed: a command must not."""
    import os
    import subprocess

    from experiments import tidy

    def git(*a):
        subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True,
                       stdin=subprocess.DEVNULL)
    git("init", "-q")
    (tmp_path / "f.txt").write_text("a\n")
    git("add", "f.txt")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    index = tmp_path / ".git" / "index"
    os.utime(tmp_path / "f.txt", (1e9, 1e9))        # stat info no longer matches the index
    before = (index.read_bytes(), index.stat().st_mtime_ns)
    monkeypatch.setattr(tidy, "REPO_ROOT", tmp_path)
    state = tidy.git_state()
    assert state["dirty"] is False and len(state["commit"]) == 40
    assert (index.read_bytes(), index.stat().st_mtime_ns) == before

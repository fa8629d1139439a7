"""The resolved config a run or prediction saves (config.yaml) loads again to the same
experiment: same resolved dict, same jobs, connections and transfers, same predictions."""
import json
from pathlib import Path

import pytest
import yaml

from experiments.config import load, parse
from experiments.predict import predict_experiment
from traffic.collectives import plan_jobs

ROOT = Path(__file__).resolve().parents[3]
CONFIGS = sorted((ROOT / "experiments" / "configs").glob("*.yaml"))
#: configs small enough to predict twice in a unit test (not the paper-scale ones)
SMALL = [p for p in CONFIGS if len(load(p).fabric.hosts) <= 64]
VOLATILE = {"time_s", "time_s_max", "predict_wall_s"}     # wall-clock times


def _saved(exp) -> str:
    """config.yaml exactly as runner.py and predict.py write it."""
    return yaml.safe_dump(exp.resolved(), sort_keys=False)


def _stable(doc):
    if isinstance(doc, dict):
        return {k: _stable(v) for k, v in doc.items() if k not in VOLATILE}
    if isinstance(doc, list):
        return [_stable(v) for v in doc]
    return doc


def test_every_shipped_config_is_covered():
    assert len(CONFIGS) >= 15 and SMALL


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_resolved_config_reloads_to_the_same_experiment(path):
    exp = load(path)
    again = parse(yaml.safe_load(_saved(exp)))
    assert again.resolved() == exp.resolved()
    assert _saved(again) == _saved(exp)
    assert again.jobs == exp.jobs and again.events == exp.events
    assert again.emulation == exp.emulation and again.fabric.spec == exp.fabric.spec
    assert plan_jobs(again.jobs) == plan_jobs(exp.jobs)       # connections and transfers


@pytest.mark.parametrize("path", SMALL, ids=[p.stem for p in SMALL])
def test_saved_config_yaml_predicts_the_same_numbers(path, tmp_path):
    exp = load(path)
    first = predict_experiment(exp, tmp_path / "a", log=lambda _: None)
    saved = tmp_path / "a" / "config.yaml"
    again = load(saved)                          # the file predict wrote, read back
    second = predict_experiment(again, tmp_path / "b", log=lambda _: None)
    assert _stable(second) == _stable(first)
    assert (tmp_path / "b" / "config.yaml").read_text() == saved.read_text()
    for run in first["runs"]:
        d = run["routing"].replace("@", "-at-")
        assert ((tmp_path / "a" / d / "fct.csv").read_text()
                == (tmp_path / "b" / d / "fct.csv").read_text())
    assert json.loads((tmp_path / "b" / "results.json").read_text())["name"] == exp.name


def test_model_jobs_resolve_to_groups_that_reload_without_placement():
    doc = {"name": "m", "fabric": {"spines": 4, "leaves": 8, "hosts_per_leaf": 32,
                                   "host_link_mbps": 100, "spine_link_mbps": 100},
           "jobs": [{"name": "j", "model": "llama2-70b", "dp": 2, "iterations": 2}],
           "routing": ["ecmp"]}
    exp = parse(doc)
    job = exp.resolved()["jobs"][0]
    assert "model" not in job and len(job["groups"]) == 128
    assert all(len(g) == 2 for g in job["groups"])
    again = parse(yaml.safe_load(_saved(exp)))
    assert again.jobs == exp.jobs


def test_explicit_mtu_fifo_window_and_timeout_reload_identically():
    doc = {"name": "e", "seed": 3,
           "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 2, "host_link_mbps": 10,
                      "spine_link_mbps": 10},
           "jobs": [{"name": "a", "collective": "allgather", "groups": [["h1", "h3"],
                                                                       ["h2", "h4"]],
                     "size_bytes": 1000}],
           "routing": ["ilp"],
           "emulation": {"mtu_bytes": 1500, "link_scheduler": "fifo", "queue_packets": 50,
                         "iteration_timeout_s": 12.5}}
    exp = parse(doc)
    em = exp.resolved()["emulation"]
    assert em["mtu_bytes"] == 1500 and em["window_frames"] == 0
    assert em["iteration_timeout_s"] == 12.5
    again = parse(yaml.safe_load(_saved(exp)))
    assert again.emulation == exp.emulation and again.jobs == exp.jobs
    assert exp.resolved()["jobs"][0]["groups"] == [["h1", "h3"], ["h2", "h4"]]

"""JSON Schemas: results.json of real predictions of every small shipped config (and of an
emulated-like run), the config schema against every shipped config and the loader's keys;
environment.json's provenance."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from experiments import config as cfg
from experiments.config import load, read_yaml
from experiments.predict import predict_experiment

ROOT = Path(__file__).resolve().parents[3]
SCHEMAS = ROOT / "experiments" / "schemas"
CONFIGS = sorted((ROOT / "experiments" / "configs").glob("*.yaml"))
#: configs that predict in a few seconds (not the paper-scale ones)
SMALL = [p for p in CONFIGS if len(load(p).fabric.hosts) <= 64]


def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMAS / name).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


RESULTS = validator("results.schema.json")
CONFIG = validator("config.schema.json")


def errors(v, doc) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(doc)]


@pytest.mark.parametrize("path", SMALL, ids=[p.stem for p in SMALL])
def test_predicted_results_match_the_schema(path, tmp_path):
    doc = predict_experiment(load(path), tmp_path, log=lambda _: None)
    on_disk = json.loads((tmp_path / "results.json").read_text())
    assert errors(RESULTS, on_disk) == [] and on_disk["runs"] and doc["name"] == on_disk["name"]


def test_the_results_schema_can_fail(tmp_path):
    doc = predict_experiment(load(ROOT / "experiments/configs/quickstart.yaml"), tmp_path,
                             log=lambda _: None)
    doc["runs"][0]["mode"] = "simulated"
    del doc["runs"][1]["jobs"][0]["cct_s"]
    doc["runs"][1]["max_link_flows"] = -1
    found = errors(RESULTS, doc)
    assert len(found) == 3, found


def test_many_connections_rates_go_to_a_csv_with_the_same_values(tmp_path, monkeypatch):
    """Past CONN_RATES_INLINE connections a run's per-connection rates leave results.json
    for its conn_rates.csv (every connection once, the same rates), still schema-valid."""
    from experiments import predict
    exp = load(ROOT / "experiments/configs/quickstart.yaml")
    inline = predict_experiment(exp, tmp_path / "inline", log=lambda _: None)
    monkeypatch.setattr(predict, "CONN_RATES_INLINE", 3)
    predict_experiment(exp, tmp_path / "csv", log=lambda _: None)
    on_disk = json.loads((tmp_path / "csv" / "results.json").read_text())
    assert errors(RESULTS, on_disk) == []
    for a, b in zip(inline["runs"], on_disk["runs"]):
        rows = (tmp_path / "csv" / b["conn_rates_csv"]).read_text().splitlines()
        assert rows[0] == "job,conn_id,rate_mbps"
        got = {(j, c): float(r) for j, c, r in (x.split(",") for x in rows[1:])}
        want = {(j["name"], c): r for j in a["jobs"] for c, r in j["conn_rate_mbps"].items()}
        assert got == want and len(rows) - 1 == len(want) > 3
        assert all(j["conn_rate_mbps"] == {} for j in b["jobs"])
        assert b["fairness"]["layer2"] == [] and b["fairness"]["layer1"] == \
            a["fairness"]["layer1"] and b["cct_s"] == a["cct_s"]
        assert [j["throughput_mbps"] for j in b["jobs"]] == \
            [j["throughput_mbps"] for j in a["jobs"]]


def test_very_many_connection_rates_go_to_a_csv_per_job(tmp_path, monkeypatch):
    """Past MAX_CONN_RATE_ROWS (job, connection) rates a run writes conn_rates_jobs.csv: per
    job its connections and the mean, median, min and max of the rates results.json held."""
    import statistics
    from experiments import predict
    exp = load(ROOT / "experiments/configs/quickstart.yaml")
    inline = predict_experiment(exp, tmp_path / "inline", log=lambda _: None)
    monkeypatch.setattr(predict, "CONN_RATES_INLINE", 3)
    monkeypatch.setattr(predict, "MAX_CONN_RATE_ROWS", 3)
    predict_experiment(exp, tmp_path / "jobs", log=lambda _: None)
    on_disk = json.loads((tmp_path / "jobs" / "results.json").read_text())
    assert errors(RESULTS, on_disk) == []
    for a, b in zip(inline["runs"], on_disk["runs"]):
        assert b["conn_rates_csv"].endswith("/conn_rates_jobs.csv")
        rows = (tmp_path / "jobs" / b["conn_rates_csv"]).read_text().splitlines()
        assert rows[0] == ("job,connections,rate_mbps_mean,rate_mbps_median,rate_mbps_min,"
                           "rate_mbps_max")
        assert len(rows) - 1 == len(a["jobs"])
        for row, job in zip(rows[1:], a["jobs"]):
            name, n, *stats = row.split(",")
            r = list(job["conn_rate_mbps"].values())
            assert name == job["name"] and int(n) == len(r) > 0
            want = [statistics.fmean(r), statistics.median(r), min(r), max(r)]
            assert [float(x) for x in stats] == pytest.approx(want, rel=1e-12)
        assert all(j["conn_rate_mbps"] == {} for j in b["jobs"])


def test_emulated_results_fields_match_the_schema(tmp_path):
    from .test_report import emulated_like
    predict_experiment(load(ROOT / "experiments/configs/quickstart.yaml"), tmp_path / "p",
                       log=lambda _: None)
    emu = emulated_like(tmp_path / "p", tmp_path / "e")
    doc = json.loads((emu / "results.json").read_text())
    for run in doc["runs"]:
        run.update(enforcement="switch-hash", fidelity={"ok": True}, epochs=[], events=[],
                   predicted_cct_mean_s=run["cct_mean_s"], prediction_error_fraction=0.05,
                   link_flows=[{"link": ["leaf1", "spine1"], "flows": 2}])
    assert errors(RESULTS, doc) == []


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_every_shipped_config_and_its_resolved_form_match_the_config_schema(path):
    assert errors(CONFIG, read_yaml(path)) == []
    resolved = json.loads(json.dumps(load(path).resolved()))
    assert errors(CONFIG, resolved) == []


def test_the_config_schema_knows_every_key_the_loader_takes():
    schema = json.loads((SCHEMAS / "config.schema.json").read_text())
    defs = schema["$defs"]
    assert cfg.TOP_KEYS <= set(schema["properties"])
    assert cfg.FABRIC_KEYS <= set(defs["fabric"]["properties"])
    jobs = (cfg.EXPLICIT_JOB_KEYS | cfg.MODEL_JOB_KEYS | getattr(cfg, "PATTERN_JOB_KEYS", set())
            | cfg.PROGRAM_JOB_KEYS)
    assert jobs <= set(defs["job"]["properties"])
    assert cfg.EMULATION_KEYS <= set(defs["emulation"]["properties"])
    assert {"at_s", *cfg.EVENT_KINDS} == set(defs["event"]["properties"])


@pytest.mark.parametrize("change, where", [
    (lambda d: d["fabric"].update(spines=0), "fabric/spines"),
    (lambda d: d["fabric"].update(spine_mbps=5), "fabric"),
    (lambda d: d["jobs"][0].update(iterations="3"), "jobs/0/iterations"),
    (lambda d: d.update(routing=[]), "routing"),
    (lambda d: d.update(emulation={"tcp_cc": "dctcp"}), "emulation/tcp_cc"),
])
def test_the_config_schema_can_fail(change, where):
    doc = read_yaml(ROOT / "experiments/configs/quickstart.yaml")
    change(doc)
    found = errors(CONFIG, doc)
    assert found and found[0].startswith(where + ":"), found


def test_predict_environment_records_provenance(tmp_path, capsys):
    from experiments.__main__ import main
    out = tmp_path / "o"
    assert main(["predict", str(ROOT / "experiments/configs/quickstart.yaml"), "--out",
                 str(out), "--set", "seed=4"]) == 0
    capsys.readouterr()
    env = json.loads((out / "environment.json").read_text())
    assert env["command_line"][-2:] == ["--set", "seed=4"]
    assert len(env["git"]["commit"]) == 40 and isinstance(env["git"]["dirty"], bool)
    assert env["started_at_utc"] <= env["ended_at_utc"]
    assert len(env["load_average_before_1_5_15_min"]) == 3
    assert "PyYAML" in env["installed_packages"] and "dask" in env["installed_packages"]


def test_the_config_schema_bounds_every_kinds_sizes_as_the_kind_does():
    """The schema's fabric bounds are checked against each topology kind's own Params."""
    from testbed import topologies
    props = json.loads((SCHEMAS / "config.schema.json").read_text())["$defs"]["fabric"][
        "properties"]
    assert set(props["topology"]["enum"]) == set(topologies.KINDS)
    for kind in topologies.KINDS.values():
        for p in kind.params:
            assert (props[p.key]["minimum"], props[p.key]["maximum"]) == (p.minimum, p.maximum), \
                (kind.name, p.key)


def test_the_config_schema_takes_jobs_from_keys_and_bounds_from_the_importers():
    """jobs_from's keys, each format's name as the one required key, and every bound: as the
    importer registry (experiments/config/importers) has them."""
    from experiments.config.importers import FORMATS, JOBS_FROM_KEYS
    section = json.loads((SCHEMAS / "config.schema.json").read_text())["properties"][
        "jobs_from"]
    props = section["properties"]
    assert set(props) == JOBS_FROM_KEYS == {k for f in FORMATS.values() for k in f.keys}
    assert [o["required"] for o in section["oneOf"]] == [[name] for name in FORMATS]
    for f in FORMATS.values():
        assert props[f.name]["type"] == "string", f.name
        for p in f.params:
            want = {"int": "integer", "number": "number", "path": "string"}[p.kind]
            assert props[p.key]["type"] == want, p.key
            if p.kind != "path":
                assert (props[p.key]["minimum"], props[p.key]["maximum"]) == \
                    (p.minimum, p.maximum), (f.name, p.key)


def test_the_schemas_jobs_from_refuses_two_formats_and_unknown_keys():
    base = {"name": "w", "routing": ["ecmp"]}
    assert errors(CONFIG, {**base, "jobs_from": {"simai": "a.txt", "all_gpus": 8}}) == []
    assert errors(CONFIG, {**base, "jobs_from": {"simai": "a.txt", "chakra": "t"}})
    assert errors(CONFIG, {**base, "jobs_from": {"simai": "a.txt", "gpus": 8}})
    assert errors(CONFIG, {**base, "jobs_from": {"simai": "a.txt", "all_gpus": 0}})


@pytest.mark.parametrize("routing, ok", [("spray@packet", True), ("spray@host", True),
                                         ("mmf", True), ("ecmp@packet", False),
                                         ("spray@wire", False)])
def test_the_schemas_routing_names_are_the_loaders(routing, ok):
    """spray@packet (per-packet spraying) is taken by both; another @packet by neither."""
    from experiments.config import ConfigError, parse
    doc = read_yaml(ROOT / "experiments/configs/quickstart.yaml")
    doc["routing"] = [routing]
    assert (errors(CONFIG, doc) == []) == ok, routing
    try:
        parse(doc)
        loaded = True
    except ConfigError:
        loaded = False
    assert loaded == ok, routing

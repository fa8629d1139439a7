"""Fault corpus, the surfaces added later: --set, importers, replay_log, report, sweeps, locks.
(what every case must show: bad_input.py)."""
from __future__ import annotations

import json
import os
import subprocess

import pytest


from .bad_input import (FIXTURES, QUICK, REPLAY_CFG, ROOT, _import_config, dump, read_cfg, refused_early)


# -- surfaces added later: --set, importers, replay_log, report, sweeps -------------------------


@pytest.mark.parametrize("command", ["predict", "validate", "sweep"])
@pytest.mark.parametrize("value, names", [
    ("seed=1" + "0" * 5000, "--set seed: a value cannot be read"),
    ("jobs[0].hosts=[&a [h1, h5], *a, *a]", "--set jobs[0].hosts: anchors"),
    ("jobs[0].hosts=*a", "--set jobs[0].hosts: aliases"),
    ("fabric.topology=[leaf-spine]", "fabric.topology"),
    ("fabric.topology={a: 1}", "fabric.topology")])
def test_bad_set_values_in_every_command(sandbox, capsys, command, value, names):
    """Outside pass: a 5,000-digit --set seed gave a traceback; an alias bomb through sweep
    --set ran 50 s into a MemoryError."""
    if command == "sweep":
        (sandbox / "s.yaml").write_text(f"base: {QUICK}\nmode: predict\n")
        argv = ["sweep", str(sandbox / "s.yaml"), "--out", str(sandbox / "out")]
    else:
        argv = [command, str(QUICK)] + (["--out", str(sandbox / "out")]
                                         if command == "predict" else [])
    refused_early(sandbox, capsys, argv + ["--set", value], names, sandbox / "out")


@pytest.mark.parametrize("kind", ["simai-dev-zero", "simai-fifo", "simai-folder",
                                  "chakra-dev-zero", "groups-dev-zero", "groups-fifo"])
def test_an_imported_file_that_is_not_a_bounded_file(sandbox, capsys, kind):
    """Outside pass: /dev/zero as a SimAI file, a Chakra trace or comm_groups was read until
    memory ran out. A FIFO would wait for a writer; both are refused unread."""
    special = sandbox / "special"
    if kind.endswith("fifo"):
        os.mkfifo(special)
    elif kind.endswith("folder"):
        special.mkdir()
    else:
        special.symlink_to("/dev/zero")
    if kind.startswith("simai"):
        jobs_from, names = {"simai": str(special)}, "jobs_from.simai"
    elif kind.startswith("chakra"):
        traces = sandbox / "traces"
        traces.mkdir()
        for r in range(4):
            (traces / f"t.{r}.et").symlink_to(FIXTURES / "chakra/allreduce4" / f"trace.{r}.et")
        (traces / "t.0.et").unlink()
        (traces / "t.0.et").symlink_to("/dev/zero")
        jobs_from, names = {"chakra": str(traces)}, "not a regular file"
    else:
        jobs_from, names = {"chakra": str(FIXTURES / "chakra/allreduce4"),
                            "comm_groups": str(special)}, "jobs_from.comm_groups"
    cfg = _import_config(sandbox, jobs_from)
    refused_early(sandbox, capsys, ["predict", str(cfg), "--out", str(sandbox / "out")], names,
                  sandbox / "out")


def test_an_imported_file_over_the_byte_limit(sandbox, capsys, monkeypatch):
    from traffic import files
    monkeypatch.setattr(files, "MAX_INPUT_BYTES", 100)
    (sandbox / "w.txt").write_text("x" * 101)
    cfg = _import_config(sandbox, {"simai": str(sandbox / "w.txt")})
    refused_early(sandbox, capsys, ["validate", str(cfg)], "101 bytes; at most 100")


def test_a_workload_without_communication(sandbox, capsys):
    """Outside pass: `max() arg is an empty sequence`, a traceback."""
    from ..chakra_traces import write_trace
    traces = sandbox / "traces"
    traces.mkdir()
    for r in range(4):
        write_trace(traces / f"t.{r}.et", [{"id": 1, "type": 4, "duration_micros": 10}])
    cfg = _import_config(sandbox, {"chakra": str(traces)})
    refused_early(sandbox, capsys, ["validate", str(cfg)], "jobs_from.chakra: the workload "
                  "has no communication")


def test_a_chakra_duration_past_a_day_names_the_trace(sandbox, capsys):
    """Outside pass: duration_micros 2^62 was blamed on `jobs[0]`, which the config lacks."""
    from traffic.chakra import read_trace

    from ..chakra_traces import write_trace
    traces = sandbox / "traces"
    traces.mkdir()
    for r in range(4):
        nodes = [{"id": n.id, "name": n.name, "type": n.type, "data_deps": list(n.deps),
                  "duration_micros": int(n.duration_s * 1e6), "attrs": n.attrs}
                 for n in read_trace(FIXTURES / "chakra/allreduce4" / f"trace.{r}.et")]
        nodes[0]["duration_micros"] = 2 ** 62
        write_trace(traces / f"t.{r}.et", nodes)
    cfg = _import_config(sandbox, {"chakra": str(traces)})
    refused_early(sandbox, capsys, ["predict", str(cfg), "--out", str(sandbox / "out")],
                  "t.0.et: record 1", sandbox / "out")


@pytest.mark.parametrize("kind, names", [
    ("eg", ": 4 .eg files (t.0.eg, ...) and no .et: Chakra's older execution-graph schema "
           "(before 0.0.4), which this does not read; convert the traces they came from to .et "
           "with a current chakra_converter"),
    ("json-list", "/t.0.json: not a Chakra JSON trace"),
    ("json-id", "/t.0.json: record 1: Id must be an integer")])
def test_chakra_forms_it_cannot_read_are_named(sandbox, capsys, kind, names):
    """Outside pass: a folder of .eg files (Chakra's older schema) was said to have no .et
    files; a JSON trace the reader cannot take is named with its record."""
    traces = sandbox / "traces"
    traces.mkdir()
    for r in range(4):
        if kind == "eg":
            (traces / f"t.{r}.eg").write_bytes(b"\x03\xff\xff\xff")
        else:
            (traces / f"t.{r}.json").write_text(
                "[]" if kind == "json-list" else '{"workload_graph": [{"Id": -1}]}')
    cfg = _import_config(sandbox, {"chakra": str(traces)})
    refused_early(sandbox, capsys, ["predict", str(cfg), "--out", str(sandbox / "out")],
                  f"jobs_from.chakra: {traces}{names}", sandbox / "out")


@pytest.mark.parametrize("kind, names", [
    ("garbage", "replay_log: "), ("empty", "no flows"), ("non-utf8", "cannot be read"),
    ("short-row", "columns"), ("folder", "no such floodns flow log"),
    ("missing", "no such floodns flow log"), ("wrong-ends", "replay_log: "),
    ("other-servers", "replay_log: ")])
def test_replay_log_problems_are_refused_before_out(sandbox, capsys, kind, names):
    """Outside pass: 13 flow-log problems were one line but prefixed `routing:`, and only
    after config.yaml was in --out (so a retry needed --force)."""
    log = sandbox / "flow_info.csv"
    good = (FIXTURES / "floodns/logs/1job-d2-ecmp/flow_info.csv").read_text().splitlines()
    text = {"garbage": "a,b,c,d,e,f,g\n", "empty": "", "short-row": "1,2,3\n",
            "wrong-ends": good[0].replace("0,544,", "0,545,", 1) + "\n",
            "other-servers": good[0].replace("544", "1544") + "\n"}.get(kind)
    if kind == "non-utf8":
        log.write_bytes(b"\xff\xfe\x00garbage\n")
    elif kind == "folder":
        log.mkdir()
    elif text is not None:
        log.write_text(text)
    doc = read_cfg(REPLAY_CFG)
    doc["jobs_from"]["floodns"] = str(ROOT / doc["jobs_from"]["floodns"])
    doc["replay_log"] = str(log)
    (sandbox / "r.yaml").write_text(dump(doc))
    refused_early(sandbox, capsys, ["predict", str(sandbox / "r.yaml"), "--out",
                                    str(sandbox / "out")], names, sandbox / "out")


@pytest.mark.parametrize("kind, names", [
    ("truncated", "results.json: not JSON"), ("list", "results.json: the document"),
    ("null", "results.json: the document"), ("runs-str", "results.json: runs"),
    ("version-99", "schema_version 99; this mlfabric reads version"),
    ("version-1", "schema_version 1"), ("csv-garbage", "results.csv"),
    ("csv-empty", "results.csv: not a results table"), ("csv-columns", "no column")])
def test_report_on_damaged_results(sandbox, capsys, predicted, kind, names):
    """Outside pass: JSONDecodeError, TypeError, pandas' ParserError and EmptyDataError,
    KeyError 'jobs' for version 99, and version 1 read silently."""
    run = sandbox / "run"
    run.mkdir()
    doc = json.loads((predicted / "results.json").read_text())
    text = json.dumps(doc)
    (run / "results.csv").write_bytes((predicted / "results.csv").read_bytes())
    edits = {"truncated": text[: len(text) // 2], "list": "[]", "null": "null",
             "runs-str": json.dumps({**doc, "runs": "oops"}),
             "version-99": json.dumps({**doc, "schema_version": 99}),
             "version-1": json.dumps({**doc, "schema_version": 1})}
    (run / "results.json").write_text(edits.get(kind, text))
    if kind == "csv-garbage":
        (run / "results.csv").write_text('a,b\n1,"2\n3,4,5,6\n')
    elif kind == "csv-empty":
        (run / "results.csv").write_text("")
    elif kind == "csv-columns":
        (run / "results.csv").write_text("a,b\n1,2\n")
    refused_early(sandbox, capsys, ["report", str(run), "--out", str(sandbox / "rep")], names,
                  sandbox / "rep")


@pytest.mark.parametrize("value", ["tcp://127.0.0.1:99999", "tcp://256.256.256.256:8786",
                                   "tcp://127.0.0.1", "udp://127.0.0.1:8786",
                                   "tcp://a..b:8786", "tcp://127.0.0.1:0",
                                   "tcp://127.0.0.1:1"])
def test_bad_or_silent_scheduler(sandbox, capsys, value):
    """Outside pass: 23-27 s of retries, then `OSError: Timed out ...` (exit 1) not naming
    --scheduler. Port 1 on loopback refuses the connection at once."""
    (sandbox / "s.yaml").write_text(f"base: {QUICK}\nmode: predict\n")
    refused_early(sandbox, capsys, ["sweep", str(sandbox / "s.yaml"), "--out",
                                    str(sandbox / "out"), "--scheduler", value], "--scheduler",
                  sandbox / "out")


def test_a_sweep_whose_base_fails_for_every_point(sandbox, capsys):
    """Outside pass: every point ran and failed."""
    doc = read_cfg(QUICK)
    doc["fabric"]["spines"] = 0
    (sandbox / "b.yaml").write_text(dump(doc))
    (sandbox / "s.yaml").write_text("base: b.yaml\nmode: predict\n"
                                    "grid:\n  jobs[0].iterations: [1, 2, 3]\n")
    refused_early(sandbox, capsys, ["sweep", str(sandbox / "s.yaml"), "--out",
                                    str(sandbox / "out")], "base b.yaml (and every point): "
                  "fabric.spines", sandbox / "out")


def test_a_base_that_its_points_complete_is_not_refused(tmp_path):
    from experiments.sweep import load_sweep
    doc = read_cfg(QUICK)
    doc["fabric"]["spines"] = 0
    (tmp_path / "b.yaml").write_text(dump(doc))
    (tmp_path / "s.yaml").write_text("base: b.yaml\ngrid: {fabric.spines: [2, 4]}\n")
    assert len(load_sweep(tmp_path / "s.yaml").points) == 2


def test_a_second_command_on_the_same_out_refuses_naming_the_first(tmp_path):
    """Outside pass: two sweeps on one --out both ran all 60 points."""
    from experiments.outdir import OutDir, lock
    holder = subprocess.Popen(
        [os.sys.executable, "-c", "import sys, time; sys.path.insert(0, sys.argv[2]); "
         "from experiments.outdir import OutDir, lock; from pathlib import Path; "
         "lock(OutDir(Path(sys.argv[1])), 'sweep'); print('held', flush=True); time.sleep(30)",
         str(tmp_path / "out"), str(ROOT)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(Exception) as e:
            lock(OutDir(tmp_path / "out"), "sweep")
        assert f"pid {holder.pid}" in str(e.value) and str(e.value).startswith("--out: ")
    finally:
        holder.kill()
        holder.wait()
    lock(OutDir(tmp_path / "out"), "sweep")     # free again once the holder is gone


@pytest.mark.parametrize("command", ["validate", "predict"])
def test_a_closed_stdin(tmp_path, command):
    """Outside pass: with fd 0 closed, `run` said Open vSwitch was not running (ovs-vsctl
    aborts on a closed stdin; the next file opened took fd 0)."""
    argv = [os.sys.executable, "-m", "experiments", command, str(QUICK)]
    if command == "predict":
        argv += ["--out", str(tmp_path / "out")]
    p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120,
                       preexec_fn=lambda: os.close(0))
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("extra, names", [
    # the header holds all_gpus 8: 65,536 was silently ignored
    ({"simai": "simai/microAllReduce.txt", "all_gpus": 65536},
     "the header says all_gpus 8, so all_gpus 65536 would be ignored"),
    # 8 GPUs: 3, 7 and 9 silently behaved like 1
    ({"simai": "astra-sim-1.0/MLP_HybridParallel_Data_Model.txt", "all_gpus": 8,
      "first_dim_npus": 3}, "first_dim_npus 3 does not divide all_gpus 8"),
])
def test_simai_counts_that_would_be_ignored_are_refused(sandbox, capsys, extra, names):
    from experiments.__main__ import main
    jobs_from = {**extra, "simai": str(FIXTURES / "simai" / extra["simai"])}
    cfg = _import_config(sandbox, jobs_from)
    doc = read_cfg(cfg)
    doc["fabric"]["hosts_per_leaf"] = 2                        # 8 hosts for the 8 GPUs
    cfg.write_text(dump(doc))
    refused_early(sandbox, capsys, ["validate", str(cfg)], names)
    doc["jobs_from"] = {**jobs_from, **({"first_dim_npus": 2} if "first_dim_npus" in extra
                                        else {"all_gpus": 8})}
    cfg.write_text(dump(doc))
    assert main(["validate", str(cfg)]) == 0, capsys.readouterr().err

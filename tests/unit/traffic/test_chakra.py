"""Chakra .et traces: the length-prefixed protobuf reader (schema subset in traffic/chakra.py)
on fixtures written by our own writer, the mapping to JobSpecs, and one-line errors."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.__main__ import main as cli
from experiments.config import ConfigError, parse
from traffic.chakra import ChakraError, read_trace, read_traces, records
from traffic.chakra_jobs import job_specs
from traffic.collectives import Collective

from ..chakra_traces import write_trace

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "chakra" / "allreduce4"
HOSTS = [f"h{i}" for i in range(1, 9)]
GROUPS = {"pair": [0, 1], "pair2": [2, 3]}
FABRIC = {"spines": 2, "leaves": 4, "hosts_per_leaf": 2, "host_link_mbps": 100,
          "spine_link_mbps": 100}


def test_reader_keeps_types_deps_durations_and_attrs():
    nodes = read_trace(FIX / "trace.0.et")
    assert [n.type for n in nodes] == [4, 7, 4, 7, 5]
    assert nodes[0].duration_s == 100e-6 and nodes[3].deps == (3, 1)   # data, then ctrl
    assert nodes[1].attrs == {"comm_type": 0, "comm_size": 1_000_000, "pg_name": ""}
    assert nodes[4].comm("comm_dst") == 3 and nodes[4].record == 5
    assert len(records(FIX / "trace.0.et")) == 6          # GlobalMetadata + 5 nodes


def test_collectives_and_sends_become_jobspecs():
    specs = {s.name: s for s in job_specs(read_traces(FIX), HOSTS, 100.0, GROUPS)}
    ar = specs["r0n2-allreduce"]
    assert ar.collective is Collective.ALLREDUCE and ar.groups == [HOSTS[:4]]
    assert ar.size_bytes == 1_000_000 and ar.start_s == pytest.approx(400e-6)  # rank 3 last
    ag0, ag1 = specs["r0n4-allgather"], specs["r2n4-allgather"]
    assert ag0.groups == [["h1", "h2"]] and ag1.groups == [["h3", "h4"]]
    # each all-gather waits for the all-reduce's end (+ 50 us of compute), whatever the
    # network makes of it, and for the compute its control dependency names
    assert ag1.after == (("r0n2-allreduce", pytest.approx(50e-6)),)
    assert ag1.start_s == pytest.approx(400e-6) and ag0.start_s == pytest.approx(200e-6)
    assert specs["r0n5-send"].after == (("r0n4-allgather", 0.0),)
    send = specs["r0n5-send"]
    assert send.collective is Collective.PIPELINE and send.groups == [["h1", "h4"]]
    assert len(specs) == 4


def test_a_chakra_config_predicts(tmp_path):
    exp = parse({"name": "c", "routing": ["ecmp"], "fabric": FABRIC,
                 "jobs_from": {"chakra": str(FIX),
                               "comm_groups": str(FIX / "comm_groups.json")}})
    assert len(exp.jobs) == 4
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"name: c\nrouting: [ecmp]\nfabric: {FABRIC}\njobs_from: {{chakra: {FIX}, "
                   f"comm_groups: {FIX / 'comm_groups.json'}}}\n")
    assert cli(["predict", str(cfg), "--out", str(tmp_path / "out")]) == 0


def node(i, typ, deps=(), **attrs):
    return {"id": i, "type": typ, "data_deps": list(deps), "attrs": attrs}


def traces(tmp_path, per_rank) -> Path:
    for r, nodes in enumerate(per_rank):
        write_trace(tmp_path / f"t.{r}.et", nodes)
    return tmp_path


AR = dict(comm_type=0, comm_size=1000, pg_name="")


@pytest.mark.parametrize("per_rank, needle", [
    ([[node(1, 7, comm_type=42, comm_size=1000, pg_name="")]] * 2,
     "record 1: unknown comm_type 42"),
    ([[node(1, 7, comm_type=0, comm_size=1000, pg_name="big")]] * 2,
     "unknown process group 'big'"),
    ([[node(1, 4, deps=[2]), node(2, 4, deps=[1])]] * 2, "dependency cycle"),
    ([[node(1, 7, **AR)], [node(1, 7, comm_type=0, comm_size=999, pg_name="")]],
     "differs from rank 0's"),
    ([[node(1, 7, **AR)], []], "is missing on ranks [1]"),
    ([[node(1, 5, comm_dst=1, comm_size=10)], []], "no matching receive"),
    ([[node(1, 7, comm_type=0, pg_name="")]] * 2, "needs an integer comm_size"),
])
def test_bad_traces_name_file_and_record(tmp_path, per_rank, needle):
    d = traces(tmp_path, per_rank)
    with pytest.raises(ChakraError) as e:
        job_specs(read_traces(d), HOSTS, 100.0)
    assert needle in str(e.value) and ".et" in str(e.value) and "\n" not in str(e.value)


def test_group_larger_than_the_fabric(tmp_path):
    d = traces(tmp_path, [[node(1, 7, comm_type=0, comm_size=9, pg_name="g")]] * 3)
    with pytest.raises(ChakraError, match="3 ranks but the fabric has 2 hosts"):
        job_specs(read_traces(d), HOSTS[:2], 100.0)
    with pytest.raises(ChakraError, match=r"t.0.et: record 1: process group 'g' has 3 ranks"):
        job_specs(read_traces(d), HOSTS, 100.0, {"g": [0, 1, 5]})


def test_truncated_and_malformed_files(tmp_path):
    good = (FIX / "trace.0.et").read_bytes()
    (tmp_path / "a.0.et").write_bytes(good[:-3])
    with pytest.raises(ChakraError, match=r"a.0.et: record 5: truncated \(\d+ of \d+ bytes\)"):
        read_trace(tmp_path / "a.0.et")
    (tmp_path / "b.0.et").write_bytes(good[:1] + b"\xff\xff\xff\x0f" + good[5:])
    with pytest.raises(ChakraError, match="b.0.et: record 0: "):
        read_trace(tmp_path / "b.0.et")
    (tmp_path / "c.0.et").write_bytes(b"\x03\xff\xff\xff" + good)
    with pytest.raises(ChakraError, match="c.0.et: record 0: not a Chakra GlobalMetadata"):
        read_trace(tmp_path / "c.0.et")
    (tmp_path / "d.0.et").write_bytes(b"\x80")
    with pytest.raises(ChakraError, match="d.0.et: record 0: truncated length prefix"):
        read_trace(tmp_path / "d.0.et")
    (tmp_path / "e.0.et").write_bytes(b"")
    with pytest.raises(ChakraError, match="empty"):
        read_trace(tmp_path / "e.0.et")
    (tmp_path / "x").mkdir()
    write_trace(tmp_path / "x" / "t.1.et", [])
    with pytest.raises(ChakraError, match="ranks must be 0..n-1"):
        read_traces(tmp_path / "x")


def test_cli_exit_2_on_a_bad_trace(tmp_path, capsys):
    (tmp_path / "traces").mkdir()
    d = traces(tmp_path / "traces", [[node(1, 7, comm_type=42, comm_size=10, pg_name="")]] * 2)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"name: c\nrouting: [ecmp]\nfabric: {FABRIC}\njobs_from: {{chakra: {d}}}\n")
    assert cli(["predict", str(cfg), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert "t.0.et: record 1: unknown comm_type 42" in err and len(err.splitlines()) == 1


def test_config_errors():
    with pytest.raises(ConfigError, match="fabric: required"):
        parse({"name": "c", "routing": ["ecmp"], "jobs_from": {"chakra": str(FIX)}})
    with pytest.raises(ConfigError, match="exactly one of"):
        parse({"name": "c", "routing": ["ecmp"], "fabric": FABRIC,
               "jobs_from": {"chakra": str(FIX), "simai": "x"}})
    with pytest.raises(ConfigError, match="jobs_from.failed_cores: not a key of jobs_from.chakra"):
        parse({"name": "c", "routing": ["ecmp"], "fabric": FABRIC,
               "jobs_from": {"chakra": str(FIX), "failed_cores": 1}})


def _as_json(path: Path, nodes: list[dict]) -> None:
    """`nodes` (write_trace's dicts) in Chakra's JSON form, as its feeder's json_node reads."""
    graph = [{"Id": n["id"], "Name": f"n{n['id']}", "NodeType": n["type"],
              "data_deps": n.get("data_deps", []), "runtime": n.get("duration_micros", 0),
              "is_cpu_op": False, **{k: v for k, v in n.get("attrs", {}).items()
                                     if k != "pg_name"}} for n in nodes]
    path.write_text(json.dumps({"workload_graph": graph}))


def test_chakra_json_traces_make_the_jobs_their_et_form_makes(tmp_path):
    """Outside pass: Chakra's JSON form (the feeder's json_node) was not read. Two ranks:
    compute, an all-reduce over both, a send 0 -> 1 after more compute."""
    per_rank = [[dict(node(1, 4), duration_micros=100 * (r + 1)),
                 node(2, 7, deps=[1], **AR),
                 dict(node(3, 4, deps=[2]), duration_micros=30),
                 node(4, 5 if r == 0 else 6, deps=[3], comm_src=0, comm_dst=1, comm_tag=3,
                      comm_size=4096)] for r in range(2)]
    (tmp_path / "et").mkdir()
    (tmp_path / "js").mkdir()
    for r, nodes in enumerate(per_rank):
        write_trace(tmp_path / "et" / f"t.{r}.et", nodes)
        _as_json(tmp_path / "js" / f"t.{r}.json", nodes)
    (tmp_path / "js" / "comm_groups.json").write_text("{}")      # not a trace: ignored
    et = job_specs(read_traces(tmp_path / "et"), HOSTS, 100.0)
    js = job_specs(read_traces(tmp_path / "js"), HOSTS, 100.0)
    assert len(js) == 2 and [(s.name, s.collective, s.groups, s.size_bytes, s.start_s,
                              s.after) for s in js] == [
        (s.name, s.collective, s.groups, s.size_bytes, s.start_s, s.after) for s in et]
    ar, send = sorted(js, key=lambda s: s.collective is Collective.PIPELINE)
    assert ar.collective is Collective.ALLREDUCE and ar.start_s == pytest.approx(200e-6)
    assert send.after == ((ar.name, pytest.approx(30e-6)),) and send.size_bytes == 4096


def test_chakras_published_json_sample_reads_as_its_feeder_reads_it():
    from traffic.chakra import read_json_trace
    from traffic.streams import Notes
    sample = FIX.parent / "chakra-tests" / "json_trace" / "small_chakra.0.json"
    nodes = read_json_trace(sample)
    assert [n.id for n in nodes] == [216, 217, 430, 432, 433, 435, 541]
    assert nodes[5].deps == (432, 216, 217)                 # data_deps only (no ctrlDeps)
    assert nodes[0].duration_s == pytest.approx(318e-6)      # runtime: us
    notes = Notes("chakra", "us")
    assert job_specs(read_traces(sample.parent), HOSTS, 100.0, notes=notes) == []   # 1 rank
    assert notes.skipped["collective nodes without comm_type (run as their duration)"] == 3


@pytest.mark.parametrize("text, needle", [
    ("[1, 2]", "t.0.json: not a Chakra JSON trace"),
    ("{\"workload_graph\": [", "t.0.json: not a Chakra JSON trace"),
    ('{"workload_graph": [{"Id": "x", "NodeType": 4}]}', "t.0.json: record 1: Id must be"),
    ('{"workload_graph": [{"Id": 1, "NodeType": 4, "data_deps": [true]}]}',
     "t.0.json: record 1: data_deps must be"),
    ('{"workload_graph": [{"Id": 1, "NodeType": 4, "runtime": 1e99}]}',
     "t.0.json: record 1: runtime must be"),
    ('{"workload_graph": [{"Id": 1, "NodeType": 7, "comm_size": -1}]}',
     "t.0.json: record 1: comm_size must be"),
])
def test_bad_json_traces_name_file_and_record(tmp_path, text, needle):
    (tmp_path / "t.0.json").write_text(text)
    with pytest.raises(ChakraError) as e:
        read_traces(tmp_path)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_a_folder_of_older_eg_files_is_named(tmp_path):
    """Outside pass: a folder of .eg files (Chakra's older execution graphs) was refused as
    having no .et files, which named neither the schema nor the fix."""
    for r in range(2):
        (tmp_path / f"t.{r}.eg").write_bytes(b"\x03\xff\xff\xff")
    with pytest.raises(ChakraError) as e:
        read_traces(tmp_path)
    assert str(e.value) == (
        f"{tmp_path}: 2 .eg files (t.0.eg, ...) and no .et: Chakra's older execution-graph "
        "schema (before 0.0.4), which this does not read; convert the traces they came from "
        "to .et with a current chakra_converter (chakra_converter PyTorch --input TRACE.json "
        "--output NAME)")
    with pytest.raises(ChakraError, match="t.0.eg: Chakra's older execution-graph schema"):
        read_traces(tmp_path / "t.0.eg")

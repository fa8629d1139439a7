"""SimAI / ASTRA-sim 1.0 workload files: header groups, layers, the mapping to JobSpecs and
one-line errors naming the file and line."""
from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import yaml

from experiments.config import ConfigError, parse
from traffic.collectives import Collective
from traffic.simai import Parallelism, SimaiError, read_workload
from traffic.simai_passes import job_specs
from traffic.streams import Notes, WorkloadWarning

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "simai" / "tp2-dp4.txt"
HOSTS = [f"h{i}" for i in range(1, 9)]
HEADER = ("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 1 vpp: 1 "
          "ga: 1 all_gpus: 8 checkpoints: 0 checkpoint_initiates: 0\n")
ROW = "attn -1 100000 ALLREDUCE 1000000 0 NONE 0 0 NONE 0 0\n"


def test_groups_follow_megatron_rank_order():
    par = Parallelism(tp=2, pp=1, ep=2, gpus=8)
    assert par.groups("TP") == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert par.groups("DP") == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert par.groups("EP") == [[0, 2], [4, 6], [1, 3], [5, 7]]
    assert par.groups("DP_EP") == [[0, 4], [2, 6], [1, 5], [3, 7]]
    assert Parallelism(tp=2, pp=2, ep=1, gpus=8).groups("DP") == [[0, 2], [1, 3], [4, 6],
                                                                   [5, 7]]


def test_layers_and_schedule():
    wl = read_workload(FIX)
    par, layers = wl.par, wl.layers
    assert (par.tp, par.dp, par.ep) == (2, 4, 2) and [ly.name for ly in layers] == [
        "embedding", "attention", "moe"]
    specs = job_specs(FIX, HOSTS, 100.0)
    names = [s.name for s in specs]
    assert names[:3] == ["c0-embedding-fwd", "c1-attention-fwd", "c2-moe-fwd"]
    first, second = specs[0], specs[1]
    assert first.collective is Collective.ALLREDUCE and len(first.groups) == 4    # TP groups
    assert first.start_s == pytest.approx(100e-6) and first.after == ()
    # forward comms block: the next starts 200 us (its compute) after the first ends
    assert second.collective is Collective.ALLGATHER
    assert second.start_s == 0 and second.after == (("c0-embedding-fwd", pytest.approx(200e-6)),)
    moe = specs[2]
    assert moe.collective is Collective.ALLTOALL and moe.groups[0] == ["h1", "h3"]  # EP
    wg = [s for s in specs if s.name.endswith("moe-wg")][0]
    assert wg.groups[0] == ["h1", "h5"]                                              # DP_EP
    emb_wg = [s for s in specs if s.name.endswith("embedding-wg")][0]
    assert emb_wg.groups == [["h1", "h3", "h5", "h7"], ["h2", "h4", "h6", "h8"]]     # DP


def test_a_simai_config_loads():
    exp = parse({"name": "s", "routing": ["ecmp"], "jobs_from": {"simai": str(FIX)},
                 "fabric": {"spines": 2, "leaves": 4, "hosts_per_leaf": 2,
                            "host_link_mbps": 100, "spine_link_mbps": 100}})
    assert len(exp.jobs) == 8          # 3 forward, 2 + 2 + 1 backward (embedding ig: NONE)


@pytest.mark.parametrize("text, needle", [
    ("", "expected a header line"),
    ("FOO all_gpus: 8\n1\n" + ROW, ":1: expected a parallelism kind"),
    (HEADER.replace("all_gpus: 8", "all_gpus: 6").replace("NPU_group: 2", "NPU_group: 4")
     + "1\n" + ROW, ":1: all_gpus 6 is not a multiple"),
    (HEADER.replace("ep: 1", "ep: 3") + "1\n" + ROW, ":1: ep 3 does not divide"),
    (HEADER.replace("all_gpus: 8", "all_gpus: 0") + "1\n" + ROW, ":1: all_gpus 0 in the header"),
    (HEADER + "2\n", ":2: says 2 layers, the file has none (truncated?)"),
    (HEADER + "2\n" + ROW + "attn -1 100000 ALLRE", ":4: expected 12 columns"),
    (HEADER + "1\n" + ROW.replace("ALLREDUCE", "MULTICAST"), ":3: unknown comm type 'MULTICAST'"),
    (HEADER + "1\n" + "attn -1 100000 ALLREDUCE\n", ":3: expected 12 columns"),
    (HEADER + "1\n" + ROW.replace("1000000", "-5"), ":3: fwd comm size must be from 0"),
    (HEADER + "x\n" + ROW, ":2: the layer count must be an integer"),
])
def test_bad_workloads_name_file_and_line(tmp_path, text, needle):
    p = tmp_path / "w.txt"
    p.write_text(text)
    with pytest.raises(SimaiError) as e:
        job_specs(p, HOSTS, 100.0)
    assert str(p) in str(e.value) and needle in str(e.value) and "\n" not in str(e.value)


def test_more_gpus_than_the_fabric(tmp_path):
    p = tmp_path / "w.txt"
    p.write_text(HEADER + "1\n" + ROW)
    with pytest.raises(SimaiError, match=":1: all_gpus 8 is more than the fabric's 4 hosts"):
        job_specs(p, HOSTS[:4], 100.0)
    with pytest.raises(ConfigError, match="jobs_from.simai: .*more than the fabric's 4 hosts"):
        parse({"name": "s", "routing": ["ecmp"], "jobs_from": {"simai": str(p)},
               "fabric": {"spines": 1, "leaves": 2, "hosts_per_leaf": 2,
                          "host_link_mbps": 100, "spine_link_mbps": 100}})


def test_a_workload_past_the_memory_bound_is_refused_with_its_size(tmp_path):
    """SimAI's 9,216-GPU shape (tp 2, ep 16, pp 12): each EP all-to-all is 576 groups x 240
    transfers, a connection each, and one EP stream runs one at a time (the rest of its
    transfers are held, not in flight); the first that takes the estimate past
    MAX_PREDICT_BYTES is named. Counted before anything is planned."""
    from experiments.config.limits import (BYTES_HELD_PER_TRANSFER, BYTES_PER_CONNECTION,
                                           BYTES_PER_TRANSFER, MAX_PREDICT_BYTES)
    per_job = 576 * 16 * 15
    layers = (MAX_PREDICT_BYTES - per_job * (BYTES_PER_TRANSFER - BYTES_HELD_PER_TRANSFER)) \
        // (per_job * (BYTES_HELD_PER_TRANSFER + BYTES_PER_CONNECTION)) + 1
    p = tmp_path / "w.txt"
    p.write_text("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 16 pp: 12 "
                 "all_gpus: 9216 pp_comm 1048576\n" + f"{layers}\n"
                 + "moe -1 1 ALLTOALL_EP 1048576 1 NONE 0 1 NONE 0 1\n" * layers)
    fabric = {"topology": "clos3", "pods": 12, "leaves_per_pod": 12, "aggs_per_pod": 4,
              "cores_per_plane": 4, "hosts_per_leaf": 64, "host_link_mbps": 100,
              "leaf_agg_mbps": 100, "agg_core_mbps": 100}
    with pytest.raises(ConfigError) as e:
        parse({"name": "s", "routing": ["ecmp"], "jobs_from": {"simai": str(p)},
               "fabric": fabric})
    total = layers * per_job + 2 * 11 * 768         # + the two pipeline sends' transfers
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"jobs_from.simai: job c{layers - 1}-moe-fwd: "
                                               f"passes the {MAX_PREDICT_BYTES >> 30} GiB")
    assert f"the jobs send {total:,} transfers per iteration over {total:,} connections" in msg
    assert msg.endswith("use fewer or smaller groups, or semantics.connections: stream (a "
                        "stream's collectives share their connections: docs/prediction.md)")


PP_ROWS = "1\na -1 10 NONE 0 10 NONE 0 10 ALLREDUCE 1000 0\n"
PP_HEADER = ("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 1 ep: 1 pp: 2 vpp: 1 "
             "ga: 1 all_gpus: 4 checkpoints: 0 checkpoint_initiates: 0")


def test_pp_without_pp_comm_runs_without_pipeline_traffic_and_warns(tmp_path):
    """Outside pass: pp > 1 without pp_comm was refused; SimAI warns and adds no pipeline
    time (Layer.cc: pp_commsize 0)."""
    p, q = tmp_path / "w.txt", tmp_path / "with.txt"
    p.write_text(PP_HEADER + "\n" + PP_ROWS)
    q.write_text(PP_HEADER + " pp_comm: 4096\n" + PP_ROWS)
    notes = Notes("simai", "cycles")
    with pytest.warns(WorkloadWarning) as got:
        specs = job_specs(p, HOSTS[:4], 100.0, notes=notes)
    assert [str(w.message) for w in got] == notes.warnings == [
        f"{p}:1: pp 2 but no pp_comm: pipeline traffic left out, as SimAI does; give pp_comm "
        "BYTES (what one stage sends the next) to send it"]
    assert [s.collective for s in specs] == [Collective.ALLREDUCE]        # DP only
    with warnings.catch_warnings():
        warnings.simplefilter("error", WorkloadWarning)
        piped = job_specs(q, HOSTS[:4], 100.0)
    assert [s.collective for s in piped].count(Collective.PIPELINE) == 2  # fwd and bwd


ASTRA1_ROWS = ("3\n"
               "a -1 10 ALLREDUCE 1000 10 ALLREDUCE 1000 10 ALLREDUCE 1000 0\n"
               "b -1 10 ALLGATHER 1000 10 REDUCESCATTER 1000 10 ALLREDUCE 1000 0\n"
               "c -1 10 ALLREDUCEALLTOALL 1000 10 NONE 0 10 ALLREDUCE 1000 0\n")


@pytest.mark.parametrize("header", ["HYBRID_TRANSFORMER", "HYBRID_TRANSFORMER_FWD_IN_BCKWD"])
def test_astra_sim_transformer_without_its_group_says_what_it_left_out(tmp_path, header):
    """Outside pass: an ASTRA-sim 1.0 transformer header without model_parallel_NPU_group
    was read as 1 in silence. The count is the model-parallel collectives the same file
    makes with a group of 2."""
    p, two = tmp_path / "w.txt", tmp_path / "two.txt"
    p.write_text(header + "\n" + ASTRA1_ROWS)
    two.write_text(header + " model_parallel_NPU_group: 2\n" + ASTRA1_ROWS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", WorkloadWarning)
        tp = [s for s in job_specs(two, HOSTS[:4], 100.0) if s.stream == "TP"]
    assert len(tp) == 6                    # fwd: 1 + 1 + 2 (all-reduce, all-to-all); ig: 2
    notes = Notes("simai", "cycles")
    with pytest.warns(WorkloadWarning):
        specs = job_specs(p, HOSTS[:4], 100.0, notes=notes)
    assert notes.warnings == [
        f"{p}:1: no model_parallel_NPU_group in the {header} header: assumed 1, so "
        f"{len(tp)} model-parallel (TP) collectives were left out; give "
        "model_parallel_NPU_group: N"]
    assert [s.stream for s in specs] == ["DP"] * 3


def test_the_cli_shows_an_importer_warning_as_one_line(tmp_path, capsys):
    from experiments.__main__ import main
    p = tmp_path / "w.txt"
    p.write_text(PP_HEADER + "\n" + PP_ROWS)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"name: s\nrouting: [ecmp]\njobs_from: {{simai: {p}}}\nfabric: {{spines: 2, "
                   "leaves: 2, hosts_per_leaf: 2, host_link_mbps: 100, spine_link_mbps: 100}\n")
    capsys.readouterr()
    assert main(["validate", str(cfg)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [f"warning: {p}:1: pp 2 but no pp_comm: pipeline traffic left out, as SimAI "
                   "does; give pp_comm BYTES (what one stage sends the next) to send it"]
    with pytest.warns(WorkloadWarning):
        exp = parse(yaml.safe_load(cfg.read_text()))
    assert exp.workload.as_dict()["warnings"] == [err[0].removeprefix("warning: ")]

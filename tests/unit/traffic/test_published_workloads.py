"""Workloads as their projects publish them (tests/fixtures/simai, tests/fixtures/chakra, each
with its licence), read unedited: job counts against Chakra's own converter, bytes, groups,
the order on a stream, and CCTs against hand calculations."""
from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from experiments.__main__ import main as cli
from experiments.config import ConfigError, parse
from testbed.fabric import FabricSpec, build_fabric
from traffic.chakra import ChakraError, read_traces
from traffic.chakra_jobs import job_specs as chakra_jobs
from traffic.collectives import Collective, plan_jobs
from traffic.predictor import ideal
from traffic.simai import read_workload
from traffic.simai_passes import job_specs
from traffic.streams import Notes

FIX = Path(__file__).resolve().parents[2] / "fixtures"
ASTRA1 = FIX / "simai" / "astra-sim-1.0"
AICB = FIX / "simai" / "aicb"
HOSTS = [f"h{i}" for i in range(1, 65)]
B = 100_000.0                  # Mbit/s

#: COMM_COLL nodes per rank that mlcommons/chakra's text_converter.py writes for these files
#: (8 NPUs, 1 pass; experiments/benchmarks/workload_corpus.py --chakra runs it again); the
#: other three kinds it does not convert.
CHAKRA_CONVERTER = {"DLRM_HybridParallel.txt": 9, "MLP_HybridParallel_Data_Model.txt": 17,
                    "MLP_HybridParallel_Model_Data.txt": 17, "MLP_ModelParallel.txt": 11,
                    "Resnet50_DataParallel.txt": 54, "microAllReduce.txt": 1,
                    "microAllToAll.txt": 1}


@pytest.mark.parametrize("name, count", sorted(CHAKRA_CONVERTER.items()))
def test_astra_sim_1_job_counts_equal_chakras_converter(name, count):
    specs = job_specs(ASTRA1 / name, HOSTS[:8], B, all_gpus=8, dim0=2)
    assert len(specs) == count
    plan_jobs(specs)                                  # streams are well formed


@pytest.mark.parametrize("name", sorted(p.name for p in ASTRA1.glob("*.txt")))
def test_every_astra_sim_1_file_loads_with_all_gpus_from_the_config(name):
    exp = parse({"name": "w", "routing": ["ecmp"], "jobs_from": {"simai": str(ASTRA1 / name)},
                 "fabric": {"spines": 2, "leaves": 4, "hosts_per_leaf": 2,
                            "host_link_mbps": 100, "spine_link_mbps": 100}})
    assert exp.jobs and exp.workload.collectives == len(exp.jobs)


def test_header_forms_of_astra_sim_1():
    dlrm = read_workload(ASTRA1 / "DLRM_HybridParallel.txt", 8)
    assert dlrm.header.ints["last_bottom"] == 4                     # "HYBRID_DLRM 4"
    fib = read_workload(ASTRA1 / "Transformer_HybridParallel_Fwd_In_Bckwd.txt", 8)
    assert fib.par.tp == 4 and fib.header.lists == {"checkpoints": [2, 11],
                                                     "initiates": [19, 10]}
    custom = read_workload(ASTRA1 / "sample_per_layer_parallel_HybridCustomized.txt", 8)
    assert [ly.kind for ly in custom.layers][:3] == ["HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA",
                                                     "DATA"]


def test_recomputation_from_checkpoints_adds_forward_comms():
    """FWD_IN_BCKWD: layers 11..18 and 2..9 run their forward again inside the backward."""
    specs = job_specs(ASTRA1 / "Transformer_HybridParallel_Fwd_In_Bckwd.txt", HOSTS[:8], B)
    fwd = [s.name for s in specs if s.name.endswith("-fwd")]
    first = [n for n in fwd if "concat1" in n]
    assert len(first) == 2                            # layer 7: forward, then recomputed


def test_aicb_micro_test_runs_its_19_all_reduces_back_to_back():
    """MICRO, 8 GPUs from the fabric: 19 all-reduces of 4 KiB .. 1 GiB over all ranks, each
    after the one before on one stream; each at its ideal, 2 x 7/8 x S x 8 / B."""
    specs = job_specs(AICB / "all_reduce.txt", HOSTS[:8], B)
    assert [s.size_bytes for s in specs] == [4096 << k for k in range(19)]
    assert all(s.groups == [HOSTS[:8]] for s in specs)
    assert [s.after for s in specs[1:]] == [((a.name, 0.0),) for a in specs[:-1]]
    fab = build_fabric(FabricSpec(1, 8, 1, B, B))
    pred = ideal(fab, plan_jobs(specs))
    for s in specs:
        hand = 2 * 7 * -(-s.size_bytes // 8) * 8 / (B * 1e6)
        assert pred.jobs[s.name].cct_s[0] == pytest.approx(hand, rel=1e-3)
    end = max(j.iteration_end_s[-1] for j in pred.jobs.values())
    assert end == pytest.approx(sum(2 * 7 / 8 * s.size_bytes * 8 / (B * 1e6) for s in specs),
                                rel=1e-3)


def test_aicb_models_placeholders_broadcast_and_missing_layers():
    notes = Notes("simai", "ns")
    specs = job_specs(AICB / "G175B-M1-C03_GPT175B_megatron_tp8_pp1_mbs1_A100.txt", HOSTS[:16],
                      B, notes=notes)
    assert notes.skipped["placeholder smaller than its group"] == 1   # ALLGATHER of 1 byte
    assert {len(s.groups[0]) for s in specs} == {8, 2}                 # TP 8, DP 2
    notes = Notes("simai", "ns")
    job_specs(AICB / "L7B-M1-C04_Llama7B_megatron_tp2_pp1_mbs1_A100.txt", HOSTS[:8], B,
              notes=notes)
    assert notes.skipped["BROADCAST (SimAI sends none)"] == 1
    notes = Notes("simai", "ns")
    job_specs(AICB / "L65B-M1-C05_Llama65B_megatron_tp8_pp1_mbs1_A100.txt", HOSTS[:8], B,
              notes=notes)
    assert notes.skipped["layers the header counts but the file lacks (read as empty)"] == 806


def test_a_workload_with_no_traffic_is_one_line_exit_2(tmp_path, capsys):
    """muti_all_reduce.txt's wg comms run in DP groups: with TP 8 on 8 GPUs they are groups of
    one. jobs_from.all_gpus: 16 gives them DP groups of two."""
    fabric = {"spines": 2, "leaves": 8, "hosts_per_leaf": 2, "host_link_mbps": 100,
              "spine_link_mbps": 100}
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"name: c\nrouting: [ecmp]\nfabric: {fabric}\njobs_from: {{simai: "
                   f"{AICB / 'muti_all_reduce.txt'}, all_gpus: 8}}\n")
    assert cli(["validate", str(cfg)]) == 2
    err = capsys.readouterr().err.strip()
    assert "0 jobs" in err and len(err.splitlines()) == 1
    exp = parse({"name": "c", "routing": ["ecmp"], "fabric": fabric,
                 "jobs_from": {"simai": str(AICB / "muti_all_reduce.txt"), "all_gpus": 16}})
    assert len(exp.jobs) == 19 and exp.jobs[0].groups[0] == ["h1", "h9"]


def test_chakra_microbenchmark_and_custom_ring():
    specs = chakra_jobs(read_traces(FIX / "chakra" / "astra-sim" / "all_reduce_4npus_1MB"),
                        HOSTS, B)
    assert [(s.collective, s.size_bytes, s.groups) for s in specs] == [
        (Collective.ALLREDUCE, 1_048_576, [HOSTS[:4]])]
    ring = chakra_jobs(read_traces(FIX / "chakra" / "astra-sim" /
                                   "custom_ring_allreduce_8npus_1MB"), HOSTS[:8], B)
    assert len(ring) == 1 and ring[0].collective is Collective.CUSTOM
    assert len(ring[0].p2p) == 112 and {t.size_bytes for t in ring[0].p2p} == {131_072}
    fab = build_fabric(FabricSpec(1, 8, 1, B, B))
    cct = ideal(fab, plan_jobs(ring)).jobs[ring[0].name].cct_s[0]
    assert cct == pytest.approx(14 * 131_072 * 8 / (B * 1e6), rel=1e-6)   # 14 steps, network


def test_chakra_pytorch_trace_missing_nodes_cycles_and_cpu_collectives(tmp_path):
    with tarfile.open(FIX / "chakra" / "chakra-tests" / "feeder_tests_trace.tar.gz") as t:
        t.extractall(tmp_path, filter="data")
    notes = Notes("chakra", "us")
    specs = chakra_jobs(read_traces(tmp_path / "tests" / "data"), HOSTS, B, None, notes)
    assert specs == []                          # one rank: nothing crosses a network
    assert notes.skipped["dependencies on nodes missing from the file (ignored)"] == 1277
    assert notes.skipped["collective nodes without comm_type (run as their duration)"] == 14
    assert notes.skipped["BROADCAST (run as its duration, as ASTRA-sim does)"] == 2


def test_old_chakra_schema_is_named(tmp_path):
    (tmp_path / "t.0.et").write_bytes(b"\x03\xff\xff\xff")
    with pytest.raises(ChakraError, match="older Chakra schema"):
        read_traces(tmp_path)


def test_pg_zero_is_every_rank(tmp_path):
    from ..chakra_traces import write_trace
    for r in range(2):
        write_trace(tmp_path / f"t.{r}.et", [{"id": 1, "type": 7, "attrs": {
            "comm_type": 0, "comm_size": 1000, "pg_name": "0"}}])
    spec, = chakra_jobs(read_traces(tmp_path), HOSTS, B)
    assert spec.groups == [HOSTS[:2]]
    with pytest.raises(ConfigError, match="jobs_from.all_gpus: must be from 1"):
        parse({"name": "c", "routing": ["ecmp"], "fabric": {
            "spines": 1, "leaves": 2, "hosts_per_leaf": 1, "host_link_mbps": 100,
            "spine_link_mbps": 100}, "jobs_from": {"simai": "x", "all_gpus": 0}})


@pytest.mark.parametrize("cut", ["truncated", "empty", "huge", "no header count"])
def test_broken_variants_of_a_real_file_are_one_line_exit_2(tmp_path, capsys, cut):
    text = (AICB / "G175B-M1-C03_GPT175B_megatron_tp8_pp1_mbs1_A100.txt").read_text()
    broken = {"truncated": text[:len(text) // 2].rstrip().rsplit(None, 3)[0],
              "empty": "",
              "huge": text.replace("11175321600", "9" * 30),
              "no header count": text.split("\n", 1)[0] + "\n"}[cut]
    (tmp_path / "w.txt").write_text(broken)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("name: c\nrouting: [ecmp]\nfabric: {spines: 2, leaves: 4, hosts_per_leaf: 4, "
                   f"host_link_mbps: 100, spine_link_mbps: 100}}\njobs_from: {{simai: "
                   f"{tmp_path / 'w.txt'}}}\n")
    assert cli(["validate", str(cfg)]) == 2
    err = capsys.readouterr().err.strip()
    assert "w.txt" in err and len(err.splitlines()) == 1 and "Traceback" not in err

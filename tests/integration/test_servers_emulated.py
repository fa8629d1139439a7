"""Servers on the real emulator (docs/servers.md): GPUs joined by an NVLink switch of their
own, rail-aligned rings whose hops between servers leave by the NIC on the receiver's rail
(PXN: the sender's bytes cross NVLink to the relaying GPU, which forwards them), so no byte
reaches a spine; without PXN a cross-rail transfer crosses one."""
from __future__ import annotations

from experiments.config import parse
from experiments.measure import CROSSED_MIN_BYTES
from experiments.runner import run_experiment

from .helpers import NOTHING, leftovers

SERVERS = {
    "name": "itest-servers", "seed": 1,
    "fabric": {"topology": "rail-optimized", "nics_per_server": 4, "servers_per_group": 2,
               "spines_per_group": 2, "host_link_mbps": 20, "spine_link_mbps": 20,
               "nvlink_mbps": 180},
    "jobs": [{"name": "ring", "collective": "allreduce", "size_bytes": 2_000_000,
              "iterations": 2, "hosts": ["h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8"]}],
    "routing": ["ecmp"],
}
CROSS = {**SERVERS, "jobs": [{"name": "cross", "collective": "alltoall", "pxn": False,
                              "size_bytes": 1_000_000, "iterations": 2,
                              "hosts": ["h1", "h6"]}]}


def spine_bytes(run: dict, fabric) -> dict[int, int]:
    """conn_id -> the bytes the spines counted for it."""
    return {p["conn_id"]: sum(n for s, n in (p["switch_bytes"] or {}).items()
                              if s in fabric.spines) for p in run["paths"]}


def test_rail_aligned_rings_relay_over_nvlink_and_never_reach_a_spine(tmp_path):
    exp = parse(SERVERS)
    plan = exp.plans()[0]
    relayed = [c for c in plan.connections if c.nvlink_from]
    assert len(relayed) == 2 * 4 and len(plan.connections) == 4 * 8   # 2 hops x 4 channels
    res = run_experiment(exp, tmp_path, log=lambda s: None)
    (run,) = res["runs"]
    assert all(j["bytes_verified"] for j in run["jobs"])
    assert not any(spine_bytes(run, exp.fabric).values())
    assert abs(run["prediction_error_fraction"]) < 0.1, run["prediction_error_fraction"]
    assert leftovers() == NOTHING


def test_without_pxn_a_cross_rail_transfer_crosses_a_spine(tmp_path):
    exp = parse(CROSS)
    res = run_experiment(exp, tmp_path, log=lambda s: None)
    (run,) = res["runs"]
    assert all(j["bytes_verified"] for j in run["jobs"])
    crossed = spine_bytes(run, exp.fabric)
    assert len(crossed) == 2 and all(n >= 1_000_000 // 2 for n in crossed.values()), crossed
    assert abs(run["prediction_error_fraction"]) < 0.1, run["prediction_error_fraction"]
    assert leftovers() == NOTHING


KINDS = {
    "leaf-spine": {"spines": 2, "leaves": 2, "hosts_per_leaf": 4, "host_link_mbps": 20,
                   "spine_link_mbps": 20},
    "fat-tree": {"topology": "fat-tree", "k": 4, "host_link_mbps": 20,
                 "fabric_link_mbps": 20},
    "clos3": {"topology": "clos3", "pods": 2, "leaves_per_pod": 2, "aggs_per_pod": 2,
              "cores_per_plane": 1, "hosts_per_leaf": 2, "host_link_mbps": 20,
              "leaf_agg_mbps": 20, "agg_core_mbps": 20},
}


def test_every_kind_runs_with_servers(tmp_path):
    """One emulated run per kind with 2-GPU servers: a ring over four servers (two channels,
    hops between servers relayed by PXN) and an all-to-all, within 10% of the model."""
    for name, fabric in KINDS.items():
        hosts = [f"h{i}" for i in range(1, 9)]
        exp = parse({**SERVERS, "name": f"itest-servers-{name}",
                     "fabric": {**fabric, "gpus_per_server": 2, "nvlink_mbps": 180},
                     "jobs": [{"name": "ring", "collective": "allreduce", "hosts": hosts,
                               "size_bytes": 1_000_000, "iterations": 2}]})
        assert exp.jobs[0].channels == 2
        res = run_experiment(exp, tmp_path / name, log=lambda s: None)
        (run,) = res["runs"]
        assert all(j["bytes_verified"] for j in run["jobs"]), name
        assert abs(run["prediction_error_fraction"]) < 0.1, (name, run["prediction_error_fraction"])
        assert leftovers() == NOTHING


def test_a_program_on_servers_is_learned_from_its_pairs_between_servers(tmp_path):
    """A 4-rank JAX ring on 2-GPU servers (gloo sends r -> r-1): its hops inside a server
    cross NVLink and never reach a leaf, so the controller learns exactly the two pairs
    between servers, places them, and the steps stay within 30% of the model's (the bound
    and its reason: test_programs_emulated)."""
    hosts = ["h1", "h2", "h5", "h6"]
    exp = parse({"name": "itest-servers-program", "seed": 1,
                 "fabric": {**KINDS["leaf-spine"], "gpus_per_server": 2, "nvlink_mbps": 100},
                 "jobs": [{"name": "jax", "hosts": hosts, "timeout_s": 300,
                           "program": ["python", "experiments/programs/jax_allreduce.py",
                                       "--sizes", "1M", "--iters", 8],
                           "env": {"OMP_NUM_THREADS": 1,
                                   "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false"}}],
                 "routing": ["greedy"], "demand": "measured", "learn_steps": 2})
    (run,) = run_experiment(exp, tmp_path, log=lambda s: None)["runs"]
    (job,) = run["jobs"]
    assert job["exit_codes"] == [0, 0, 0, 0] and job["traffic"] == "learned"
    got = {(p["src"], p["dst"]) for p in job["learned_bytes_per_step"]}
    assert got == {("h5", "h2"), ("h1", "h6")}, got
    assert abs(job["prediction_error_fraction"]) < 0.3, job["prediction_error_fraction"]
    assert leftovers() == NOTHING


def test_two_planes_each_flow_leaves_by_the_port_its_route_names(tmp_path):
    """HPN's dual plane emulated (testbed/planes.py): every host's second port on plane 2's
    rail leaves and spines, each connection sent by the port its route's plane names (a
    host rule; ECMP: the NIC's hash). Without PXN, a ring of 2 subflows per connection and an
    all-to-all cross rails through the spines: the planners put a connection's subflows on
    both ports, every byte crosses only its plane's switches, and each run is within 10% of
    the model of the same choices."""
    exp = parse({**SERVERS, "name": "itest-planes",
                 "fabric": {**SERVERS["fabric"], "servers_per_group": 4, "host_link_mbps": 10,
                            "spine_link_mbps": 10, "nvlink_mbps": 90, "planes": 2},
                 "jobs": [{"name": "ring", "collective": "allreduce", "size_bytes": 4_000_000,
                           "iterations": 2, "subflows": 2, "pxn": False,
                           "hosts": [f"h{i}" for i in range(1, 9)]},
                          {"name": "cross", "collective": "alltoall", "pxn": False,
                           "size_bytes": 1_000_000, "iterations": 2, "hosts": ["h9", "h14"]}],
                 "routing": ["ecmp", "greedy"]})
    f = exp.fabric
    res = run_experiment(exp, tmp_path, log=lambda s: None)
    for run in res["runs"]:
        assert all(j["bytes_verified"] for j in run["jobs"]), run["routing"]
        assert abs(run["prediction_error_fraction"]) < 0.1, (run["routing"],
                                                            run["prediction_error_fraction"])
        seen = {p["conn_id"]: p for p in run["paths"]}
        crossed = 0
        for p in seen.values():
            path = p["observed_path"]
            if path is None:                 # NVLink only
                continue
            plane = f.plane_of(path[0])     # (handshakes went before the host rules)
            sent = {s for s, n in (p["switch_bytes"] or {}).items() if n >= CROSSED_MIN_BYTES}
            assert all(f.plane_of(s) == plane for s in sent), p
            crossed += bool(sent)
        assert crossed >= 2, run["routing"]  # the all-to-all's two, and the ring's
    greedy = {p["conn_id"]: p for p in res["runs"][1]["paths"]}
    ring = [c for c in exp.plans()[0].connections if not f.same_server(c.src, c.dst)]
    for a, b in zip(ring[::2], ring[1::2]):  # a connection's two subflows: both ports
        planes = {f.plane_of(greedy[c.conn_id]["observed_path"][0]) for c in (a, b)}
        assert planes == {1, 2}, (a, b)
    assert leftovers() == NOTHING

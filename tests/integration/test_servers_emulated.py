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
    """At 10 Mbit/s (NVLink 90): at 20 (180) the emulator ran 10.8% over the model twice at
    load 8-10, its forwarding starved; half the packet rate keeps it within 10% under load."""
    exp = parse({**SERVERS, "fabric": {**SERVERS["fabric"], "host_link_mbps": 10,
                                       "spine_link_mbps": 10, "nvlink_mbps": 90}})
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
    host rule; ECMP: the NIC's hash), its ACKs back by the same plane (a host rule at the
    receiver). Without PXN, a ring of 2 subflows per connection and an all-to-all cross rails
    through the spines: the planners put a connection's subflows on both ports, every byte
    crosses only its plane's switches, ACKs included (the receivers' leaves count them), and
    each run is within 10% of the model of the same choices."""
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
            acks_in(p, plane, run["routing"])
        assert crossed >= 2, run["routing"]  # the all-to-all's two, and the ring's
    greedy = {p["conn_id"]: p for p in res["runs"][1]["paths"]}
    ring = [c for c in exp.plans()[0].connections if not f.same_server(c.src, c.dst)]
    for a, b in zip(ring[::2], ring[1::2]):  # a connection's two subflows: both ports
        planes = {f.plane_of(greedy[c.conn_id]["observed_path"][0]) for c in (a, b)}
        assert planes == {1, 2}, (a, b)
    assert leftovers() == NOTHING


def acks_in(p: dict, plane: int, routing: str) -> None:
    """Connection record p's ACKs entered the fabric by `plane` alone: under ECMP (its host
    rules in before the connection opens) not one byte elsewhere; placed, only what its
    handshake sent before its job's first epoch placed it."""
    acks = {int(k): n for k, n in p["ack_plane_bytes"].items()}
    assert acks.get(plane, 0) >= 1000, p
    stray = sum(n for q, n in acks.items() if q != plane)
    assert stray == 0 if routing == "ecmp" else stray < CROSSED_MIN_BYTES, p


def test_a_plane_two_spine_fails_mid_run_and_its_flows_stay_in_plane_two(tmp_path):
    """A spine of plane 2 fails mid-all-to-all (without PXN, so every flow crosses a spine):
    the ECMP groups of plane 2 drop it and greedy re-plans plane 2's flows, the switches'
    rules and the hosts' rules swapped together; every flow's bytes and ACKs stay in their
    plane, some plane-2 flow moved from the failed spine to the other, and both runs are
    within 10% of the model replaying the same event, over the whole run and after it (the
    iteration the spine fails in loses what was queued towards it, a retransmission timeout
    of 0.2-0.3 s the model has not: 10 iterations keep it under 10% of the run)."""
    exp = parse({**SERVERS, "name": "itest-planes-fail",
                 "fabric": {**SERVERS["fabric"], "servers_per_group": 4, "host_link_mbps": 10,
                            "spine_link_mbps": 10, "nvlink_mbps": 90, "planes": 2},
                 "jobs": [{"name": "cross", "collective": "alltoall", "pxn": False,
                           "size_bytes": 1_000_000, "iterations": 10,
                           "hosts": ["h1", "h6", "h11", "h16"]}],
                 "routing": ["ecmp", "greedy"],
                 "events": [{"at_s": 0.9, "fail_spine": "spine4"}]})
    f = exp.fabric
    res = run_experiment(exp, tmp_path, log=lambda s: None)
    for run in res["runs"]:
        name = run["routing"]
        assert all(j["bytes_verified"] for j in run["jobs"]), name
        assert run["unfired_events"] == [] and run["events"][0]["flows_moved"] >= 1, name
        assert abs(run["prediction_error_fraction"]) < 0.1, (name,
                                                            run["prediction_error_fraction"])
        for j in run["after_events"]["jobs"]:
            assert abs(j["prediction_error_fraction"]) < 0.1, (name, j)
        moved = 0
        for p in run["paths"]:
            sent = {s: n for s, n in (p["switch_bytes"] or {}).items() if n >= CROSSED_MIN_BYTES}
            plane = f.plane_of(p["observed_path"][0])
            assert sent and all(f.plane_of(s) == plane for s in sent), (name, p)
            acks_in(p, plane, name)
            moved += {"spine3", "spine4"} <= set(sent)
        assert moved >= 1, name
    assert leftovers() == NOTHING


def test_host_enforced_source_ports_choose_the_plane_relays_included(tmp_path):
    """greedy@host on two planes: a connection's source port says its plane (a bit above the
    spine's), which every host's two rules per plane route by (what it sends from such a
    port, and its ACKs to one, relays forwarding alike), in before any connection opens.
    Without PXN every flow crosses a spine: its bytes and ACKs touch no other plane's
    switch, not even its handshake; with PXN the relayed ACKs come back by their plane too;
    both runs within 10% of the model."""
    from routing.host_enforced import plane_of_port
    for pxn in (False, True):
        exp = parse({**SERVERS, "name": f"itest-planes-host-{int(pxn)}",
                     "fabric": {**SERVERS["fabric"], "servers_per_group": 4,
                                "host_link_mbps": 10, "spine_link_mbps": 10, "nvlink_mbps": 90,
                                "planes": 2},
                     "jobs": [{"name": "cross", "collective": "alltoall", "pxn": pxn,
                               "size_bytes": 1_000_000, "iterations": 3,
                               "hosts": ["h1", "h6", "h11", "h16"]}],
                     "routing": ["greedy@host"]})
        f = exp.fabric
        (run,) = run_experiment(exp, tmp_path / str(pxn), log=lambda s: None)["runs"]
        assert all(j["bytes_verified"] for j in run["jobs"]), pxn
        assert abs(run["prediction_error_fraction"]) < 0.1, (pxn,
                                                            run["prediction_error_fraction"])
        planes = set()
        for p in run["paths"]:
            plane = plane_of_port(f, p["src_port"])
            planes.add(plane)
            assert [f.plane_of(q[0]) for q in p["planned_paths"]] == [plane], p
            acks = {int(k): n for k, n in p["ack_plane_bytes"].items()}
            assert set(acks) == {plane} and acks[plane] >= 1000, p
            if not pxn:
                assert p["switch_bytes"] and {f.plane_of(s) for s in p["switch_bytes"]} == {
                    plane}, p
        assert planes == {1, 2}, pxn
    assert leftovers() == NOTHING


def test_demand_learned_on_two_planes_is_counted_in_both_and_placed_in_both(tmp_path):
    """demand: measured on two planes (without PXN): each host pair is counted at its
    destination's leaf in every plane, so what it delivered is learned whichever port it
    took (within 5% of what the DAG declares); greedy then places the pairs over both
    planes (host rules per pair), and the steps after the plan are within 10% of the model
    of that plan."""
    exp = parse({**SERVERS, "name": "itest-planes-learned",
                 "fabric": {**SERVERS["fabric"], "servers_per_group": 4, "host_link_mbps": 10,
                            "spine_link_mbps": 10, "nvlink_mbps": 90, "planes": 2},
                 "jobs": [{"name": "cross", "collective": "alltoall", "pxn": False,
                           "size_bytes": 1_000_000, "iterations": 6,
                           "hosts": ["h1", "h6", "h11", "h16"]}],
                 "routing": ["greedy"], "demand": "measured", "learn_steps": 2})
    f = exp.fabric
    (run,) = run_experiment(exp, tmp_path, log=lambda s: None)["runs"]
    (job,) = run["jobs"]
    assert job["bytes_verified"] and job["planned_at_s"] is not None
    assert len(job["learned_bytes_per_step"]) == 12
    for p in job["learned_bytes_per_step"]:
        assert abs(p["bytes"] / p["declared_bytes"] - 1) < 0.05, p
    assert abs(job["prediction_error_fraction"]) < 0.1, job["prediction_error_fraction"]
    moved = [p for p in run["paths"]
             if any(f.plane_of(s) == 2 and n >= CROSSED_MIN_BYTES
                    for s, n in (p["switch_bytes"] or {}).items())]
    assert moved, run["paths"]
    for p in moved:       # hashed on plane 1 while learning, then on plane 2 both ways
        assert int(p["ack_plane_bytes"].get("2", 0)) >= 1000, p
    assert leftovers() == NOTHING

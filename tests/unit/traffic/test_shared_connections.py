"""semantics.connections: stream: the collectives of one stream (an importer's communicator)
with the same groups send on the connections its first one opened, as NCCL's do; and the
memory estimate's streams (one job of a stream in flight at a time)."""
from __future__ import annotations

from pathlib import Path

import pytest

from experiments.config import ConfigError, parse
from experiments.config.jobs import _InFlight, predict_bytes, predict_size
from experiments.predict import predict_experiment
from experiments.config.limits import (BYTES_HELD_PER_TRANSFER, BYTES_PER_CONNECTION,
                                       BYTES_PER_TRANSFER)
from experiments.runner import check_emulable
from routing import route
from testbed.fabric import FabricSpec, build_fabric
from traffic import simai_passes
from traffic.collectives import Collective, JobSpec, plan_jobs, unique_connections
from traffic.predictor import ideal, predict
from traffic.streams import Notes

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "simai"
RATE = 100.0


def fab(leaves=2, hosts=4, spines=2):
    return build_fabric(FabricSpec(spines=spines, leaves=leaves, hosts_per_leaf=hosts,
                                   host_link_mbps=RATE, spine_link_mbps=RATE))


def stream_jobs(stream="dp"):
    """Two all-reduces and an all-to-all queued on one stream, then an all-reduce on
    another stream over the same hosts."""
    g = [["h1", "h5", "h2", "h6"]]
    a = JobSpec("a", Collective.ALLREDUCE, g, 4_000_000, stream=stream)
    b = JobSpec("b", Collective.ALLREDUCE, g, 8_000_000, after=(("a", 0.0),), stream=stream)
    c = JobSpec("c", Collective.ALLTOALL, g, 4_000_000, after=(("b", 0.0),), stream=stream)
    d = JobSpec("d", Collective.ALLREDUCE, g, 4_000_000, after=(("c", 0.0),), stream="tp")
    return [a, b, c, d]


def test_a_streams_collectives_on_the_same_groups_share_their_connections():
    own, shared = plan_jobs(stream_jobs()), plan_jobs(stream_jobs(), connections="stream")
    a, b, c, d = shared
    assert b.connections is a.connections                 # the same all-reduce ring
    assert c.connections is not a.connections             # all-to-all: its own pattern
    assert d.connections is not a.connections             # another stream
    ids = {x.conn_id for x in a.connections}
    assert {t.conn_id for t in b.transfers} == ids
    assert len(unique_connections(shared)) == 4 + 12 + 4
    assert len(unique_connections(own)) == 4 + 4 + 12 + 4
    # the same transfers otherwise: sizes, steps, dependencies
    for p, q in zip(own, shared):
        assert [(t.tid, t.size_bytes, t.step, t.deps) for t in p.transfers] == \
               [(t.tid, t.size_bytes, t.step, t.deps) for t in q.transfers]


def test_jobs_on_no_stream_never_share():
    plans = plan_jobs(stream_jobs(stream=""), connections="stream")
    assert len(unique_connections(plans)) == 4 + 4 + 12 + 4


@pytest.mark.parametrize("mode", ["job", "stream"])
def test_shared_connections_give_the_same_ccts_when_routes_agree(mode):
    """Queued on a stream, the jobs never overlap: on the non-blocking reference, and on one
    spine, the CCTs do not depend on whose connections carry the bytes."""
    f = fab(spines=1)
    base = plan_jobs(stream_jobs())
    plans = plan_jobs(stream_jobs(), connections=mode)
    spine = {c.conn_id: "spine1" for c in unique_connections(plans)}
    want = predict(f, base, {c.conn_id: "spine1" for c in unique_connections(base)})
    got = predict(f, plans, spine)
    assert got.cct_s() == want.cct_s()
    assert ideal(f, plans).cct_s() == ideal(f, base).cct_s()


def test_ecmp_hashes_a_shared_connection_once_for_all_its_collectives():
    f = fab()
    plans = plan_jobs(stream_jobs(), connections="stream")
    conns = unique_connections(plans)
    rp = route("ecmp", f, conns, seed=1)
    assert set(rp.path_of) == {c.conn_id for c in conns}
    pred = predict(f, plans, rp.path_of)
    assert set(pred.jobs) == {"a", "b", "c", "d"}
    rates = dict(zip(*(x.tolist() for x in pred.jobs["b"].conn_rates())))
    assert set(rates) == {c.conn_id for c in plans[0].connections}


def test_counts_before_planning_match_the_plans():
    """predict_size counts a shared connection once, as plan_jobs makes it."""
    hosts = [f"h{i}" for i in range(1, 65)]
    for path in sorted((FIX / "aicb").glob("*.txt")) + [FIX / "tp2-dp4.txt"]:
        gpus = None if "all_gpus" in path.read_text().splitlines()[0] else 16   # the header's
        specs = simai_passes.job_specs(path, hosts, RATE, gpus, 1, Notes("simai", "cycles"))
        for mode in ("job", "stream"):
            for sync in ("rank", "flow"):
                plans = plan_jobs(specs, sync, mode)
                conns, transfers, _ = predict_size(specs, sync, mode)
                assert conns == len(unique_connections(plans)), (path.name, mode)
                assert transfers == sum(len(p.transfers) for p in plans)


def test_equal_jobs_on_a_stream_hold_the_plan_of_the_second_and_the_estimate_knows():
    """plan_jobs: from the third job equal on a stream's connections on, a job holds the
    second's Transfers; the memory estimate counts the held transfers of the first two."""
    hosts = [f"h{i}" for i in range(1, 9)]
    specs = [JobSpec(f"j{k}", Collective.ALLREDUCE, [hosts], 1 << 20, stream="dp")
             for k in range(5)]
    plans = plan_jobs(specs, "rank", "stream")
    assert all(p.transfers is plans[1].transfers for p in plans[2:])
    assert plans[1].transfers is not plans[0].transfers
    conns, transfers, need = predict_size(specs, "rank", "stream")
    t = len(plans[0].transfers)
    assert transfers == 5 * t
    every = 5 * t                               # small: every DAG at once (_InFlight)
    assert need == predict_bytes(every, conns, every, held=2 * t) < predict_bytes(every, conns)


def test_in_flight_counts_one_job_per_stream_and_every_job_on_none():
    big = 2_000_000
    f = _InFlight()
    assert f.add(JobSpec("a", Collective.ALLREDUCE, [], 0, stream="dp"), big) == big
    assert f.add(JobSpec("b", Collective.ALLREDUCE, [], 0, stream="dp"), big // 2) == big
    assert f.add(JobSpec("c", Collective.ALLREDUCE, [], 0, stream="tp"), 10) == big + 10
    assert f.add(JobSpec("d", Collective.ALLREDUCE, [], 0), 7) == big + 17
    assert f.add(JobSpec("e", Collective.ALLREDUCE, [], 0, stream="dp"), 3 * big) == \
        3 * big + 17
    small = _InFlight()                         # below LAZY_TRANSFERS: every DAG at once
    assert small.add(JobSpec("a", Collective.ALLREDUCE, [], 0, stream="dp"), 10) == 10
    assert small.add(JobSpec("b", Collective.ALLREDUCE, [], 0, stream="dp"), 5) == 15
    assert predict_bytes(100, 3) == 100 * BYTES_PER_TRANSFER + 3 * BYTES_PER_CONNECTION
    assert predict_bytes(100, 3, 40) == (100 * BYTES_HELD_PER_TRANSFER
                                         + 40 * (BYTES_PER_TRANSFER - BYTES_HELD_PER_TRANSFER)
                                         + 3 * BYTES_PER_CONNECTION)


def _doc(routing, connections="stream"):
    return {"name": "s", "routing": routing,
            "jobs_from": {"simai": str(FIX / "aicb" / "all_reduce.txt"), "all_gpus": 8},
            "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 4, "host_link_mbps": 100,
                       "spine_link_mbps": 100},
            "semantics": {"connections": connections}}


def test_config_takes_stream_with_routings_planned_once(tmp_path):
    routing = ["ecmp", "nonblocking", "spray@packet", "greedy@host"]
    exp = parse(_doc(routing))
    assert exp.semantics.connections == "stream"
    assert exp.resolved()["semantics"]["connections"] == "stream"
    assert parse(exp.resolved()).semantics == exp.semantics      # loads again
    plans = exp.plans()
    assert len(unique_connections(plans)) < sum(len(p.connections) for p in plans)
    res = predict_experiment(exp, tmp_path, log=lambda _line: None)
    assert [r["routing"] for r in res["runs"]] == routing
    for run in res["runs"]:
        assert len(run["jobs"]) == len(plans)
        assert all(j["cct_mean_s"] > 0 for j in run["jobs"])


@pytest.mark.parametrize("routing", [["greedy"], ["ecmp", "mmf"], ["spray"]])
def test_config_refuses_stream_with_a_strategy_placing_flows_per_epoch(routing):
    with pytest.raises(ConfigError) as e:
        parse(_doc(routing))
    assert str(e.value).startswith("semantics.connections: stream takes routings planned once")
    assert "\n" not in str(e.value)


def test_config_refuses_an_unknown_connections_value():
    with pytest.raises(ConfigError) as e:
        parse(_doc(["ecmp"], "pooled"))
    assert "semantics.connections" in str(e.value)


def test_run_refuses_stream():
    with pytest.raises(ConfigError) as e:
        check_emulable(parse(_doc(["ecmp"])))
    assert str(e.value).startswith("semantics.connections:")


def test_importers_name_each_collectives_stream():
    """SimAI: the group kind; Chakra: the process group (its sends are on none)."""
    from traffic.chakra import read_traces
    from traffic.chakra_jobs import job_specs as chakra_specs
    hosts = [f"h{i}" for i in range(1, 9)]
    specs = simai_passes.job_specs(FIX / "tp2-dp4.txt", hosts, RATE, 8, 1,
                                   Notes("simai", "cycles"))
    assert specs and {s.stream for s in specs} <= {"TP", "DP", "EP", "DP_EP", "PP"}
    assert len({s.stream for s in specs}) > 1
    trace = FIX.parent / "chakra" / "allreduce4"
    streams = {s.name: s.stream for s in chakra_specs(
        read_traces(trace), hosts, RATE, {"pair": [0, 1], "pair2": [2, 3]})}
    assert streams == {"r0n2-allreduce": "pg ", "r0n4-allgather": "pg pair",
                       "r2n4-allgather": "pg pair2", "r0n5-send": ""}

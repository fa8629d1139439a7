"""Scale bounds: the source-port bound is `run`'s (one TCP source port per connection), not
`predict`'s; the transfer bound is the predictor's, counted before anything is planned."""
from __future__ import annotations

import numpy as np
import pytest

from experiments.config import ConfigError, parse
from experiments.config.limits import SOURCE_PORT_SPAN
from experiments.runner import check_emulable

#: 4 leaves x 40 hosts: an all-to-all over all 160 hosts opens 160 x 159 = 25,440 connections,
#: more than the 22,768 source ports runs may use
BIG_A2A = {"name": "a2a", "routing": ["ecmp"],
           "fabric": {"spines": 2, "leaves": 4, "hosts_per_leaf": 40,
                      "host_link_mbps": 100, "spine_link_mbps": 100},
           "jobs": [{"name": "x", "collective": "alltoall",
                     "hosts": [f"h{i}" for i in range(1, 161)], "size_bytes": 160 * 1000}]}


def test_more_connections_than_source_ports_parse_for_predict_and_are_refused_by_run():
    exp = parse(BIG_A2A)
    conns = sum(len(p.connections) for p in exp.plans())
    assert conns == 160 * 159 > SOURCE_PORT_SPAN // 2
    with pytest.raises(ConfigError, match=r"^routing: 1 routings x 25440 connections exceed "
                                          r"the 22768 source ports .*`predict` has no such"):
        check_emulable(exp)


def test_repetitions_of_a_prediction_shift_ports_past_the_emulation_bound():
    """predict --repeat: each repetition shifts every source port (ECMP's hash); the model
    needs no room between runs, and 5-tuples stay unique."""
    from traffic.collectives import with_port_offset
    plans = parse(BIG_A2A).plans()
    shifted = with_port_offset(plans, 12_345, emulated=False)
    ports = [c.src_port for p in shifted for c in p.connections]
    assert ports[0] == 20_000 + 12_345 and max(ports) <= 65_535
    keys = {(c.src, c.dst, c.src_port, c.dst_port) for p in shifted for c in p.connections}
    assert len(keys) == len(ports)
    with pytest.raises(ValueError, match="leave no room to shift source ports"):
        with_port_offset(plans, 12_345)


# -- lazy planning: each job's DAG built when it starts, dropped after its last iteration --
def _mixed_workload():
    """Streams (gaps, several predecessors), iterations with compute, rings, all-to-alls,
    a pipeline and adaptive subflows, overlapping on a 2-spine fabric."""
    from traffic.collectives import Collective, JobSpec
    ring = ["h1", "h3", "h5", "h7"]
    return [
        JobSpec("a", Collective.ALLREDUCE, [ring, ["h2", "h4", "h6", "h8"]], 4_000_000,
                iterations=2, compute_s=0.01),
        JobSpec("b", Collective.ALLTOALL, [["h1", "h2", "h5", "h6"]], 3_000_000,
                after=(("a", 0.002),)),
        JobSpec("c", Collective.ALLGATHER, [["h3", "h8"]], 2_000_000, start_s=0.05),
        JobSpec("d", Collective.REDUCE_SCATTER, [ring], 1_000_003,
                after=(("b", 0.0), ("c", 0.01)), subflows=2, split="adaptive",
                split_piece_bytes=16_384),
        JobSpec("e", Collective.PIPELINE, [["h2", "h7", "h4"]], 500_000, iterations=3,
                after=(("c", 0.0),)),
    ]


def _ecmp_like(plans):
    return {c.conn_id: f"spine{1 + c.conn_id % 2}" for p in plans for c in p.connections}


@pytest.mark.parametrize("sem", ["ours", "step-tail"])
@pytest.mark.parametrize("spare", [0, 1024])
def test_a_lazily_planned_workload_predicts_what_the_eager_one_does(sem, spare, monkeypatch):
    """spare 0: the Dag is built whole again at every job start; 1,024: jobs appended."""
    from traffic import predictor_dag
    monkeypatch.setattr(predictor_dag, "SPARE_MIN", spare)
    from testbed.fabric import FabricSpec, build_fabric
    from traffic.collectives import plan_jobs
    from traffic.predictor import ideal, predict
    from traffic.prediction import Semantics
    fab = build_fabric(FabricSpec(2, 4, 2, 100.0, 100.0))
    plans = plan_jobs(_mixed_workload())
    semantics = Semantics() if sem == "ours" else Semantics(ring_sync="step", tail_step=True)
    runs = [predict(fab, plans, _ecmp_like(plans), semantics=semantics, lazy=lazy,
                    util_bin_s=0.01) for lazy in (False, True)]
    runs += [ideal(fab, plans, semantics=semantics, lazy=lazy) for lazy in (False, True)]
    for eager, lazy in (runs[:2], runs[2:]):
        assert lazy.makespan_s == eager.makespan_s and lazy.completions == eager.completions
        assert eager.completions > 100
        for name, e in eager.jobs.items():
            z = lazy.jobs[name]
            assert (z.cct_s, z.iteration_start_s, z.iteration_end_s) == (
                e.cct_s, e.iteration_start_s, e.iteration_end_s)
            for key in ("transfer_bytes", "transfer_conn", "fct_mean_s", "fct_max_s"):
                assert np.array_equal(getattr(z, key), getattr(e, key)), (name, key)
        assert np.array_equal(lazy.link_mean_util, eager.link_mean_util)
        assert np.array_equal(lazy.link_max_util, eager.link_max_util)
    assert np.array_equal(runs[1].link_util_series, runs[0].link_util_series)
    # overlapping jobs contended: the run is not trivially each job alone
    assert runs[0].jobs["a"].cct_s != runs[2].jobs["a"].cct_s


def test_a_lazy_run_holds_only_the_dags_of_jobs_in_flight():
    """Ten all-reduces queued on one stream: at any time one job's DAG is held."""
    from testbed.fabric import FabricSpec, build_fabric
    from traffic.collectives import Collective, JobSpec, plan_jobs
    from traffic.predictor import _Simulation
    from traffic.prediction import OURS
    specs = [JobSpec(f"j{i}", Collective.ALLREDUCE, [["h1", "h2", "h3", "h4"]], 40_000,
                     after=((f"j{i - 1}", 0.0),) if i else ()) for i in range(10)]
    plans = plan_jobs(specs)
    sim = _Simulation(build_fabric(FabricSpec(1, 4, 1, 100.0, 100.0)), plans,
                      {c.conn_id: "spine1" for p in plans for c in p.connections}, 1.0,
                      False, 1e-9, None, False, None, OURS, lazy=True)
    held = []
    while sim.step():
        held.append(sim.dag.held)
    assert max(held) == 24 and held[-1] == 0          # one 4-rank ring: 2 x 3 x 4 transfers
    assert [len(j.cct_s) for j in sim.result().jobs.values()] == [1] * 10


def test_a_workload_past_the_machines_memory_is_refused_in_one_line(tmp_path, capsys):
    """One all-reduce over all 9,216 NICs of a clos3: 2 x 9,215 x 9,216 = 170 M transfers,
    more than MAX_PREDICT_BYTES carries; `validate` exits 2 with one line naming the job, the
    bound and the estimate, before anything is planned."""
    import yaml

    from experiments.__main__ import main
    from experiments.config.jobs import predict_bytes
    from experiments.config.limits import MAX_PREDICT_BYTES
    fabric = {"topology": "clos3", "pods": 12, "leaves_per_pod": 12, "aggs_per_pod": 4,
              "cores_per_plane": 4, "hosts_per_leaf": 64, "host_link_mbps": 100,
              "leaf_agg_mbps": 100, "agg_core_mbps": 100}
    doc = {"name": "big", "routing": ["ecmp"], "fabric": fabric,
           "jobs": [{"name": "small", "collective": "allreduce", "hosts": ["h1", "h2"],
                     "size_bytes": 1000},
                    {"name": "dp", "collective": "allreduce",
                     "hosts": [f"h{i}" for i in range(3, 9217)], "size_bytes": 10 ** 9}]}
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump(doc))
    code = main(["validate", str(path)])
    out, err = capsys.readouterr()
    transfers = 2 * 1 * 2 + 2 * 9213 * 9214
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert predict_bytes(transfers, 2 + 9214) > MAX_PREDICT_BYTES
    assert err.startswith(f"error: jobs[1]: passes the {MAX_PREDICT_BYTES >> 30} GiB a "
                          "prediction may take on this machine (the jobs send "
                          f"{transfers:,} transfers per iteration over 9,216 connections, ~"), err
    assert err.rstrip().endswith("use fewer or smaller groups")


def test_past_max_fct_rows_the_fcts_are_summarized_per_job(tmp_path, monkeypatch):
    """A prediction with more transfers than MAX_FCT_ROWS writes fct_jobs.csv (a row per job:
    its transfers' bytes and FCT statistics) instead of fct.csv; below it, fct.csv."""
    import csv

    from experiments import predict as pr
    exp = parse({"name": "s", "routing": ["ecmp"],
                 "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 3,
                            "host_link_mbps": 100, "spine_link_mbps": 100},
                 "jobs": [{"name": "a", "collective": "allreduce",
                           "hosts": ["h1", "h2", "h4", "h5"], "size_bytes": 4_000_000},
                          {"name": "b", "collective": "alltoall", "hosts": ["h3", "h6"],
                           "size_bytes": 2_000_000}]})
    pr.predict_experiment(exp, tmp_path / "small", log=lambda s: None)
    rows = list(csv.DictReader((tmp_path / "small" / "ecmp" / "fct.csv").open()))
    assert len(rows) == 24 + 2
    monkeypatch.setattr(pr, "MAX_FCT_ROWS", 25)
    pr.predict_experiment(exp, tmp_path / "big", log=lambda s: None)
    assert not (tmp_path / "big" / "ecmp" / "fct.csv").exists()
    jobs = list(csv.DictReader((tmp_path / "big" / "ecmp" / "fct_jobs.csv").open()))
    assert [(r["job"], r["transfers"], r["size_bytes"]) for r in jobs] == [
        ("a", "24", str(24 * 1_000_000)), ("b", "2", "2000000")]
    a = [float(r["fct_mean_s"]) for r in rows if r["job"] == "a"]
    assert float(jobs[0]["fct_mean_s"]) == pytest.approx(sum(a) / len(a), rel=1e-6)
    assert float(jobs[0]["fct_max_s"]) == pytest.approx(
        max(float(r["fct_max_s"]) for r in rows if r["job"] == "a"), rel=1e-6)


def _rowwise(fab, plans, spine_of, nonblocking, allow_unrouted=False):
    """conn_links's reference: conn_row per connection, in order."""
    from traffic import predictor_rows as predictor
    conns = [c for p in plans for c in p.connections]
    rows, row_of = [], {}
    for r, c in enumerate(conns):
        if c.conn_id in row_of:
            raise predictor.PredictorError(f"connection id {c.conn_id} appears twice")
        row_of[c.conn_id] = r
        rows.append(predictor.conn_row(fab, c, (spine_of or {}).get(c.conn_id),
                                       predictor.path_width(fab), nonblocking, allow_unrouted))
    return np.array(rows, dtype=np.int64).reshape(len(rows), -1), row_of


def _error(fn):
    from traffic.predictor import PredictorError
    try:
        fn()
    except PredictorError as e:
        return str(e)
    return None


@pytest.mark.parametrize("kind", ["leaf-spine", "clos3"])
def test_connection_rows_are_each_connections_own_row(kind):
    """conn_links (rows per distinct leaf pair and route) against conn_row per connection:
    the same table and rows, routed by spine names or switch paths, some unrouted, same-leaf
    and nonblocking rows; and the same error, naming the first bad connection in row order
    (a failed route, an unknown host, no route, a repeated id)."""
    import dataclasses
    import random

    from routing import route
    from testbed.fabric import FabricSpec, build_fabric
    from traffic.collectives import plan_jobs
    fab = build_fabric(FabricSpec(2, 4, 2, 100.0, 100.0) if kind == "leaf-spine" else
                       FabricSpec(topology="clos3", pods=2, leaves_per_pod=2, aggs_per_pod=2,
                                  cores_per_plane=2, hosts_per_leaf=2, host_link_mbps=100,
                                  leaf_agg_mbps=100, agg_core_mbps=100))
    plans = plan_jobs(_mixed_workload())
    conns = [c for p in plans for c in p.connections]
    spines = route("ecmp", fab, conns, seed=3).path_of
    rng = random.Random(7)
    some = {c: s for c, s in spines.items() if rng.random() < 0.7}
    from traffic import predictor_rows as predictor
    for routes, nb, allow in ((spines, False, False), (some, False, True), (None, True, False),
                              (_ecmp_like(plans) if kind == "leaf-spine" else spines,
                               False, False)):
        want = _rowwise(fab, plans, routes, nb, allow)
        got = predictor.conn_links(fab, plans, routes, nb, allow)
        assert np.array_equal(got[0], want[0]) and got[1] == want[1]
    # errors: the first bad connection in row order wins, with conn_row's message
    cross = [c.conn_id for c in conns if fab.leaf_of(c.src) != fab.leaf_of(c.dst)]
    bad = dict(spines)
    bad[cross[5]] = ("leaf1", "nowhere", "leaf2")
    del bad[cross[9]]
    moved = [dataclasses.replace(p, connections=[
        dataclasses.replace(c, dst="h999") if c.conn_id == cross[7] else c
        for c in p.connections]) for p in plans]
    twice = [dataclasses.replace(plans[0], connections=plans[0].connections
                                 + plans[0].connections[:1])] + plans[1:]
    for ps, routes in ((plans, bad), (moved, spines), (plans, {k: v for k, v in bad.items()
                                                               if k != cross[5]}),
                       (twice, spines), (twice, bad)):
        want = _error(lambda: _rowwise(fab, ps, routes, False))
        assert want is not None
        assert _error(lambda: predictor.conn_links(fab, ps, routes, False)) == want


def test_predict_command_past_lazy_transfers_writes_the_same_results(tmp_path, monkeypatch):
    """The whole `predict` path (ideal, ECMP, CSVs, results.json) with every job lazy (the
    auto switch at LAZY_TRANSFERS) writes what the eager run writes, byte for byte but the
    wall-clock figures."""
    import json

    from experiments import predict as pr
    from traffic import predictor
    doc = {"name": "s", "routing": ["ecmp", "nonblocking"],
           "fabric": {"spines": 2, "leaves": 4, "hosts_per_leaf": 2,
                      "host_link_mbps": 100, "spine_link_mbps": 100},
           "jobs": [{"name": "a", "collective": "allreduce", "hosts": ["h1", "h3", "h5", "h7"],
                     "size_bytes": 4_000_000, "iterations": 2, "compute_s": 0.01},
                    {"name": "b", "collective": "alltoall", "hosts": ["h2", "h4", "h6", "h8"],
                     "size_bytes": 3_000_000, "start_s": 0.02}]}

    def run(out):
        pr.predict_experiment(parse(doc), out, log=lambda s: None)
        res = json.loads((out / "results.json").read_text())
        for run in res["runs"]:
            run.pop("predict_wall_s", None)
            run["solve"].pop("time_s", None)
            run["solve"].pop("time_s_max", None)
        return res, (out / "ecmp" / "fct.csv").read_bytes(), (out / "ecmp" / "links.csv"
                                                               ).read_bytes()
    eager = run(tmp_path / "eager")
    monkeypatch.setattr(predictor, "LAZY_TRANSFERS", 10)
    calls = []
    real = predictor._Simulation.__init__

    def spy(self, *a, **k):
        calls.append(k.get("lazy", a[-1] if len(a) > 11 else None))
        real(self, *a, **k)
    monkeypatch.setattr(predictor._Simulation, "__init__", spy)
    assert run(tmp_path / "lazy") == eager
    assert calls and all(calls)

"""Solo jobs replayed (traffic/predictor_replay.py) and equal jobs planned once
(traffic/collectives.plan_jobs): the same results as simulating every run, up to float
rounding of the clock."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from testbed.fabric import FabricSpec, build_fabric
from traffic import collectives, predictor
from traffic.collectives import Collective, JobSpec, plan_jobs
from traffic.predictor import ideal, predict

A = ["h1", "h3", "h5", "h7"]
B = ["h2", "h4", "h6", "h8"]


def _stream() -> list[JobSpec]:
    """A stream of repeated all-to-alls and all-gathers (equal jobs on shared connections),
    each after the one before; job "x" starts on its own at 0.05 s and overlaps some."""
    kinds = [(Collective.ALLTOALL, [A, B], 3_000_000), (Collective.ALLGATHER, [A], 2_000_000)]
    specs, prev = [], None
    for k in range(8):
        coll, groups, size = kinds[k % 2]
        after = ((prev, 0.001 * (k % 3)),) if prev else ()
        specs.append(JobSpec(f"s{k}", coll, groups, size, after=after, stream="TP"))
        prev = specs[-1].name
    specs.append(JobSpec("x", Collective.ALLREDUCE, [["h1", "h2", "h8"]], 1_500_000,
                         start_s=0.05))
    return specs


def _runs(fab, plans, replay: bool, monkeypatch):
    monkeypatch.setattr(predictor, "REPLAY", replay)
    spine_of = {c.conn_id: f"spine{1 + c.conn_id % 2}" for p in plans for c in p.connections}
    return (predict(fab, plans, spine_of, lazy=True), ideal(fab, plans, lazy=True))


def test_equal_jobs_on_a_stream_hold_one_plan_equal_to_their_own():
    specs = _stream()
    plans = plan_jobs(specs, connections="stream")
    assert plans[2].transfers is plans[4].transfers is plans[6].transfers
    assert plans[3].transfers is plans[5].transfers
    assert [p.name for p in plans] == [s.name for s in specs]
    assert plans[4].spec is specs[4] and plans[4].index == 4
    alone = iter(itertools.count())
    real = collectives.plan_key
    try:                                   # every job its own key: planned one by one
        collectives.plan_key = lambda spec: (real(spec), next(alone))
        each = plan_jobs(specs, connections="stream")
    finally:
        collectives.plan_key = real
    assert each[4].transfers is not each[2].transfers
    for p, q in zip(plans, each):
        assert list(p.transfers) == list(q.transfers)
        assert p.connections == q.connections


@pytest.mark.parametrize("which", [0, 1])
def test_replayed_solo_jobs_predict_what_simulated_ones_do(which, monkeypatch):
    fab = build_fabric(FabricSpec(2, 4, 2, 100.0, 100.0))
    plans = plan_jobs(_stream(), connections="stream")
    fast = _runs(fab, plans, True, monkeypatch)[which]
    slow = _runs(fab, plans, False, monkeypatch)[which]
    assert fast.stats["replayed_jobs"] >= 2 and slow.stats["replayed_jobs"] == 0
    assert fast.completions == slow.completions > 100
    assert fast.event_batches == slow.event_batches
    assert fast.makespan_s == pytest.approx(slow.makespan_s, rel=1e-12, abs=0)
    for name, s in slow.jobs.items():
        f = fast.jobs[name]
        for key in ("cct_s", "iteration_start_s", "iteration_end_s"):
            assert np.allclose(getattr(f, key), getattr(s, key), rtol=1e-12, atol=1e-15)
        for key in ("fct_mean_s", "fct_max_s"):
            assert np.allclose(getattr(f, key), getattr(s, key), rtol=1e-9, atol=1e-15)
        assert np.array_equal(f.transfer_bytes, s.transfer_bytes)
    assert np.allclose(fast.link_mean_util, slow.link_mean_util, rtol=1e-12, atol=1e-15)
    assert np.array_equal(fast.link_max_util, slow.link_max_util)
    # "x" overlapped the stream: the jobs it met were simulated, and they contended
    assert fast.jobs["x"].cct_s == pytest.approx(slow.jobs["x"].cct_s, rel=1e-12)


def test_no_replay_with_a_router_that_may_move_routes(monkeypatch):
    """A router without fixed_routes (a planner's epochs): every run simulated."""
    fab = build_fabric(FabricSpec(2, 4, 2, 100.0, 100.0))
    plans = plan_jobs(_stream(), connections="stream")
    spine_of = {c.conn_id: "spine1" for p in plans for c in p.connections}

    class Moving:
        def jobs_started(self, jobs, t):
            return spine_of

        def job_finished(self, job, t):
            return spine_of

        def event_times(self):
            return []

    pred = predict(fab, plans, spine_of, lazy=True, router=Moving())
    assert pred.stats["replayed_jobs"] == 0
    Moving.fixed_routes = True
    assert predict(fab, plans, spine_of, lazy=True, router=Moving()).stats[
        "replayed_jobs"] >= 2

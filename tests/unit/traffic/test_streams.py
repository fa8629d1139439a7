"""Streams: collectives queued on one communicator run one after another (JobSpec.after), in
the predictor and in the emulator's driver, against hand calculations."""
from __future__ import annotations

import pytest

from testbed.fabric import FabricSpec, build_fabric
from traffic.collectives import (P2P, Collective, JobSpec, WorkloadError, ideal_cct_s,
                                 ideal_schedule, plan_jobs)
from traffic.predictor import ideal, predict

B = 100.0                       # Mbit/s host links
RING = ["h1", "h2", "h3", "h4"]


def fabric():
    return build_fabric(FabricSpec(1, 4, 1, B, 1000.0))


def routes(plans):
    return {c.conn_id: "spine1" for p in plans for c in p.connections}


def run(specs):
    plans = plan_jobs(specs)
    return predict(fabric(), plans, routes(plans))


def test_two_allreduces_on_one_group_run_back_to_back_not_shared():
    """Queued: the second starts when the first ends, each at its ideal (4 MB ring: 6 steps of
    1 MB at 100 Mbit/s = 0.48 s). Unqueued, they share every link: both end at 0.96 s."""
    a = JobSpec("a", Collective.ALLREDUCE, [RING], 4_000_000)
    b = JobSpec("b", Collective.ALLREDUCE, [RING], 4_000_000, after=(("a", 0.0),))
    t = ideal_cct_s(a, B)
    assert t == pytest.approx(0.48)
    p = run([a, b])
    assert p.jobs["a"].cct_s[0] == pytest.approx(t, rel=1e-6)
    assert p.jobs["b"].iteration_start_s[0] == pytest.approx(t, rel=1e-6)
    assert p.jobs["b"].cct_s[0] == pytest.approx(t, rel=1e-6)
    shared = run([a, JobSpec("b", Collective.ALLREDUCE, [RING], 4_000_000)])
    assert shared.jobs["a"].cct_s[0] == pytest.approx(2 * t, rel=1e-6)


def test_gap_start_and_several_predecessors():
    """c waits for a (+0.1 s) and for b (+0.0 s), and not before its own start_s."""
    a = JobSpec("a", Collective.ALLGATHER, [["h1", "h2"]], 1_000_000)            # 0.04 s
    b = JobSpec("b", Collective.ALLGATHER, [["h3", "h4"]], 2_000_000)            # 0.08 s
    c = JobSpec("c", Collective.ALLREDUCE, [RING], 4_000_000, start_s=0.05,
                after=(("a", 0.1), ("b", 0.0)))
    p = run([a, b, c])
    assert p.jobs["c"].iteration_start_s[0] == pytest.approx(0.14, rel=1e-6)
    sched = ideal_schedule([a, b, c], B)
    assert sched["c"] == pytest.approx((0.14, 0.14 + 0.48))
    assert ideal(fabric(), plan_jobs([a, b, c])).jobs["c"].iteration_start_s[0] == \
        pytest.approx(0.14, rel=1e-6)


def test_unknown_job_and_cycle_are_refused():
    a = JobSpec("a", Collective.ALLREDUCE, [RING], 4_000, after=(("zz", 0.0),))
    with pytest.raises(WorkloadError, match="no job named 'zz'"):
        plan_jobs([a])
    a = JobSpec("a", Collective.ALLREDUCE, [RING], 4_000, after=(("b", 0.0),))
    b = JobSpec("b", Collective.ALLREDUCE, [RING], 4_000, after=(("a", 0.0),))
    with pytest.raises(WorkloadError, match="waits for itself"):
        plan_jobs([a, b])


def test_custom_collective_is_one_job_of_its_given_transfers():
    """A ring of sends, each after the one it receives: 2 laps of 4 hops of 1 MB, one after
    another = 8 x 0.08 s; one connection per pair."""
    hops = tuple(P2P(RING[i % 4], RING[(i + 1) % 4], 1_000_000, (i - 1,) if i else ())
                 for i in range(8))
    spec = JobSpec("ring", Collective.CUSTOM, [RING], 2_000_000, p2p=hops)
    plan, = plan_jobs([spec])
    assert len(plan.connections) == 4 and len(plan.transfers) == 8
    assert ideal_cct_s(spec, B) == pytest.approx(0.64)
    assert run([spec]).jobs["ring"].cct_s[0] == pytest.approx(0.64, rel=1e-6)

"""Ring semantics: NCCL's per-rank chaining (ring_sync="rank", ours) against floodns's
synchronous steps (ring_sync="step") and rings as one flow per hop (ring_sync="flow"),
floodns's per-iteration recomputation and tail step.

Unit of time u = one chunk at the link rate (every link 100 Mbit/s, chunk 1.25 MB: u = 0.1 s).
Transfer (k, i) is rank i's send in step k over connection i (ring[i] -> ring[i+1]); with
rank sync it waits for (k-1, i-1) and (k-1, i), with step sync for all of step k-1."""
from __future__ import annotations

import dataclasses

import pytest

from testbed.fabric import FabricSpec, build_fabric
from traffic.collectives import Collective, JobSpec, plan_jobs
from traffic.predictor import PredictorError, Semantics, predict

RATE = 100.0
CHUNK = 1_250_000
U = CHUNK * 8 / (RATE * 1e6)          # 0.1 s
RANK, STEP, FLOW = Semantics(), Semantics(ring_sync="step"), Semantics(ring_sync="flow")


def fab(leaves=3, hosts=3):
    return build_fabric(FabricSpec(spines=1, leaves=leaves, hosts_per_leaf=hosts,
                                   host_link_mbps=RATE, spine_link_mbps=RATE))


def ring(name, hosts, iterations=1, **kw):
    return JobSpec(name, Collective.ALLREDUCE, [hosts], CHUNK * len(hosts),
                   iterations=iterations, **kw)


def flow(name, src, dst, size, start_s):
    return JobSpec(name, Collective.PIPELINE, [[src, dst]], size, start_s=start_s)


def via_spine1(plans):
    return {c.conn_id: "spine1" for p in plans for c in p.connections}


def cct(plans, sem, f=None, name="r"):
    f = f or fab()
    return predict(f, plans, via_spine1(plans), semantics=sem).jobs[name].cct_s


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


@pytest.mark.parametrize("n", [2, 3, 4])
def test_one_ring_without_contention_agrees(n):
    """Every step takes u either way: 2(n-1) u."""
    plans = plan_jobs([ring("r", [f"h{1 + 3 * i}" for i in range(n)], iterations=2)])
    f = fab(leaves=n)
    for sem in (RANK, STEP):
        assert all(close(c, 2 * (n - 1) * U) for c in cct(plans, sem, f))


def test_uneven_steps_differ_as_hand_computed():
    """Ring [a, b, c]; (1,0) and (2,2) carry 1.5 chunks (delta = u/2). Step sync pays both
    delays (4u + 2 delta = 5u); rank sync overlaps them, since (2,2) does not wait for (1,0):
    E0 = [1,1,1], E1 = [2.5,2,2], E2 = [3.5,3.5,3.5] ((2,2) starts at 2, ends 3.5), E3 = 4.5."""
    (plan,) = plan_jobs([ring("r", ["h1", "h4", "h7"])])
    heavy = {3, 8}                                     # tid = k * n + i
    plan.transfers = [dataclasses.replace(t, size_bytes=CHUNK * 3 // 2) if t.tid in heavy
                      else t for t in plan.transfers]
    assert close(cct([plan], RANK)[0], 4.5 * U)
    assert close(cct([plan], STEP)[0], 5.0 * U)


def test_forced_collisions_differ_as_hand_computed():
    """Ring [a=h1, b=h4, c=h7] on leaves 1..3 over one spine. X1 (h3 -> h5, u/2 of bytes,
    from 1u) shares a->b's leaf1->spine->leaf2 links during step 1; X2 (h8 -> h2, u/2, from
    2.5u) shares c->a's links. Both: step 0 ends at 1; (1,0) shares with X1 until 2 and ends
    at 2.5. Rank: (2,2) started at 2, shares with X2 from 2.5 to 3.5 and ends 3.5, like
    (2,0) and (2,1); step 3 ends at 4.5. Step: step 2 starts at 2.5 for all; (2,2) shares with
    X2 until 3.5 and ends 4.0; step 3 ends at 5.0."""
    specs = [ring("r", ["h1", "h4", "h7"]),
             flow("x1", "h3", "h5", CHUNK // 2, 1.0 * U),
             flow("x2", "h8", "h2", CHUNK // 2, 2.5 * U)]
    plans = plan_jobs(specs)
    assert close(cct(plans, RANK)[0], 4.5 * U)
    assert close(cct(plans, STEP)[0], 5.0 * U)
    assert close(cct(plans, STEP, name="x2")[0], 1.0 * U)    # shared its whole time


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("collective,steps", [(Collective.ALLREDUCE, 2),
                                              (Collective.ALLGATHER, 1),
                                              (Collective.REDUCE_SCATTER, 1)])
@pytest.mark.parametrize("subflows", [1, 2])
def test_rings_as_flows_alone_take_the_step_dags_time(n, collective, steps, subflows):
    """A ring alone: every hop gets the link rate, so its one flow of steps x (n-1) chunks
    ends when the step DAG does, steps x (n-1) u; one transfer per connection, no deps,
    the DAG's bytes on every connection."""
    spec = JobSpec("r", collective, [[f"h{1 + 3 * i}" for i in range(n)]], CHUNK * n,
                   iterations=2, subflows=subflows)
    steps_plan, = plan_jobs([spec])
    (plan,) = plan_jobs([spec], "flow")
    assert len(plan.transfers) == len(plan.connections) == n * subflows
    assert all(not t.deps for t in plan.transfers)
    per_conn = {}
    for t in steps_plan.transfers:
        per_conn[t.conn_id] = per_conn.get(t.conn_id, 0) + t.size_bytes
    assert {t.conn_id: t.size_bytes for t in plan.transfers} == per_conn
    f = fab(leaves=n)
    for sem, p in ((FLOW, plan), (RANK, steps_plan)):
        assert all(close(c, steps * (n - 1) * U) for c in cct([p], sem, f)), sem


def test_rings_as_flows_under_forced_collisions_as_hand_computed():
    """The collisions of test_forced_collisions_differ_as_hand_computed, ring as three flows
    of 4 chunks: a->b alone to 1u, shares with X1 until X1 ends at 2u (1.5 chunks sent),
    then alone to 4.5u; c->a alone to 2.5u, shares with X2 until 3.5u (3 chunks), alone to
    4.5u; b->c ends at 4u. The CCT equals the rank DAG's (4.5u), X2 shares its whole time."""
    specs = [ring("r", ["h1", "h4", "h7"]),
             flow("x1", "h3", "h5", CHUNK // 2, 1.0 * U),
             flow("x2", "h8", "h2", CHUNK // 2, 2.5 * U)]
    plans = plan_jobs(specs, "flow")
    pred = predict(fab(), plans, via_spine1(plans), semantics=FLOW)
    assert close(pred.jobs["r"].cct_s[0], 4.5 * U)
    assert close(pred.jobs["x1"].cct_s[0], 1.0 * U)
    assert close(pred.jobs["x2"].cct_s[0], 1.0 * U)
    fcts = sorted(pred.jobs["r"].fct_max_s / U)
    assert [round(x, 9) for x in fcts] == [4.0, 4.5, 4.5]


def test_step_sync_on_other_collectives_changes_nothing_without_contention():
    for spec in (JobSpec("r", Collective.ALLGATHER, [["h1", "h4", "h7"]], 3 * CHUNK),
                 JobSpec("r", Collective.PIPELINE, [["h2", "h5", "h8"]], CHUNK)):
        plans = plan_jobs([spec])
        assert close(cct(plans, STEP)[0], 2 * U) and close(cct(plans, RANK)[0], 2 * U)


class CountingRouter:
    """Every connection on spine1; records the calls."""

    def __init__(self, plans):
        self.routes = via_spine1(plans)
        self.calls: list[tuple[str, float]] = []

    def jobs_started(self, jobs, t):
        self.calls.append(("start", t))
        return self.routes

    def job_finished(self, job, t):
        self.calls.append(("finish", t))
        return self.routes

    def recompute(self, t):
        self.calls.append(("recompute", t))
        return self.routes

    def event_times(self):
        return []

    def fire(self, k, t):  # pragma: no cover - no events here
        raise AssertionError


def test_floodns_recomputes_at_iterations_and_runs_a_tail_step():
    """3 iterations of 4u (ring of 3) with 1u of compute: starts at 0, 5u, 10u; a tail
    iteration starts at 15u and runs step 0 only (1u), unrecorded; the job ends at 16u."""
    plans = plan_jobs([ring("r", ["h1", "h4", "h7"], iterations=3, compute_s=U)])
    r = CountingRouter(plans)
    pred = predict(fab(), plans, None, router=r, semantics=Semantics.floodns())
    job = pred.jobs["r"]
    assert len(job.cct_s) == 3 and all(close(c, 4 * U) for c in job.cct_s)
    assert pred.completions == 3 * 12 + 3                  # + the tail's three step-0 flows
    kinds = [k for k, _ in r.calls]
    assert kinds == ["start", "recompute", "recompute", "recompute", "finish"]
    assert [round(t / U, 6) for k, t in r.calls if k == "recompute"] == [5, 10, 15]
    assert close(r.calls[-1][1], 16 * U) and close(pred.makespan_s, 16 * U)


def test_iteration_ends_recompute_only_while_another_job_communicates():
    """Two rings that do not share links (b within leaf3): an iteration end recomputes only
    while the other job is in an iteration; without a tail step a finished job never counts."""
    plans = plan_jobs([ring("a", ["h1", "h4"], iterations=2, compute_s=U),
                       ring("b", ["h7", "h8"], iterations=1, start_s=0.5 * U)])
    r = CountingRouter(plans)
    predict(fab(), plans, None, router=r,
            semantics=Semantics(recompute="iterations"))
    recomputes = [round(t / U, 6) for k, t in r.calls if k == "recompute"]
    # a: 2u per iteration; ends 2 (b busy until 2.5: recompute), starts 3 (recompute);
    # b ends 2.5 (a computing: none); a ends 5 (b done, no tail: none)
    assert recomputes == [2, 3]


def test_bad_semantics_are_refused():
    plans = plan_jobs([ring("r", ["h1", "h4"])])
    with pytest.raises(PredictorError, match="ring_sync"):
        predict(fab(), plans, via_spine1(plans), semantics=Semantics(ring_sync="ring"))
    with pytest.raises(PredictorError, match="recompute"):
        predict(fab(), plans, via_spine1(plans), semantics=Semantics(recompute="always"))


def test_a_config_plans_rings_as_flows_for_predict_and_run_refuses_them():
    """semantics: {ring_sync: flow}: the config's plans (and the counts it bounds them by)
    are one transfer per ring connection; the emulator's agents run steps, so `run` refuses."""
    from experiments.config import ConfigError, parse
    from experiments.config.jobs import _counts
    from experiments.runner import check_emulable
    doc = {"name": "t", "routing": ["ecmp"],
           "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 2, "host_link_mbps": 10,
                      "spine_link_mbps": 10},
           "jobs": [{"name": "r", "collective": "allreduce", "hosts": ["h1", "h2", "h3", "h4"],
                     "size_bytes": 4_000_000}],
           "semantics": {"ring_sync": "flow"}}
    exp = parse(doc)
    (plan,) = exp.plans()
    assert len(plan.transfers) == len(plan.connections) == 4
    assert _counts(exp.jobs[0], "flow") == (4, 4) and _counts(exp.jobs[0]) == (4, 24)
    assert parse(exp.resolved()).semantics.ring_sync == "flow"
    with pytest.raises(ConfigError, match="ring_sync: rank"):
        check_emulable(exp)

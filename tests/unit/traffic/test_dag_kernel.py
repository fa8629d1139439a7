"""The predictor's compiled DAG step (traffic/dag_kernel.py) against its Python reference
(_Simulation.finish per flow) and against the kernel's own code run as plain Python: the same
predictions bit for bit, with our semantics and floodns's (barriers, tail step,
recomputations), subflows (even and adaptive), fabric events, re-plans of the flows in flight
and zero-byte transfers. Also: the jobs' DAG arrays equal the DAG built transfer by transfer
as before, and a re-route that rewrites only the moved connections' rows predicts as the
whole connection table built again."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

import traffic.predictor as predictor
import traffic.predictor_dag as predictor_dag
import traffic.predictor_rows as predictor_rows
from traffic import dag_kernel, jit
from experiments.overrides import load_with
from experiments.predict import _routes
from testbed.fabric import FabricSpec, build_fabric
from traffic.collectives import Collective, Connection, JobPlan, JobSpec, Transfer, plan_jobs

ROOT = Path(__file__).parents[3]
CONFIGS = ROOT / "experiments" / "configs"

#: (config, --set overrides, routings): every code path of the DAG step
CASES = [
    ("quickstart.yaml", [], ["ecmp", "ilp"]),
    ("quickstart.yaml", ["subflows=4", "split=adaptive"], ["ecmp"]),
    ("fat-tree-rings.yaml", ["subflows=8"], ["ecmp", "greedy"]),
    ("failover.yaml", ["subflows=2"], ["ecmp", "greedy"]),
    ("floodns-2jobs-d4.yaml", [], ["ecmp", "greedy"]),
    ("hedera-k4.yaml", ["semantics={recompute: flows}"], ["gff"]),
    ("chakra-allreduce4.yaml", [], ["ecmp"]),
]


@pytest.fixture(autouse=True)
def compiled_kernels(monkeypatch):
    """These cases are small enough for the numpy kernels (traffic/jit.py): compiled here,
    so that COMPILED_DAG chooses between the DAG kernel and the Python step."""
    monkeypatch.setattr(jit, "KERNELS", "compiled")


def digest(pred) -> str:
    """Every number of a prediction, exactly (hex floats)."""
    out: dict = {"makespan": pred.makespan_s.hex(), "batches": pred.event_batches,
                 "completions": pred.completions, "stats": pred.stats,
                 "mean_util": [x.hex() for x in pred.link_mean_util.tolist()],
                 "max_util": [x.hex() for x in pred.link_max_util.tolist()]}
    for name, job in sorted(pred.jobs.items()):
        out[name] = [[float(x).hex() for x in np.ravel(v)]
                     for v in (job.cct_s, job.iteration_start_s, job.iteration_end_s,
                               job.transfer_bytes, job.fct_mean_s, job.fct_max_s,
                               job.fct_s if job.fct_s is not None else [])]
    return hashlib.sha256(json.dumps(out, sort_keys=True).encode()).hexdigest()


def predict_case(config: str, sets: list[str], routing: str) -> str:
    """The digest of one routing's prediction, as `mlfabric predict` makes it."""
    exp = load_with(CONFIGS / config, sets + [f"routing=[{routing}]"])
    plans = plan_jobs(exp.jobs)
    conns = [c for p in plans for c in p.connections]
    entry = exp.routings[0]
    _, routes = _routes(exp, entry, conns)
    pred = predictor.predict(exp.fabric, plans, None, router=routes, semantics=exp.semantics,
                             spray=entry.per_packet, keep_fcts=True)
    return digest(pred)


def zero_byte_case() -> str:
    """A chain with zero-byte transfers between real ones, two iterations, no compute."""
    fab = build_fabric(FabricSpec(1, 2, 2, 1000.0, 100.0))
    conns = [Connection(0, "z", "h1", "h3", 20000, 5001),
             Connection(1, "z", "h2", "h4", 20001, 5001)]
    spec = JobSpec("z", Collective.PIPELINE, [["h1", "h3"]], 1, iterations=2)
    ts = [Transfer(0, 0, 0, 0), Transfer(1, 1, 500_000, 0, (0,)), Transfer(2, 0, 0, 1, (0,)),
          Transfer(3, 0, 1_000_000, 1, (2,)), Transfer(4, 1, 0, 2, (1, 3))]
    pred = predictor.predict(fab, [JobPlan(spec, 0, conns, ts)], {0: "spine1", 1: "spine1"},
                             keep_fcts=True)
    return digest(pred)


def run_all() -> list[str]:
    return [predict_case(c, s, r) for c, s, rs in CASES for r in rs] + [zero_byte_case()]


@pytest.mark.parametrize("config,sets,routings", CASES)
def test_compiled_dag_step_predicts_as_the_python_reference(config, sets, routings,
                                                            monkeypatch):
    for routing in routings:
        compiled = predict_case(config, sets, routing)
        monkeypatch.setattr(predictor, "COMPILED_DAG", False)
        python = predict_case(config, sets, routing)
        monkeypatch.setattr(predictor, "COMPILED_DAG", True)
        assert compiled == python, (config, sets, routing)


def test_zero_byte_transfers_as_the_python_reference(monkeypatch):
    compiled = zero_byte_case()
    monkeypatch.setattr(predictor, "COMPILED_DAG", False)
    assert zero_byte_case() == compiled


def test_compiled_dag_step_as_its_plain_python_run(monkeypatch):
    """The kernel's own code run as plain Python (numba's py_func): the same predictions as
    compiled."""
    compiled = run_all()
    monkeypatch.setattr(dag_kernel, "complete", dag_kernel.complete.py_func)
    monkeypatch.setattr(dag_kernel, "_push", dag_kernel._push.py_func)
    assert run_all() == compiled


def test_a_full_buffer_stops_before_the_flow_and_nothing_changes():
    """Transfer 0 releases 1 and 2 (one job of 3): with one free slot the kernel hands back
    FULL before touching anything; with two it releases both, in order, at t."""
    one = np.zeros(1, np.int64)
    state = dict(off=np.array([0, 3]), succ_ptr=np.array([0, 2, 2, 2]),
                 succ_idx=np.array([1, 2]), grp_of=np.full(3, -1), grp_left=np.zeros(0, np.int64),
                 grp_ptr=np.zeros(1, np.int64), grp_idx=np.zeros(0, np.int64),
                 indeg=np.array([0, 1, 1]), started_at=np.zeros(3), fct_cur=np.zeros(3),
                 job_done=one.copy(), job_n=np.array([3]), python=np.zeros(1, np.bool_))
    args = (np.ones(1, np.bool_), one.copy(), one.copy(), 2.5)
    for fn in (dag_kernel.complete, dag_kernel.complete.py_func):
        s = {k: v.copy() for k, v in state.items()}
        code, f, n_new, count, _ = fn(0, *args, *s.values(), np.zeros(1, np.int64),
                                      np.zeros(1, np.int64), 0)
        assert (code, f, n_new, count) == (dag_kernel.FULL, 0, 0, 0)
        assert all(np.array_equal(s[k], state[k]) for k in s)
        new_job, new_tid = np.full(2, -1), np.full(2, -1)
        code, f, n_new, count, _ = fn(0, *args, *s.values(), new_job, new_tid, 0)
        assert (code, f, n_new, count) == (dag_kernel.SCANNED, 1, 2, 1)
        assert new_job.tolist() == [0, 0] and new_tid.tolist() == [1, 2]
        assert s["started_at"].tolist() == [0.0, 2.5, 2.5] and s["fct_cur"][0] == 2.5
        assert s["indeg"].tolist() == [0, 0, 0] and s["job_done"][0] == 1


@pytest.mark.parametrize("config,sets,routings", CASES[:6])
def test_moved_rows_only_predict_as_the_whole_table_rebuilt(config, sets, routings,
                                                            monkeypatch):
    """A re-route on the same fabric rewrites only the moved connections' rows: the same
    predictions as the whole connection table built again (as before)."""
    moved = [predict_case(config, sets, r) for r in routings]

    def rebuild(rows, old, new):
        rows.table, _ = predictor_rows.conn_links(rows.fabric, rows.plans, new,
                                                  rows.nonblocking, allow_unrouted=True)
    monkeypatch.setattr(predictor_rows.ConnRows, "_moved_rows", rebuild)
    assert [predict_case(config, sets, r) for r in routings] == moved


def reference_dag(plan, ring_sync: str) -> tuple:
    """Job's DAG as it was built before arrays (commit 2c83e20), verbatim but for the
    returned tuple: successors, in-degrees, barrier groups, their sizes and waiters."""
    ts = plan.transfers
    pos = {t.tid: i for i, t in enumerate(ts)}
    preds_of: list[set[int]] = []
    last_on_conn: dict[int, int] = {}
    for i, t in enumerate(ts):
        preds = {pos[d] for d in t.deps}
        prev = last_on_conn.get(t.conn_id)
        if prev is not None:
            preds.add(prev)
        last_on_conn[t.conn_id] = i
        preds_of.append(preds)
    group_of: list[int] = []
    group_size: list[int] = []
    group_next: list[list[int]] = []
    if ring_sync == "step":
        parent = list(range(len(ts)))

        def root(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i
        for i, preds in enumerate(preds_of):
            for p in preds:
                parent[root(p)] = root(i)
        group: dict[tuple[int, int], int] = {}
        for i, t in enumerate(ts):
            group_of.append(group.setdefault((root(i), t.step), len(group)))
        group_size = [0] * len(group)
        for g in group_of:
            group_size[g] += 1
        group_next = [[] for _ in group]
        for i, t in enumerate(ts):
            g_prev = group.get((root(i), t.step - 1))
            if g_prev is None:
                continue
            preds_of[i] = {p for p in preds_of[i] if group_of[p] != g_prev}
            group_next[g_prev].append(i)
    succ: list[list[int]] = [[] for _ in ts]
    indeg = [0] * len(ts)
    for i, preds in enumerate(preds_of):
        for p in preds:
            succ[p].append(i)
        indeg[i] += len(preds)
    for nxt in group_next:
        for i in nxt:
            indeg[i] += 1
    return succ, indeg, group_of, group_size, group_next


@pytest.mark.parametrize("config,sets", [(c, s) for c, s, _ in CASES])
@pytest.mark.parametrize("ring_sync", ["rank", "step"])
def test_job_dag_arrays_are_the_dag_built_transfer_by_transfer(config, sets, ring_sync):
    exp = load_with(CONFIGS / config, sets)
    plans = plan_jobs(exp.jobs)
    row_of = {c.conn_id: r for r, c in enumerate(c for p in plans for c in p.connections)}
    for plan in plans:
        job = predictor_dag.Job(plan, row_of, False, ring_sync)
        succ, indeg, group_of, group_size, group_next = reference_dag(plan, ring_sync)
        assert [job.succ_idx[a:b].tolist() for a, b in
                zip(job.succ_ptr[:-1], job.succ_ptr[1:])] == succ
        assert job.indeg0.tolist() == indeg
        assert job.group_of.tolist() == (group_of or [-1] * job.n)
        assert job.group_size.tolist() == group_size
        assert [job.group_next[a:b].tolist() for a, b in
                zip(job.group_ptr[:-1], job.group_ptr[1:])] == group_next


@pytest.mark.parametrize("transfers,message", [
    ([Transfer(0, 0, 1, 0), Transfer(1, 0, 1, 0, (0, 7))],
     "jobs.z: transfer 1 depends on unknown transfer 7"),
    ([Transfer(5, 0, 1, 0), Transfer(3, 0, 1, 0, (5, 9))],
     "jobs.z: transfer 3 depends on unknown transfer 9"),
    ([Transfer(0, 0, 1, 0, (1,)), Transfer(1, 0, 1, 0)],
     "jobs.z: the transfer DAG has a cycle"),
    ([Transfer(0, 0, 1, 0), Transfer(0, 0, 1, 0)], "jobs.z: transfer ids are not unique"),
    ([Transfer(0, 3, 1, 0)], "jobs.z: transfer on unknown connection 3"),
])
def test_a_bad_dag_is_a_typed_error_naming_the_transfer(transfers, message):
    spec = JobSpec("z", Collective.PIPELINE, [["h1", "h3"]], 1)
    plan = JobPlan(spec, 0, [Connection(0, "z", "h1", "h3", 20000, 5001)], transfers)
    with pytest.raises(predictor.PredictorError) as e:
        predictor_dag.Job(plan, {0: 0}, False)
    assert str(e.value) == message

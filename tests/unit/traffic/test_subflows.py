"""Subflows (NCCL's sockets per connection, RoCE's queue pairs): the DAG transform, its config
keys, the predictor on it, and ECMP hashing K subflows as balls into bins."""
from __future__ import annotations

import random
import statistics

import pytest

from experiments.config import ConfigError, parse
from routing import route
from routing.base import max_link_flows
from testbed.fabric import FabricSpec, build_fabric
from traffic.collectives import P2P, Collective, JobSpec, plan_jobs, split_subflows
from traffic.predictor import predict

HOSTS = [f"h{i}" for i in range(1, 9)]


def spec(collective: Collective, k: int = 1) -> JobSpec:
    groups = [HOSTS[:2]] if collective is Collective.FLOWS else [HOSTS[:5]]
    ring = tuple(P2P(HOSTS[i % 5], HOSTS[(i + 1) % 5], 200_001, (i - 1,) if i else ())
                 for i in range(8))           # a custom collective: two laps of a ring
    return JobSpec("j", collective, groups, 1_000_003, subflows=k,
                   p2p=ring if collective is Collective.CUSTOM else ())


@pytest.mark.parametrize("collective", list(Collective))
@pytest.mark.parametrize("k", [2, 3, 8])
def test_every_transfer_becomes_k_parts_that_add_up_and_gate_together(collective, k):
    one, = plan_jobs([spec(collective)])
    many, = plan_jobs([spec(collective, k)])
    assert len(many.connections) == k * len(one.connections)
    assert len(many.transfers) == k * len(one.transfers)
    ports = [(c.src, c.dst, c.src_port, c.dst_port) for c in many.connections]
    assert len(set(ports)) == len(ports)                    # each subflow its own 5-tuple
    conn = {c.conn_id: c for c in many.connections}
    old_conn = {c.conn_id: c for c in one.connections}
    for i, t in enumerate(one.transfers):
        parts = many.transfers[i * k:(i + 1) * k]
        sizes = [p.size_bytes for p in parts]
        assert sum(sizes) == t.size_bytes and max(sizes) - min(sizes) <= 1
        src = old_conn[t.conn_id]
        assert all((conn[p.conn_id].src, conn[p.conn_id].dst) == (src.src, src.dst)
                   for p in parts)
        assert len({p.conn_id for p in parts}) == k          # one part per subflow
        want = {d * k + j for d in t.deps for j in range(k)}  # every part of every dep
        assert all(set(p.deps) == want for p in parts)


def test_one_subflow_leaves_the_plan_itself():
    plan, = plan_jobs([spec(Collective.ALLREDUCE)])
    assert split_subflows(plan, 1, 0) is plan


def test_a_transfer_smaller_than_k_bytes_is_refused():
    with pytest.raises(Exception, match="subflows: a transfer of 1 bytes"):
        plan_jobs([JobSpec("j", Collective.ALLREDUCE, [HOSTS[:4]], 4, subflows=2)])


def test_on_one_path_subflows_change_no_cct():
    """One spine: every subflow of a step shares the same links, so K parts take the time of
    the one transfer (the same bytes at the same bottleneck)."""
    f = build_fabric(FabricSpec(1, 4, 2, 10, 10))
    rings = [["h1", "h3", "h5", "h7"]]
    ccts = []
    for k in (1, 4):
        plans = plan_jobs([JobSpec("r", Collective.ALLREDUCE, rings, 2_000_000, subflows=k)])
        conns = [c for p in plans for c in p.connections]
        ccts.append(predict(f, plans, route("ecmp", f, conns).path_of).jobs["r"].cct_s[0])
    assert ccts[1] == pytest.approx(ccts[0], rel=1e-9)


def test_ecmp_hashes_subflows_as_balls_into_bins():
    """8 flows from one leaf x K = 4 subflows over its 4 uplinks: over 300 hash seeds, the
    busiest uplink's mean load matches 32 balls thrown into 4 bins uniformly (by simulation,
    20,000 throws) within 5%, and with K = 1 the same for 8 balls."""
    f = build_fabric(FabricSpec(4, 2, 8, 10, 10))
    pairs = [[f"h{i}", f"h{i + 8}"] for i in range(1, 9)]          # leaf1 -> leaf2
    rng = random.Random(7)
    for k in (1, 4):
        conns = [c for p in plan_jobs([JobSpec("f", Collective.FLOWS, pairs, 10**6,
                                               subflows=k)]) for c in p.connections]
        busiest = [max_link_flows(f, conns, route("ecmp", f, conns, seed=s).path_of)
                   for s in range(300)]
        balls = 8 * k
        expect = statistics.fmean(max(_counts(rng, balls, 4)) for _ in range(20_000))
        assert statistics.fmean(busiest) == pytest.approx(expect, rel=0.05), k


def _counts(rng: random.Random, balls: int, bins: int) -> list[int]:
    out = [0] * bins
    for _ in range(balls):
        out[rng.randrange(bins)] += 1
    return out


BASE = {"name": "s", "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 2,
                                "host_link_mbps": 10, "spine_link_mbps": 10},
        "jobs": [{"name": "r", "collective": "allreduce", "hosts": ["h1", "h3"],
                  "size_bytes": 100_000}], "routing": ["ecmp"]}


def test_config_keys_top_level_per_job_and_the_resolved_config():
    exp = parse({**BASE, "subflows": 4})
    assert exp.jobs[0].subflows == 4
    again = parse(exp.resolved())
    assert again.jobs[0].subflows == 4 and again.resolved() == exp.resolved()
    job = dict(BASE["jobs"][0], subflows=2)
    assert parse({**BASE, "subflows": 4, "jobs": [job]}).jobs[0].subflows == 2


@pytest.mark.parametrize("where, value, names", [
    ("top", 0, "config.subflows: must be from 1 to 64"),
    ("top", 65, "config.subflows"), ("job", True, "jobs[0].subflows"),
    ("job", 1.5, "jobs[0].subflows")])
def test_bad_subflows(where, value, names):
    doc = ({**BASE, "subflows": value} if where == "top" else
           {**BASE, "jobs": [dict(BASE["jobs"][0], subflows=value)]})
    with pytest.raises(ConfigError, match=names.replace(".", r"\.").replace("[", r"\[")):
        parse(doc)


def test_a_connections_window_is_shared_by_its_subflows():
    """K subflows split the connection's window (16 frames: 8 each for K = 2, 4 for K = 4),
    never below 4 frames each; K = 1 and unbounded windows are left alone."""
    from testbed.settings import EmulationSettings
    s = EmulationSettings(mtu_bytes=9000, window_frames=16)
    assert [s.subflow_window_clamp_bytes(k) // 9000 for k in (1, 2, 4, 8, 64)] == [16, 8, 4, 4, 4]
    assert EmulationSettings(window_frames=0).subflow_window_clamp_bytes(4) == 0
    assert EmulationSettings(window_frames=6).subflow_window_clamp_bytes(2) == 4 * 9000

"""Collectives as DAGs, model presets (the paper's byte counts), placement and the paper configs."""
from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
import yaml

from testbed.fabric import FabricSpec, build_fabric
from traffic.collectives import (SOURCE_PORT_BASE, SOURCE_PORT_MAX, Collective, JobSpec,
                                 WorkloadError, bus_factor, plan_jobs)
from traffic.models import MODELS, _hosts_on, model_job

CONFIGS = sorted((Path(__file__).resolve().parents[3] / "experiments" / "configs")
                 .glob("paper-*.yaml"))


def paper_fabric():
    return build_fabric(FabricSpec(32, 64, 32, 100000.0, 100000.0))


def hosts(n: int) -> list[str]:
    return [f"h{i}" for i in range(1, n + 1)]


# ---- collectives ---------------------------------------------------------------------------
def test_ring_allreduce_unchanged():
    """The emulator relies on this: n connections i -> i+1, 2(n-1) steps, ports base + id."""
    (plan,) = plan_jobs([JobSpec("a", Collective.ALLREDUCE, [hosts(4)], 4000)])
    assert [(c.src, c.dst) for c in plan.connections] == [
        ("h1", "h2"), ("h2", "h3"), ("h3", "h4"), ("h4", "h1")]
    assert [c.src_port for c in plan.connections] == [20000, 20001, 20002, 20003]
    assert {c.dst_port for c in plan.connections} == {5001}
    assert len(plan.transfers) == 2 * 3 * 4
    assert plan.bytes_per_iteration() == 2 * 3 * 4000


@pytest.mark.parametrize("coll", [Collective.ALLGATHER, Collective.REDUCE_SCATTER])
def test_ring_chains(coll):
    n, S = 5, 5000
    (plan,) = plan_jobs([JobSpec("a", coll, [hosts(n)], S)])
    assert len(plan.connections) == n
    assert len(plan.transfers) == (n - 1) * n
    assert max(t.step for t in plan.transfers) == n - 2
    for t in plan.transfers:
        assert t.size_bytes == S // n
        if t.step == 0:
            assert t.deps == ()
        else:  # waits for the previous rank's previous step
            (d,) = t.deps
            prev = plan.transfers[d]
            assert prev.step == t.step - 1
            i = plan.transfers.index(t) % n
            assert prev.conn_id == plan.connections[(i - 1) % n].conn_id
    # every rank forwards every chunk but one: the chunk indices a rank sends are distinct
    assert plan.bytes_per_iteration() == (n - 1) * S


def test_all_to_all():
    n, S = 4, 4000
    (plan,) = plan_jobs([JobSpec("a", Collective.ALLTOALL, [hosts(n)], S)])
    pairs = [(c.src, c.dst) for c in plan.connections]
    assert len(pairs) == n * (n - 1) == len(set(pairs))
    assert all(s != d for s, d in pairs)
    assert all(t.deps == () and t.size_bytes == S // n for t in plan.transfers)
    assert len(plan.transfers) == len(plan.connections)


def test_pipeline_chain():
    (plan,) = plan_jobs([JobSpec("p", Collective.PIPELINE, [hosts(4)], 1000)])
    assert [(c.src, c.dst) for c in plan.connections] == [("h1", "h2"), ("h2", "h3"), ("h3", "h4")]
    assert [t.deps for t in plan.transfers] == [(), (0,), (1,)]


def test_bus_factors():
    assert bus_factor(Collective.ALLREDUCE, 4) == 1.5
    for c in (Collective.ALLGATHER, Collective.REDUCE_SCATTER, Collective.ALLTOALL):
        assert bus_factor(c, 4) == 0.75
    assert bus_factor(Collective.PIPELINE, 4) == 1.0


def test_conn_ids_global_and_ports_wrap_in_range():
    """46,010 connections (an all-to-all of 215 ranks): ports wrap, stay <= 65535, and every
    5-tuple is still unique."""
    specs = [JobSpec("small", Collective.ALLREDUCE, [hosts(3)], 300),
             JobSpec("big", Collective.ALLTOALL, [hosts(215)], 215)]
    plans = plan_jobs(specs)
    conns = [c for p in plans for c in p.connections]
    assert [c.conn_id for c in conns] == list(range(len(conns)))
    assert len(conns) > SOURCE_PORT_MAX - SOURCE_PORT_BASE + 1
    assert all(SOURCE_PORT_BASE <= c.src_port <= SOURCE_PORT_MAX for c in conns)
    assert len({(c.src, c.dst, c.src_port, c.dst_port) for c in conns}) == len(conns)


def test_duplicate_five_tuple_rejected():
    # 45,536 + 1 connections between the same two hosts of one job would reuse a 5-tuple
    groups = [["h1", "h2"]] * 22769              # 2 connections per ring, h1->h2 and h2->h1
    with pytest.raises(WorkloadError, match="5-tuple"):
        plan_jobs([JobSpec("dup", Collective.ALLREDUCE, groups, 2)])


def test_bad_groups_rejected():
    with pytest.raises(WorkloadError, match="jobs.x.hosts"):
        plan_jobs([JobSpec("x", Collective.ALLGATHER, [["h1"]], 100)])
    with pytest.raises(WorkloadError, match="jobs.x.size_bytes"):
        plan_jobs([JobSpec("x", Collective.ALLGATHER, [hosts(4)], 3)])


# ---- model presets -------------------------------------------------------------------------
def test_llama_dp4_paper_bytes():
    fab = paper_fabric()
    spec = model_job("l", "llama2-70b", 4, fab, random.Random(0), set(), iterations=1)
    (plan,) = plan_jobs([spec])
    assert len(spec.groups) == 128 and all(len(g) == 4 for g in spec.groups)
    assert spec.size_bytes == 2_187_500_000
    assert {t.size_bytes for t in plan.transfers} == {546_875_000}
    assert len(plan.transfers) == 128 * 4 * 2 * 3


@pytest.mark.parametrize("model,dp,flow_bytes", [
    ("gpt3-175b", 8, 10_937_500_000 / 8),
    ("bloom-176b", 2, 14_666_666_667 / 2),
    ("llama2-70b", 8, 2_187_500_000 / 8),
])
def test_preset_flow_bytes(model, dp, flow_bytes):
    fab = paper_fabric()
    spec = model_job("m", model, dp, fab, random.Random(0), set())
    (plan,) = plan_jobs([spec])
    sizes = {t.size_bytes for t in plan.transfers}
    assert max(sizes) - min(sizes) <= 1
    assert abs(max(sizes) - flow_bytes) <= 1
    assert MODELS[model].flow_bytes(dp) == pytest.approx(flow_bytes, abs=1)


def test_compute_time_from_flops():
    assert MODELS["llama2-70b"].compute_s() == pytest.approx(2.69, rel=1e-3)
    # 6 P T / (G x 312e12)
    assert MODELS["gpt3-175b"].compute_s() == pytest.approx(
        6 * 175e9 * 256_000 / (64 * 312e12), rel=1e-9)
    fab = paper_fabric()
    assert model_job("a", "bloom-176b", 2, fab, random.Random(0), set(),
                     compute_s=1.5).compute_s == 1.5


def test_scale_bytes():
    fab = paper_fabric()
    spec = model_job("l", "llama2-70b", 4, fab, random.Random(0), set(), scale_bytes=1e-3)
    assert spec.size_bytes == 2_187_500


def test_random_tors_placement():
    fab = paper_fabric()
    used: set[str] = set()
    rng = random.Random(7)
    a = model_job("a", "bloom-176b", 4, fab, rng, used)        # 192 GPUs = 6 leaves
    b = model_job("b", "gpt3-175b", 4, fab, rng, used)         # 256 GPUs = 8 leaves
    leaves_a = {fab.leaf_of(x) for x in a.hosts}
    leaves_b = {fab.leaf_of(x) for x in b.hosts}
    assert len(leaves_a) == 6 and len(leaves_b) == 8 and not leaves_a & leaves_b
    assert used == {h for leaf in leaves_a | leaves_b for h in _hosts_on(fab, leaf)}
    assert len(set(a.hosts)) == 192
    # whole leaves: every host of a used leaf belongs to the job
    assert Counter(fab.leaf_of(x) for x in a.hosts) == {leaf: 32 for leaf in leaves_a}
    # ring i = GPU i of every copy: members are 48 hosts apart in placement order, so on
    # different leaves (every ring flow crosses the fabric)
    for ring in a.groups:
        assert len({fab.leaf_of(x) for x in ring}) == 4
    # seeded: the same seed gives the same placement, another seed another one
    again = model_job("a", "bloom-176b", 4, fab, random.Random(7), set())
    assert again.groups == a.groups
    other = model_job("a", "bloom-176b", 4, fab, random.Random(8), set())
    assert other.groups != a.groups


def test_explicit_hosts():
    fab = paper_fabric()
    used: set[str] = set()
    spec = model_job("a", "gpt3-175b", 2, fab, random.Random(0), used, hosts=hosts(128))
    assert spec.groups[0] == ["h1", "h65"] and spec.groups[63] == ["h64", "h128"]
    assert used == set(hosts(128))
    with pytest.raises(WorkloadError, match="jobs.a.hosts"):
        model_job("a", "gpt3-175b", 2, fab, random.Random(0), set(), hosts=hosts(100))


def test_job_that_does_not_fit_names_the_key():
    fab = paper_fabric()
    used: set[str] = set()
    rng = random.Random(0)
    model_job("l1", "llama2-70b", 8, fab, rng, used)            # 32 leaves
    model_job("l2", "llama2-70b", 4, fab, rng, used)            # 16 leaves
    model_job("g", "gpt3-175b", 8, fab, rng, used)              # 16 leaves: exactly full
    assert len(used) == 64 * 32
    with pytest.raises(WorkloadError, match=r"jobs\.b\.dp: .* 3 whole leaves .* only 0 of 64"):
        model_job("b", "bloom-176b", 2, fab, rng, used)
    with pytest.raises(WorkloadError, match=r"jobs\.z\.dp"):
        model_job("z", "gpt3-175b", 1, fab, rng, set())
    with pytest.raises(WorkloadError, match=r"jobs\.z\.model"):
        model_job("z", "gpt5", 2, fab, rng, set())


# ---- the paper-scale configs ---------------------------------------------------------------
def test_paper_configs_exist():
    assert len(CONFIGS) >= 6


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_paper_config_builds(path):
    cfg = yaml.safe_load(path.read_text())
    f = cfg["fabric"]
    assert (f["leaves"], f["spines"], f["hosts_per_leaf"]) == (64, 32, 32)
    assert f["host_link_mbps"] == f["spine_link_mbps"] == 100000
    fab = build_fabric(FabricSpec(f["spines"], f["leaves"], f["hosts_per_leaf"],
                                  f["host_link_mbps"], f["spine_link_mbps"],
                                  tuple(f.get("failed_spines", [])),
                                  tuple(tuple(x) for x in f.get("failed_links", []))))
    assert 1 <= len(cfg["jobs"]) <= 5
    assert {j["dp"] for j in cfg["jobs"]} <= {2, 4, 8}
    assert {j["model"] for j in cfg["jobs"]} <= set(MODELS)
    from experiments.config import load
    specs = load(path).jobs
    plans = plan_jobs(specs)
    assert all(c.src_port <= SOURCE_PORT_MAX for p in plans for c in p.connections)
    leaves = [{fab.leaf_of(x) for x in s.hosts} for s in specs]
    assert sum(len(x) for x in leaves) == len(set().union(*leaves))   # no shared leaf
    from routing import STRATEGIES
    assert "ecmp" in cfg["routing"] and set(cfg["routing"]) <= set(STRATEGIES)


@pytest.mark.parametrize("ring_sync", ["rank", "flow"])
@pytest.mark.parametrize("collective", [c for c in Collective if c is not Collective.CUSTOM])
@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_group_counts_are_what_the_planners_build(collective, n, ring_sync):
    """The config bounds a job by group_counts before planning it: the counts must be the
    planners' own (connections, transfers per iteration, bytes sent / size_bytes), with the
    rings as flows too (ring_sync "flow")."""
    from traffic.collectives import group_counts
    hosts = [f"h{i}" for i in range(1, n + 1)]
    groups = [hosts[:2]] if collective is Collective.FLOWS else [hosts]
    size = 1000 * n * (n - 1) * 2
    plan = plan_jobs([JobSpec("j", collective, groups, size)], ring_sync)[0]
    sent = sum(t.size_bytes for t in plan.transfers)
    assert group_counts(collective, len(groups[0]), ring_sync) == (
        len(plan.connections), len(plan.transfers), sent // size), (collective, n)


def test_five_tuples_checked_by_ports_then_whole():
    """FiveTuples: port pairs that repeat are fine while the hosts differ; a 5-tuple that
    repeats, in a later job after port-only checks, names the earlier connection."""
    from traffic.collectives import FiveTuples
    from traffic.plans import Connection
    spec = JobSpec("j", Collective.ALLREDUCE, [hosts(2)], 2)

    def conn(i, src, dst, sport, dport=30000):
        return Connection(i, "j", src, dst, sport, dport)

    seen = FiveTuples()
    seen.add(spec, [conn(0, "h1", "h2", 20000), conn(1, "h2", "h1", 20001)])
    seen.add(spec, [conn(2, "h3", "h4", 20000)])           # ports again, other hosts
    assert seen.full is not None
    with pytest.raises(WorkloadError, match="connection 3 .* of connection 1 "):
        seen.add(spec, [conn(3, "h2", "h1", 20001)])

"""recompute: flows — the controller re-plans the flows in flight whenever one starts or ends.

Hand case: three equal flows leaf1 -> leaf2 over two spines, every link 10 Mbit/s, 1.25 MB
each (1 s alone). Any one-path plan puts two flows on one spine: the lone flow ends at 1 s,
the pair at 2 s. Re-planned when the lone flow ends, the pair (0.625 MB left each) takes one
spine each and ends at 1.5 s."""
from __future__ import annotations

import pytest

import yaml

from experiments.config import ConfigError, parse
from experiments.routes import ControllerRoutes
from experiments.routing_run import emulated_semantics
from experiments.runner import check_emulable
from routing.policy import EpochPolicy
from testbed.fabric import FabricSpec, build_fabric
from traffic.collectives import Collective, JobSpec, plan_jobs
from traffic.inflight import InFlight
from traffic.prediction import Semantics
from traffic.predictor import predict

SIZE = 1_250_000
FLOWS = Semantics(recompute="flows")


def _case(iterations: int = 2):
    fabric = build_fabric(FabricSpec(2, 2, 3, 10, 10))
    plans = plan_jobs([JobSpec("trio", Collective.FLOWS, [["h1", "h4"], ["h2", "h5"],
                                                          ["h3", "h6"]], SIZE,
                               iterations=iterations)])
    return fabric, plans, [c for p in plans for c in p.connections]


def _cct(strategy: str, semantics: Semantics, iterations: int = 2) -> list[float]:
    fabric, plans, conns = _case(iterations)
    routes = ControllerRoutes(strategy, fabric, conns, seed=0)
    return predict(fabric, plans, None, router=routes, semantics=semantics).jobs["trio"].cct_s


@pytest.mark.parametrize("strategy", ["greedy", "ilp", "edge-coloring", "annealing", "mmf",
                                      "gff", "spray"])
def test_every_strategy_that_solves_moves_the_pair_apart_when_the_lone_flow_ends(strategy):
    assert _cct(strategy, Semantics()) == pytest.approx([2.0, 2.0], rel=1e-9)
    assert _cct(strategy, FLOWS) == pytest.approx([1.5, 1.5], rel=1e-9)


def test_ecmp_is_not_replanned():
    assert _cct("ecmp", FLOWS) == _cct("ecmp", Semantics())


def test_the_minimum_interval_holds_the_replan_back():
    """The last re-plan was at t = 0 (the flows took off): with a 1.2 s hold the pair moves
    at 1.2 s instead of 1 s, with 0.5 MB left of each (1.25 MB - 1.2 s x 5 Mbit/s / 8) instead
    of 0.625 MB, and ends at 1.2 + 0.5 MB x 8 / 10 Mbit/s = 1.6 s."""
    held = Semantics(recompute="flows", replan_min_interval_s=1.2)
    left = SIZE - 1.2 * 5e6 / 8
    assert _cct("greedy", held, iterations=1) == pytest.approx([1.2 + left * 8 / 10e6],
                                                               rel=1e-9)
    assert 1.2 + left * 8 / 10e6 == pytest.approx(1.6)


def test_a_replan_plans_only_the_flows_in_flight_and_idle_ones_keep_their_paths():
    fabric, _, conns = _case()
    policy = EpochPolicy("greedy", fabric, conns)
    policy.start(["trio"])
    before = dict(policy.assignment)
    pair = [cid for cid in before if list(before.values()).count(before[cid]) == 2]
    lone = next(cid for cid in before if cid not in pair)
    decision = policy.replan(pair)
    assert decision.moved == 1
    assert policy.assignment[pair[0]] != policy.assignment[pair[1]]
    assert policy.assignment[lone] == before[lone]          # idle: kept
    assert policy.replan(pair).moved == 0                   # same set, same fabric: no solve
    assert policy.solves[-1]["flows"] == 2


def test_in_flight_follows_the_dag_of_a_ring():
    """4-rank ring all-reduce: each step's sends take off when the chunk of the step before
    lands at their rank."""
    plans = plan_jobs([JobSpec("r", Collective.ALLREDUCE, [["h1", "h2", "h3", "h4"]], 4000)])
    (plan,) = plans
    tracker = InFlight(plans)
    tracker.begin("r")
    step0 = [t for t in plan.transfers if t.step == 0]
    assert tracker.conns() == sorted(t.conn_id for t in step0)
    tracker.received("r", step0[0].tid)       # rank 1 has its chunk: its step-1 send goes
    nxt = [t for t in plan.transfers if step0[0].tid in t.deps]
    assert len(nxt) == 1
    assert nxt[0].conn_id in tracker.conns()
    for t in plan.transfers:
        if t.tid != step0[0].tid:
            tracker.received("r", t.tid)
    assert tracker.conns() == []


def load_text(text: str):
    return parse(yaml.safe_load(text))


def test_the_emulator_holds_its_interval_unless_the_config_gives_one():
    base = ("name: t\nfabric: {spines: 2, leaves: 2, hosts_per_leaf: 3, host_link_mbps: 10, "
            "spine_link_mbps: 10}\njobs: [{name: a, collective: flows, groups: [[h1, h4]], "
            "size_bytes: 1000}]\nrouting: [greedy]\n")
    exp = load_text(base + "semantics: {recompute: flows}\n")
    assert exp.semantics.replan_min_interval_s is None        # the model: 0
    assert emulated_semantics(exp).replan_min_interval_s == 0.05
    exp = load_text(base + "semantics: {recompute: flows, replan_min_interval_s: 0.2}\n")
    assert emulated_semantics(exp).replan_min_interval_s == 0.2
    resolved = exp.resolved()
    assert resolved["semantics"]["replan_min_interval_s"] == 0.2
    assert parse(resolved).semantics == exp.semantics         # the resolved config loads again
    with pytest.raises(ConfigError, match="semantics.replan_min_interval_s: only with"):
        load_text(base + "semantics: {replan_min_interval_s: 0.2}\n")
    with pytest.raises(ConfigError, match="semantics.replan_min_interval_s: must be"):
        load_text(base + "semantics: {recompute: flows, replan_min_interval_s: 61}\n")
    with pytest.raises(ConfigError, match="semantics: the emulator runs"):
        check_emulable(load_text(base + "semantics: floodns\n"))

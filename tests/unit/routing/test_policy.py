"""The controller's routing policy over epochs and events, and its replay in the predictor."""
from __future__ import annotations

import pytest

from experiments.config import Event, load
from experiments.routes import ControllerRoutes
from routing.base import max_link_flows
from routing.policy import EpochPolicy
from testbed.fabric import FabricSpec, build_fabric
from traffic.collectives import Collective, Connection, JobSpec, plan_jobs
from traffic.predictor import predict


def fabric(spines=2, leaves=2, hpl=4, failed_spines=()):
    return build_fabric(FabricSpec(spines, leaves, hpl, 100.0, 100.0, tuple(failed_spines)))


def conn(i, src, dst, job):
    return Connection(i, job, src, dst, 20000 + i, 5001)


# h1..h4 on leaf1, h5..h8 on leaf2; two jobs of two flows each, four flows over two spines
CONNS = [conn(0, "h1", "h5", "a"), conn(1, "h2", "h6", "a"),
         conn(2, "h3", "h7", "b"), conn(3, "h4", "h8", "b")]


@pytest.mark.parametrize("strategy", ["greedy", "ilp", "edge-coloring"])
def test_epochs_route_only_the_active_flows_and_remember_the_rest(strategy):
    f = fabric()
    p = EpochPolicy(strategy, f, CONNS, seed=1)
    p.start(["a"])
    assert set(p.assignment) == {0, 1}
    assert max_link_flows(f, CONNS[:2], p.assignment) == 1      # one flow per spine
    d = p.start(["b"])
    assert set(p.assignment) == {0, 1, 2, 3}
    assert max_link_flows(f, CONNS, p.assignment) == 2
    assert d.moved is not None and d.moved >= 0
    spine_of_a = {cid: p.assignment[cid] for cid in (0, 1)}
    p.finish("a")
    assert set(p.assignment) == {2, 3}
    assert max_link_flows(f, CONNS[2:], p.assignment) == 1      # b re-spread over both spines
    assert {cid: p.final_path(cid) for cid in (0, 1)} == spine_of_a
    for cid in range(4):
        assert p.final_path(cid) in p.history[cid]


def test_a_failure_reroutes_the_lost_flows_and_counts_them_moved():
    f = fabric(spines=3)
    p = EpochPolicy("greedy", f, CONNS, seed=1)
    p.start(["a", "b"])
    on_2 = [cid for cid, s in p.assignment.items() if s[1] == "spine2"]
    assert on_2
    d = p.change_fabric(fabric(spines=3, failed_spines=("spine2",)))
    assert all(s[1] != "spine2" for s in p.assignment.values())
    assert d.moved >= len(on_2)


def test_ecmp_and_host_enforced_plans_place_nothing():
    f = fabric()
    e = EpochPolicy("ecmp", f, CONNS)
    assert e.start(["a", "b"]).moved is None and e.assignment == {}
    static = {0: "spine1", 1: "spine2", 2: "spine1", 3: "spine2"}
    h = EpochPolicy("ilp", f, CONNS, static=static)
    h.start(["a"])
    h.finish("a")
    assert h.assignment == static                                 # fixed for the whole run
    assert not h.places_flows


def test_prediction_follows_the_epochs_not_a_single_plan():
    """Job b runs twice as long as a. Routed once (all flows), two flows share each spine for
    good; replayed by epochs, b's flows spread over both spines when a finishes, and b's
    second half runs twice as fast."""
    f = fabric()
    S = 1_000_000
    specs = [JobSpec("a", Collective.PIPELINE, [["h1", "h5"], ["h2", "h6"]], S),
             JobSpec("b", Collective.PIPELINE, [["h3", "h7"], ["h4", "h8"]], S, iterations=2)]
    plans = plan_jobs(specs)
    conns = [c for p in plans for c in p.connections]
    routes = ControllerRoutes("greedy", f, conns, seed=1)
    pr = predict(f, plans, None, router=routes)
    t = S * 8 / 50e6                                   # two flows on a 100 Mbit/s spine link
    assert pr.jobs["a"].cct_s[0] == pytest.approx(t, rel=1e-3)
    assert pr.jobs["b"].cct_s == pytest.approx([t, t / 2], rel=1e-3)
    assert pr.stats["reroutes"] == 3                   # start a,b; finish a; finish b


def test_ecmp_replay_uses_the_observed_spine_of_each_phase():
    f = fabric(spines=3)
    specs = [JobSpec("a", Collective.PIPELINE, [["h1", "h5"]], 1_000_000)]
    plans = plan_jobs(specs)
    conns = [c for p in plans for c in p.connections]
    cid = conns[0].conn_id
    events = [Event(0.01, "fail_spine", ("spine3",))]
    def via(s):
        return ("leaf1", s, "leaf2")
    routes = ControllerRoutes("ecmp", f, conns, 0, events,
                              observed_phases=[{cid: via("spine3")}, {cid: via("spine1")}])
    assert routes.jobs_started(["a"], 0.0)[cid] == via("spine3")
    after, r = routes.fire(0, 0.01)
    assert r[cid] == via("spine1") and not after.is_live("leaf1", "spine3")
    # an observed path the fabric no longer has falls back to the model's hash
    routes = ControllerRoutes("ecmp", f, conns, 0, events,
                              observed_phases=[{cid: via("spine3")}, {cid: via("spine3")}])
    routes.jobs_started(["a"], 0.0)
    assert routes.fire(0, 0.01)[1][cid] in (via("spine1"), via("spine2"))


def test_predict_command_models_the_failover_events():
    exp = load("experiments/configs/failover.yaml")
    plans = plan_jobs(exp.jobs)
    conns = [c for p in plans for c in p.connections]
    routes = ControllerRoutes("ilp", exp.fabric, conns, exp.seed, exp.events)
    pr = predict(exp.fabric, plans, None, router=routes)
    assert routes.policy.fabric.spec.failed_spines == ("spine2",)  # the last state
    assert pr.stats["reroutes"] == len(exp.events) + 4           # 2 starts, 2 finishes


@pytest.mark.parametrize("strategy, limit, want", [("ilp", 7.5, 7.5), ("mmf", 2.0, 2.0),
                                                   ("ilp", None, None), ("greedy", 3.0, None)])
def test_solver_time_limit_reaches_only_the_cbc_strategies(monkeypatch, strategy, limit, want):
    """The config's solver_time_limit_s is each ilp / mmf solve's CBC limit; the others, which
    take no such option, never see it."""
    import routing
    seen = []
    two_tier, three_tier = routing.KERNELS[strategy]

    def spy(*args, **kw):
        seen.append(kw.get("time_limit_s"))
        return two_tier(*args, **kw)
    monkeypatch.setitem(routing.KERNELS, strategy, (spy, three_tier))
    p = EpochPolicy(strategy, fabric(), CONNS, seed=1, time_limit_s=limit)
    p.start(["a", "b"])
    p.finish("a")
    assert seen == [want, want]


def test_predict_hashes_ecmp_once_and_the_routes_are_that_hash(monkeypatch):
    """predict's ECMP plan is handed to the controller's routes, not hashed a second time:
    one hash call, and the routes are the hash a fresh call gives."""
    import experiments.predict as P
    import experiments.routes as R
    from routing import route
    exp = load("experiments/configs/failover.yaml")
    conns = [c for p in plan_jobs(exp.jobs) for c in p.connections]
    fresh = route("ecmp", exp.fabric, conns, seed=exp.seed).path_of
    calls = []
    def counted(*a, **kw):
        calls.append(a[0])
        return route(*a, **kw)
    monkeypatch.setattr(P, "route", counted)
    monkeypatch.setattr(R, "route", counted)
    entry = next(e for e in exp.routings if e.hashed)             # failover.yaml routes ecmp
    rp, routes = P._routes(exp, entry, conns)
    assert calls == ["ecmp"]
    assert routes.jobs_started([p.name for p in plan_jobs(exp.jobs)], 0.0) == fresh

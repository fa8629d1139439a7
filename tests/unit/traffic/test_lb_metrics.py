"""Load-balancing metrics of a prediction: link-load imbalance (max / mean bytes over the
fabric links routing could use), checked against hand counts on the quickstart."""
from __future__ import annotations

import pytest

from experiments.config import load, parse
from routing import route
from traffic.collectives import plan_jobs
from traffic.metrics import fabric_leaf_pairs, link_load_imbalance
from traffic.predictor import predict


def _imbalance(exp, strategy):
    plans = plan_jobs(exp.jobs)
    conns = [c for p in plans for c in p.connections]
    plan = route(strategy, exp.fabric, conns, seed=exp.seed)
    pred = predict(exp.fabric, plans, plan.path_of)
    pairs = {(exp.fabric.leaf_of(c.src), exp.fabric.leaf_of(c.dst)) for c in conns}
    loads: dict = {}
    for c in conns:
        p = plan.path_of[c.conn_id] or ()         # None: within one leaf
        for e in zip(p, p[1:]):
            loads[e] = loads.get(e, 0) + 1
    return link_load_imbalance(pred, exp.fabric, pairs), loads


def test_equal_flows_give_the_busiest_link_over_the_mean_link():
    """The quickstart: 16 equal ring flows, 4 leaves x 4 spines = 32 usable directed links,
    each flow on 2 of them: the mean link carries one flow's bytes, so the imbalance is the
    most flows on one link (ECMP: 3; the ILP: 1)."""
    exp = load("experiments/configs/quickstart.yaml")
    for strategy in ("ecmp", "ilp"):
        got, loads = _imbalance(exp, strategy)
        assert sum(loads.values()) == 32
        assert got == pytest.approx(max(loads.values()), rel=1e-9), strategy
    assert _imbalance(exp, "ilp")[0] == pytest.approx(1.0, rel=1e-9)


def test_a_failed_spine_is_not_counted_as_an_idle_link():
    doc = load("experiments/configs/quickstart.yaml").resolved()
    doc["fabric"]["failed_spines"] = ["spine4"]
    exp = parse(doc)
    got, loads = _imbalance(exp, "ilp")           # 32 flow-links over 24 usable links
    mean = sum(loads.values()) / 24
    assert got == pytest.approx(max(loads.values()) / mean, rel=1e-9)


def test_flows_within_one_leaf_have_no_imbalance():
    doc = {"name": "x", "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 2,
                                   "host_link_mbps": 10, "spine_link_mbps": 10},
           "jobs": [{"name": "a", "collective": "allreduce", "hosts": ["h1", "h2"],
                     "size_bytes": 1000}], "routing": ["ecmp"]}
    assert _imbalance(parse(doc), "ecmp")[0] is None


def test_transfers_inside_a_server_offer_no_fabric_link():
    """On 8-GPU servers, a ring's NVLink hops join two rail leaves of one server but cross
    no fabric link: their leaf pairs are not the links routing could use, unless some
    fabric-crossing connection joins the same leaves."""
    exp = load("experiments/configs/servers-8gpu.yaml")
    conns = [c for p in plan_jobs(exp.jobs) for c in p.connections]
    f = exp.fabric
    inside = {(f.leaf_of(c.src), f.leaf_of(c.dst)) for c in conns if f.same_server(c.src, c.dst)}
    across = {(f.leaf_of(c.src), f.leaf_of(c.dst)) for c in conns
              if not f.same_server(c.src, c.dst)}
    assert inside - across                        # pairs only NVLink hops join
    assert fabric_leaf_pairs(f, conns) == across

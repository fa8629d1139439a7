"""`spray`: subflows dealt round-robin over every live shortest path of their leaf pair."""
from __future__ import annotations

from collections import Counter

import pytest

from experiments.config import load
from routing import route
from testbed.fabric import FabricSpec, build_fabric
from traffic.collectives import Collective, JobSpec, plan_jobs
from traffic.predictor import predict


def _plan(f, k, size=1_000_000, pairs=(("h1", "h3"),)):
    plans = plan_jobs([JobSpec("f", Collective.FLOWS, [list(p) for p in pairs], size,
                               subflows=k)])
    return plans, [c for p in plans for c in p.connections]


def test_two_subflows_over_two_half_rate_spines_move_at_the_host_rate():
    """2 spines of 5 Mbit/s, hosts at 10: one flow on one spine gets 5 Mbit/s (1.6 s for 1 MB);
    sprayed as 2 subflows it gets 5 + 5 = 10, the host link's rate (0.8 s), the fluid even
    split's time."""
    f = build_fabric(FabricSpec(2, 2, 2, 10, 5))
    for k, expect in ((1, 1.6), (2, 0.8)):
        plans, conns = _plan(f, k)
        cct = predict(f, plans, route("spray", f, conns).path_of).jobs["f"].cct_s[0]
        assert cct == pytest.approx(expect, rel=1e-9), k


def test_each_connection_deals_its_subflows_over_distinct_spines():
    exp = load("experiments/configs/quickstart.yaml")
    plans = plan_jobs([JobSpec(j.name, j.collective, j.groups, j.size_bytes, subflows=4)
                       for j in exp.jobs])
    conns = [c for p in plans for c in p.connections]
    plan = route("spray", exp.fabric, conns)
    by_pair: dict = {}
    for c in conns:
        by_pair.setdefault((c.job, c.src, c.dst), []).append(plan.path_of[c.conn_id][1])
    assert all(sorted(s) == ["spine1", "spine2", "spine3", "spine4"] for s in by_pair.values())


def test_the_deal_continues_over_a_pairs_connections_from_a_seeded_start():
    """Two connections of one leaf pair, 2 subflows each, 4 spines: four consecutive spines
    (cyclically) from wherever the seed starts the pair, every spine once; the starts differ
    between seeds and repeat for one seed."""
    f = build_fabric(FabricSpec(4, 2, 2, 10, 10))
    _, conns = _plan(f, 2, pairs=(("h1", "h3"), ("h2", "h4")))
    starts = set()
    for seed in range(8):
        path_of = route("spray", f, conns, seed=seed).path_of
        assert path_of == route("spray", f, conns, seed=seed).path_of
        got = [int(path_of[c.conn_id][1][5:]) - 1 for c in conns]
        assert got == [(got[0] + i) % 4 for i in range(4)]
        starts.add(got[0])
    assert len(starts) > 1


def test_failed_spines_get_nothing_and_the_rest_share_evenly():
    f = build_fabric(FabricSpec(4, 2, 2, 10, 10, failed_spines=("spine2",)))
    _, conns = _plan(f, 6)
    spines = Counter(route("spray", f, conns).path_of[c.conn_id][1] for c in conns)
    assert spines == {"spine1": 2, "spine3": 2, "spine4": 2}


# -- spray@packet: the model's fluid per-packet spraying ---------------------------------------
def _two_jobs_one_cut_path():
    """leaf1 -> leaf2 (job a, h1 -> h3) can use both spines; leaf1 -> leaf3 (job b, h2 -> h5)
    only spine1 (leaf3-spine2 is down). Hosts 20 Mbit/s, spine links 10, 1 MB each."""
    f = build_fabric(FabricSpec(2, 3, 2, 20, 10, failed_links=(("leaf3", "spine2"),)))
    plans = plan_jobs([JobSpec("a", Collective.FLOWS, [["h1", "h3"]], 1_000_000),
                       JobSpec("b", Collective.FLOWS, [["h2", "h5"]], 1_000_000)])
    return f, plans


def test_per_packet_spraying_is_the_fluid_even_split():
    """One flow over two 5 Mbit/s spines, hosts at 10: 0.8 s, as two sprayed subflows."""
    f = build_fabric(FabricSpec(2, 2, 2, 10, 5))
    plans, _ = _plan(f, 1)
    assert predict(f, plans, None, spray=True).jobs["f"].cct_s == pytest.approx([0.8])


def test_a_sprayed_flow_moves_at_the_rate_of_its_busiest_path():
    """Sprayed per packet, a puts half its rate on each spine: leaf1 -> spine1 carries a/2 + b,
    so max-min gives a = b = 20/3 Mbit/s (1.2 s for 1 MB). As two uncoupled subflows (spray
    K = 2) a's part on spine2 runs alone at 10: a = 5 + 10 = 15, b = 5."""
    f, plans = _two_jobs_one_cut_path()
    packet = predict(f, plans, None, spray=True)
    assert packet.jobs["a"].cct_s == pytest.approx([1.2])
    assert packet.jobs["b"].cct_s == pytest.approx([1.2])
    assert packet.jobs["a"].conn_rates_mbps()[0] == pytest.approx(20 / 3)
    sub = plan_jobs([JobSpec("a", Collective.FLOWS, [["h1", "h3"]], 1_000_000, subflows=2),
                     JobSpec("b", Collective.FLOWS, [["h2", "h5"]], 1_000_000)])
    conns = [c for p in sub for c in p.connections]
    rates = predict(f, sub, route("spray", f, conns, seed=1).path_of).jobs["a"].conn_rates_mbps()
    assert sorted(rates.values()) == pytest.approx([5.0, 10.0])


def test_sprayed_flows_follow_the_fabrics_events():
    """A spine fails at 0.4 s under one 1 MB flow sprayed over two 5 Mbit/s spines: 0.5 MB at
    10 Mbit/s, then 0.5 MB at 5: 1.2 s."""
    from experiments.config import Event
    from experiments.routes import ControllerRoutes
    f = build_fabric(FabricSpec(2, 2, 2, 10, 5))
    plans, conns = _plan(f, 1)
    routes = ControllerRoutes("ecmp", f, conns, 0, [Event(0.4, "fail_spine", ("spine2",))])
    got = predict(f, plans, None, router=routes, spray=True).jobs["f"].cct_s
    assert got == pytest.approx([1.2])


def test_only_the_model_sprays_per_packet():
    from experiments.config import ConfigError, parse
    from experiments.runner import check_emulable
    doc = {"name": "t", "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 2,
                                   "host_link_mbps": 10, "spine_link_mbps": 10},
           "jobs": [{"name": "a", "collective": "flows", "groups": [["h1", "h3"]],
                     "size_bytes": 1000}]}
    exp = parse({**doc, "routing": ["spray", "spray@packet"]})
    with pytest.raises(ConfigError, match="select groups pick one bucket per flow"):
        check_emulable(exp)
    with pytest.raises(ConfigError, match="only spray has a per-packet form"):
        parse({**doc, "routing": ["ilp@packet"]})

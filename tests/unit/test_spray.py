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

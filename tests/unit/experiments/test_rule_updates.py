"""Live rule updates in order: a flow moved in flight on three tiers meets its pin wherever
its leaf sends it (the switches above the leaves change first, then the leaves), and the
pins it left stay one more update for the packets still queued towards them."""
from __future__ import annotations

from pathlib import Path

import experiments.controller as controller_mod
from experiments.config import parse
from experiments.routing_entry import RoutingEntry
from traffic.collectives import plan_jobs


def test_upper_switches_first_then_leaves_and_old_pins_held_one_update(monkeypatch, tmp_path):
    calls: list[dict] = []
    monkeypatch.setattr(controller_mod, "apply_lines",
                        lambda lines, out, label: calls.append(lines))
    monkeypatch.setattr(controller_mod, "install", lambda rules, out: {})
    exp = parse({"name": "t", "fabric": {"topology": "fat-tree", "k": 4, "host_link_mbps": 10,
                                         "fabric_link_mbps": 10},
                 "jobs": [{"name": "a", "collective": "flows",
                           "groups": [["h1", "h5"], ["h2", "h6"], ["h3", "h7"]],
                           "size_bytes": 1000}],
                 "routing": ["greedy"]})
    plans = plan_jobs(exp.jobs)
    c = controller_mod.Controller(None, exp.fabric, RoutingEntry.parse("greedy"), plans, 1,
                                  Path(tmp_path))
    c.install_initial()
    c.jobs_started(["a"], 0.0)
    leaves = set(exp.fabric.leaves)
    up, down = calls[-2], calls[-1]
    assert up and all(sw not in leaves for sw in up)
    assert down and all(sw in leaves for sw in down)
    # move one flow to another path by hand: its old agg pin is held, not deleted
    cid = plans[0].connections[0].conn_id
    old = c.policy.assignment[cid]
    other = next(p for p in exp.fabric.switch_paths(old[0], old[-1]) if p[1] != old[1])
    c.policy.assignment[cid] = other
    c._apply("move")
    up, down = calls[-2], calls[-1]
    match = f"nw_src={exp.fabric.ip_of('h1')},nw_dst={exp.fabric.ip_of('h5')}"
    new_pin = [ln for ln in up.get(other[1], []) if match in ln]
    assert new_pin and f"output:{exp.fabric.port(other[1], other[2])}" in new_pin[0]
    assert not any(match in ln for ln in up.get(old[1], []))            # the old pin held
    c._apply("again")                                                  # the next update
    released = [ln for ln in calls[-2].get(old[1], []) if match in ln]
    assert released and "group:" in released[0]                         # back to counting

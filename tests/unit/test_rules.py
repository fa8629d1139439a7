"""Routing emits rule records; the records say exactly what each switch must do."""
from routing import route
from routing.rules import (COOKIE_BASE, FlowRule, GroupRule, bundle_text, by_switch,
                           rules_for)
from testbed.fabric import FabricSpec, build_fabric
from traffic.collectives import Collective, JobSpec, plan_jobs


def setup():
    f = build_fabric(FabricSpec(3, 3, 2, 10, 10, failed_spines=("spine3",)))
    plans = plan_jobs([JobSpec("r", Collective.ALLREDUCE, [["h1", "h3", "h5", "h2"]], 4000)])
    conns = [c for p in plans for c in p.connections]
    return f, conns


def test_ecmp_groups_hash_over_live_uplinks_only():
    f, conns = setup()
    rules = rules_for(f, conns, "ecmp", route("ecmp", f, conns).spine_of)
    groups = [r for r in rules if isinstance(r, GroupRule)]
    assert len(groups) == 3
    for g in groups:
        assert g.ports == (f.port(g.switch, "spine1"), f.port(g.switch, "spine2"))
    assert not any(r.switch == "spine3" for r in rules)
    assert not any(isinstance(r, FlowRule) and r.switch.startswith("leaf") and r.priority == 200
                   for r in rules)


def test_static_rules_pin_each_inter_leaf_flow_at_its_source_leaf():
    f, conns = setup()
    plan = route("ilp", f, conns)
    rules = rules_for(f, conns, "ilp", plan.spine_of)
    pins = {r.cookie - COOKIE_BASE: r for r in rules
            if isinstance(r, FlowRule) and r.switch.startswith("leaf") and r.priority == 200}
    inter = [c for c in conns if f.leaf_of(c.src) != f.leaf_of(c.dst)]
    assert set(pins) == {c.conn_id for c in inter}
    for c in inter:
        r = pins[c.conn_id]
        assert r.switch == f.leaf_of(c.src)
        assert r.actions == f"output:{f.port(r.switch, plan.spine_of[c.conn_id])}"
        assert f"tp_src={c.src_port}" in r.match and f"tp_dst={c.dst_port}" in r.match


def test_bundle_wipes_then_adds_groups_before_flows():
    f, conns = setup()
    rules = by_switch(rules_for(f, conns, "ecmp", route("ecmp", f, conns).spine_of))["leaf1"]
    lines = bundle_text(rules).splitlines()
    assert lines[:2] == ["flow delete", "group delete group_id=all"]
    first_flow = next(i for i, l in enumerate(lines) if l.startswith("flow add"))
    assert all(l.startswith("group add") for l in lines[2:first_flow])
    assert "selection_method=hash" in lines[2]

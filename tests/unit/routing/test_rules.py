"""Routing emits rule records; the records say exactly what each switch must do."""
from routing import route
from routing.host_enforced import (PLANNED_PORT_FLAG, check_port_plan, spine_of_port,
                                   with_source_ports)
from routing.rules import COOKIE_BASE, port_rules, rules_for
from testbed.fabric import FabricSpec, build_fabric
from testbed.openflow import FlowRule, GroupRule, bundle_text, by_switch, diff_lines
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
    assert len(groups) == 3 * 2          # per leaf, one group per remote leaf
    for g in groups:
        assert g.ports == (f.port(g.switch, "spine1"), f.port(g.switch, "spine2"))
        assert f"watch_port:{g.ports[0]}" in g.ofctl()
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


def test_a_failed_link_leaves_only_the_groups_towards_its_leaf_without_that_spine():
    f = build_fabric(FabricSpec(3, 3, 2, 10, 10, failed_links=(("leaf3", "spine2"),)))
    groups = {(r.switch, r.group_id): r.ports for r in rules_for(f, [], "ecmp", {})
              if isinstance(r, GroupRule)}
    # towards leaf3 nobody may use spine2; leaf3 itself cannot use it at all
    assert groups[("leaf1", 3)] == (f.port("leaf1", "spine1"), f.port("leaf1", "spine3"))
    assert groups[("leaf1", 2)] == tuple(f.port("leaf1", s) for s in f.spines)
    assert groups[("leaf3", 1)] == (f.port("leaf3", "spine1"), f.port("leaf3", "spine3"))


def test_diff_touches_only_what_changed():
    f, conns = setup()
    a = route("ilp", f, conns).spine_of
    b = dict(a)
    moved = next(c for c in conns if a[c.conn_id] is not None)
    b[moved.conn_id] = "spine2" if a[moved.conn_id] == "spine1" else "spine1"
    old = rules_for(f, conns, "ilp", a)
    new = rules_for(f, conns, "ilp", b)
    lines = diff_lines(old, new)
    assert list(lines) == [f.leaf_of(moved.src)]
    (line,) = lines[f.leaf_of(moved.src)]
    assert line.startswith("flow add") and f"tp_src={moved.src_port}" in line
    assert diff_lines(new, new) == {}
    gone = diff_lines(old, [r for r in old if not isinstance(r, FlowRule)
                            or r.cookie != COOKIE_BASE + moved.conn_id])
    assert gone and all(l.startswith("flow delete_strict") for ls in gone.values() for l in ls)


def test_host_enforced_ports_select_the_planned_spine():
    f = build_fabric(FabricSpec(3, 4, 2, 10, 10, failed_spines=("spine2",)))
    plans = plan_jobs([JobSpec("r", Collective.ALLREDUCE, [["h1", "h3", "h5", "h7", "h2"]],
                               5000)])
    conns = [c for p in plans for c in p.connections]
    plan = route("ilp", f, conns)
    ported = with_source_ports(f, plans, plan.path_of)
    new_conns = [c for p in ported for c in p.connections]
    check_port_plan(f, new_conns, plan.path_of)
    assert len({c.src_port for c in new_conns}) == len(new_conns)
    for c in new_conns:
        if plan.spine_of[c.conn_id] is None:
            assert spine_of_port(f, c.src_port) is None      # intra-leaf: not flagged
    rules = [r for r in port_rules(f) if r.switch == "leaf1"]
    assert len(rules) == 2                                   # live spines only
    for r in rules:
        value, mask = (int(x, 16) for x in r.match.split("tp_src=")[1].split("/"))
        spine = f.spines[(value & ~PLANNED_PORT_FLAG) >> 13]   # 2 spine bits: 15 - 2
        assert r.actions == f"output:{f.port('leaf1', spine)}"
        assert mask == PLANNED_PORT_FLAG | 0b11 << 13
    # the connection index is in the low bits: the fair scheduler separates the flows
    from testbed.shaping import bucket_of
    planned = [c for c in new_conns if plan.spine_of[c.conn_id] is not None]
    assert len({bucket_of(c.src_port) for c in planned}) == len(planned)


def test_installer_dry_run_writes_bundles_and_commands_only(tmp_path):
    from testbed.installer import apply_lines, install
    f, conns = setup()
    rules = rules_for(f, conns, "ilp", route("ilp", f, conns).spine_of)
    stats = install(rules, tmp_path, dry_run=True)
    assert stats["switches"] == len({r.switch for r in rules}) and stats["dry_run"]
    text = (tmp_path / "leaf1.bundle").read_text()
    assert text.startswith("flow delete\ngroup delete group_id=all\n")
    cmds = (tmp_path / "commands.txt").read_text().splitlines()
    assert all(c.startswith("ovs-ofctl -O OpenFlow14 bundle ") for c in cmds)
    apply_lines({"leaf2": ["flow add priority=1,ip,actions=drop"]}, tmp_path, "e1",
                dry_run=True)
    assert (tmp_path / "e1-leaf2.bundle").read_text() == "flow add priority=1,ip,actions=drop\n"
    assert (tmp_path / "commands.txt").read_text().splitlines()[-1].endswith("e1-leaf2.bundle")


def test_every_group_a_rule_sends_to_exists_on_its_switch_after_a_failure():
    """clos3 with one core per plane: failing core1 (on two planes: plane 2's, core3) leaves
    agg1 (agg7) no way up, so it has no group to the other pods. The controller counts flows
    on the switches of the fabric without failures, and keeps their counters (what crossed
    before the failure); none may send to a group the switch no longer has (Open vSwitch
    refuses the whole bundle: OFPBAC_BAD_OUT_GROUP): such an agg's counters drop, the failed
    core's keep their port."""
    import dataclasses
    from tests.unit.testbed.test_planes import CLOS3
    for planes, core in ((1, "core1"), (2, "core3")):
        whole = build_fabric(dataclasses.replace(CLOS3, cores_per_plane=1, planes=planes))
        live = whole.changed(True, (core,))
        plans = plan_jobs([JobSpec("a", Collective.ALLTOALL, [["h1", "h5", "h9", "h3"]], 4000)])
        conns = plans[0].connections
        for name in ("ecmp", "greedy"):
            rules = rules_for(live, conns, name, route(name, live, conns).path_of,
                              counted_on=whole)
            groups = {(r.switch, r.group_id) for r in rules if isinstance(r, GroupRule)}
            sent = {(r.switch, int(r.actions[6:])) for r in rules
                    if isinstance(r, FlowRule) and r.actions.startswith("group:")}
            assert sent <= groups, (planes, name, sorted(sent - groups))
            counted: dict[str, set[str]] = {}
            for r in rules:
                if isinstance(r, FlowRule) and r.cookie >= COOKIE_BASE:
                    counted.setdefault(r.switch, set()).add(r.actions.split(":")[0])
            agg = "agg1" if planes == 1 else "agg7"   # no way up: its counters across pods drop
            assert counted[core] == {"output"} and counted[agg] == {"output", "drop"}

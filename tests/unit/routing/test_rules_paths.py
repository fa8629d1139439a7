"""Rules on any fabric, checked by walking a packet through them: ECMP groups reach the
destination along live shortest paths only, and a pinned flow takes exactly its planned path."""
import ipaddress

import pytest

from routing.rules import rules_for
from testbed.openflow import FlowRule, GroupRule, by_switch
from testbed.fabric import FabricSpec, build_fabric
from testbed.topologies import fat_tree_spec
from traffic.collectives import Collective, JobSpec, plan_jobs


def _matches(match: str, pkt: dict) -> bool:
    for part in match.split(",")[1:]:
        key, val = part.split("=")
        if key in ("nw_src", "nw_dst"):
            if ipaddress.ip_address(pkt[key]) not in ipaddress.ip_network(val, strict=False):
                return False
        elif "/" in val:
            v, m = (int(x, 0) for x in val.split("/"))
            if pkt[key] & m != v & m:
                return False
        elif pkt[key] != int(val, 0):
            return False
    return True


def walk(fabric, rules, pkt, src_host) -> list[list[str]]:
    """Every switch sequence the packet can take (each select group: every bucket)."""
    table = by_switch(rules)
    neighbour = {(u, fabric.port(u, v)): v for u, v in fabric.links if fabric.role(u) != "host"}

    def step(sw, seen):
        flows = [r for r in table.get(sw, []) if isinstance(r, FlowRule) and _matches(r.match, pkt)]
        assert flows, f"{sw} drops {pkt}"
        top = max(flows, key=lambda r: r.priority)
        kind, arg = top.actions.split(":")
        if kind == "group":
            g = next(r for r in table[sw] if isinstance(r, GroupRule) and r.group_id == int(arg))
            ports = g.ports
        else:
            ports = (int(arg),)
        out = []
        for port in ports:
            nxt = neighbour[sw, port]
            if fabric.role(nxt) == "host":
                out.append(seen + [sw, nxt])
            else:
                assert nxt not in seen, f"loop at {nxt}"
                out += step(nxt, seen + [sw])
        return out

    return step(fabric.leaf_of(src_host), [])


def pkt_of(fabric, c):
    return {"nw_src": fabric.ip_of(c.src), "nw_dst": fabric.ip_of(c.dst),
            "tp_src": c.src_port, "tp_dst": c.dst_port}


FABRICS = {
    "fat-tree-4": fat_tree_spec(4, 10, 10),
    "fat-tree-4-failed": fat_tree_spec(4, 10, 10, failed_switches=("core1", "agg6"),
                                       failed_links=(("leaf1", "agg2"), ("agg4", "core4"))),
    "clos3": FabricSpec(topology="clos3", pods=3, leaves_per_pod=2, aggs_per_pod=2,
                        cores_per_plane=3, hosts_per_leaf=1, host_link_mbps=10,
                        leaf_agg_mbps=10, agg_core_mbps=10),
    "leaf-spine": FabricSpec(3, 3, 2, 10, 10, failed_links=(("leaf2", "spine1"),)),
}


@pytest.mark.parametrize("name", FABRICS)
def test_ecmp_reaches_every_host_along_live_shortest_paths(name):
    f = build_fabric(FABRICS[name])
    hosts = f.hosts
    jobs = [JobSpec("a2a", Collective.ALLTOALL, [hosts], 1000)]
    conns = [c for p in plan_jobs(jobs) for c in p.connections]
    rules = rules_for(f, conns, "ecmp", {})
    for c in conns:
        walks = walk(f, rules, pkt_of(f, c), c.src)
        a, b = f.leaf_of(c.src), f.leaf_of(c.dst)
        assert {tuple(w[:-1]) for w in walks} == set(f.switch_paths(a, b)), c
        assert all(w[-1] == c.dst for w in walks)


@pytest.mark.parametrize("name", FABRICS)
def test_a_pinned_flow_takes_exactly_its_planned_path(name):
    f = build_fabric(FABRICS[name])
    jobs = [JobSpec("a2a", Collective.ALLTOALL, [f.hosts], 1000)]
    conns = [c for p in plan_jobs(jobs) for c in p.connections]
    plan = {}
    for i, c in enumerate(conns):   # a different candidate for each flow, cycling
        paths = f.switch_paths(f.leaf_of(c.src), f.leaf_of(c.dst))
        plan[c.conn_id] = paths[i % len(paths)] if c.src != c.dst and len(paths[0]) > 1 else None
    rules = rules_for(f, conns, "ilp", plan)
    for c in conns:
        walks = walk(f, rules, pkt_of(f, c), c.src)
        want = plan[c.conn_id]
        if want is not None:
            assert [tuple(w[:-1]) for w in walks] == [want], c


def test_aggregation_groups_hash_with_their_own_basis():
    f = build_fabric(fat_tree_spec(4, 10, 10))
    groups = [r for r in rules_for(f, [], "ecmp", {}) if isinstance(r, GroupRule)]
    agg = [g for g in groups if g.switch.startswith("agg")]
    assert agg and all(g.hash_basis == f.index_of(g.switch) for g in agg)
    assert "selection_method_param=1," in next(g for g in agg if g.switch == "agg1").ofctl()
    assert all(g.hash_basis == 0 for g in groups if g.switch.startswith("leaf"))


@pytest.mark.parametrize("name", ["fat-tree-4", "clos3", "leaf-spine"])
def test_host_enforced_ports_take_exactly_the_planned_path(name):
    """@host on any fabric: the source port's bits pick the uplink at the leaf and, going up
    across pods, at the agg; walking the packet through the rules follows the planned path."""
    from routing.host_enforced import check_port_plan, with_source_ports
    f = build_fabric(FABRICS[name])
    plans = plan_jobs([JobSpec("a2a", Collective.ALLTOALL, [f.hosts], 1000)])
    conns = [c for p in plans for c in p.connections]
    plan = {}
    for i, c in enumerate(conns):
        a, b = f.leaf_of(c.src), f.leaf_of(c.dst)
        paths = f.switch_paths(a, b)
        plan[c.conn_id] = None if a == b else paths[(i * 7) % len(paths)]
    ported = [c for p in with_source_ports(f, plans, plan) for c in p.connections]
    check_port_plan(f, ported, plan)
    rules = rules_for(f, ported, "ilp", plan, enforcement="host")
    assert not any(isinstance(r, FlowRule) and r.priority == 200 and r.switch.startswith("leaf")
                   for r in rules)
    for c in ported:
        walks = walk(f, rules, pkt_of(f, c), c.src)
        if plan[c.conn_id] is not None:
            assert [tuple(w[:-1]) for w in walks] == [plan[c.conn_id]], c

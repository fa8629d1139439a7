"""The hosts' side of planes in the emulator (routing/rules.py): each connection's data and
its ACKs leave by the port of one plane, the ACKs are counted where they enter a plane, and a
routing's run starts with the links an earlier routing's events left down brought back."""
from __future__ import annotations

from pathlib import Path

import experiments.controller as controller_mod
from experiments.config import parse
from experiments.routing_entry import RoutingEntry
from routing import route
from routing.rules import ACK_COOKIE_BASE, ack_counting_rules, ack_nic, host_rules, rules_for
from traffic.collectives import plan_jobs


def two_planes(pxn: bool, **extra) -> dict:
    return {"name": "t", "seed": 1,
            "fabric": {"topology": "rail-optimized", "nics_per_server": 4,
                       "servers_per_group": 4, "spines_per_group": 2, "host_link_mbps": 10,
                       "spine_link_mbps": 10, "nvlink_mbps": 90, "planes": 2},
            "jobs": [{"name": "x", "collective": "alltoall", "pxn": pxn, "size_bytes": 10 ** 6,
                      "hosts": ["h1", "h6", "h11", "h16"]}],
            "routing": ["greedy"], **extra}


def routed(doc: dict):
    exp = parse(doc)
    conns = [c for p in plan_jobs(exp.jobs) for c in p.connections]
    return exp, conns, route("greedy", exp.fabric, conns, seed=1).path_of


def test_a_connections_acks_leave_by_its_plane_at_the_nic_that_sends_them():
    for pxn in (False, True):
        exp, conns, path_of = routed(two_planes(pxn))
        f = exp.fabric
        rules = host_rules(f, conns, "greedy", path_of, 1)
        by_conn: dict[int, list] = {}
        for r in rules:
            by_conn.setdefault(r.conn_id, []).append(r)
        plane2 = [c for c in conns if f.plane_of(path_of[c.conn_id][0]) == 2]
        assert plane2 and set(by_conn) == {c.conn_id for c in plane2}
        for c in plane2:
            data, ack = by_conn[c.conn_id]
            assert data.plane == ack.plane == 2 and data.host == c.src
            assert ack.host == ack_nic(f, c)
            assert ack.match == (f"ipproto tcp sport {c.dst_port} dport {c.src_port} "
                                 f"to {f.ip_of(c.sender)}/32")
            assert ack.line() == f"rule add {ack.match} pref 1000 table 102"
        relayed = [c for c in conns if c.nvlink_from]
        assert bool(relayed) == pxn
        # under PXN the ACKs cross NVLink to the receiver's GPU on the sender's rail first
        assert all(ack_nic(f, c) != c.dst and f.same_server(ack_nic(f, c), c.dst)
                   for c in relayed)


def test_acks_are_counted_at_their_entry_leaf_in_every_plane_forwarded_as_before():
    exp, conns, path_of = routed(two_planes(False))
    f = exp.fabric
    acks = ack_counting_rules(f, conns)
    assert len(acks) == 2 * len(conns)            # one per connection per plane
    base = {(r.switch, r.match): r.actions for r in rules_for(f, [], "ecmp", {})
            if hasattr(r, "match")}
    for r in acks:
        c = next(c for c in conns if r.cookie == ACK_COOKIE_BASE + c.conn_id)
        plane = f.plane_of(r.switch)
        assert r.switch == f.leaf_at(c.dst, plane)
        assert f"nw_src={f.ip_of(c.dst)},nw_dst={f.ip_of(c.sender)}" in r.match
        assert f"tp_src={c.dst_port},tp_dst={c.src_port}" in r.match
        prefix = f.leaf_prefix(f.in_plane((f.leaf_of(c.sender),), 1)[0])
        assert r.actions == base[r.switch, f"ip,nw_dst={prefix}"]
    # plane 2 cut between leaf5 (h1's rail) and leaf6 (h6's): there its leaves drop them
    cut = parse({**two_planes(False), "fabric": {**two_planes(False)["fabric"], "failed_links": [
        ["leaf5", "spine4"], ["leaf6", "spine3"]]}})
    groups = {(r.switch, r.group_id) for r in rules_for(cut.fabric, [], "ecmp", {})
              if not hasattr(r, "match")}
    dropped = set()
    for r in ack_counting_rules(cut.fabric, conns):
        if r.actions == "drop":
            dropped.add(r.switch)
        else:
            assert not r.actions.startswith("group:") or (r.switch, int(r.actions[6:])) in groups
    assert dropped == {"leaf5", "leaf6"}
    one = parse({**two_planes(False), "fabric": {**two_planes(False)["fabric"], "planes": 1}})
    assert ack_counting_rules(one.fabric, conns) == []
    assert host_rules(one.fabric, conns, "greedy", path_of, 1) == []


class Links:
    """An emulator that only records set_link."""

    def __init__(self):
        self.calls: list[tuple[str, str, bool]] = []

    def set_link(self, u: str, v: str, up: bool) -> None:
        self.calls.append((u, v, up))


def test_each_routing_starts_with_the_links_the_events_touch_as_the_fabric_starts(tmp_path):
    exp = parse(two_planes(False, events=[{"at_s": 0.5, "fail_spine": "spine4"},
                                          {"at_s": 1.0, "fail_link": ["leaf1", "spine1"]}],
                           fabric={**two_planes(False)["fabric"],
                                   "failed_links": [["leaf2", "spine2"]]}))
    emu = Links()
    c = controller_mod.Controller(emu, exp.fabric, RoutingEntry.parse("greedy"),
                                  plan_jobs(exp.jobs), 1, Path(tmp_path))
    c.restore_links(exp.events)
    spine4 = {tuple(sorted((leaf, "spine4"))) for leaf in ("leaf5", "leaf6", "leaf7", "leaf8")}
    assert {(u, v) for u, v, _ in emu.calls} == spine4 | {("leaf1", "spine1")}
    assert all(up for *_, up in emu.calls)
    emu.calls.clear()
    exp2 = parse(two_planes(False, events=[{"at_s": 0.5, "restore_link": ["leaf2", "spine2"]}],
                            fabric={**two_planes(False)["fabric"],
                                    "failed_links": [["leaf2", "spine2"]]}))
    c2 = controller_mod.Controller(emu, exp2.fabric, RoutingEntry.parse("greedy"),
                                   plan_jobs(exp2.jobs), 1, Path(tmp_path))
    c2.restore_links(exp2.events)
    assert emu.calls == [("leaf2", "spine2", False)]      # failed from the start: down again


def test_host_enforced_ports_choose_the_plane_by_a_range_every_host_routes():
    from routing.host_enforced import (check_port_plan, path_of_port, plane_of_port,
                                       plane_ports, with_source_ports)
    from routing.rules import port_plane_rules, port_rules
    exp, conns, path_of = routed(two_planes(True))
    f = exp.fabric
    plans = with_source_ports(f, plan_jobs(exp.jobs), path_of, 7)
    ported = [c for p in plans for c in p.connections]
    check_port_plan(f, ported, path_of)
    lo, hi = plane_ports(f, 2)
    assert (lo, hi) == (0xC000, 0xFFFE)          # 2 planes: bit 14 is the plane
    planes = set()
    for c in ported:
        want = path_of[c.conn_id]
        plane = f.plane_of(want[0])
        planes.add(plane)
        assert plane_of_port(f, c.src_port) == plane and (lo <= c.src_port <= hi) == (plane == 2)
        if len(want) == 3:
            got = path_of_port(f, c.src_port, f.leaf_of(c.src), f.leaf_of(c.dst))
            assert got == tuple(want)
    assert planes == {1, 2}
    rules = port_plane_rules(f)
    assert host_rules(f, ported, "greedy", path_of, 1, "host") == rules
    assert {(r.host, r.match, r.plane) for r in rules} == {
        (h, f"ipproto tcp {d} {lo}-{hi}", 2) for h in f.hosts for d in ("sport", "dport")}
    # every plane's leaves read the spine field below the plane bit
    leaves = {r.switch for r in port_rules(f)}
    assert leaves == {s for s in f.switches if f.role(s) == "leaf"} and len(leaves) == 8
    assert all("/0x8000" not in r.match and "/0xa000" in r.match for r in port_rules(f))


def test_run_takes_planes_with_events_and_host_enforcement():
    from experiments.runner import check_emulable
    check_emulable(parse(two_planes(False, events=[{"at_s": 0.5, "fail_spine": "spine4"}])))
    check_emulable(parse(two_planes(False, routing=["greedy@host", "ecmp"])))


def test_learned_host_pairs_are_counted_in_every_plane_and_their_reverse_kept_apart():
    from experiments.config import ConfigError
    from experiments.runner import check_emulable
    from routing.rules import COOKIE_BASE
    from traffic.plans import Connection
    import pytest
    exp = parse(two_planes(False))
    f = exp.fabric
    ab, ba = (Connection(1 << 22, "x", "h1", "h6", 0, 0),
              Connection((1 << 22) + 1, "x", "h6", "h1", 0, 0))
    leaf = {c: [r for r in rules_for(f, [c], "greedy", {}) if r.switch.startswith("leaf")
                and getattr(r, "cookie", 0) == COOKIE_BASE + c.conn_id] for c in (ab, ba)}
    assert {r.switch for r in leaf[ab]} == {f.leaf_at("h6", 1), f.leaf_at("h6", 2)}
    path = {ab.conn_id: f.in_plane(("leaf1", "spine1", "leaf2"), 2)}
    alone = host_rules(f, [ab, ba], "greedy", path, 1)
    assert [(r.host, r.match, r.plane) for r in alone] == [
        ("h1", f"from {f.ip_of('h1')}/32 to {f.ip_of('h6')}/32", 2),
        ("h6", f"from {f.ip_of('h6')}/32 to {f.ip_of('h1')}/32", 2)]
    path[ba.conn_id] = ("leaf2", "spine1", "leaf1")       # its reverse placed on plane 1
    both = host_rules(f, [ab, ba], "greedy", path, 1)
    assert [(r.host, r.plane) for r in both] == [("h1", 2)]  # h6 -> h1 follows ba's plane
    check_emulable(parse(two_planes(False, demand="measured")))
    with pytest.raises(ConfigError, match="demand: measured on planes"):
        check_emulable(parse(two_planes(True, demand="measured")))

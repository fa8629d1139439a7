"""Rules are data: turn the fabric and a routing plan into OpenFlow rule records per switch.

Pure code; the records (FlowRule, GroupRule) are testbed/openflow.py's, and
`testbed/installer.py` is the one thin writer. A route is a switch path (see
routing/paths.py); every switch routes a leaf by its /24 (Fabric.leaf_prefix). What every
switch gets:

- leaf, priority 100: `ip,nw_dst=<local host>` -> that host's port;
- leaf, priority 20, one per remote leaf B: `ip,nw_dst=<B's /24>` -> group B, a select group
  hashing (ip_src, ip_dst, tcp_src, tcp_dst) over the uplinks that still lie on a live path to
  B, each bucket watching its uplink's liveness. This is ECMP as a routed fabric does it (a
  per-prefix next-hop set that a routing protocol shrinks when a link fails), and the fallback
  for traffic no plan names (the tiny reverse ACK streams);
- spine (leaf-spine), priority 100: a leaf's /24 -> the port to that leaf;
- agg (three tiers), priority 100: a leaf of its pod -> the port to it; priority 20, a leaf of
  another pod -> a select group over its cores that still reach it, hashing with the agg's own
  basis (selection_method_param = its index), so that it does not repeat the leaf's choice;
- core, priority 100: a leaf's /24 -> the port to its pod's agg of the core's plane;
- counting, priority 200, one per connection on every spine, agg and core it may cross: the
  5-tuple -> the same action as the prefix rule there, with cookie COOKIE_BASE + conn_id.
  They change no forwarding: they count the bytes of each flow per switch, so the path a flow
  really took can be read back on every tier (every routing);
- static routing only, priority 200, at every switch of the path that has a choice (the source
  leaf; across pods also the agg going up): the 5-tuple -> the port to the next switch of the
  planned path, with the same cookie (it replaces that switch's counting rule).

A *host pair* connection (both ports 0: a program's traffic, whose ports are ephemeral, or
what the controller learned between two hosts) is matched by `ip,nw_src,nw_dst` at priority
150 instead, below every 5-tuple rule; its destination leaf also gets a counting rule
(delivering to the host as it would anyway), from which the controller learns the demand
(`pair_counting_rules`).

On several planes (testbed/planes.py) every plane's switches get the rules plane 1's would,
a connection is counted in every plane, and the port it leaves its host by is a record too:
a HostRule, an `ip rule` in the namespace of the GPU whose NIC sends it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from testbed.fabric import Fabric
from testbed.openflow import FlowRule, GroupRule, Rule, rule_key
from testbed.planes import PLANE_RULE_PREF, plane_table
from testbed.servers import nvlink_mac
from traffic.collectives import Connection

from .host_enforced import (PLANNED_PORT_FLAG, PORT_RULE_PRIORITY, choice_fields, path_of_port,
                            plane_ports)
from .paths import Path

COOKIE_BASE = 0x1000000
#: The cookie base of the reverse-direction (ACK) counters on several planes
ACK_COOKIE_BASE = 0x2000000
#: The strategy the switches' select groups carry out themselves: no static rules
ECMP = "ecmp"


#: Priority of a 5-tuple connection's rules, and of a host pair's (below, so a 5-tuple wins)
FLOW_PRIORITY, PAIR_PRIORITY = 200, 150


def five_tuple_match(fabric: Fabric, c: Connection) -> str:
    """A connection's match: its sender's address (under PXN the GPU whose bytes the relay
    forwards), its receiver's, and its ports."""
    if c.host_pair:
        return f"ip,nw_src={fabric.ip_of(c.sender)},nw_dst={fabric.ip_of(c.dst)}"
    return (f"tcp,nw_src={fabric.ip_of(c.sender)},nw_dst={fabric.ip_of(c.dst)},"
            f"tp_src={c.src_port},tp_dst={c.dst_port}")


def priority_of(c: Connection) -> int:
    return PAIR_PRIORITY if c.host_pair else FLOW_PRIORITY


def cookie_of(conn_id: int) -> int:
    return COOKIE_BASE + conn_id


def leaf_prefix(fabric: Fabric, leaf: str) -> str:
    return fabric.leaf_prefix(leaf)


def as_path(fabric: Fabric, c: Connection, route: str | Path | None) -> Path | None:
    """A connection's route as a switch path: a leaf-spine route may be given by its spine."""
    if route is None or not isinstance(route, str):
        return route
    return (fabric.leaf_of(c.src), route, fabric.leaf_of(c.dst))


def _next_hops(fabric: Fabric, switch: str, dst_leaf: str, depth: int,
               src_leaves: list[str]) -> list[str]:
    """Distinct switches after `switch` (at position `depth` of the path) on the live paths
    from any of `src_leaves` to `dst_leaf` that pass through it, in path order."""
    hops: dict[str, None] = {}
    for a in src_leaves:
        for p in fabric.switch_paths(a, dst_leaf):
            if len(p) > depth + 1 and p[depth] == switch:
                hops[p[depth + 1]] = None
    return list(hops)


def _prefix_action(fabric: Fabric, switch: str, dst_leaf: str) -> str | None:
    """What `switch` (not a leaf) does with traffic to `dst_leaf`: output:<port>, group:<id>,
    or None when it cannot forward it."""
    role = fabric.role(switch)
    if role == "spine":
        return f"output:{fabric.port(switch, dst_leaf)}" if fabric.is_live(switch, dst_leaf) \
            else None
    if role == "core":
        plane = fabric.graph.nodes[switch]["plane"]
        agg = next(g for g in fabric.uplinks(dst_leaf) if fabric.graph.nodes[g]["plane"] == plane)
        return f"output:{fabric.port(switch, agg)}" if fabric.is_live(switch, agg) else None
    if fabric.pod_of(switch) == fabric.pod_of(dst_leaf):       # agg, own pod
        return f"output:{fabric.port(switch, dst_leaf)}" if fabric.is_live(switch, dst_leaf) \
            else None
    pod_leaves = [x for x in fabric.leaves if fabric.pod_of(x) == fabric.pod_of(switch)]
    return f"group:{fabric.index_of(dst_leaf)}" if _next_hops(
        fabric, switch, dst_leaf, 1, pod_leaves) else None


def base_rules(fabric: Fabric) -> list[Rule]:
    """Delivery to local hosts, prefix routes, and ECMP groups where a switch has a choice."""
    rules: list[Rule] = []
    for leaf in fabric.leaves:
        for h in fabric.graph.successors(leaf):
            if fabric.role(h) == "host":
                rules.append(FlowRule(leaf, 100, f"ip,nw_dst={fabric.ip_of(h)}",
                                      f"output:{fabric.port(leaf, h)}"))
        for dst in fabric.leaves:
            if dst == leaf:
                continue
            hops = list(dict.fromkeys(p[1] for p in fabric.switch_paths(leaf, dst)))
            uplinks = tuple(fabric.port(leaf, u) for u in hops)
            if uplinks:  # else the fabric has cut leaf off from dst: nothing can be routed
                gid = fabric.index_of(dst)
                rules.append(GroupRule(leaf, gid, uplinks))
                rules.append(FlowRule(leaf, 20, f"ip,nw_dst={leaf_prefix(fabric, dst)}",
                                      f"group:{gid}"))
    for nvs in fabric.nvswitches:       # NVLink: to each GPU's port by its MAC
        for h in fabric.graph.successors(nvs):
            node = fabric.graph.nodes[h]
            rules.append(FlowRule(nvs, 100, f"dl_dst={nvlink_mac(node['server'], node['gpu'])}",
                                  f"output:{fabric.port(nvs, h)}"))
    for sw in fabric.upper_switches:
        pod_leaves = [x for x in fabric.leaves if fabric.pod_of(x) == fabric.pod_of(sw)]
        for leaf in fabric.leaves:
            action = _prefix_action(fabric, sw, leaf)
            if action is None:
                continue
            if action.startswith("group:"):
                hops = _next_hops(fabric, sw, leaf, 1, pod_leaves)
                rules.append(GroupRule(sw, fabric.index_of(leaf),
                                       tuple(fabric.port(sw, c) for c in hops),
                                       hash_basis=fabric.index_of(sw)))
                rules.append(FlowRule(sw, 20, f"ip,nw_dst={leaf_prefix(fabric, leaf)}", action))
            else:
                rules.append(FlowRule(sw, 100, f"ip,nw_dst={leaf_prefix(fabric, leaf)}", action))
    return rules


def counting_rules(fabric: Fabric, conns: list[Connection],
                   on: Fabric | None = None) -> list[Rule]:
    """Per-connection counters on every switch above the leaves that the connection may
    cross in `on` (default `fabric`; the controller's is the fabric without failures),
    forwarding as `fabric`, the live one, does (unchanged). Where `fabric` cannot forward
    it, the counter stays (it holds what crossed before the failure) with `on`'s action if
    that is a port (a failed switch's ports remain), else dropping: the group it sent to is
    gone with the failure (Open vSwitch refuses a rule naming a group its switch lacks)."""
    on = on or fabric
    rules: list[Rule] = []
    for c in conns:
        a, b = on.leaf_of(c.src), on.leaf_of(c.dst)
        if a == b or on.same_server(c.src, c.dst):
            continue
        crossed = dict.fromkeys(sw for p in on.switch_paths(a, b) for sw in p[1:-1])
        for sw in crossed:
            action = _prefix_action(fabric, sw, b)
            if action is None and on is not fabric:
                kept = _prefix_action(on, sw, b)
                action = kept if kept is None or kept.startswith("output:") else "drop"
            if action is not None:
                rules.append(FlowRule(sw, priority_of(c), five_tuple_match(fabric, c), action,
                                      cookie_of(c.conn_id)))
    return rules


def pair_counting_rules(fabric: Fabric, pairs: list[Connection]) -> list[Rule]:
    """A counter at each host pair's destination leaf, delivering to the host as the leaf
    would anyway: the bytes the pair delivered (what a dropped packet's retransmission sends
    twice counts once)."""
    return [FlowRule(fabric.leaf_of(c.dst), PAIR_PRIORITY, five_tuple_match(fabric, c),
                     f"output:{fabric.port(fabric.leaf_of(c.dst), c.dst)}",
                     cookie_of(c.conn_id)) for c in pairs]


def static_rules(fabric: Fabric, conns: list[Connection],
                 path_of: dict[int, str | Path | None]) -> list[Rule]:
    """Pin each inter-leaf connection to its planned path at every switch with a choice."""
    rules: list[Rule] = []
    for c in conns:
        path = as_path(fabric, c, path_of.get(c.conn_id))
        if path is None or len(path) < 2:     # within one leaf (of its plane)
            continue
        fabric.host_path(c.src, c.dst, path)  # raises FabricError on a failed or unknown path
        choosers = path[:2] if len(path) == 5 else path[:1]   # leaf, and the agg going up
        for k, sw in enumerate(choosers):
            rules.append(FlowRule(sw, priority_of(c), five_tuple_match(fabric, c),
                                  f"output:{fabric.port(sw, path[k + 1])}", cookie_of(c.conn_id)))
    return rules


def port_rules(fabric: Fabric) -> list[Rule]:
    """Host-enforced routing (routing/host_enforced.py): per switch that chooses (leaves; aggs
    going up) and live uplink i, `tcp,tp_src=0x8000|i<<s/0x8000|mask<<s -> output to it`."""
    rules: list[Rule] = []
    for role, bits, shift in choice_fields(fabric):
        mask = PLANNED_PORT_FLAG | (((1 << bits) - 1) << shift)
        leaves = fabric.leaves + [s for s in fabric.plane_switches if fabric.role(s) == "leaf"]
        for sw in (leaves if role == "leaf" else fabric.aggs):
            for i, up in enumerate(fabric.uplinks(sw)):
                if fabric.is_live(sw, up):
                    rules.append(FlowRule(sw, PORT_RULE_PRIORITY,
                                          f"tcp,tp_src={PLANNED_PORT_FLAG | i << shift:#x}"
                                          f"/{mask:#x}", f"output:{fabric.port(sw, up)}"))
    return rules


def _per_plane(fabric: Fabric, make) -> list[Rule]:
    """`make(plane fabric, plane)`'s rules for every plane (testbed/planes.py), each on its own
    switches: plane p's fabric is named as plane 1, with plane 1's ports, so its rules are
    plane p's once renamed (the NVLink switches' once, from plane 1)."""
    out: list[Rule] = []
    for p in range(1, fabric.planes + 1):
        view = fabric.plane_fabric(p)
        nvs = set(view.nvswitches)
        out += [r if p == 1 else dataclasses.replace(r, switch=fabric.in_plane((r.switch,), p)[0])
                for r in make(view, p) if p == 1 or r.switch not in nvs]
    return out


def rules_for(fabric: Fabric, conns: list[Connection], strategy: str,
              path_of: dict[int, str | Path | None], enforcement: str = "switch",
              counted_on: Fabric | None = None) -> list[Rule]:
    """All rules of one routing. ECMP leaves the choice to the switches' hash; any other
    strategy is enforced either by static per-flow rules along the paths `path_of` names
    (enforcement "switch") or by the hosts' choice of source port (enforcement "host", the
    connections' src_port already chosen by routing/host_enforced.py). Counting rules go on the
    switches of `counted_on` (default: `fabric`); a static rule replaces a counting rule of the
    same match on its switch."""
    counted = counted_on or fabric
    if fabric.planes > 1:     # every plane's own; a connection counted in every plane
        pairs = [c for c in conns if c.host_pair]
        rules = (_per_plane(fabric, lambda view, _: base_rules(view))
                 + _per_plane(fabric, lambda view, p: counting_rules(
                     view, conns, counted.plane_fabric(p)))
                 + ack_counting_rules(fabric, conns)
                 + _per_plane(fabric, lambda view, _: pair_counting_rules(view, pairs)))
    else:
        rules = (base_rules(fabric) + counting_rules(fabric, conns, counted)
                 + pair_counting_rules(fabric, [c for c in conns if c.host_pair]))
    if strategy == ECMP:
        return rules
    if enforcement == "host":
        # an agg's counting rule (priority 200) would hide its port rule: there it forwards
        # as the flow's source port says, so the host alone still chooses the path
        ported = {c.conn_id: path_of_port(fabric, c.src_port, fabric.leaf_of(c.src),
                                          fabric.leaf_of(c.dst)) for c in conns
                  if not fabric.same_server(c.src, c.dst)}
        pins = [r for r in static_rules(fabric, conns, ported) if r.switch not in fabric.leaves]
        pinned = {rule_key(r) for r in pins}
        return [r for r in rules if rule_key(r) not in pinned] + pins + port_rules(fabric)
    pins = static_rules(fabric, conns, path_of)
    pinned = {rule_key(r) for r in pins}
    return [r for r in rules if rule_key(r) not in pinned] + pins


def pair_rules(fabric: Fabric, pairs: list[tuple[str, str]], spine: str,
               priority: int = 150) -> list[Rule]:
    """Pin all IPv4 traffic from host a to host b through `spine` (used by calibration, whose
    reference client iperf3 picks its own ports)."""
    rules: list[Rule] = []
    for a, b in pairs:
        leaf = fabric.leaf_of(a)
        fabric.path(a, b, spine)  # raises FabricError if the spine cannot carry it
        rules.append(FlowRule(leaf, priority,
                              f"ip,nw_src={fabric.ip_of(a)},nw_dst={fabric.ip_of(b)}",
                              f"output:{fabric.port(leaf, spine)}"))
    return rules


# -- planes: each connection's NIC port, chosen by its host -----------------------------------
@dataclass(frozen=True)
class HostRule:
    """A host's choice of NIC port for one connection: an `ip rule` in the namespace of the
    GPU whose NIC sends it (under PXN the relay), to plane `plane`'s table
    (testbed/planes.py); the connection's route leaves by that port."""

    host: str
    match: str      # ip rule selector, e.g. "ipproto tcp sport 40001 dport 5201 to 10.0.1.2/32"
    plane: int
    conn_id: int    # -1: a host's rule for every connection whose port says the plane

    def line(self, op: str = "add") -> str:
        return f"rule {op} {self.match} pref {PLANE_RULE_PREF} table {plane_table(self.plane)}"


def host_rules(fabric: Fabric, conns: list[Connection], strategy: str,
               path_of: dict[int, str | Path | None], seed: int,
               enforcement: str = "switch") -> list[HostRule]:
    """On several planes, two HostRules for each connection that leaves by a port other than
    the first: its data at the NIC that sends it, and its reverse direction (ACKs, the
    5-tuple swapped) at the NIC that sends those (`ack_nic`), both to the plane of its route,
    or under ECMP of the NIC's hash (routing/planes.py, the same as the model's), so that a
    connection stays in one plane both ways. Host-enforced, every host's port_plane_rules
    instead. None on one plane."""
    if fabric.planes == 1:
        return []
    if enforcement == "host":
        return port_plane_rules(fabric)
    plane = connection_planes(fabric, conns, strategy, path_of, seed)
    # a host pair's reverse is another pair's data when that pair is routed itself
    routed_pairs = {(c.src, c.dst) for c in conns if c.host_pair and c.conn_id in plane}
    out = []
    for c in conns:
        p = plane.get(c.conn_id, 1)
        if p == 1 or fabric.same_server(c.src, c.dst):     # NVLink's own route
            continue
        there, back = fabric.ip_of(c.dst), fabric.ip_of(c.sender)
        if c.host_pair:
            data, ack = f"from {back}/32 to {there}/32", f"from {there}/32 to {back}/32"
        else:
            data = f"ipproto tcp sport {c.src_port} dport {c.dst_port} to {there}/32"
            ack = f"ipproto tcp sport {c.dst_port} dport {c.src_port} to {back}/32"
        out.append(HostRule(c.src, data, p, c.conn_id))
        if not (c.host_pair and (c.dst, c.src) in routed_pairs):
            out.append(HostRule(ack_nic(fabric, c), ack, p, c.conn_id))
    return out


def port_plane_rules(fabric: Fabric) -> list[HostRule]:
    """Host-enforced routing on several planes (routing/host_enforced.py): on every host, per
    plane p > 1, what it sends from a port of p's range and what it sends to one (the ACKs of
    the connections it receives) leave by its port on plane p; relays forward them alike."""
    out = []
    for h in fabric.hosts:
        for p in range(2, fabric.planes + 1):
            lo, hi = plane_ports(fabric, p)
            out += [HostRule(h, f"ipproto tcp sport {lo}-{hi}", p, -1),
                    HostRule(h, f"ipproto tcp dport {lo}-{hi}", p, -1)]
    return out


def connection_planes(fabric: Fabric, conns: list[Connection], strategy: str,
                      path_of: dict[int, str | Path | None], seed: int) -> dict[int, int]:
    """conn_id -> the plane its host sends it by: its route's, or under ECMP the NIC's hash
    (connections without a route, e.g. not placed yet, are left out: port 1)."""
    if strategy == ECMP:
        from .planes import choose_planes
        return choose_planes(ECMP, fabric, conns, seed)
    return {c.conn_id: fabric.plane_of(r[0]) for c in conns
            if (r := path_of.get(c.conn_id)) and not isinstance(r, str)}


def ack_nic(fabric: Fabric, c: Connection) -> str:
    """The GPU whose NIC sends connection c's reverse direction: under PXN (c relayed) the
    receiver's relay towards the sender when they sit on different rails, else the
    receiver."""
    if c.nvlink_from and (r := fabric.server_map.relay(c.dst, c.sender)) is not None:
        return r
    return c.dst


def ack_counting_rules(fabric: Fabric, conns: list[Connection]) -> list[Rule]:
    """On several planes, a counter of each connection's reverse direction (its ACKs) at the
    leaf where they enter each plane, forwarding as that leaf's prefix rule of the live
    `fabric` does (cookie ACK_COOKIE_BASE + conn_id): the plane its ACKs took, read back as
    the data's is from the spines."""
    def make(view: Fabric, _plane: int) -> list[Rule]:
        rules: list[Rule] = []
        for c in conns:
            if c.host_pair or view.same_server(c.src, c.dst):
                continue
            leaf, to = view.leaf_of(ack_nic(view, c)), view.leaf_of(c.sender)
            if to == leaf:
                action = f"output:{view.port(leaf, c.sender)}"
            elif view.switch_paths(leaf, to):
                action = f"group:{view.index_of(to)}"
            else:       # the plane cut between them: no prefix rule, the leaf drops it
                action = "drop"
            rules.append(FlowRule(leaf, FLOW_PRIORITY, five_tuple_match(view, reverse(c)),
                                  action, ACK_COOKIE_BASE + c.conn_id))
        return rules
    return _per_plane(fabric, make) if fabric.planes > 1 else []


def reverse(c: Connection) -> Connection:
    """Connection c's reverse direction (its ACKs) as a connection record: from the receiver
    to the sending GPU, the ports swapped."""
    return dataclasses.replace(c, src=c.dst, dst=c.sender, src_port=c.dst_port,
                               dst_port=c.src_port, nvlink_from="")

"""Rules are data: turn the fabric and a routing plan into OpenFlow rule records per switch.

Pure code; `testbed/installer.py` is the one thin writer. What every switch gets:

- leaf, priority 100: `ip,nw_dst=<local host>` -> that host's port;
- leaf, priority 20, one per remote leaf B: `ip,nw_dst=10.0.<B>.0/24` -> group B, a select
  group hashing (ip_src, ip_dst, tcp_src, tcp_dst) over the uplinks to the spines that can
  still reach B, each bucket watching its uplink's liveness. This is ECMP as a routed fabric
  does it (a per-prefix next-hop set that a routing protocol shrinks when a link fails), and
  the fallback for traffic no plan names (the tiny reverse ACK streams);
- spine, priority 100: `ip,nw_dst=10.0.<l>.0/24` -> the port to leaf l;
- spine, priority 200, one per planned connection: the connection's 5-tuple -> the same port
  as the prefix rule, with cookie COOKIE_BASE + conn_id. These change no forwarding: they count
  the bytes of each flow, so the spine a flow really crossed can be read back (both routings);
- static routing only, leaf priority 200, one per inter-leaf connection at its source leaf:
  the 5-tuple -> the uplink of the planned spine, with the same cookie.
"""
from __future__ import annotations

from dataclasses import dataclass

from testbed.fabric import Fabric
from traffic.collectives import Connection

COOKIE_BASE = 0x1000000
ECMP_HASH_FIELDS = "ip_src,ip_dst,tcp_src,tcp_dst"


@dataclass(frozen=True)
class FlowRule:
    switch: str
    priority: int
    match: str            # ovs-ofctl match syntax, e.g. "ip,nw_dst=10.0.1.1"
    actions: str          # e.g. "output:3"
    cookie: int = 0

    def ofctl(self) -> str:
        return (f"flow add cookie={self.cookie:#x},priority={self.priority},{self.match},"
                f"actions={self.actions}")


@dataclass(frozen=True)
class GroupRule:
    switch: str
    group_id: int
    ports: tuple[int, ...]  # select group: one bucket per output port, watching that port

    def ofctl(self, op: str = "add") -> str:
        buckets = ",".join(f"bucket=watch_port:{p},output:{p}" for p in self.ports)
        return (f"group {op} group_id={self.group_id},type=select,selection_method=hash,"
                f"fields({ECMP_HASH_FIELDS}),{buckets}")


Rule = FlowRule | GroupRule


def five_tuple_match(fabric: Fabric, c: Connection) -> str:
    return (f"tcp,nw_src={fabric.ip_of(c.src)},nw_dst={fabric.ip_of(c.dst)},"
            f"tp_src={c.src_port},tp_dst={c.dst_port}")


def cookie_of(conn_id: int) -> int:
    return COOKIE_BASE + conn_id


def leaf_prefix(fabric: Fabric, leaf: str) -> str:
    return f"10.0.{fabric.index_of(leaf)}.0/24"


def base_rules(fabric: Fabric) -> list[Rule]:
    """Delivery to local hosts, spine prefix routes, and per remote leaf an ECMP group."""
    rules: list[Rule] = []
    for leaf in fabric.leaves:
        for h in fabric.graph.successors(leaf):
            if fabric.graph.nodes[h]["role"] == "host":
                rules.append(FlowRule(leaf, 100, f"ip,nw_dst={fabric.ip_of(h)}",
                                      f"output:{fabric.port(leaf, h)}"))
        for dst in fabric.leaves:
            if dst == leaf:
                continue
            uplinks = tuple(fabric.port(leaf, s) for s in fabric.usable_spines(leaf, dst))
            if uplinks:  # else the fabric has cut leaf off from dst: nothing can be routed
                gid = fabric.index_of(dst)
                rules.append(GroupRule(leaf, gid, uplinks))
                rules.append(FlowRule(leaf, 20, f"ip,nw_dst={leaf_prefix(fabric, dst)}",
                                      f"group:{gid}"))
    for s in fabric.spines:
        for leaf in fabric.leaves:
            if fabric.is_live(s, leaf):
                rules.append(FlowRule(s, 100, f"ip,nw_dst={leaf_prefix(fabric, leaf)}",
                                      f"output:{fabric.port(s, leaf)}"))
    return rules


def counting_rules(fabric: Fabric, conns: list[Connection]) -> list[Rule]:
    """Per-connection counters on every live spine (forwarding unchanged)."""
    rules: list[Rule] = []
    for c in conns:
        a, b = fabric.leaf_of(c.src), fabric.leaf_of(c.dst)
        if a == b:
            continue
        for s in fabric.usable_spines(a, b):
            rules.append(FlowRule(s, 200, five_tuple_match(fabric, c),
                                  f"output:{fabric.port(s, b)}", cookie_of(c.conn_id)))
    return rules


def static_rules(fabric: Fabric, conns: list[Connection],
                 spine_of: dict[int, str | None]) -> list[Rule]:
    """Pin each inter-leaf connection to its planned spine at its source leaf."""
    rules: list[Rule] = []
    for c in conns:
        s = spine_of.get(c.conn_id)
        if s is None:
            continue
        a = fabric.leaf_of(c.src)
        fabric.path(c.src, c.dst, s)  # raises FabricError on a failed or unknown spine
        rules.append(FlowRule(a, 200, five_tuple_match(fabric, c), f"output:{fabric.port(a, s)}",
                              cookie_of(c.conn_id)))
    return rules


def host_enforced_rules(fabric: Fabric) -> list[Rule]:
    """Per leaf, one masked source-port rule per spine (see routing/host_enforced.py)."""
    from .host_enforced import port_rules  # local import: host_enforced builds on this module
    return port_rules(fabric)


def rules_for(fabric: Fabric, conns: list[Connection], strategy: str,
              spine_of: dict[int, str | None], enforcement: str = "switch",
              counted_on: Fabric | None = None) -> list[Rule]:
    """All rules of one routing. ECMP leaves the choice to the switches' hash; any other
    strategy is enforced either by static per-flow rules at the source leaves for the
    connections `spine_of` names (enforcement "switch") or by the hosts' choice of source port
    (enforcement "host", the connections' src_port already chosen by routing/host_enforced.py).
    Counting rules go on the spines of `counted_on` (default: `fabric`)."""
    rules = base_rules(fabric) + counting_rules(counted_on or fabric, conns)
    if strategy == "ecmp":
        return rules
    if enforcement == "host":
        return rules + host_enforced_rules(fabric)
    return rules + static_rules(fabric, conns, spine_of)


def rule_key(r: Rule) -> tuple:
    if isinstance(r, GroupRule):
        return ("group", r.switch, r.group_id)
    return ("flow", r.switch, r.priority, r.match)


def diff_lines(old: list[Rule], new: list[Rule]) -> dict[str, list[str]]:
    """Per switch, the bundle lines that turn `old` into `new` and touch nothing else:
    new and changed groups first, then flow deletions and additions, then group deletions.
    Unchanged rules keep their counters."""
    before = {rule_key(r): r for r in old}
    after = {rule_key(r): r for r in new}
    out: dict[str, list[list[str]]] = {}

    def put(switch: str, phase: int, line: str) -> None:
        out.setdefault(switch, [[], [], []])[phase].append(line)

    for k, r in after.items():
        if isinstance(r, GroupRule) and before.get(k) != r:
            put(r.switch, 0, r.ofctl("add" if k not in before else "modify"))
    for k, r in before.items():
        if isinstance(r, FlowRule) and k not in after:
            put(r.switch, 1, f"flow delete_strict priority={r.priority},{r.match}")
    for k, r in after.items():
        if isinstance(r, FlowRule) and before.get(k) != r:
            put(r.switch, 1, r.ofctl())
    for k, r in before.items():
        if isinstance(r, GroupRule) and k not in after:
            put(r.switch, 2, f"group delete group_id={r.group_id}")
    return {sw: a + b + c for sw, (a, b, c) in out.items()}


def by_switch(rules: list[Rule]) -> dict[str, list[Rule]]:
    out: dict[str, list[Rule]] = {}
    for r in rules:
        out.setdefault(r.switch, []).append(r)
    return out


def bundle_text(rules: list[Rule]) -> str:
    """One switch's `ovs-ofctl bundle` file: wipe flows and groups, then groups, then flows."""
    lines = ["flow delete", "group delete group_id=all"]
    lines += [r.ofctl() for r in rules if isinstance(r, GroupRule)]
    lines += [r.ofctl() for r in rules if isinstance(r, FlowRule)]
    return "\n".join(lines) + "\n"


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

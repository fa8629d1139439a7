"""Host-enforced routing: the host picks the path by its choice of TCP source port.

As in the paper's deployment (routes enforced at the hosts; for RDMA a flow's source port
selects its path through the switches' hashing), the switches keep no per-flow state. Here the
leaves forward a planned flow by a documented, deterministic function of its source port,
written as masked OpenFlow matches (priority 90: below local delivery, above ECMP):

    source port p, with PLANNED_PORT_FLAG (0x8000) set  ->  uplink to spine (p >> s) & mask,
    b = ceil(log2 spines), s = 15 - b, mask = 2^b - 1

so a leaf holds one rule per spine, whatever the number of flows. The controller gives the
flow of connection c towards spine index i (0-based) the source port
0x8000 | (i << s) | c, unique per connection; the connection index sits in the low bits, as in
ordinary mlfabric ports, so the fair link scheduler (testbed/shaping.py) separates the flows. Ports below 0x8000 (the agents' listen ports,
hence all ACK streams, and intra-leaf connections) never match and take ECMP.
"""
from __future__ import annotations

import dataclasses
import math

from testbed.fabric import Fabric
from traffic.collectives import Connection, JobPlan

from .base import RoutingError
from .rules import FlowRule, Rule

PLANNED_PORT_FLAG = 0x8000
PORT_RULE_PRIORITY = 90


def spine_bits(fabric: Fabric) -> int:
    return max(1, math.ceil(math.log2(len(fabric.spines))))


def spine_shift(fabric: Fabric) -> int:
    """Where the spine index starts in a planned source port (the bits below: connection)."""
    return 15 - spine_bits(fabric)


def port_rules(fabric: Fabric) -> list[Rule]:
    """Per leaf and live uplink: tcp,tp_src=0x8000|i<<s/0x8000|mask<<s -> output to spine i."""
    b, sh = spine_bits(fabric), spine_shift(fabric)
    mask = PLANNED_PORT_FLAG | (((1 << b) - 1) << sh)
    rules: list[Rule] = []
    for leaf in fabric.leaves:
        for i, s in enumerate(fabric.spines):
            if fabric.is_live(leaf, s):
                rules.append(FlowRule(leaf, PORT_RULE_PRIORITY,
                                      f"tcp,tp_src={PLANNED_PORT_FLAG | i << sh:#x}/{mask:#x}",
                                      f"output:{fabric.port(leaf, s)}"))
    return rules


def source_port(fabric: Fabric, conn_id: int, spine: str) -> int:
    """The source port that lands connection `conn_id` on `spine` (see module docstring)."""
    b, sh = spine_bits(fabric), spine_shift(fabric)
    if conn_id >= (1 << sh):
        raise RoutingError(f"host-enforced routing: connection {conn_id} exceeds the "
                           f"{1 << sh} source ports available with {b} spine bits")
    return PLANNED_PORT_FLAG | (fabric.spines.index(spine) << sh) | conn_id


def spine_of_port(fabric: Fabric, port: int) -> str | None:
    """What the leaves do with a source port: the spine it selects, or None (ECMP)."""
    if not port & PLANNED_PORT_FLAG:
        return None
    return fabric.spines[(port >> spine_shift(fabric)) & ((1 << spine_bits(fabric)) - 1)]


def with_source_ports(fabric: Fabric, plans: list[JobPlan],
                      spine_of: dict[int, str | None], offset: int = 0) -> list[JobPlan]:
    """Copies of `plans` whose inter-leaf connections carry the source port of their spine;
    `offset` shifts the connection slot so that successive runs use distinct ports."""
    out = []
    for p in plans:
        conns = [dataclasses.replace(c, src_port=source_port(fabric, c.conn_id + offset,
                                                             spine_of[c.conn_id]))
                 if spine_of.get(c.conn_id) is not None else c
                 for c in p.connections]
        out.append(dataclasses.replace(p, connections=conns))
    return out


def check_port_plan(fabric: Fabric, conns: list[Connection],
                    spine_of: dict[int, str | None]) -> None:
    """Every planned connection's source port selects its planned spine."""
    for c in conns:
        want = spine_of.get(c.conn_id)
        if want is not None and spine_of_port(fabric, c.src_port) != want:
            raise RoutingError(f"connection {c.conn_id}: port {c.src_port} selects "
                               f"{spine_of_port(fabric, c.src_port)}, planned {want}")

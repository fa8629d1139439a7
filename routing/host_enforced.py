"""Host-enforced routing: the host picks the path by its choice of TCP source port.

As in the paper's deployment (routes enforced at the hosts; for RDMA a flow's source port
selects its path through the switches' hashing), the switches keep no per-flow state. Every
switch that has a choice forwards a planned flow by a documented, deterministic function of its
source port, written as masked OpenFlow matches (priority 90: below local delivery and a pod's
own prefixes, above ECMP; routing/rules.py `port_rules`). A planned port is

    0x8000 | i_1 << s_1 | i_2 << s_2 | ... | connection index

with one field per tier that chooses, from bit 14 down: in a leaf-spine fabric one field, the
spine index (b = ceil(log2 spines) bits); in three tiers two, the plane (the leaf's uplink to
aggregation switch i_1) and the core within that plane (the agg's uplink i_2). A field of n
choices has max(1, ceil(log2 n)) bits, s_1 = 15 - b_1, s_2 = s_1 - b_2. So a leaf holds one rule
per uplink and an agg one per core, whatever the number of flows. The connection index sits in
the low bits, as in ordinary mlfabric ports, so the fair link scheduler (testbed/shaping.py)
separates the flows. Ports below 0x8000 (the agents' listen ports, hence all ACK streams, and
intra-leaf connections) never match and take ECMP.

On several planes (testbed/planes.py) the port's top field, from bit 14 down, is the plane
(p - 1, in max(1, ceil(log2 P)) bits), and the choice fields follow it. The plane is the
host's choice alone: each plane p > 1 is one contiguous range of ports, and every host holds
two `ip rule`s per such plane (routing/rules.py `port_plane_rules`): what it sends from a port
of the range, and what it sends to one (the ACKs of a connection it receives), leaves by its
port on plane p. The leaves of every plane hold the same port rules, which read the spine
field only.
"""
from __future__ import annotations

import dataclasses
import math

from testbed.fabric import Fabric
from traffic.collectives import Connection, JobPlan

from .base import RoutingError
from .paths import Path

PLANNED_PORT_FLAG = 0x8000
PORT_RULE_PRIORITY = 90


def plane_field(fabric: Fabric) -> tuple[int, int]:
    """(bits, shift) of the plane field of a planned port: (0, 15) on one plane."""
    if fabric.planes == 1:
        return 0, 15
    b = max(1, math.ceil(math.log2(fabric.planes)))
    return b, 15 - b


def plane_ports(fabric: Fabric, plane: int) -> tuple[int, int]:
    """The first and last planned source port of `plane` (several planes); never 65535,
    which the kernel's rule ranges cannot end at (source_port leaves it unused)."""
    bits, shift = plane_field(fabric)
    lo = PLANNED_PORT_FLAG | (plane - 1) << shift
    return lo, min(lo | ((1 << shift) - 1), 0xFFFE)


def plane_of_port(fabric: Fabric, port: int) -> int:
    """The plane a source port selects: its plane field, or 1 (one plane, or not planned)."""
    bits, shift = plane_field(fabric)
    if not bits or not port & PLANNED_PORT_FLAG:
        return 1
    return ((port >> shift) & ((1 << bits) - 1)) + 1


def choice_fields(fabric: Fabric) -> list[tuple[str, int, int]]:
    """(role that chooses, bits, shift) per field, from below the plane field down."""
    out, top = [], plane_field(fabric)[1]
    for role, n in fabric.choice_points:
        b = max(1, math.ceil(math.log2(n)))
        top -= b
        out.append((role, b, top))
    return out


def spine_bits(fabric: Fabric) -> int:
    return choice_fields(fabric)[0][1]


def spine_shift(fabric: Fabric) -> int:
    """Where the first choice starts in a planned source port (leaf-spine: the spine index)."""
    return choice_fields(fabric)[0][2]


def conn_bits(fabric: Fabric) -> int:
    """Bits left for the connection index below the choice fields."""
    return choice_fields(fabric)[-1][2]


def choices_of_path(fabric: Fabric, path: Path) -> list[int]:
    """The index each choosing switch takes on `path` (0-based): the position of the next
    switch among its uplinks while the path goes up, 0 for a choice it does not reach."""
    ups = len(path) // 2       # switches that choose an uplink: up to the path's top
    return [fabric.uplinks(path[k]).index(path[k + 1]) if k < ups else 0
            for k in range(len(fabric.choice_points))]


def source_port(fabric: Fabric, conn_id: int, path: Path) -> int:
    """The source port that lands connection `conn_id` on `path` (see module docstring)."""
    low = conn_bits(fabric)
    slots = (1 << low) - (fabric.planes > 1)    # planes: port 65535 is in no rule's range
    if conn_id >= slots:
        raise RoutingError(f"host-enforced routing: connection {conn_id} exceeds the "
                           f"{slots} source ports left by the path bits")
    port = PLANNED_PORT_FLAG | conn_id | (fabric.plane_of(path[0]) - 1) << plane_field(fabric)[1]
    for (_, _, shift), i in zip(choice_fields(fabric), choices_of_path(fabric, path)):
        port |= i << shift
    return port


def path_of_port(fabric: Fabric, port: int, src_leaf: str, dst_leaf: str) -> Path | None:
    """The path the switches give a flow from src_leaf to dst_leaf (plane 1's) with this
    source port (None: not a planned port, so ECMP), whether or not its links are live; on
    several planes in the port's plane, and within one leaf that leaf alone there."""
    if not port & PLANNED_PORT_FLAG:
        return None
    if fabric.planes > 1:
        plane = plane_of_port(fabric, port)
        if plane > fabric.planes:
            return None
        src_leaf, dst_leaf = fabric.in_plane((src_leaf, dst_leaf), plane)
        if src_leaf == dst_leaf:
            return (src_leaf,)
    if src_leaf == dst_leaf:
        return None
    idx = [(port >> shift) & ((1 << b) - 1) for _, b, shift in choice_fields(fabric)]
    ups = fabric.uplinks(src_leaf)
    if idx[0] >= len(ups):
        return None
    if not fabric.has_pods:
        return (src_leaf, ups[idx[0]], dst_leaf)
    agg = ups[idx[0]]
    if fabric.pod_of(src_leaf) == fabric.pod_of(dst_leaf):
        return (src_leaf, agg, dst_leaf)
    cores = fabric.uplinks(agg)
    if idx[1] >= len(cores):
        return None
    plane = fabric.graph.nodes[agg]["plane"]
    agg2 = next(g for g in fabric.uplinks(dst_leaf) if fabric.graph.nodes[g]["plane"] == plane)
    return (src_leaf, agg, cores[idx[1]], agg2, dst_leaf)


def spine_of_port(fabric: Fabric, port: int) -> str | None:
    """Leaf-spine: what the leaves do with a source port: the spine it selects, or None."""
    if not port & PLANNED_PORT_FLAG:
        return None
    return fabric.spines[(port >> spine_shift(fabric)) & ((1 << spine_bits(fabric)) - 1)]


def with_source_ports(fabric: Fabric, plans: list[JobPlan],
                      path_of: dict[int, Path | None], offset: int = 0) -> list[JobPlan]:
    """Copies of `plans` whose inter-leaf connections carry the source port of their path;
    `offset` shifts the connection slot so that successive runs use distinct ports."""
    out = []
    for p in plans:
        conns = [dataclasses.replace(c, src_port=source_port(fabric, c.conn_id + offset,
                                                             path_of[c.conn_id]))
                 if path_of.get(c.conn_id) is not None else c
                 for c in p.connections]
        out.append(dataclasses.replace(p, connections=conns))
    return out


def check_port_plan(fabric: Fabric, conns: list[Connection],
                    path_of: dict[int, Path | None]) -> None:
    """Every planned connection's source port selects its planned path."""
    for c in conns:
        want = path_of.get(c.conn_id)
        if want is None:
            continue
        if len(want) == 1 or fabric.same_server(c.src, c.dst):   # planes: the port's plane
            got_plane = plane_of_port(fabric, c.src_port)
            if got_plane != fabric.plane_of(want[0]):
                raise RoutingError(f"connection {c.conn_id}: port {c.src_port} selects plane "
                                   f"{got_plane}, planned {fabric.plane_of(want[0])}")
            continue
        got = path_of_port(fabric, c.src_port, fabric.leaf_of(c.src), fabric.leaf_of(c.dst))
        if got != tuple(want):
            raise RoutingError(f"connection {c.conn_id}: port {c.src_port} selects "
                               f"{'/'.join(got or ('ECMP',))}, planned {'/'.join(want)}")

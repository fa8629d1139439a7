"""The leaf-spine fabric model: one networkx graph that routing, prediction and emulation share.

Pure data: no mininet, no root. A two-layer Clos with S spines, L leaves and H hosts per leaf::

        spine1    spine2   ...   spineS          every leaf has one uplink to every spine
          |  \\    /  |            |             (spine_link_mbps, each direction)
          |   \\  /   |            |
        leaf1     leaf2    ...   leafL
        / | \\     / | \\          / | \\         H hosts per leaf (host_link_mbps)
      h1 .. hH  hH+1 .. h2H     .. hL*H

Hosts are numbered leaf by leaf: with 4 hosts per leaf, h1..h4 sit on leaf1, h5..h8 on leaf2.
Every link is two directed edges, each with its own capacity; a failed spine or a failed
leaf-spine link is simply absent from the "live" view used for routing.

Port numbers (the OpenFlow port each edge leaves by) are part of the model, so that rules can be
written from it: on a leaf, port i (1..H) goes to its i-th host and port H+s to spine s; on a
spine, port l goes to leaf l.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import networkx as nx


class FabricError(ValueError):
    """A fabric description that cannot be built or routed."""


@dataclass(frozen=True)
class FabricSpec:
    """What the experiment YAML says about the fabric (rates in Mbit/s)."""

    spines: int
    leaves: int
    hosts_per_leaf: int
    host_link_mbps: float
    spine_link_mbps: float
    failed_spines: tuple[str, ...] = ()
    failed_links: tuple[tuple[str, str], ...] = ()  # (leafX, spineY) pairs, both directions


@dataclass(frozen=True)
class Fabric:
    """A built leaf-spine fabric; `graph` is a networkx.DiGraph with one edge per direction.

    Node attributes: role ('host'|'leaf'|'spine'), index (1-based), and for hosts leaf, ip.
    Edge attributes: capacity_mbps, port (egress OpenFlow port on the edge's source switch, or
    0 for a host's own NIC), live (False when the element is failed).
    """

    spec: FabricSpec
    graph: nx.DiGraph = field(compare=False, repr=False)

    # -- names -----------------------------------------------------------------------------
    @cached_property
    def hosts(self) -> list[str]:
        return [f"h{i}" for i in range(1, self.spec.leaves * self.spec.hosts_per_leaf + 1)]

    @cached_property
    def leaves(self) -> list[str]:
        return [f"leaf{i}" for i in range(1, self.spec.leaves + 1)]

    @cached_property
    def spines(self) -> list[str]:
        return [f"spine{i}" for i in range(1, self.spec.spines + 1)]

    @cached_property
    def live_spines(self) -> list[str]:
        failed = set(self.spec.failed_spines)
        return [s for s in self.spines if s not in failed]

    def leaf_of(self, host: str) -> str:
        return self.graph.nodes[host]["leaf"]

    def ip_of(self, host: str) -> str:
        return self.graph.nodes[host]["ip"]

    def index_of(self, node: str) -> int:
        return self.graph.nodes[node]["index"]

    def dpid_of(self, switch: str) -> str:
        """16-hex-digit datapath id: leaves 0x01LL.., spines 0x02SS.. (never derived from names)."""
        role = self.graph.nodes[switch]["role"]
        prefix = {"leaf": 1, "spine": 2}[role]
        return f"{prefix:02x}{self.index_of(switch):014x}"

    def port(self, src: str, dst: str) -> int:
        """OpenFlow port on switch `src` that leads to neighbour `dst`."""
        return self.graph.edges[src, dst]["port"]

    # -- liveness and paths ----------------------------------------------------------------
    def is_live(self, u: str, v: str) -> bool:
        return bool(self.graph.edges[u, v]["live"])

    def usable_spines(self, src_leaf: str, dst_leaf: str) -> list[str]:
        """Spines through which src_leaf can reach dst_leaf with every link up."""
        return [
            s for s in self.spines
            if self.is_live(src_leaf, s) and self.is_live(s, dst_leaf)
        ]

    def path(self, src_host: str, dst_host: str, spine: str | None) -> list[str]:
        """Node list of the path; spine must be None exactly when both hosts share a leaf."""
        a, b = self.leaf_of(src_host), self.leaf_of(dst_host)
        if a == b:
            if spine is not None:
                raise FabricError(f"{src_host}->{dst_host} stays on {a}: it takes no spine")
            return [src_host, a, dst_host]
        if spine is None:
            raise FabricError(f"{src_host}->{dst_host} crosses leaves: it needs a spine")
        if spine not in self.usable_spines(a, b):
            raise FabricError(f"{src_host}->{dst_host} cannot use {spine}: failed or unknown")
        return [src_host, a, spine, b, dst_host]

    def path_links(self, src_host: str, dst_host: str, spine: str | None) -> list[tuple[str, str]]:
        nodes = self.path(src_host, dst_host, spine)
        return list(zip(nodes, nodes[1:]))

    @cached_property
    def links(self) -> list[tuple[str, str]]:
        """Every directed link, in a fixed order (index = position)."""
        return list(self.graph.edges)

    @cached_property
    def link_index(self) -> dict[tuple[str, str], int]:
        return {e: i for i, e in enumerate(self.links)}

    def capacity_mbps(self, u: str, v: str) -> float:
        return self.graph.edges[u, v]["capacity_mbps"]

    def draw(self) -> str:
        """A short ASCII summary of this fabric, for logs and run folders."""
        s = self.spec
        lines = [
            "  ".join(self.spines),
            f"  (full mesh: every leaf to every spine, {s.spine_link_mbps:g} Mbit/s)",
            "  ".join(self.leaves),
            f"  ({s.hosts_per_leaf} hosts per leaf, {s.host_link_mbps:g} Mbit/s;"
            f" h1..h{s.hosts_per_leaf} on leaf1)",
        ]
        if s.failed_spines or s.failed_links:
            lines.append(f"  failed: spines {list(s.failed_spines)}, links {list(s.failed_links)}")
        return "\n".join(lines)


def host_ip(leaf_index: int, host_slot: int) -> str:
    """Host address: 10.0.<leaf>.<slot>/16, so that a spine routes a leaf by one /24 prefix."""
    return f"10.0.{leaf_index}.{host_slot}"


def build_fabric(spec: FabricSpec) -> Fabric:
    """Build and validate the graph for `spec`; raises FabricError on impossible input."""
    for name in ("spines", "leaves", "hosts_per_leaf"):
        if getattr(spec, name) < 1:
            raise FabricError(f"fabric.{name} must be a positive integer")
    if spec.hosts_per_leaf > 250 or spec.leaves > 250:
        raise FabricError("fabric.leaves and fabric.hosts_per_leaf must be at most 250 each")
    for name in ("host_link_mbps", "spine_link_mbps"):
        if not getattr(spec, name) > 0:
            raise FabricError(f"fabric.{name} must be positive")

    g = nx.DiGraph()
    H = spec.hosts_per_leaf
    spines = [f"spine{i}" for i in range(1, spec.spines + 1)]
    for si, s in enumerate(spines, start=1):
        g.add_node(s, role="spine", index=si)
    for li in range(1, spec.leaves + 1):
        leaf = f"leaf{li}"
        g.add_node(leaf, role="leaf", index=li)
        for slot in range(1, H + 1):
            hi = (li - 1) * H + slot
            h = f"h{hi}"
            g.add_node(h, role="host", index=hi, leaf=leaf, slot=slot, ip=host_ip(li, slot))
            g.add_edge(h, leaf, capacity_mbps=spec.host_link_mbps, port=0, live=True)
            g.add_edge(leaf, h, capacity_mbps=spec.host_link_mbps, port=slot, live=True)
        for si, s in enumerate(spines, start=1):
            g.add_edge(leaf, s, capacity_mbps=spec.spine_link_mbps, port=H + si, live=True)
            g.add_edge(s, leaf, capacity_mbps=spec.spine_link_mbps, port=li, live=True)

    for s in spec.failed_spines:
        if s not in spines:
            raise FabricError(f"fabric.failed_spines: unknown spine {s!r} (spine1..spine{len(spines)})")
        for leaf in g.predecessors(s):
            g.edges[leaf, s]["live"] = False
            g.edges[s, leaf]["live"] = False
    for pair in spec.failed_links:
        leaf, s = pair
        if (not g.has_edge(leaf, s) or g.nodes[leaf]["role"] != "leaf"
                or g.nodes[s]["role"] != "spine"):
            raise FabricError(f"fabric.failed_links: {list(pair)} is not a [leafX, spineY] link")
        g.edges[leaf, s]["live"] = False
        g.edges[s, leaf]["live"] = False
    fabric = Fabric(spec, g)
    for leaf in fabric.leaves:
        if not any(fabric.is_live(leaf, s) for s in fabric.spines):
            raise FabricError(f"fabric: failures isolate {leaf}; keep at least one live uplink")
    return fabric

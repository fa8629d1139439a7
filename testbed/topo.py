"""The fabric's graph as a topology kind builds it, in Mininet's manner: a kind's `build`
lays out its switches, hosts and links on a `Topo` (as Mininet's Topo.build calls addSwitch,
addHost and addLink), and records the structure routing reads from it (tiers, and the
switches that choose a path). What every kind shares lives here, once: host addresses, the
size bounds, and the failures marked on the built graph. Pure data (testbed/graph.py)."""
from __future__ import annotations

from typing import Sequence

from .fabric_spec import FabricError, FabricSpec
from .graph import DiGraph

#: The largest fabric the model builds: addresses hold 254 hosts per leaf, and 65,536 hosts
#: are far beyond the paper's 2,048 NICs while a graph of that size still builds in seconds.
MAX_HOSTS_PER_LEAF = 250
MAX_HOSTS = 65_536


def host_ip(leaf_index: int, host_slot: int) -> str:
    """Host address 10.<leaf / 256>.<leaf % 256>.<slot> (10.0.<leaf>.<slot> below 256 leaves),
    so that every switch routes a leaf by one /24 prefix."""
    return f"10.{leaf_index >> 8}.{leaf_index & 255}.{host_slot}"


class Topo:
    """A fabric's graph under construction: one directed edge per direction of a link.

    Node attributes: role, index (1-based within the role), and what the kind adds (pod,
    plane, up: the switches one tier up). Edge attributes: capacity_mbps, port (the egress
    port on the edge's source), live. Graph attributes (`structure`): tiers, choice_points,
    hosts (their count)."""

    def __init__(self) -> None:
        self.graph = DiGraph(hosts=0)

    def add_switch(self, name: str, role: str, index: int, **attrs) -> str:
        self.graph.add_node(name, role=role, index=index, **attrs)
        return name

    def add_host(self, index: int, leaf: str, slot: int, ip: str, **attrs) -> str:
        """Host h<index>, its NIC (port 0) on `leaf`'s port `slot`: the link is the caller's."""
        name = f"h{index}"
        self.graph.add_node(name, role="host", index=index, leaf=leaf, slot=slot, ip=ip,
                            **attrs)
        self.graph.graph["hosts"] += 1
        return name

    def add_link(self, u: str, v: str, rate_mbps: float, port_u: int, port_v: int) -> None:
        """A link of `rate_mbps` each direction, leaving u by port_u and v by port_v."""
        self.graph.add_edge(u, v, capacity_mbps=rate_mbps, port=port_u, live=True)
        self.graph.add_edge(v, u, capacity_mbps=rate_mbps, port=port_v, live=True)

    def structure(self, tiers: int, choice_points: Sequence[tuple[str, int]]) -> None:
        """What routing reads: 2 or 3 tiers, and (role, ways) of each switch on a path
        between leaves that chooses the next hop, from the source leaf up."""
        self.graph.graph.update(tiers=tiers, choice_points=tuple(choice_points))


def check_sizes(spec: FabricSpec, names: Sequence[str], max_leaves: int | None = None) -> None:
    """The bounds every kind shares: each of `names` (the spec's size fields) positive, at
    most MAX_HOSTS_PER_LEAF hosts per leaf (and `max_leaves` leaves), MAX_HOSTS hosts, rails
    of one leaf per NIC, positive rates; FabricError naming the key otherwise."""
    for name in names:
        if getattr(spec, name) < 1:
            raise FabricError(f"fabric.{name} must be a positive integer")
    if spec.hosts_per_leaf > MAX_HOSTS_PER_LEAF or (max_leaves and spec.leaves > max_leaves):
        raise FabricError("fabric.leaves and fabric.hosts_per_leaf must be at most 250 each")
    if spec.n_hosts > MAX_HOSTS:
        raise FabricError(f"fabric: {spec.n_hosts} hosts; at most {MAX_HOSTS}")
    per_pod = spec.leaves if spec.tiers == 2 else spec.leaves_per_pod
    if spec.nics_per_server and spec.nics_per_server != per_pod:
        raise FabricError(f"fabric: servers of {spec.nics_per_server} NICs need "
                          f"{spec.nics_per_server} leaves per pod (one per NIC), not {per_pod}")
    for name, rate in spec.rates_mbps().items():
        if not rate > 0:
            key = {"host": "host_link_mbps", "spine": "spine_link_mbps"}.get(name, f"{name}_mbps")
            raise FabricError(f"fabric.{key} must be positive")


def fail(g: DiGraph, spec: FabricSpec) -> None:
    """Mark failed switches and links not live (both directions)."""
    pods = g.graph["tiers"] == 3
    for s in spec.failed:
        if not pods and (s not in g or g.nodes[s]["role"] != "spine"):
            key = "failed_spines" if s in spec.failed_spines else "failed_switches"
            raise FabricError(f"fabric.{key}: unknown spine {s!r} "
                              f"(spine1..spine{spec.spines * spec.planes})")
        if s not in g or g.nodes[s]["role"] not in ("agg", "core", "spine"):
            raise FabricError(f"fabric.failed_switches: {s!r} is not an agg or core of this "
                              "fabric (leaves carry hosts and cannot fail here)")
        for nbr in list(g.successors(s)):
            g.edges[s, nbr]["live"] = False
            g.edges[nbr, s]["live"] = False
    for pair in spec.failed_links:
        u, v = pair
        if not pods and (not g.has_edge(u, v) or g.nodes[u]["role"] != "leaf"
                         or g.nodes[v]["role"] != "spine"):
            raise FabricError(f"fabric.failed_links: {list(pair)} is not a [leafX, spineY] link")
        if (not g.has_edge(u, v) or g.nodes[u]["role"] == "host"
                or g.nodes[v]["role"] == "host"):
            raise FabricError(f"fabric.failed_links: {list(pair)} is not a link between two "
                              "switches of this fabric")
        g.edges[u, v]["live"] = False
        g.edges[v, u]["live"] = False

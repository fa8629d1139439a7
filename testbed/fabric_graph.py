"""The fabric's graph, as testbed/fabric.py's build_fabric makes it from a FabricSpec: a Clos
of two tiers (`two_tier`: every leaf to every spine) or three (`three_tier`: pods of leaves
and aggs under planes of cores), hosts numbered leaf by leaf or server by server, the size
bounds every kind shares, and the failures marked on it. Pure data (networkx); the names,
ports and addresses are the ones testbed/fabric.py's docstring draws."""
from __future__ import annotations

import networkx as nx

from .fabric_spec import FabricError, FabricSpec


def host_ip(leaf_index: int, host_slot: int) -> str:
    """Host address 10.<leaf / 256>.<leaf % 256>.<slot> (10.0.<leaf>.<slot> below 256 leaves),
    so that every switch routes a leaf by one /24 prefix."""
    return f"10.{leaf_index >> 8}.{leaf_index & 255}.{host_slot}"


def add_link(g: nx.DiGraph, u: str, v: str, rate: float, port_u: int, port_v: int) -> None:
    g.add_edge(u, v, capacity_mbps=rate, port=port_u, live=True)
    g.add_edge(v, u, capacity_mbps=rate, port=port_v, live=True)


def host_index(spec: FabricSpec, li: int, slot: int) -> int:
    """Host number of `slot` on leaf `li`: leaf by leaf, or with servers NIC r of server `slot`
    of the leaf's pod, where the leaf is the pod's r-th (see the module docstring)."""
    H = spec.hosts_per_leaf
    if not spec.nics_per_server:
        return (li - 1) * H + slot
    P = spec.nics_per_server
    pod, r = divmod(li - 1, P)
    return (pod * H + slot - 1) * P + r + 1


def add_hosts(g: nx.DiGraph, leaf: str, li: int, spec: FabricSpec, **attrs) -> None:
    for slot in range(1, spec.hosts_per_leaf + 1):
        hi = host_index(spec, li, slot)
        if spec.nics_per_server:
            attrs["server"] = (hi - 1) // spec.nics_per_server + 1
        g.add_node(f"h{hi}", role="host", index=hi, leaf=leaf, slot=slot, ip=host_ip(li, slot),
                   **attrs)
        add_link(g, f"h{hi}", leaf, spec.host_link_mbps, 0, slot)


def two_tier(spec: FabricSpec) -> nx.DiGraph:
    g = nx.DiGraph()
    H = spec.hosts_per_leaf
    spines = [f"spine{i}" for i in range(1, spec.spines + 1)]
    for si, s in enumerate(spines, start=1):
        g.add_node(s, role="spine", index=si)
    for li in range(1, spec.leaves + 1):
        leaf = f"leaf{li}"
        g.add_node(leaf, role="leaf", index=li, up=spines)
        add_hosts(g, leaf, li, spec)
        for si, s in enumerate(spines, start=1):
            add_link(g, leaf, s, spec.spine_link_mbps, H + si, li)
    return g


def three_tier(spec: FabricSpec) -> nx.DiGraph:
    g = nx.DiGraph()
    H, P, A, C = spec.hosts_per_leaf, spec.leaves_per_pod, spec.aggs_per_pod, spec.cores_per_plane
    cores = {(plane, j): f"core{(plane - 1) * C + j}" for plane in range(1, A + 1)
             for j in range(1, C + 1)}
    for (plane, j), core in cores.items():
        g.add_node(core, role="core", index=(plane - 1) * C + j, plane=plane)
    for pod in range(1, spec.pods + 1):
        aggs = [f"agg{(pod - 1) * A + i}" for i in range(1, A + 1)]
        for i, agg in enumerate(aggs, start=1):
            g.add_node(agg, role="agg", index=(pod - 1) * A + i, pod=pod, plane=i,
                       up=[cores[i, j] for j in range(1, C + 1)])
            for j in range(1, C + 1):
                add_link(g, agg, cores[i, j], spec.agg_core_mbps, P + j, pod)
        for li_pod in range(1, P + 1):
            li = (pod - 1) * P + li_pod
            leaf = f"leaf{li}"
            g.add_node(leaf, role="leaf", index=li, pod=pod, up=aggs)
            add_hosts(g, leaf, li, spec, pod=pod)
            for i, agg in enumerate(aggs, start=1):
                add_link(g, leaf, agg, spec.leaf_agg_mbps, H + i, li_pod)
    return g


#: The largest fabric the model builds: addresses hold 254 hosts per leaf, and 65,536 hosts
#: are far beyond the paper's 2,048 NICs while a graph of that size still builds in seconds.
MAX_HOSTS_PER_LEAF = 250
MAX_HOSTS = 65_536


def check_sizes(spec: FabricSpec) -> None:
    names = (("spines", "leaves", "hosts_per_leaf") if spec.tiers == 2 else
             ("pods", "leaves_per_pod", "aggs_per_pod", "cores_per_plane", "hosts_per_leaf"))
    for name in names:
        if getattr(spec, name) < 1:
            raise FabricError(f"fabric.{name} must be a positive integer")
    if spec.hosts_per_leaf > MAX_HOSTS_PER_LEAF:
        raise FabricError("fabric.leaves and fabric.hosts_per_leaf must be at most 250 each")
    if spec.tiers == 2 and spec.leaves > 250:
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


def fail(g: nx.DiGraph, spec: FabricSpec) -> None:
    """Mark failed switches and links not live (both directions)."""
    for s in spec.failed:
        if spec.tiers == 2 and (s not in g or g.nodes[s]["role"] != "spine"):
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
        if spec.tiers == 2 and (not g.has_edge(u, v) or g.nodes[u]["role"] != "leaf"
                                or g.nodes[v]["role"] != "spine"):
            raise FabricError(f"fabric.failed_links: {list(pair)} is not a [leafX, spineY] link")
        if (not g.has_edge(u, v) or g.nodes[u]["role"] == "host"
                or g.nodes[v]["role"] == "host"):
            raise FabricError(f"fabric.failed_links: {list(pair)} is not a link between two "
                              "switches of this fabric")
        g.edges[u, v]["live"] = False
        g.edges[v, u]["live"] = False

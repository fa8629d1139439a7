"""Network planes (Alibaba HPN's dual plane): every NIC has one port per plane, and every plane
is its own copy of the leaves and spines, so that a flow stays in one plane end to end::

      plane 1: spine1 .. spineS                plane 2: spine(S+1) .. spine(2S)
               leaf1  .. leafL                          leaf(L+1) .. leaf(2L)
                   \\                                    /
                    h1 .. hN: port 1 (eth0) on plane 1, port 2 (eth2) on plane 2

Plane p (1-based) of a two-tier fabric copies plane 1: its leaf i is leaf((p-1) L + i), its
spine j is spine((p-1) S + j), each with plane 1's ports, and host port p joins plane p's copy
of the host's plane-1 leaf, at the same slot and host_link_mbps (a NIC of P ports has P times
one port's rate). The planes share no switch: which plane a flow takes is a routing choice
(routing/planes.py). Pure data; the links are added after plane 1's, so one plane is today's
graph, link for link.
"""
from __future__ import annotations

import dataclasses

import networkx as nx

from .fabric_spec import FabricError, FabricSpec

#: Planes per fabric: HPN builds 2; multi-plane designs split a NIC into at most 4 ports.
MAX_PLANES = 4
#: graph attribute of a switch of plane 2.. (plane 1's switches have none)
PLANE_KEY = "fabric_plane"
#: In the emulator a host sends a connection by port p > 1 through an `ip rule` of this
#: preference to routing table plane_table(p), whose one route leaves by that port.
PLANE_RULE_PREF = 1000


def plane_table(plane: int) -> int:
    """The host's routing table for its port on `plane` (100 + plane)."""
    return 100 + plane


def check_planes(spec: FabricSpec, possible: bool) -> None:
    """1..MAX_PLANES planes, more than one only where the kind can copy its tiers
    (`possible`: two tiers); FabricError naming the key otherwise."""
    if not 1 <= spec.planes <= MAX_PLANES:
        raise FabricError(f"fabric.planes: {spec.planes} is not in 1..{MAX_PLANES}")
    if spec.planes > 1 and not possible:
        raise FabricError("fabric.planes: only two-tier fabrics have planes here (leaf-spine, "
                          "rail-optimized with groups: 1); remove it or use one of those")


def host_port(plane: int) -> int:
    """The host's port (its interface eth<port>) on `plane`: 0 on plane 1, p on plane p > 1
    (port 1 is the GPU's NVLink port)."""
    return 0 if plane == 1 else plane


def add_planes(g: nx.DiGraph, spec: FabricSpec) -> None:
    """Planes 2..P as copies of plane 1's leaves and spines, with every host's port p."""
    L, S, H = spec.leaves, spec.spines, spec.hosts_per_leaf
    on_leaf = {(d["leaf"], d["slot"]): h for h, d in g.nodes(data=True) if d["role"] == "host"}
    for p in range(2, spec.planes + 1):
        spines = [f"spine{(p - 1) * S + j}" for j in range(1, S + 1)]
        for j, s in enumerate(spines, start=1):
            g.add_node(s, role="spine", index=(p - 1) * S + j, **{PLANE_KEY: p})
        for li in range(1, L + 1):
            leaf = f"leaf{(p - 1) * L + li}"
            g.add_node(leaf, role="leaf", index=(p - 1) * L + li, up=spines, **{PLANE_KEY: p})
            for slot in range(1, H + 1):
                h = on_leaf[f"leaf{li}", slot]
                _link(g, h, leaf, spec.host_link_mbps, host_port(p), slot)
            for j, s in enumerate(spines, start=1):
                _link(g, leaf, s, spec.spine_link_mbps, H + j, li)


def _link(g: nx.DiGraph, u: str, v: str, rate: float, port_u: int, port_v: int) -> None:
    g.add_edge(u, v, capacity_mbps=rate, port=port_u, live=True)
    g.add_edge(v, u, capacity_mbps=rate, port=port_v, live=True)


def plane_of(spec: FabricSpec, switch: str) -> int:
    """The plane (1-based) of a leaf or spine, read from its name."""
    role, i = ("leaf", int(switch[4:])) if switch.startswith("leaf") else ("spine",
                                                                         int(switch[5:]))
    return (i - 1) // (spec.leaves if role == "leaf" else spec.spines) + 1


def renamed(spec: FabricSpec, switch: str, plane: int) -> str:
    """`switch` (a leaf or spine of any plane) as the same switch of `plane`."""
    if switch.startswith("leaf"):
        return f"leaf{(int(switch[4:]) - 1) % spec.leaves + 1 + (plane - 1) * spec.leaves}"
    return f"spine{(int(switch[5:]) - 1) % spec.spines + 1 + (plane - 1) * spec.spines}"


def plane_spec(spec: FabricSpec, plane: int) -> FabricSpec:
    """Plane `plane` alone, named as plane 1 (a one-plane spec with that plane's failures):
    the fabric its flows are routed on."""
    def mine(name: str) -> bool:
        return plane_of(spec, name) == plane
    return dataclasses.replace(
        spec, planes=1,
        failed_spines=tuple(sorted((renamed(spec, s, 1) for s in spec.failed
                                    if mine(s)), key=lambda x: int(x[5:]))),
        failed_switches=(),
        failed_links=tuple((renamed(spec, a, 1), renamed(spec, b, 1))
                           for a, b in spec.failed_links if mine(a)))

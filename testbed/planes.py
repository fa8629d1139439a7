"""Network planes (Alibaba HPN's dual plane): every NIC has one port per plane, and every plane
is its own copy of the switches, so that a flow stays in one plane end to end::

      plane 1: spine1 .. spineS                plane 2: spine(S+1) .. spine(2S)
               leaf1  .. leafL                          leaf(L+1) .. leaf(2L)
                   \\                                    /
                    h1 .. hN: port 1 (eth0) on plane 1, port 2 (eth2) on plane 2

Plane p (1-based) copies plane 1: its switch i of a role is that role's switch (p-1) n + i,
n the role's count in one plane (leaves, spines; or leaves, aggs, cores on three tiers), with
plane 1's ports, and host port p joins plane p's copy of the host's plane-1 leaf, at the same
slot and host_link_mbps (a NIC of P ports has P times one port's rate). The kinds build the
copies (testbed/topologies/tiers.py) after plane 1, so one plane is the graph without planes,
link for link. The planes share no switch: which plane a flow takes is a routing choice
(routing/planes.py). Pure data.
"""
from __future__ import annotations

import dataclasses

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
    """1..MAX_PLANES planes, more than one only where the kind builds them (`possible`);
    FabricError naming the key otherwise."""
    if not 1 <= spec.planes <= MAX_PLANES:
        raise FabricError(f"fabric.planes: {spec.planes} is not in 1..{MAX_PLANES}")
    if spec.planes > 1 and not possible:
        raise FabricError(f"fabric.planes: a {spec.topology} has no planes here; remove it "
                          "or use leaf-spine, clos3 or rail-optimized")


def host_port(plane: int) -> int:
    """The host's port (its interface eth<port>) on `plane`: 0 on plane 1, p on plane p > 1
    (port 1 is the GPU's NVLink port)."""
    return 0 if plane == 1 else plane


def _per_plane(spec: FabricSpec, role: str) -> int:
    """Switches of `role` in one plane."""
    if role == "leaf":
        return spec.n_leaves
    return {"spine": spec.spines, "agg": spec.pods * spec.aggs_per_pod,
            "core": spec.aggs_per_pod * spec.cores_per_plane}[role]


def _split(switch: str) -> tuple[str, int]:
    """('leaf', 12) for leaf12: a plane switch's role and number."""
    role = next(r for r in ("leaf", "spine", "agg", "core") if switch.startswith(r))
    return role, int(switch[len(role):])


def plane_of(spec: FabricSpec, switch: str) -> int:
    """The plane (1-based) of a leaf, spine, agg or core, read from its name."""
    role, i = _split(switch)
    return (i - 1) // _per_plane(spec, role) + 1


def renamed(spec: FabricSpec, switch: str, plane: int) -> str:
    """`switch` (a leaf, spine, agg or core of any plane) as the same switch of `plane`."""
    role, i = _split(switch)
    n = _per_plane(spec, role)
    return f"{role}{(i - 1) % n + 1 + (plane - 1) * n}"


def plane_spec(spec: FabricSpec, plane: int) -> FabricSpec:
    """Plane `plane` alone, named as plane 1 (a one-plane spec with that plane's failures):
    the fabric its flows are routed on."""
    def mine(name: str) -> bool:
        return plane_of(spec, name) == plane
    return dataclasses.replace(spec, planes=1).with_failures(
        tuple(renamed(spec, s, 1) for s in spec.failed if mine(s)),
        tuple((renamed(spec, a, 1), renamed(spec, b, 1)) for a, b in spec.failed_links
              if mine(a)))

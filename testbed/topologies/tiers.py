"""The two Clos shapes the kinds build on a Topo (testbed/topo.py), hosts numbered as the
kind says, each shape once per NIC plane::

    two tiers (leaf-spine, one rail group)     three tiers (clos3, rail groups)
        spine1 .. spineS                        core1 .. coreC | core(C+1) .. | ...  planes
        leaf1 .. leafL                          agg1 .. aggA   | agg(A+1) ..  | ...  pods
        H hosts per leaf                        leaf1 .. leafP | leaf(P+1) .. | ...
                                                H hosts per leaf

Two tiers: every leaf to every spine. Three tiers: in a pod every leaf to every agg; agg i of
every pod to every core of (core) plane i. Ports: a leaf's port i (1..H) goes to its i-th host
and H+j to its j-th uplink (spine j, or its pod's agg j); a spine's port l goes to leaf l; an
agg's port i goes to its pod's leaf i and P+j to core j of its plane (P leaves per pod); a
core's port p goes to pod p's agg. With NIC planes (`planes` > 1, testbed/planes.py) plane p
repeats the shape after plane 1, every switch's number shifted by (p-1) x its count per plane,
with plane 1's ports, and each host's port p (its interface eth<p>) on plane p's copy of its
leaf. Links are laid out switch by switch in a fixed order (the predictor's link indices
follow it).
"""
from __future__ import annotations

from typing import Callable

from ..fabric_spec import FabricSpec
from ..planes import PLANE_KEY, host_port
from ..topo import Topo, check_sizes, host_ip

#: (leaf index, slot) -> (host number, extra host attributes), both 1-based
Numbering = Callable[[int, int], tuple[int, dict]]
TWO_TIER_SIZES = ("spines", "leaves", "hosts_per_leaf")
THREE_TIER_SIZES = ("pods", "leaves_per_pod", "aggs_per_pod", "cores_per_plane",
                    "hosts_per_leaf")
#: Two-tier leaves: addresses are 10.0.<leaf>.<slot>
MAX_TWO_TIER_LEAVES = 250


def by_leaf(spec: FabricSpec) -> Numbering:
    """Hosts leaf by leaf: h1..hH on leaf1."""
    per = spec.hosts_per_leaf
    return lambda li, slot: ((li - 1) * per + slot, {})


def check_two_tier(spec: FabricSpec) -> None:
    check_sizes(spec, TWO_TIER_SIZES, MAX_TWO_TIER_LEAVES)


def check_three_tier(spec: FabricSpec) -> None:
    check_sizes(spec, THREE_TIER_SIZES)


def _ports(topo: Topo, spec: FabricSpec, leaf: str, li: int, number: Numbering, plane: int,
           **attrs) -> None:
    """Plane 1: the leaf's hosts and their NICs (port 0); plane p: their port p."""
    for slot in range(1, spec.hosts_per_leaf + 1):
        index, extra = number(li, slot)
        if plane == 1:
            h = topo.add_host(index, leaf, slot, host_ip(li, slot), **attrs, **extra)
        else:
            h = f"h{index}"
        topo.add_link(h, leaf, spec.host_link_mbps, host_port(plane), slot)


def two_tier(topo: Topo, spec: FabricSpec, number: Numbering) -> None:
    """Per plane: its spines, then leaf by leaf: the leaf, its hosts' ports, its uplinks."""
    H, S, L = spec.hosts_per_leaf, spec.spines, spec.leaves
    for p in range(1, spec.planes + 1):
        tag = {PLANE_KEY: p} if p > 1 else {}
        spines = [topo.add_switch(f"spine{i}", "spine", i, **tag)
                  for i in range((p - 1) * S + 1, p * S + 1)]
        for li in range(1, L + 1):
            i = (p - 1) * L + li
            leaf = topo.add_switch(f"leaf{i}", "leaf", i, up=spines, **tag)
            _ports(topo, spec, leaf, li, number, p)
            for si, s in enumerate(spines, start=1):
                topo.add_link(leaf, s, spec.spine_link_mbps, H + si, li)
    topo.structure(2, (("leaf", S),))


def three_tier(topo: Topo, spec: FabricSpec, number: Numbering) -> None:
    """Per plane: cores by (core) plane, then pod by pod: its aggs with their uplinks, then
    leaf by leaf: the leaf, its hosts' ports, its uplinks."""
    for p in range(1, spec.planes + 1):
        _three_tier_plane(topo, spec, number, p)
    topo.structure(3, (("leaf", spec.aggs_per_pod), ("agg", spec.cores_per_plane)))


def _three_tier_plane(topo: Topo, spec: FabricSpec, number: Numbering, p: int) -> None:
    H, P, A, C = spec.hosts_per_leaf, spec.leaves_per_pod, spec.aggs_per_pod, spec.cores_per_plane
    tag = {PLANE_KEY: p} if p > 1 else {}
    core0, agg0, leaf0 = (p - 1) * A * C, (p - 1) * spec.pods * A, (p - 1) * spec.pods * P
    cores = {(i, j): topo.add_switch(f"core{core0 + (i - 1) * C + j}", "core",
                                     core0 + (i - 1) * C + j, plane=i, **tag)
             for i in range(1, A + 1) for j in range(1, C + 1)}
    for pod in range(1, spec.pods + 1):
        aggs = []
        for i in range(1, A + 1):
            ai = agg0 + (pod - 1) * A + i
            agg = topo.add_switch(f"agg{ai}", "agg", ai, pod=pod, plane=i,
                                  up=[cores[i, j] for j in range(1, C + 1)], **tag)
            aggs.append(agg)
            for j in range(1, C + 1):
                topo.add_link(agg, cores[i, j], spec.agg_core_mbps, P + j, pod)
        for li_pod in range(1, P + 1):
            li = (pod - 1) * P + li_pod
            leaf = topo.add_switch(f"leaf{leaf0 + li}", "leaf", leaf0 + li, pod=pod, up=aggs,
                                   **tag)
            _ports(topo, spec, leaf, li, number, p, pod=pod)
            for i, agg in enumerate(aggs, start=1):
                topo.add_link(leaf, agg, spec.leaf_agg_mbps, H + i, li_pod)

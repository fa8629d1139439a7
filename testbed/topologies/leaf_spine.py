"""`leaf-spine` (the default kind): a two-tier Clos of S spines, L leaves and H hosts per leaf::

        spine1    spine2   ...   spineS          every leaf has one uplink to every spine
          |  \\    /  |            |             (spine_link_mbps, each direction)
        leaf1     leaf2    ...   leafL
        / | \\     / | \\          / | \\         H hosts per leaf (host_link_mbps)
      h1 .. hH  hH+1 .. h2H     .. hL*H

YAML: spines, leaves, hosts_per_leaf, host_link_mbps, spine_link_mbps; failures as
failed_spines (or failed_switches, the same spines) and failed_links ([leafX, spineY]).
"""
from __future__ import annotations

from typing import Any

from ..fabric_spec import FabricError, FabricSpec
from ..topo import Topo
from .base import MAX_HOSTS, MAX_HOSTS_PER_LEAF, Built, Kind, Param, failed_lines
from .tiers import by_leaf, check_two_tier, two_tier

#: The paper's fabric is 64 leaves x 32 spines x 32 hosts; these allow 8x its spines and ~4x
#: its leaves, and keep the graph at most 2 x (250 x 256 + 62,500) = 253,000 directed links
#: (built in ~0.7 s, ~160 MB). Leaves stop at 250 because addresses are 10.0.<leaf>.<slot>.
MAX_SPINES = 256
MAX_LEAVES = 250
ADDRESSES = "host addresses are 10.0.<leaf>.<slot>"


class LeafSpine(Kind):
    name = "leaf-spine"
    params = (Param("spines", MAX_SPINES, "8x the paper's 32"),
              Param("leaves", MAX_LEAVES, ADDRESSES),
              Param("hosts_per_leaf", MAX_HOSTS_PER_LEAF, ADDRESSES))
    rate_keys = {"host": "host_link_mbps", "spine": "spine_link_mbps"}
    extra_failure_keys = ("failed_spines",)

    def spec(self, sizes: dict[str, int], rates: dict[str, float],
             failures: dict[str, Any]) -> FabricSpec:
        spines, leaves, per_leaf = sizes["spines"], sizes["leaves"], sizes["hosts_per_leaf"]
        if leaves * per_leaf > MAX_HOSTS:
            raise FabricError(f"fabric.hosts_per_leaf: {leaves} leaves x {per_leaf} hosts "
                              f"exceed {MAX_HOSTS:,} hosts")
        planes = sizes.get("planes", 1)          # every plane's spines and leaves
        spine_names = {f"spine{i}" for i in range(1, spines * planes + 1)}
        leaf_names = {f"leaf{i}" for i in range(1, leaves * planes + 1)}
        for key in ("failed_spines", "failed_switches"):
            for s in failures.get(key, ()):
                if s not in spine_names:
                    raise FabricError(f"fabric.{key}: unknown spine {s!r:.40} "
                                      f"(spine1..spine{spines * planes}), e.g. [spine3]")
        failed = sorted(set(failures.get("failed_spines", ()))
                        | set(failures.get("failed_switches", ())), key=lambda x: int(x[5:]))
        links = failures.get("failed_links", ())
        for p in links:
            if p[0] not in leaf_names or p[1] not in spine_names:
                raise FabricError(f"fabric.failed_links: {list(p)!r:.40} is not a [leafX, "
                                  f"spineY] pair of this fabric (leaf1..leaf{leaves * planes}, "
                                  f"spine1..spine{spines * planes})")
        return FabricSpec(spines=spines, leaves=leaves, hosts_per_leaf=per_leaf,
                          host_link_mbps=rates["host"], spine_link_mbps=rates["spine"],
                          failed_spines=tuple(failed),
                          failed_links=tuple(tuple(p) for p in links), topology=self.name)

    def check(self, spec: FabricSpec) -> None:
        check_two_tier(spec)

    def build(self, topo: Topo, spec: FabricSpec) -> None:
        two_tier(topo, spec, by_leaf(spec))

    def has_planes(self, spec: FabricSpec) -> bool:
        return True

    def resolved(self, s: FabricSpec) -> dict:
        return {"spines": s.spines, "leaves": s.leaves, "hosts_per_leaf": s.hosts_per_leaf,
                "host_link_mbps": s.host_link_mbps, "spine_link_mbps": s.spine_link_mbps,
                "failed_spines": list(s.failed_spines),
                "failed_links": [list(p) for p in s.failed_links]}

    def title(self, s: FabricSpec) -> str:
        return f"{s.leaves}x{s.spines} leaf-spine"

    def draw(self, f: Built) -> str:
        s = f.spec
        return "\n".join([
            "  ".join(f.spines),
            f"  (full mesh: every leaf to every spine, {s.spine_link_mbps:g} Mbit/s)",
            "  ".join(f.leaves),
            f"  ({s.hosts_per_leaf} hosts per leaf, {s.host_link_mbps:g} Mbit/s;"
            f" h1..h{s.hosts_per_leaf} on leaf1)", *failed_lines(s)])

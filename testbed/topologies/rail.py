"""`rail-optimized`: servers of N NICs (each NIC one host), NIC r of every server of a group on
rail leaf r of that group (the layout of NVIDIA's SuperPOD and most AI pods)::

      spine1  ...  spineS                    every rail leaf of a group to every spine
         |  \\      /  |                      (spine_link_mbps)
      rail1  rail2 ... railN                 one leaf per NIC index ("rail"), N = nics_per_server
       |  \\    | \\      |
     s1.nic1 s1.nic2 .. s1.nicN              server 1: hosts h1..hN, NIC r on rail r
     s2.nic1 ...                             servers_per_group servers per group

With `groups: G > 1` every group is a pod: its rail leaves under its own spines (the model's
aggs, spines_per_group of them), and spine i of every group under the cores of plane i
(cores_per_plane, core_link_mbps). Hosts are numbered server by server: server s of group g
holds h((g-1) S N + (s-1) N + 1) .. +N, and rail r of group g is leaf (g-1) N + r. GPU i of
a data-parallel job's copies sits on NIC i of its server when a copy fills whole servers
(`placement: servers`), so ring i stays on one rail leaf and never reaches a spine.

YAML: nics_per_server (default 8), servers_per_group, spines_per_group, groups (default 1),
cores_per_plane (groups > 1), host_link_mbps, spine_link_mbps, core_link_mbps (groups > 1);
failures as failed_switches and failed_links.
"""
from __future__ import annotations

from typing import Any

from ..fabric_spec import FabricError, FabricSpec
from ..topo import Topo
from .base import MAX_HOSTS_PER_LEAF, Built, Kind, Param, check_hosts, failed_lines, \
    three_tier_failures
from .tiers import Numbering, check_three_tier, check_two_tier, three_tier, two_tier

#: NICs per server: 8 in every DGX / HGX system; rails are the leaves of a group.
MAX_NICS_PER_SERVER = 64
MAX_GROUPS = 256
MAX_SPINES_PER_GROUP = 64
MAX_CORES_PER_PLANE = 64


class RailOptimized(Kind):
    name = "rail-optimized"
    params = (Param("nics_per_server", MAX_NICS_PER_SERVER, "one rail leaf per NIC", default=8),
              Param("servers_per_group", MAX_HOSTS_PER_LEAF, "host addresses end in .<slot>"),
              Param("spines_per_group", MAX_SPINES_PER_GROUP, "uplinks of each rail leaf"),
              Param("groups", MAX_GROUPS, "host addresses hold at most 65,536 leaves",
                    default=1),
              Param("cores_per_plane", MAX_CORES_PER_PLANE, "cores per plane (groups > 1)",
                    default=1))
    rate_keys = {"host": "host_link_mbps", "spine": "spine_link_mbps",
                 "agg_core": "core_link_mbps"}
    upper_roles = "spine, or agg or core"
    optional_rates = ("agg_core",)

    def rate_keys_of(self, spec: FabricSpec) -> dict[str, str]:
        if spec.tiers == 2:
            return {"host": "host_link_mbps", "spine": "spine_link_mbps"}
        return {"host": "host_link_mbps", "leaf_agg": "spine_link_mbps",
                "agg_core": "core_link_mbps"}

    def spec(self, sizes: dict[str, int], rates: dict[str, float],
             failures: dict[str, Any]) -> FabricSpec:
        n, s, g = sizes["nics_per_server"], sizes["servers_per_group"], sizes["groups"]
        check_hosts(n * s * g, "servers_per_group")
        if g == 1:
            spines = {f"spine{i}" for i in
                      range(1, sizes["spines_per_group"] * sizes.get("planes", 1) + 1)}
            for name in failures.get("failed_switches", ()):
                if name not in spines:
                    raise FabricError(f"fabric.failed_switches: unknown spine {name!r:.40} "
                                      f"(spine1..spine{len(spines)}; rails carry hosts)")
            if "agg_core" in rates:
                raise FabricError("fabric.core_link_mbps: only with groups > 1 (one group "
                                  "has no cores); remove it")
            return FabricSpec(spines=sizes["spines_per_group"], leaves=n, hosts_per_leaf=s,
                              host_link_mbps=rates["host"], spine_link_mbps=rates["spine"],
                              nics_per_server=n, topology=self.name,
                              failed_spines=tuple(sorted(set(failures.get("failed_switches",
                                                                          ())))),
                              failed_links=tuple(sorted({tuple(p) for p in
                                                         failures.get("failed_links", ())})))
        if "agg_core" not in rates:
            raise FabricError("fabric.core_link_mbps: required with groups > 1; give the "
                              "rate of each spine-to-core link")
        return FabricSpec(topology=self.name, pods=g, leaves_per_pod=n,
                          aggs_per_pod=sizes["spines_per_group"],
                          cores_per_plane=sizes["cores_per_plane"], hosts_per_leaf=s,
                          host_link_mbps=rates["host"], leaf_agg_mbps=rates["spine"],
                          agg_core_mbps=rates["agg_core"], nics_per_server=n,
                          **three_tier_failures(failures))

    def check(self, spec: FabricSpec) -> None:
        (check_two_tier if spec.tiers == 2 else check_three_tier)(spec)

    def build(self, topo: Topo, spec: FabricSpec) -> None:
        (two_tier if spec.tiers == 2 else three_tier)(topo, spec, by_server(spec))

    def has_planes(self, spec: FabricSpec) -> bool:
        return True

    def resolved(self, s: FabricSpec) -> dict:
        groups = s.pods or 1
        out = {"topology": self.name, "nics_per_server": s.nics_per_server,
               "servers_per_group": s.hosts_per_leaf,
               "spines_per_group": s.spines or s.aggs_per_pod, "groups": groups,
               "host_link_mbps": s.host_link_mbps,
               "spine_link_mbps": s.spine_link_mbps or s.leaf_agg_mbps}
        if groups > 1:
            out.update(cores_per_plane=s.cores_per_plane, core_link_mbps=s.agg_core_mbps)
        return {**out, "failed_switches": list(s.failed),
                "failed_links": [list(p) for p in s.failed_links]}

    def title(self, s: FabricSpec) -> str:
        groups = s.pods or 1
        return (f"rail-optimized: {groups} group{'s' if groups > 1 else ''} x "
                f"{s.hosts_per_leaf} servers x {s.nics_per_server} NICs")

    def draw(self, f: Built) -> str:
        s = f.spec
        n, groups = s.nics_per_server, s.pods or 1
        up = f.spines if s.tiers == 2 else f.aggs[:s.aggs_per_pod]
        lines = [f"{self.title(s)} ({len(f.hosts)} hosts)",
                 f"  group 1: {' '.join(up)} over rails {' '.join(f.leaves[:n])} "
                 f"({s.spine_link_mbps or s.leaf_agg_mbps:g} Mbit/s)",
                 f"  server 1 = {' '.join(f.servers[0])}: NIC r on rail r "
                 f"({s.host_link_mbps:g} Mbit/s)"]
        if groups > 1:
            lines.insert(1, f"  {len(f.cores)} cores in {s.aggs_per_pod} planes of "
                            f"{s.cores_per_plane}: spine i of every group to plane i "
                            f"({s.agg_core_mbps:g} Mbit/s)")
        return "\n".join(lines + failed_lines(s))


def by_server(spec: FabricSpec) -> Numbering:
    """Hosts server by server: NIC r of server s of group g is h((g-1) S N + (s-1) N + r),
    on the group's r-th rail leaf (slot s); each host knows its server (1-based)."""
    N, S = spec.nics_per_server, spec.hosts_per_leaf

    def number(li: int, slot: int) -> tuple[int, dict]:
        group, r = divmod(li - 1, N)
        index = (group * S + slot - 1) * N + r + 1
        return index, {"server": (index - 1) // N + 1}
    return number

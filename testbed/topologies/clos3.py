"""`clos3`: pods of leaves and aggregation switches under a core layer in planes::

      core1 .. coreC   core(C+1) .. core2C   ...      plane i: cores_per_plane (C) cores
         |  \\  plane 1      |  plane 2                aggregation switch i of EVERY pod
       agg1  agg2 ..      aggA+1  aggA+2 ..           connects to every core of plane i
       |  \\/  |  pod 1     |  \\/  |   pod 2          (agg_core_mbps); in a pod every leaf
     leaf1  leaf2 ..     leafP+1 ..                   connects to every agg (leaf_agg_mbps)
     / | \\                                            H hosts per leaf (host_link_mbps)
    h1 .. hH

YAML: pods, leaves_per_pod, aggs_per_pod, cores_per_plane, hosts_per_leaf, host_link_mbps,
leaf_agg_mbps, agg_core_mbps; failures as failed_switches (aggs, cores) and failed_links.
"""
from __future__ import annotations

from typing import Any

from ..fabric_spec import FabricSpec
from ..topo import Topo
from .base import MAX_HOSTS_PER_LEAF, Built, Kind, Param, check_hosts, check_leaves, \
    failed_lines, three_tier_failures
from .tiers import by_leaf, check_three_tier, three_tier

#: Host addresses are 10.<leaf / 256>.<leaf % 256>.<slot>, so leaves are bounded by MAX_HOSTS;
#: per pod and plane, 64 aggregation switches and 64 cores.
MAX_PODS = 256
MAX_LEAVES_PER_POD = 256
MAX_AGGS_PER_POD = 64
MAX_CORES_PER_PLANE = 64
LEAVES = "host addresses hold at most 65,536 leaves"


class Clos3(Kind):
    name = "clos3"
    params = (Param("pods", MAX_PODS, LEAVES), Param("leaves_per_pod", MAX_LEAVES_PER_POD, LEAVES),
              Param("aggs_per_pod", MAX_AGGS_PER_POD, "planes of cores"),
              Param("cores_per_plane", MAX_CORES_PER_PLANE, "cores per plane"),
              Param("hosts_per_leaf", MAX_HOSTS_PER_LEAF, "host addresses end in .<slot>"))
    rate_keys = {"host": "host_link_mbps", "leaf_agg": "leaf_agg_mbps",
                 "agg_core": "agg_core_mbps"}
    upper_roles = "agg or core"

    def spec(self, sizes: dict[str, int], rates: dict[str, float],
             failures: dict[str, Any]) -> FabricSpec:
        check_leaves(sizes["pods"] * sizes["leaves_per_pod"], "leaves_per_pod")
        check_hosts(sizes["pods"] * sizes["leaves_per_pod"] * sizes["hosts_per_leaf"],
                    "hosts_per_leaf")
        return FabricSpec(topology=self.name, host_link_mbps=rates["host"],
                          leaf_agg_mbps=rates["leaf_agg"], agg_core_mbps=rates["agg_core"],
                          **sizes, **three_tier_failures(failures))

    def check(self, spec: FabricSpec) -> None:
        check_three_tier(spec)

    def build(self, topo: Topo, spec: FabricSpec) -> None:
        three_tier(topo, spec, by_leaf(spec))

    def has_planes(self, spec: FabricSpec) -> bool:
        return True

    def resolved(self, s: FabricSpec) -> dict:
        return {"topology": self.name, "pods": s.pods, "leaves_per_pod": s.leaves_per_pod,
                "aggs_per_pod": s.aggs_per_pod, "cores_per_plane": s.cores_per_plane,
                "hosts_per_leaf": s.hosts_per_leaf, "host_link_mbps": s.host_link_mbps,
                "leaf_agg_mbps": s.leaf_agg_mbps, "agg_core_mbps": s.agg_core_mbps,
                "failed_switches": list(s.failed_switches),
                "failed_links": [list(p) for p in s.failed_links]}

    def title(self, s: FabricSpec) -> str:
        return (f"clos3 of {s.pods} pods x ({s.leaves_per_pod} leaves, {s.aggs_per_pod} aggs), "
                f"{s.aggs_per_pod * s.cores_per_plane} cores")

    def draw(self, f: Built) -> str:
        return draw_three_tier(f, self.name)


def draw_three_tier(f: Built, title: str) -> str:
    """Cores in planes, pods of aggs and leaves, hosts: four lines and the failures."""
    s = f.spec
    return "\n".join([
        f"{title}: {len(f.cores)} cores in {s.aggs_per_pod} planes of {s.cores_per_plane} "
        f"({s.agg_core_mbps:g} Mbit/s to each pod's agg of the plane)",
        f"  {s.pods} pods x ({s.aggs_per_pod} aggs, {s.leaves_per_pod} leaves; every leaf to "
        f"every agg of its pod, {s.leaf_agg_mbps:g} Mbit/s)",
        f"  pod 1: {' '.join(f.aggs[:s.aggs_per_pod])} / "
        f"{' '.join(f.leaves[:s.leaves_per_pod])}",
        f"  {s.hosts_per_leaf} hosts per leaf, {s.host_link_mbps:g} Mbit/s; "
        f"h1..h{s.hosts_per_leaf} on leaf1; {len(f.hosts)} hosts", *failed_lines(s)])

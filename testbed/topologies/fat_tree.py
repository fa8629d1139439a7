"""`fat-tree`: the k-ary fat-tree of Al-Fares et al. (SIGCOMM 2008), a clos3 with k pods of
k/2 leaves (edge switches) and k/2 aggregation switches, (k/2)^2 cores in k/2 planes of k/2,
and k/2 hosts per leaf: k^3/4 hosts, every switch-to-switch link at one rate::

      core1 core2   core3 core4          (k = 4: 4 cores in 2 planes)
        \\  |  ...     |  /
      agg1 agg2 | agg3 agg4 | ...        k pods of k/2 aggs and k/2 leaves
      leaf1 leaf2 | leaf3 leaf4 | ...
      h1 h2 h3 h4 | ...                  k/2 hosts per leaf

YAML: k (even), host_link_mbps, fabric_link_mbps; failures as in clos3.
"""
from __future__ import annotations

from typing import Any

from ..fabric_spec import FabricError, FabricSpec
from .base import Built, Param, three_tier_failures
from .clos3 import Clos3, draw_three_tier

#: k^3/4 hosts with (k/2)^2 paths between pods: at k=48 (27,648 hosts) a random-bijective
#: iteration predicts in 19 s and 4.2 GB; at k=64 (65,536 hosts) it passed 16 GB.
MAX_FAT_TREE_K = 48


def fat_tree_spec(k: int, host_link_mbps: float, fabric_link_mbps: float,
                  **failures) -> FabricSpec:
    """The k-ary fat-tree as the model's three-tier spec (k even)."""
    if k < 2 or k % 2:
        raise FabricError(f"fabric.k: a fat-tree needs an even k >= 2, got {k}")
    h = k // 2
    return FabricSpec(hosts_per_leaf=h, host_link_mbps=host_link_mbps, topology="fat-tree",
                      pods=k, leaves_per_pod=h, aggs_per_pod=h, cores_per_plane=h,
                      leaf_agg_mbps=fabric_link_mbps, agg_core_mbps=fabric_link_mbps, k=k,
                      **failures)


class FatTree(Clos3):
    """A clos3 of k's sizes: built and checked as one."""

    name = "fat-tree"
    params = (Param("k", MAX_FAT_TREE_K, "k^3/4 hosts, (k/2)^2 paths between pods: the model's "
                    "paths take 4 GB at k=48", minimum=2),)
    # one YAML key for both switch tiers
    rate_keys = {"host": "host_link_mbps", "leaf_agg": "fabric_link_mbps",
                 "agg_core": "fabric_link_mbps"}
    upper_roles = "agg or core"

    def has_planes(self, spec: FabricSpec) -> bool:
        return False          # k-port switches by definition: a plane is clos3's

    def spec(self, sizes: dict[str, int], rates: dict[str, float],
             failures: dict[str, Any]) -> FabricSpec:
        if sizes["k"] % 2:
            raise FabricError(f"fabric.k: a fat-tree needs an even k, got {sizes['k']}")
        return fat_tree_spec(sizes["k"], rates["host"], rates["leaf_agg"],
                             **three_tier_failures(failures))

    def resolved(self, s: FabricSpec) -> dict:
        return {"topology": self.name, "k": s.k, "host_link_mbps": s.host_link_mbps,
                "fabric_link_mbps": s.leaf_agg_mbps,
                "failed_switches": list(s.failed_switches),
                "failed_links": [list(p) for p in s.failed_links]}

    def title(self, s: FabricSpec) -> str:
        return f"fat-tree k={s.k}"

    def draw(self, f: Built) -> str:
        return draw_three_tier(f, f"fat-tree k={f.spec.k}")

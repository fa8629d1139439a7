"""The fabric's description as a topology kind maps its YAML onto it (FabricSpec), the
switch roles' tiers and DPID prefixes, and the error a fabric that cannot be built raises.
Pure data; testbed/fabric.py builds the graph from it (and re-exports these names)."""
from __future__ import annotations

from dataclasses import dataclass

#: DPID prefix (first byte) per role: never derived from a name (Mininet would take the first
#: number in it, so leaf1 and spine1 would collide).
DPID_PREFIX = {"leaf": 1, "spine": 2, "agg": 3, "core": 4, "nvswitch": 5}


#: Tier of each switch role, from the leaves up.
TIER = {"leaf": 0, "spine": 1, "agg": 1, "core": 2}


def link_key(u: str, v: str) -> tuple[str, str]:
    """A switch-to-switch link in canonical order, lower tier first: (leaf, spine),
    (leaf, agg), (agg, core). The role is read from the name (names are fixed patterns)."""
    def tier(x: str) -> int:
        return next((t for role, t in TIER.items() if x.startswith(role)), -1)
    return (u, v) if tier(u) <= tier(v) else (v, u)


class FabricError(ValueError):
    """A fabric description that cannot be built or routed."""


@dataclass(frozen=True)
class FabricSpec:
    """The fabric's structure (rates in Mbit/s), as a topology kind maps its YAML onto it.

    Two tiers: spines, leaves, hosts_per_leaf, host_link_mbps, spine_link_mbps (the first
    five fields, in their positions). Three tiers (`pods` > 0): pods, leaves_per_pod,
    aggs_per_pod, cores_per_plane, hosts_per_leaf, host_link_mbps, leaf_agg_mbps,
    agg_core_mbps. `topology` names the kind (its module writes the YAML back); `k` is the
    fat-tree's parameter; `nics_per_server` > 0 numbers hosts server by server. Failures:
    failed_switches (any switch but a leaf; two tiers keep them in failed_spines) and
    failed_links (pairs of adjacent switches). Servers: `gpus_per_server` G > 1 GPUs (each a
    host with its own NIC) share a non-blocking NVLink switch, each GPU joined to it at
    `nvlink_mbps`; G = 1 (the default) is a lone NIC per host, without NVLink. `planes` P > 1
    (two tiers only): each NIC has P ports at host_link_mbps each, port p on plane p, and
    every plane is a copy of the leaves and spines (HPN's dual plane)."""

    spines: int = 0
    leaves: int = 0
    hosts_per_leaf: int = 0
    host_link_mbps: float = 0.0
    spine_link_mbps: float = 0.0
    failed_spines: tuple[str, ...] = ()
    failed_links: tuple[tuple[str, str], ...] = ()  # adjacent switches, both directions
    topology: str = "leaf-spine"
    pods: int = 0
    leaves_per_pod: int = 0
    aggs_per_pod: int = 0
    cores_per_plane: int = 0
    leaf_agg_mbps: float = 0.0
    agg_core_mbps: float = 0.0
    k: int = 0
    failed_switches: tuple[str, ...] = ()
    nics_per_server: int = 0
    gpus_per_server: int = 1
    nvlink_mbps: float = 0.0
    planes: int = 1

    @property
    def has_nvlink(self) -> bool:
        """Servers of several GPUs joined by NVLink (gpus_per_server > 1)."""
        return self.gpus_per_server > 1

    @property
    def tiers(self) -> int:
        """2 (leaves under spines) or 3 (pods under planes of cores), by structure."""
        return 3 if self.pods else 2

    @property
    def n_leaves(self) -> int:
        return self.leaves if self.tiers == 2 else self.pods * self.leaves_per_pod

    @property
    def n_hosts(self) -> int:
        return self.n_leaves * self.hosts_per_leaf

    @property
    def failed(self) -> tuple[str, ...]:
        """Every failed switch (leaf-spine's failed_spines included), sorted, no repeats."""
        return tuple(sorted(set(self.failed_spines) | set(self.failed_switches)))

    def rates_mbps(self) -> dict[str, float]:
        """Link rate per tier: host, and leaf-spine's spine or clos3's leaf-agg and agg-core."""
        if self.tiers == 2:
            return {"host": self.host_link_mbps, "spine": self.spine_link_mbps}
        return {"host": self.host_link_mbps, "leaf_agg": self.leaf_agg_mbps,
                "agg_core": self.agg_core_mbps}

    def with_failures(self, switches: tuple[str, ...],
                      links: tuple[tuple[str, str], ...]) -> "FabricSpec":
        """The same fabric with exactly these failed switches and links."""
        import dataclasses
        if self.tiers == 2:   # leaf-spine keeps its own key for spines
            return dataclasses.replace(self, failed_spines=tuple(sorted(switches)),
                                       failed_switches=(), failed_links=tuple(sorted(links)))
        return dataclasses.replace(self, failed_switches=tuple(sorted(switches)),
                                   failed_links=tuple(sorted(links)))

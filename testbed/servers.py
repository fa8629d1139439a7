"""Servers of several GPUs: each GPU a host with its own NIC, the GPUs of a server joined by
a non-blocking NVLink switch (NVSwitch)::

        leaf / rail leaves ...            (the fabric, as the kind builds it)
         |     |          |
        h1    h2   ...   hG               GPU i of the server: its NIC to its leaf (port 0)
         \\     |          /
          nvs1 (NVLink, nvlink_mbps per GPU, each direction; the GPU's port 1)

Server k holds hosts h((k-1)G + 1) .. h(kG): in leaf-spine, fat-tree and clos3 G consecutive
hosts of one leaf (every NIC of a server on its ToR), in rail-optimized the server's NICs on
their rails. Pure data: the NVLink links are added after the fabric's own, so that a fabric of
one GPU per server is the same graph, link for link.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable, Sequence

from .fabric_spec import FabricError, FabricSpec
from .graph import DiGraph

#: GPUs per server: 8 in every DGX / HGX system, 72 in an NVL72 rack.
MAX_GPUS_PER_SERVER = 72
#: NVLink rate per GPU, Mbit/s each direction: NVLink 4 is 450 GB/s each way (3.6 Tbit/s);
#: the bound leaves room for NVLink 5 (7.2 Tbit/s).
MAX_NVLINK_MBPS = 10_000_000.0
NVSWITCH_ROLE = "nvswitch"


def nvlink_mac(server: int, gpu: int) -> str:
    """The MAC of GPU `gpu`'s NVLink port (its eth1) in server `server` (both 1-based), fixed
    so that the NVLink switch's rules and the hosts' neighbour entries agree (02:4e: local)."""
    return f"02:4e:{server >> 8:02x}:{server & 255:02x}:{gpu >> 8:02x}:{gpu & 255:02x}"


def check_servers(spec: FabricSpec) -> None:
    """Servers fit the fabric: G divides the hosts of a leaf (rail-optimized: G is the
    server's NIC count); FabricError naming the key otherwise."""
    g = spec.gpus_per_server
    if g < 1 or g > MAX_GPUS_PER_SERVER:
        raise FabricError(f"fabric.gpus_per_server: {g} is not in 1..{MAX_GPUS_PER_SERVER}")
    if g == 1:
        if spec.nvlink_mbps:
            raise FabricError("fabric.nvlink_mbps: only with gpus_per_server > 1 (a lone GPU "
                              "has no NVLink peer); remove it or give gpus_per_server")
        return
    if not 0 < spec.nvlink_mbps <= MAX_NVLINK_MBPS:
        raise FabricError(f"fabric.nvlink_mbps: give the NVLink rate per GPU in Mbit/s, "
                          f"0 < rate <= {MAX_NVLINK_MBPS:,.0f} (NVLink 4: 3,600,000)")
    if spec.nics_per_server:
        if g != spec.nics_per_server:
            raise FabricError(f"fabric.gpus_per_server: a rail-optimized server has one GPU "
                              f"per NIC, so {spec.nics_per_server} (nics_per_server), not {g}")
    elif spec.hosts_per_leaf % g:
        raise FabricError(f"fabric.gpus_per_server: {g} does not divide hosts_per_leaf "
                          f"({spec.hosts_per_leaf}); a server's NICs share its leaf")


def add_nvlink(g: DiGraph, spec: FabricSpec, n_hosts: int) -> None:
    """One NVLink switch per server (nvs1..), each GPU's port 1 to its port i (the GPU's
    place in the server, 1..G), at nvlink_mbps each direction."""
    per, rate, nodes = spec.gpus_per_server, spec.nvlink_mbps, g.nodes
    edges = []                  # added in one call, in this order (the links' order)
    for k in range(1, n_hosts // per + 1):
        nvs = f"nvs{k}"
        g.add_node(nvs, role=NVSWITCH_ROLE, index=k)
        for i in range(1, per + 1):
            h = f"h{(k - 1) * per + i}"
            attrs = nodes[h]
            attrs["server"], attrs["gpu"] = k, i
            edges.append((h, nvs, {"capacity_mbps": rate, "port": 1, "live": True}))
            edges.append((nvs, h, {"capacity_mbps": rate, "port": i, "live": True}))
    g.add_edges_from(edges)


@dataclasses.dataclass(frozen=True)
class ServerMap:
    """Where each GPU sits: host -> (server, GPU index), and each server's hosts by index."""

    place: dict[str, tuple[int, int]]
    servers: tuple[tuple[str, ...], ...]

    @staticmethod
    def of(servers: Sequence[Sequence[str]]) -> "ServerMap":
        return ServerMap({h: (k, i) for k, hs in enumerate(servers) for i, h in enumerate(hs)},
                         tuple(tuple(hs) for hs in servers))

    def relay(self, src: str, dst: str) -> str | None:
        """The GPU of src's server on dst's rail when dst is on another server and another
        rail (PXN's relay); None when src's own NIC is on dst's rail or both share a server."""
        return self.relays([(src, dst)])[0]

    def relays(self, pairs: Iterable[tuple[str, str]]) -> list[str | None]:
        """`relay` of each (src, dst) pair, in one pass."""
        pairs = list(pairs)
        return self.relays_of([a for a, _ in pairs], [b for _, b in pairs])

    def relays_of(self, srcs: Iterable[str], dsts: Iterable[str]) -> list[str | None]:
        """`relay` of each (srcs[k], dsts[k]), in one pass (places looked up by C-level
        maps)."""
        place, servers = self.place.__getitem__, self.servers
        return [None if s == t or i == j else servers[s][j]
                for (s, i), (t, j) in zip(map(place, srcs), map(place, dsts))]

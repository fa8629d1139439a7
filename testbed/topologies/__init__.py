"""Topology kinds: one module each, and this registry (as Mininet's TOPOS, or
routing/registry.py for strategies). A kind owns its YAML keys, bounds and defaults, how they
become the fabric model's spec, how it builds its graph (`build_graph`: the kind's own
switches, hosts and links, then the layers every kind shares), its resolved YAML, title and
picture.

A new kind is one module with a `Kind` subclass and one line below; nothing outside the
fabric model branches on the kind or on the number of tiers (what routing, the predictor and
the split need is a property of testbed/fabric.py's `Fabric`, read from the built graph).
"""
from __future__ import annotations

from ..fabric_spec import FabricError, FabricSpec
from ..graph import DiGraph
from ..planes import check_planes
from ..servers import add_nvlink, check_servers
from ..topo import Topo, fail
from .base import Built, Kind
from .clos3 import Clos3
from .fat_tree import FatTree, fat_tree_spec
from .leaf_spine import LeafSpine
from .rail import RailOptimized

KINDS: dict[str, Kind] = {k.name: k for k in (LeafSpine(), FatTree(), Clos3(), RailOptimized())}
DEFAULT = "leaf-spine"
__all__ = ["KINDS", "DEFAULT", "Kind", "kind", "title", "draw", "resolved", "rate_keys",
           "fat_tree_spec", "build_graph"]


def kind(spec_or_name: FabricSpec | str) -> Kind:
    """The kind of a spec (or by name); KeyError for an unknown name."""
    name = spec_or_name if isinstance(spec_or_name, str) else spec_or_name.topology
    return KINDS[name]


def build_graph(spec: FabricSpec) -> DiGraph:
    """The fabric's graph: the kind checks and builds its own switches, hosts and links (and
    its NIC planes), then the layers every kind shares are added: the failures and the
    servers' NVLink switches. FabricError on impossible input, before anything is built."""
    if spec.topology not in KINDS:
        raise FabricError(f"fabric.topology: unknown {spec.topology!r}; one of "
                          f"{', '.join(sorted(KINDS))}")
    k = KINDS[spec.topology]
    k.check(spec)
    check_servers(spec)
    check_planes(spec, k.has_planes(spec))
    topo = Topo()
    k.build(topo, spec)
    fail(topo.graph, spec)
    if spec.has_nvlink:
        add_nvlink(topo.graph, spec, spec.n_hosts)
    return topo.graph


def title(fabric: Built) -> str:
    """e.g. '4x4 leaf-spine', 'fat-tree k=4'."""
    return kind(fabric.spec).title(fabric.spec)


def draw(fabric: Built) -> str:
    """The kind's ASCII picture of this fabric, for logs and run folders."""
    picture = kind(fabric.spec).draw(fabric)
    if fabric.planes > 1:
        n = len(fabric.leaves)
        picture += (f"\n  {fabric.planes} planes: plane p is a copy of plane 1, its leaves "
                    f"leaf((p-1)*{n}+i), its other switches numbered the same way; NIC port "
                    f"p of every host on plane p")
    return picture


def resolved(spec: FabricSpec) -> dict:
    """The fabric section as the YAML gives it (it loads again to the same spec); the
    server keys only for servers of several GPUs, planes only when more than one."""
    out = kind(spec).resolved(spec)
    if spec.has_nvlink:
        out.update(gpus_per_server=spec.gpus_per_server, nvlink_mbps=spec.nvlink_mbps)
    if spec.planes > 1:
        out["planes"] = spec.planes
    return out


def rate_keys(spec: FabricSpec) -> dict[str, str]:
    """Link tier (FabricSpec.rates_mbps' keys) -> the YAML key that sets it."""
    return kind(spec).rate_keys_of(spec)

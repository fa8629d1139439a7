"""A digest of everything a built fabric shows (the graph's nodes, edges and attributes in
order, and the structure properties routing and the predictor read), for tests proving that
a rebuild of the fabric model moved nothing."""
from __future__ import annotations

import hashlib
import json

from testbed.fabric import Fabric, FabricSpec
from testbed.topologies import fat_tree_spec

#: Fabrics of every kind, with servers, planes, rails and failures (name -> spec).
SPECS: dict[str, FabricSpec] = {
    "leaf-spine": FabricSpec(4, 3, 2, 10, 10),
    "leaf-spine-failed": FabricSpec(4, 3, 2, 10, 10, failed_spines=("spine2",),
                                    failed_links=(("leaf1", "spine3"),)),
    "leaf-spine-servers": FabricSpec(2, 4, 4, 10, 20, gpus_per_server=2, nvlink_mbps=90),
    "leaf-spine-planes": FabricSpec(2, 3, 4, 10, 10, planes=2, gpus_per_server=4,
                                    nvlink_mbps=90, failed_spines=("spine3",)),
    "leaf-spine-4-planes": FabricSpec(3, 2, 2, 10, 10, planes=4,
                                      failed_links=(("leaf5", "spine8"),)),
    "fat-tree-4": fat_tree_spec(4, 10, 10),
    "fat-tree-6-failed": fat_tree_spec(6, 10, 20, failed_switches=("core2", "agg5"),
                                       failed_links=(("leaf1", "agg2"),)),
    "fat-tree-4-servers": FabricSpec(**{**fat_tree_spec(4, 10, 10).__dict__,
                                        "gpus_per_server": 2, "nvlink_mbps": 100}),
    "clos3": FabricSpec(topology="clos3", pods=3, leaves_per_pod=2, aggs_per_pod=2,
                        cores_per_plane=3, hosts_per_leaf=2, host_link_mbps=10,
                        leaf_agg_mbps=10, agg_core_mbps=5,
                        failed_switches=("core2", "agg3"),
                        failed_links=(("leaf1", "agg2"), ("agg6", "core6"))),
    "clos3-servers": FabricSpec(topology="clos3", pods=2, leaves_per_pod=2, aggs_per_pod=2,
                                cores_per_plane=2, hosts_per_leaf=4, host_link_mbps=10,
                                leaf_agg_mbps=10, agg_core_mbps=10, gpus_per_server=4,
                                nvlink_mbps=200),
    "rail-1-group": FabricSpec(spines=2, leaves=4, hosts_per_leaf=3, host_link_mbps=10,
                               spine_link_mbps=10, nics_per_server=4,
                               topology="rail-optimized", failed_spines=("spine1",)),
    "rail-1-group-servers-planes": FabricSpec(
        spines=2, leaves=4, hosts_per_leaf=2, host_link_mbps=10, spine_link_mbps=10,
        nics_per_server=4, topology="rail-optimized", gpus_per_server=4, nvlink_mbps=90,
        planes=2),
    "rail-3-groups": FabricSpec(topology="rail-optimized", pods=3, leaves_per_pod=4,
                                aggs_per_pod=2, cores_per_plane=2, hosts_per_leaf=2,
                                host_link_mbps=10, leaf_agg_mbps=10, agg_core_mbps=10,
                                nics_per_server=4, gpus_per_server=4, nvlink_mbps=90,
                                failed_switches=("core3",), failed_links=(("leaf5", "agg3"),)),
}


def shown(f: Fabric) -> dict:
    """What a fabric shows: graph and structure, in order (JSON-able)."""
    g = f.graph
    return {
        "nodes": [[n, sorted((k, repr(v)) for k, v in d.items())] for n, d in g.nodes(data=True)],
        "edges": [[u, v, sorted((k, repr(x)) for k, x in d.items())]
                  for u, v, d in g.edges(data=True)],
        "hosts": f.hosts, "leaves": f.leaves, "spines": f.spines, "aggs": f.aggs,
        "cores": f.cores, "switches": f.switches, "plane_switches": f.plane_switches,
        "nvswitches": f.nvswitches, "tiers": f.tiers, "has_pods": f.has_pods,
        "choice_points": [list(c) for c in f.choice_points],
        "max_path_links": f.max_path_links, "upper": f.upper_switches,
        "top": f.top_switches, "leaf_groups": f.leaf_groups, "servers": f.servers,
        "dpids": [f.dpid_of(s) for s in f.switches], "live_spines": f.live_spines,
        "paths": [f.switch_paths(a, b) for a in f.leaves for b in f.leaves],
        "host_ends": f.host_ends[1], "planes": f.planes,
        "plane_fabrics": [shown(f.plane_fabric(p)) for p in range(2, f.planes + 1)],
    }


def digest(f: Fabric) -> str:
    """sha256 of `shown(f)` as canonical JSON."""
    text = json.dumps(shown(f), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()

"""Three-tier fabrics on the real emulator: a k=4 fat-tree (20 switches, 16 hosts) and a small
oversubscribed clos3. Statically routed flows must cross exactly the aggs and cores they were
given (the runner fails a run otherwise: PathMismatchError), and ECMP's observed paths are
recorded per tier from the switches' counters."""
from __future__ import annotations

from experiments.config import parse
from experiments.runner import run_experiment

from .helpers import NOTHING, leftovers

FAT_TREE = {
    "name": "itest-ft", "seed": 2,
    "fabric": {"topology": "fat-tree", "k": 4, "host_link_mbps": 10, "fabric_link_mbps": 10},
    # one rank per pod and leaf: every step crosses pods (aggs and cores)
    "jobs": [{"name": "ring", "collective": "allreduce", "hosts": ["h1", "h5", "h9", "h13"],
              "size_bytes": 600_000, "iterations": 1},
             {"name": "pipe", "collective": "pipeline", "hosts": ["h2", "h4"],
              "size_bytes": 300_000, "iterations": 1}],       # within pod 1: leaf1 -> leaf2
    "routing": ["ecmp", "ilp", "ilp@host"],
}
CLOS3 = {
    "name": "itest-c3", "seed": 1,
    "fabric": {"topology": "clos3", "pods": 2, "leaves_per_pod": 2, "aggs_per_pod": 2,
               "cores_per_plane": 1, "hosts_per_leaf": 2, "host_link_mbps": 10,
               "leaf_agg_mbps": 10, "agg_core_mbps": 5},          # 2:1 at the core tier
    "jobs": [{"name": "a2a", "collective": "alltoall", "hosts": ["h1", "h3", "h5", "h7"],
              "size_bytes": 400_000, "iterations": 1}],
    "routing": ["ecmp", "greedy"],
    "emulation": {"capture": ["agg1", "core1"]},               # a core-tier port
}


def _check_paths(fabric, run):
    for p in run["paths"]:
        a, b = fabric.leaf_of(p["src"]), fabric.leaf_of(p["dst"])
        if a == b:
            continue
        seen = tuple(p["observed_path"])
        assert seen in fabric.switch_paths(a, b), p
        tiers = {fabric.role(s) for s in seen[1:-1]}
        # bytes were counted on every switch of the path above the leaves
        assert all(p["switch_bytes"].get(s, 0) > 0 for s in seen[1:-1]), p
        if fabric.pod_of(a) != fabric.pod_of(b):
            assert tiers == {"agg", "core"}, p
        if run["routing"] != "ecmp":
            assert [seen] == [tuple(q) for q in p["planned_paths"]], p


def test_fat_tree_static_paths_cross_their_aggs_and_cores(tmp_path):
    exp = parse(FAT_TREE)
    res = run_experiment(exp, tmp_path, log=lambda s: None)
    for run in res["runs"]:
        assert all(j["bytes_verified"] for j in run["jobs"])
        _check_paths(exp.fabric, run)
        assert abs(run["prediction_error_fraction"]) < 0.5
    assert res["runs"][1]["max_link_flows"] == 1         # the ILP finds a collision-free plan
    assert leftovers() == NOTHING


def test_oversubscribed_clos3_records_ecmp_paths_per_tier(tmp_path):
    exp = parse(CLOS3)
    res = run_experiment(exp, tmp_path, log=lambda s: None)
    for run in res["runs"]:
        assert all(j["bytes_verified"] for j in run["jobs"])
        _check_paths(exp.fabric, run)
    links = {tuple(l["link"]) for l in res["runs"][0]["link_flows"]}
    assert any(u.startswith("agg") and v.startswith("core") for u, v in links)
    crossed = 0
    for run in res["runs"]:                  # the pcap of agg1's port to core1 holds exactly
        ports = _captured_ports(run["capture"])  # the flows whose path crosses that link
        for p in run["paths"]:
            path = list(p["observed_path"])
            on = any({path[i], path[i + 1]} == {"agg1", "core1"} for i in range(len(path) - 1))
            crossed += on
            assert (p["src_port"] in ports) == on, (run["routing"], p)
    assert crossed > 0
    assert leftovers() == NOTHING


def _captured_ports(cap: dict) -> set[int]:
    """Source ports of the data segments seen (frames over 1,000 bytes on the wire: a
    static flow's handshake, sent before its epoch pins it, may hash across any link)."""
    from scapy.all import TCP, rdpcap
    assert cap["interface"] and cap["packets"] > 0 and not cap["error"], cap
    return {p[TCP].sport for p in rdpcap(cap["path"]) if TCP in p and p.wirelen > 1000}

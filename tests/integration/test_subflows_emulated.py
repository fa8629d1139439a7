"""Subflows on the real emulator: every connection of a job becomes K TCP connections with their
own source ports, all K carry verified bytes, the ILP and spray spread them over the spines as
planned, and the model of the same run stays close."""
from __future__ import annotations

from collections import Counter

from experiments.config import parse
from experiments.runner import run_experiment

from .helpers import NOTHING, leftovers

K = 4
DOC = {
    "name": "itest-subflows", "seed": 1, "subflows": K,
    "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 1, "host_link_mbps": 10,
               "spine_link_mbps": 10},
    "jobs": [{"name": "ring", "collective": "allreduce", "hosts": ["h1", "h2"],
              "size_bytes": 2_000_000, "iterations": 2}],
    "routing": ["ecmp", "ilp", "spray"],
}


def test_k_subflows_per_connection_carry_the_bytes_on_their_own_paths(tmp_path):
    exp = parse(DOC)
    res = run_experiment(exp, tmp_path, log=lambda s: None)
    for run in res["runs"]:
        assert all(j["bytes_verified"] for j in run["jobs"])
        paths = run["paths"]
        assert len(paths) == 2 * K                     # two ring connections, K subflows each
        assert len({p["src_port"] for p in paths}) == 2 * K
        assert all(sum((p["switch_bytes"] or {}).values()) > 0 for p in paths)
        for key in ("retrans_segments", "out_of_order_packets", "reordering_seen"):
            assert all(isinstance(p[f"tcp_{key}"], int) for p in paths), key   # kernel >= 5.4
            assert sum(p[f"tcp_{key}"] for p in paths) == run["fidelity"][f"tcp_{key}"]
        if run["routing"] != "ecmp":                   # K subflows of leaf1 -> leaf2: K/2 a spine
            spines = Counter(tuple(p["observed_path"])[1] for p in paths
                             if p["observed_path"][0] == "leaf1")
            assert sorted(spines.values()) == [K // 2, K // 2], spines
            assert all([tuple(p["observed_path"])] == [tuple(q) for q in p["planned_paths"]]
                       for p in paths)
        assert abs(run["prediction_error_fraction"]) < 0.1, run["prediction_error_fraction"]
    assert leftovers() == NOTHING

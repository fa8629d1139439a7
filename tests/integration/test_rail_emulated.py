"""The rail-optimized kind on the real emulator: rings of NIC k of every server stay on their
rail leaf (no byte reaches a spine), and rings across rails take exactly their planned paths
through the group's spines."""
from __future__ import annotations

from experiments.config import parse
from experiments.runner import run_experiment

from .helpers import NOTHING, leftovers

RAIL = {
    "name": "itest-rail", "seed": 1,
    "fabric": {"topology": "rail-optimized", "nics_per_server": 4, "servers_per_group": 2,
               "spines_per_group": 2, "host_link_mbps": 10, "spine_link_mbps": 10},
    # NIC 1 of both servers (rail1), and NIC 2 of server 1 with NIC 3 of server 2 (rails 2, 3)
    "jobs": [{"name": "on-rail", "collective": "allreduce", "hosts": ["h1", "h5"],
              "size_bytes": 400_000, "iterations": 2},
             {"name": "across", "collective": "allreduce", "hosts": ["h2", "h7"],
              "size_bytes": 400_000, "iterations": 2}],
    "routing": ["ecmp", "ilp"],
}


def test_a_rail_ring_never_reaches_a_spine_and_planned_flows_keep_their_paths(tmp_path):
    exp = parse(RAIL)
    res = run_experiment(exp, tmp_path, log=lambda s: None)
    f = exp.fabric
    for run in res["runs"]:
        assert all(j["bytes_verified"] for j in run["jobs"])
        for p in run["paths"]:
            spines = {s: n for s, n in (p["switch_bytes"] or {}).items() if s in f.spines}
            if p["job"] == "on-rail":
                assert f.leaf_of(p["src"]) == f.leaf_of(p["dst"]) and not spines, p
            else:
                seen = tuple(p["observed_path"])
                assert seen in f.switch_paths(f.leaf_of(p["src"]), f.leaf_of(p["dst"])), p
                if run["routing"] == "ilp":
                    assert [seen] == [tuple(q) for q in p["planned_paths"]], p
        assert abs(run["prediction_error_fraction"]) < 0.1, run["prediction_error_fraction"]
    assert leftovers() == NOTHING

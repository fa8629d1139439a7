"""Two NIC planes on three tiers, emulated (testbed/planes.py): every host's second port on
plane 2's copy of the leaves, aggs and cores. An all-to-all across pods of 2 subflows per
connection: every byte crosses only its plane's switches, the planners use both planes, and
each run is within 10% of the model of the same choices."""
from __future__ import annotations

from experiments.config import parse
from experiments.measure import CROSSED_MIN_BYTES
from experiments.runner import run_experiment

from .helpers import NOTHING, leftovers

CLOS3_PLANES = {
    "name": "itest-clos3-planes", "seed": 1,
    "fabric": {"topology": "clos3", "pods": 2, "leaves_per_pod": 2, "aggs_per_pod": 2,
               "cores_per_plane": 1, "hosts_per_leaf": 2, "host_link_mbps": 10,
               "leaf_agg_mbps": 10, "agg_core_mbps": 10, "planes": 2},
    "jobs": [{"name": "a2a", "collective": "alltoall", "size_bytes": 1_000_000,
              "iterations": 2, "subflows": 2, "hosts": ["h1", "h3", "h5", "h7"]}],
    "routing": ["ecmp", "greedy"],
}


def test_each_flow_stays_in_its_plane_on_three_tiers(tmp_path):
    exp = parse(CLOS3_PLANES)
    f = exp.fabric
    res = run_experiment(exp, tmp_path, log=lambda s: None)
    for run in res["runs"]:
        assert all(j["bytes_verified"] for j in run["jobs"]), run["routing"]
        assert abs(run["prediction_error_fraction"]) < 0.1, (run["routing"],
                                                            run["prediction_error_fraction"])
        crossed = set()
        for p in run["paths"]:
            plane = f.plane_of(p["observed_path"][0])
            sent = {s for s, n in (p["switch_bytes"] or {}).items() if n >= CROSSED_MIN_BYTES}
            assert sent and all(f.plane_of(s) == plane for s in sent), p
            crossed.add(plane)
        assert crossed == {1, 2}, run["routing"]     # 24 connections: both planes in use
    greedy = {p["conn_id"]: p for p in res["runs"][1]["paths"]}
    conns = exp.plans()[0].connections
    for a, b in zip(conns[::2], conns[1::2]):    # a connection's two subflows: both ports
        planes = {f.plane_of(greedy[c.conn_id]["observed_path"][0]) for c in (a, b)}
        assert planes == {1, 2}, (a, b)
    assert leftovers() == NOTHING

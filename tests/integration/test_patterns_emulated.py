"""A Hedera pattern on the real emulator: stride 4 on a k=4 fat-tree (every flow leaves its pod),
routed by the ILP, against the non-blocking reference built as one OVS switch."""
from __future__ import annotations

from experiments.config import parse
from experiments.runner import run_experiment

from .helpers import NOTHING, leftovers

STRIDE = {
    "name": "itest-stride", "seed": 1,
    "fabric": {"topology": "fat-tree", "k": 4, "host_link_mbps": 10, "fabric_link_mbps": 10},
    # 2 MB a flow (1.6 s at 10 Mbit/s): a one-shot pattern pays ~60-80 ms once (at its
    # start, not in its rate; the cause is not measured yet). With 500 kB the reference's
    # efficiency was 0.84-0.90 on a quiet machine and failed the bound below in 3 of 7 runs;
    # with 2 MB it was 0.949-0.958
    "jobs": [{"name": "s4", "pattern": "stride", "stride": 4, "size_bytes": 2_000_000}],
    "routing": ["ilp", "nonblocking"],
}


def test_stride_pattern_and_the_one_switch_reference(tmp_path):
    exp = parse(STRIDE)
    res = run_experiment(exp, tmp_path, log=lambda s: None)
    ilp, nb = res["runs"]
    assert nb["routing"] == "nonblocking" and nb["enforcement"] == "one switch"
    for run in (ilp, nb):
        assert all(j["bytes_verified"] for j in run["jobs"])
        assert len(run["paths"]) == 16                       # one flow per host
        # 16 flows at the host rate: the reference within 15% of the host links' 160 Mbit/s
        # (the suite measures >= 0.967 on a quiet machine; this bounds a loaded one)
        assert abs(run["prediction_error_fraction"]) < 0.5
    assert nb["efficiency"] > 0.85 and nb["nonblocking_fraction"] == 1.0
    assert nb["max_link_flows"] == 1
    # the ILP's paths: one flow per link, each through an agg and a core (verified by the
    # runner from the switch counters), so it keeps up with one switch
    assert ilp["max_link_flows"] == 1 and ilp["nonblocking_fraction"] > 0.8
    for p in ilp["paths"]:
        assert [exp.fabric.role(s) for s in p["observed_path"]] == \
            ["leaf", "agg", "core", "agg", "leaf"]
    assert (tmp_path / "nonblocking").is_dir()
    assert leftovers() == NOTHING

"""split: adaptive on the real emulator: a transfer's two subflows cross spines loaded
unequally, and the one on the lighter path carries more of the bytes, in proportion to the
rates, as the model (and the hand calculation in tests/unit/traffic/test_adaptive_split.py) says."""
from __future__ import annotations

import csv

from experiments.config import parse
from experiments.runner import run_experiment

from .helpers import NOTHING, leftovers

S = 4_000_000
DOC = {
    "name": "itest-adaptive", "seed": 1,
    # spray deals conns 0..4 over the spines alternately: a0, b1, b3 on one, a1, b2 on the
    # other: a0 gets 10/3 Mbit/s, a1 5 (h1's uplink has room), so adaptive a0 carries 0.4 S
    "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 4, "host_link_mbps": 10,
               "spine_link_mbps": 10},
    "jobs": [{"name": "a", "collective": "flows", "groups": [["h1", "h5"]], "size_bytes": S,
              "subflows": 2, "split_piece_bytes": 65536},
             {"name": "b", "collective": "flows", "groups": [["h2", "h6"], ["h3", "h7"],
                                                             ["h4", "h8"]],
              "size_bytes": 3 * S // 2}],
    "routing": ["spray"],
}


def _run(tmp_path, split: str) -> tuple[dict, dict[int, int]]:
    doc = {**DOC, "jobs": [{**DOC["jobs"][0], "split": split}, DOC["jobs"][1]]}
    res = run_experiment(parse(doc), tmp_path / split, log=lambda s: None)
    run, = res["runs"]
    with (tmp_path / split / "spray" / "transfers.csv").open() as f:
        carried = {int(r["tid"]): int(r["size_bytes"]) for r in csv.DictReader(f)
                   if r["job"] == "a"}
    return {j["name"]: j for j in run["jobs"]}, carried


def test_the_subflow_on_the_lighter_path_carries_more(tmp_path):
    even, even_bytes = _run(tmp_path, "even")
    adaptive, carried = _run(tmp_path, "adaptive")
    assert even_bytes == {0: S // 2, 1: S // 2}
    assert sum(carried.values()) == S
    assert 0.34 < carried[0] / S < 0.47, carried                # hand: 0.4
    assert adaptive["a"]["cct_s"][0] < 0.95 * even["a"]["cct_s"][0]   # model: 0.8x
    for jobs in (even, adaptive):
        assert all(j["bytes_verified"] for j in jobs.values())
        assert abs(jobs["a"]["prediction_error_fraction"]) < 0.15, jobs["a"]
        assert abs(jobs["b"]["prediction_error_fraction"]) < 0.1, jobs["b"]
    assert leftovers() == NOTHING

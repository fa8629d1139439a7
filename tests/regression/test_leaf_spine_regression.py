"""Every shipped leaf-spine config routes and predicts exactly as before routes became paths
(expected.json.gz was written by snapshot.py from the code before that change)."""
import json

import pytest

from .snapshot import CONFIGS, read_expected, snapshot

EXPECTED_DOC = read_expected()
#: the shipped configs the baseline holds (every leaf-spine config there was then)
BASELINE = [c for c in CONFIGS if c.name in EXPECTED_DOC]


def test_the_baseline_covers_every_leaf_spine_config_it_was_made_from():
    assert len(BASELINE) == len(EXPECTED_DOC) == 15


@pytest.mark.parametrize("config", BASELINE, ids=[c.stem for c in BASELINE])
def test_same_routes_and_predictions_bit_for_bit(config):
    want = EXPECTED_DOC[config.name]
    got = json.loads(json.dumps(snapshot(config)))   # same JSON round trip as the stored side
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name]["one_plan"] == want[name]["one_plan"], name
        assert got[name]["epochs"] == want[name]["epochs"], name
        assert got[name]["cct_s"] == want[name]["cct_s"], name   # floats compared exactly

"""Every shipped leaf-spine config routes and predicts exactly as before routes became paths
(expected.json.gz was written by snapshot.py from the code before that change)."""
import json

import pytest

from .snapshot import CONFIGS, read_expected, snapshot

EXPECTED_DOC = read_expected()


@pytest.mark.parametrize("config", CONFIGS, ids=[c.stem for c in CONFIGS])
def test_same_routes_and_predictions_bit_for_bit(config):
    want = EXPECTED_DOC[config.name]
    got = json.loads(json.dumps(snapshot(config)))   # same JSON round trip as the stored side
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name]["one_plan"] == want[name]["one_plan"], name
        assert got[name]["epochs"] == want[name]["epochs"], name
        assert got[name]["cct_s"] == want[name]["cct_s"], name   # floats compared exactly

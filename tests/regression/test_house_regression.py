"""The layout redesign moved nothing: every shipped config routes and predicts exactly as
before it, and three configs (one per fabric kind) write the same rule records
(house.json.gz was written by house.py from the code before the redesign)."""
import json

import pytest

from .house import CONFIGS, RULE_CONFIGS, ROOT, digest, read_expected, rules_digest

EXPECTED_DOC = read_expected()
#: every config shipped when the baseline was written (later ones, e.g. rail-rings, are new)
BASELINE = [c for c in CONFIGS if c.name in EXPECTED_DOC["predictions"]]


def test_the_baseline_covers_every_config_it_was_made_from():
    assert len(BASELINE) == len(EXPECTED_DOC["predictions"]) == 23


@pytest.mark.parametrize("config", BASELINE, ids=[c.stem for c in BASELINE])
def test_same_routes_and_predictions_bit_for_bit(config):
    want = EXPECTED_DOC["predictions"][config.name]
    got = json.loads(json.dumps(digest(config)))   # the stored side's JSON round trip
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name] == want[name], name      # CCTs compared as exact floats


@pytest.mark.parametrize("name", RULE_CONFIGS)
def test_same_rule_records(name):
    assert rules_digest(ROOT / "experiments" / "configs" / name) == \
        EXPECTED_DOC["rules"][name]

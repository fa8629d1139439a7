"""The goodput factor: theory, stored calibrations, and which measurements are believed."""
from __future__ import annotations

import json

import pytest

from traffic.goodput import (MAX_GOODPUT_FACTOR, MIN_SHARE_OF_THEORY, calibration_key,
                             goodput_factor, plausible_factor, store_calibration,
                             theoretical_goodput_factor)


def test_theory_at_common_mtus():
    assert theoretical_goodput_factor(9000) == pytest.approx(0.9927, abs=1e-4)
    assert theoretical_goodput_factor(1500) == pytest.approx(0.9564, abs=1e-4)


@pytest.mark.parametrize("mtu", [1500, 9000, 64000])
def test_plausible_bounds(mtu):
    low = theoretical_goodput_factor(mtu) * MIN_SHARE_OF_THEORY
    assert plausible_factor(theoretical_goodput_factor(mtu), mtu)
    assert plausible_factor(low, mtu)
    assert not plausible_factor(low * 0.999, mtu)
    assert not plausible_factor(0.52, mtu)          # a starved first run after an OVS restart
    assert plausible_factor(MAX_GOODPUT_FACTOR, mtu)
    assert not plausible_factor(MAX_GOODPUT_FACTOR + 0.01, mtu)


def test_a_stored_measurement_wins_over_theory(tmp_path):
    f = tmp_path / "cal.json"
    store_calibration("netdev", 9000, "cubic", "fair", {"goodput_factor": 0.985}, path=f)
    factor, source = goodput_factor("netdev", 9000, "cubic", "fair", path=f)
    assert factor == 0.985 and source.startswith("calibrated")
    # another key falls back to the theory
    factor, source = goodput_factor("netdev", 1500, "cubic", "fair", path=f)
    assert factor == theoretical_goodput_factor(1500) and source.startswith("theory")


@pytest.mark.parametrize("bad", [0.0, 0.52, 1.2])
def test_an_implausible_stored_factor_is_not_used(tmp_path, bad):
    """A file written before the check (or by hand) with a starved or broken measurement."""
    f = tmp_path / "cal.json"
    f.write_text(json.dumps({calibration_key("netdev", 9000, "cubic", "fair"):
                             {"goodput_factor": bad}}))
    factor, source = goodput_factor("netdev", 9000, "cubic", "fair", path=f)
    assert factor == theoretical_goodput_factor(9000) and source.startswith("theory")

"""`calibrate` on a live fabric: what it stores, and that it refuses to store a measurement
the emulator did not keep up with."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments import calibrate as cal
from experiments.config import load
from traffic import goodput

from .helpers import NOTHING, leftovers

QUICKSTART = Path(__file__).resolve().parents[2] / "experiments" / "configs" / "quickstart.yaml"


def test_calibration_is_stored(tmp_path):
    """Stored when the monitor saw a faithful measurement; other work on the machine can
    starve the emulator (then nothing is stored, rightly): up to three tries."""
    store = tmp_path / "calibration.json"
    exp = load(QUICKSTART)
    for attempt in range(3):
        try:
            res = cal.calibrate(exp, tmp_path / f"out{attempt}", duration_s=2.0,
                                log=lambda _: None, store=True, store_path=store)
            break
        except cal.CalibrationError as e:
            assert "cause: starved" in str(e) and not store.exists(), e
    else:
        pytest.fail("the emulator was starved by other work in three calibrations")
    assert res["stored"] and goodput.plausible_factor(res["goodput_factor"],
                                                      exp.emulation.mtu_bytes)
    entry, = json.loads(store.read_text()).values()
    assert entry["goodput_factor"] == res["goodput_factor"]
    assert leftovers() == NOTHING


def test_an_implausible_measurement_is_not_stored(tmp_path, monkeypatch):
    """Every measurement made implausible (the bar above what TCP can reach): measured twice,
    then CalibrationError, nothing stored, the result file says so, nothing left behind."""
    monkeypatch.setattr(goodput, "MIN_SHARE_OF_THEORY", 1.5)
    store = tmp_path / "calibration.json"
    lines: list[str] = []
    with pytest.raises(cal.CalibrationError, match="nothing stored"):
        cal.calibrate(load(QUICKSTART), tmp_path / "out", duration_s=2.0, log=lines.append,
                      store=True, store_path=store)
    assert any("measuring again" in x for x in lines)
    assert not store.exists()
    assert json.loads((tmp_path / "out" / "calibration.json").read_text())["stored"] is False
    assert leftovers() == NOTHING


def test_a_measurement_the_monitor_flagged_is_not_stored(tmp_path, monkeypatch):
    """The monitor's verdict made 'flagged' whatever it saw: the factor is measured, its
    record keeps the verdict, and nothing is stored for this datapath. (On a loaded machine
    the monitor names the load, "starved", before the forwarding thread.)"""
    from testbed import monitor
    monkeypatch.setattr(monitor, "MAX_THREAD_FULL_FRACTION", -1.0)
    store = tmp_path / "calibration.json"
    with pytest.raises(cal.CalibrationError, match=r"flagged .* datapath \(cause: "
                                                   r"(forwarding_thread|starved).*nothing "
                                                   r"stored"):
        cal.calibrate(load(QUICKSTART), tmp_path / "out", duration_s=2.0, log=lambda _: None,
                      store=True, store_path=store)
    assert not store.exists()
    rec = json.loads((tmp_path / "out" / "calibration.json").read_text())
    assert rec["stored"] is False and rec["fidelity"]["ok"] is False
    assert rec["fidelity"]["forwarding_by"] == "vswitchd_thread"
    assert leftovers() == NOTHING

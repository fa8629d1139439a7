"""How much of a link's configured rate TCP payload gets: the predictor's `goodput_factor`.

Pure code. HTB shapes the bytes of each Ethernet frame without preamble or FCS (MTU + 14 B)
while the payload of a full segment is MTU - 52 B (IPv4 20, TCP 20, timestamps 12), so in theory
goodput / rate = (MTU - 52) / (MTU + 14): 0.9927 at MTU 9000, 0.9564 at 1500. `python -m
experiments calibrate` measures it on the fabric and stores the value here, per datapath, MTU,
TCP congestion control and link scheduler; a stored measurement wins over the theory.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

MAX_GOODPUT_FACTOR = 1.05   # a stored factor above this is taken as a failed measurement
#: A measured factor below this share of the theory says the emulator did not keep up, not
#: what TCP gets (seen after an OVS restart: one flow at 24-52% on its first run, 99% next).
MIN_SHARE_OF_THEORY = 0.9
CALIBRATION_FILE = Path(os.environ.get("MLFABRIC_CALIBRATION",
                                       "/var/lib/mlfabric/calibration.json"))


def theoretical_goodput_factor(mtu_bytes: int) -> float:
    return (mtu_bytes - 52) / (mtu_bytes + 14)


def plausible_factor(factor: float, mtu_bytes: int) -> bool:
    """Is a measured goodput factor one TCP can give (not a failed or starved measurement)?"""
    return (theoretical_goodput_factor(mtu_bytes) * MIN_SHARE_OF_THEORY <= factor
            <= MAX_GOODPUT_FACTOR)


def calibration_key(datapath: str, mtu_bytes: int, tcp_cc: str, scheduler: str) -> str:
    return f"{datapath}/mtu{mtu_bytes}/{tcp_cc}/{scheduler}"


def load_calibrations(path: Path = CALIBRATION_FILE) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def goodput_factor(datapath: str, mtu_bytes: int, tcp_cc: str, scheduler: str,
                   path: Path = CALIBRATION_FILE) -> tuple[float, str]:
    """(factor, source): a stored calibration if there is one, else the theory."""
    entry = load_calibrations(path).get(calibration_key(datapath, mtu_bytes, tcp_cc, scheduler))
    # HTB lets a flow run a little above the configured rate (measured up to +0.3%)
    if entry and plausible_factor(entry.get("goodput_factor", 0), mtu_bytes):
        return float(entry["goodput_factor"]), f"calibrated {entry.get('measured_at', '')}".strip()
    return theoretical_goodput_factor(mtu_bytes), "theory: (MTU - 52) / (MTU + 14)"


def store_calibration(datapath: str, mtu_bytes: int, tcp_cc: str, scheduler: str, entry: dict,
                      path: Path = CALIBRATION_FILE) -> None:
    data = load_calibrations(path)
    data[calibration_key(datapath, mtu_bytes, tcp_cc, scheduler)] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)

"""Watch the emulator while traffic runs: is the machine, not the fabric, the bottleneck?

Following Mininet-HiFi (Handigol et al., CoNEXT 2012), a run is only as faithful as the CPU
that emulates it. A background thread samples, every `interval_s`:
- each core's utilization (psutil.cpu_percent(percpu=True));
- ovs-vswitchd's CPU share in % of one core (the userspace datapath forwards every packet of
  every switch in that process's main thread, so it saturates at ~100%).

A sample is *saturated* when ovs-vswitchd is at or above VSWITCHD_SATURATED_PCT, or when the
mean over all cores is at or above CORES_SATURATED_PCT. `saturated_s` = saturated samples x
interval; the run is flagged (`ok` false) when more than MAX_SATURATED_FRACTION of the
monitored time was saturated.
"""
from __future__ import annotations

import threading
import time

import psutil

VSWITCHD_SATURATED_PCT = 95.0
CORES_SATURATED_PCT = 95.0
MAX_SATURATED_FRACTION = 0.05


def _vswitchd() -> psutil.Process | None:
    for p in psutil.process_iter(["name"]):
        if p.info["name"] == "ovs-vswitchd":
            return p
    return None


class CpuMonitor:
    """`with CpuMonitor() as mon: ...` then `mon.summary()`."""

    def __init__(self, interval_s: float = 0.25):
        self.interval_s = interval_s
        self.samples: list[tuple[float, list[float], float]] = []  # (t, per-core %, vswitchd %)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._t0 = 0.0
        self._t1 = 0.0

    def __enter__(self) -> "CpuMonitor":
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)
        self._t1 = time.monotonic()

    def _loop(self) -> None:
        proc = _vswitchd()
        psutil.cpu_percent(percpu=True)
        if proc is not None:
            try:
                proc.cpu_percent()
            except psutil.Error:
                proc = None
        while True:   # the last sample covers the time since the one before: a run
            stopped = self._stop.wait(self.interval_s)   # shorter than one interval has one
            cores = psutil.cpu_percent(percpu=True)
            vs = 0.0
            if proc is not None:
                try:
                    vs = proc.cpu_percent()
                except psutil.Error:
                    proc = None
            self.samples.append((time.monotonic(), cores, vs))
            if stopped:
                return

    def summary(self) -> dict:
        """{"ok", "cpu_max_pct", "cpu_mean_pct", "vswitchd_max_pct", "vswitchd_mean_pct",
        "saturated_s", "monitored_s", "samples"}; CPU figures in % (vswitchd: of one core)."""
        n = len(self.samples)
        monitored = max(self._t1 - self._t0, 0.0)
        if n == 0:
            return {"ok": True, "cpu_max_pct": None, "cpu_mean_pct": None,
                    "vswitchd_max_pct": None, "vswitchd_mean_pct": None, "saturated_s": 0.0,
                    "monitored_s": monitored, "samples": 0}
        core_means = [sum(c) / len(c) for _, c, _ in self.samples]
        vs = [v for _, _, v in self.samples]
        saturated = sum(1 for m, v in zip(core_means, vs)
                        if v >= VSWITCHD_SATURATED_PCT or m >= CORES_SATURATED_PCT)
        saturated_s = saturated * self.interval_s
        return {
            "ok": saturated / n <= MAX_SATURATED_FRACTION,
            "cpu_max_pct": max(max(c) for _, c, _ in self.samples),
            "cpu_mean_pct": sum(core_means) / n,
            "vswitchd_max_pct": max(vs), "vswitchd_mean_pct": sum(vs) / n,
            "saturated_s": saturated_s, "monitored_s": monitored, "samples": n,
        }

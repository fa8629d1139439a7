"""Optional packet capture (`emulation.capture`: true, or [switch, neighbour]): scapy records one
switch port into the run folder as a pcap that Wireshark opens.

The capture sniffs that port in the root namespace (default: the first live spine's or agg's
port to leaf1), both directions, keeps at most `max_packets` packets and the first `snap_bytes`
bytes of each (the headers; the original length is kept as the frame's wire length), so a
capture stays small and cheap next to the emulator.
"""
from __future__ import annotations

import threading
from pathlib import Path

from scapy.all import AsyncSniffer, PcapWriter  # noqa: F401 - scapy's public API

from .ovs import TestbedError


class SpineCapture:
    """`with SpineCapture(interface, path): ...` writes path as the traffic runs."""

    def __init__(self, interface: str, path: Path, max_packets: int = 20000,
                 snap_bytes: int = 128):
        self.interface, self.path = interface, path
        self.max_packets, self.snap_bytes = max_packets, snap_bytes
        self.packets = 0
        self._writer: PcapWriter | None = None
        self._sniffer: AsyncSniffer | None = None
        self.error: str | None = None   # a failure while stopping, kept for the results

    def _write(self, pkt) -> None:
        raw = bytes(pkt)
        cut = pkt.__class__(raw[:self.snap_bytes]) if len(raw) > self.snap_bytes else pkt
        cut.time = pkt.time
        cut.wirelen = len(raw)
        self._writer.write(cut)
        self.packets += 1

    def __enter__(self) -> "SpineCapture":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = PcapWriter(str(self.path), sync=False, snaplen=self.snap_bytes)
        started = threading.Event()
        self._sniffer = AsyncSniffer(iface=self.interface, prn=self._write, store=False,
                                     count=self.max_packets, started_callback=started.set)
        self._sniffer.start()
        if not started.wait(timeout=5.0):
            self._writer.close()
            raise TestbedError(f"capture on {self.interface} did not start: "
                               f"{self._sniffer.exception or 'no answer within 5 s'}")
        return self

    def __exit__(self, *exc) -> None:
        try:
            if self._sniffer is not None and self._sniffer.running:
                self._sniffer.stop()
        except Exception as e:  # noqa: BLE001 - the run's results matter more than a pcap
            self.error = f"{type(e).__name__}: {e}"
        finally:
            if self._writer is not None:
                self._writer.close()

"""How the emulator builds and shapes a fabric: the settings `run` passes to EmulatedFabric,
with their defaults written once (experiments/config/records.py's EmulationConfig takes its
defaults from here). Pure data."""
from __future__ import annotations

from dataclasses import dataclass

from .shaping import SWITCH_BURST_FRAMES

#: A subflow's window is never below this many frames (the bound's minimum, `window_frames`).
MIN_SUBFLOW_WINDOW_FRAMES = 4


@dataclass
class EmulationSettings:
    datapath: str = "user"          # user (measured) | kernel | auto: kernel where loaded
    mtu_bytes: int = 9000           # on every interface of the fabric, hosts and switch ports
    queue_packets: int = 100        # drop-tail queue of each HTB leaf class (packets)
    scheduler: str = "fair"         # testbed/shaping.py: fair (per-flow round robin) | fifo
    window_frames: int = 16         # receive window bound per connection, in frames; 0: none
    switch_burst_frames: int = SWITCH_BURST_FRAMES   # HTB burst at switch egress (hosts: 1)
    port_type: str = "system"       # system | tap: how ovs-vswitchd reaches a port (taps.py)
    switch_processes: int = 1       # ovs-vswitchd instances (the machine's + N-1 of the run's)

    @property
    def window_clamp_bytes(self) -> int:
        """TCP_WINDOW_CLAMP for every connection: a flow never queues more than this, so
        queues of `queue_packets` >= window_frames never drop (a lossless fabric, as ML
        fabrics are). 0: kernel autotuning, whose windows grow with the queueing delay until
        a queue overflows (RTO stalls of seconds at these rates)."""
        return self.window_frames * self.mtu_bytes

    def subflow_window_clamp_bytes(self, subflows: int) -> int:
        """The clamp of each of a connection's K subflows: the connection's window shared
        among them (at least MIN_SUBFLOW_WINDOW_FRAMES frames each), as NCCL's sockets share
        one connection's buffer. Without the split, K subflows keep K windows in flight: on
        the quickstart with K = 4, 64 windows of 16 jumbo frames (9.2 MB) overran the 8 MiB
        send buffer through which ovs-vswitchd writes every packet, and the drops it does
        not count cost 101-120 retransmitted segments and +8% to +12% against the model."""
        if not self.window_frames or subflows <= 1:
            return self.window_clamp_bytes
        frames = max(MIN_SUBFLOW_WINDOW_FRAMES, self.window_frames // subflows)
        return min(self.window_frames, frames) * self.mtu_bytes


DEFAULTS = EmulationSettings()

"""Link shaping: the `tc` configuration of every shaped interface, as data (pure code).

Each interface of the fabric shapes its egress to the link's rate with HTB (the kernels here
have no netem, sfq or fq_codel; HTB, TBF, pfifo and u32 are built in). Two schedulers:

``fifo``: one drop-tail queue per link, as a commodity switch port; TCP alone decides how flows
share it::

    5: htb (default 1) -- 5:1 rate R -- pfifo (queue_packets)

``fair``: per-flow round robin inside the link's rate, the sharing the flow-level model assumes
(max-min). HTB's own deficit round robin serves BUCKETS leaf classes with equal quanta (one
frame); a u32 hash filter puts each TCP flow in the bucket of its source port's low bits.
mlfabric gives connections consecutive source ports (from 20000; host-enforced ports keep the
connection index in their low bits too), so flows on one link share a bucket only when their
ports are equal modulo BUCKETS: never among a run's first 256 connections. (With 64 buckets
the quickstart's 128 connections at subflows: 8 fell two to a bucket, a pair on one link got
half a share each, and ECMP's emulated CCT ran +8.7% against the model; +4.0% at 256.)
Segments from ports below 16384 (the agents' listen ports, hence every ACK stream, and
iperf3's server) go to a class of their own::

    5: htb (default 100) -- 5:1 rate R -+- 5:2   rate R/(B+1) ceil R -- pfifo (ACK streams)
                                        +- 5:100 rate R/(B+1) ceil R -- pfifo (queue_packets)
                                        +- 5:101 ...
                                        +- 5:1NN   (NN < BUCKETS, hex)
    filters: prio 1  tcp source port < 16384     -> 5:2
             prio 2  tcp source port & (BUCKETS-1) -> 5:100 + that

Why fair is the default: at emulation scale (links of 5-100 Mbit/s, sub-millisecond RTTs,
jumbo frames) a TCP flow's window is a few packets and drop-tail sharing is coarse (four iperf3
flows on one 5 Mbit/s FIFO link: Jain 0.91-0.94), which a real fabric's large BDPs do not show.
"""
from __future__ import annotations

from dataclasses import dataclass

SCHEDULERS = ("fair", "fifo")
BUCKETS = 256                     # u32 hash tables hold at most 256 buckets; a power of two
TCP_PORTS_OFFSET = 20             # source port (high 16 bits) of the word at IP offset 20
ACK_CLASS = "5:2"                 # segments from ports below 16384: the receivers' ACKs
BURST_MIN_S = 0.001               # the shortest burst, in time at the link rate
#: Frames a switch's egress may send back to back after the emulator held its packets
#: (testbed/net.py gives hosts' egress one frame): see Shaping.burst_bytes.
SWITCH_BURST_FRAMES = 4
MAX_BURST_FRAMES = 16
MAX_MTU_BYTES = 64_000            # veth allows 65535; OVS's userspace datapath carried 64000


@dataclass(frozen=True)
class Shaping:
    rate_mbps: float
    mtu_bytes: int
    queue_packets: int
    scheduler: str = "fair"
    burst_frames: int = 1

    @property
    def frame_bytes(self) -> int:
        return self.mtu_bytes + 14

    @property
    def burst_bytes(self) -> int:
        """`burst_frames` frames, or 1 ms of the link where that is more (HTB's timers).

        At a host's egress one frame: every idle start lets a flow run ahead of the rate by
        the burst (with two frames a 2-rank all-reduce beat its ideal CCT by 6%). At a
        switch's egress SWITCH_BURST_FRAMES: there the packets arrive from upstream links
        shaped to the same rate, late by however long ovs-vswitchd's forwarding thread held
        them, and a one-frame bucket idles the link for that time and never makes it up (a
        ring whose every link runs at its flow's rate lost 5.5% at 640 Mbit/s of host
        traffic, and 11.8% at 1,280). A deeper bucket sends the late frames back to back;
        over any interval the link still carries at most rate x time + the burst, so a link
        busy all along keeps its rate exactly (ECMP, 3 flows a link: unchanged)."""
        return max(self.burst_frames * self.frame_bytes,
                   int(self.rate_mbps * 1e6 / 8 * BURST_MIN_S))


def tc_batch(dev: str, s: Shaping) -> list[str]:
    """`tc -batch` lines that (re)build the egress shaping of interface `dev`."""
    if s.scheduler not in SCHEDULERS:
        raise ValueError(f"scheduler must be one of {SCHEDULERS}, not {s.scheduler!r}")
    rate = f"{s.rate_mbps:g}mbit"
    burst = f"burst {s.burst_bytes} cburst {s.burst_bytes}"
    quantum = f"quantum {s.frame_bytes}"
    if s.scheduler == "fifo":
        return [f"qdisc replace dev {dev} root handle 5: htb default 1",
                f"class add dev {dev} parent 5: classid 5:1 htb rate {rate} {burst} {quantum}",
                f"qdisc add dev {dev} parent 5:1 handle 10: pfifo limit {s.queue_packets}"]
    lines = [f"qdisc replace dev {dev} root handle 5: htb default {0x100:x}",
             f"class add dev {dev} parent 5: classid 5:1 htb rate {rate} {burst} {quantum}"]
    share = f"{s.rate_mbps * 1000 / (BUCKETS + 1):.3f}kbit"
    for minor in ["2"] + [f"{0x100 + b:x}" for b in range(BUCKETS)]:
        lines += [f"class add dev {dev} parent 5:1 classid 5:{minor} htb rate {share} "
                  f"ceil {rate} {burst} {quantum}",
                  f"qdisc add dev {dev} parent 5:{minor} handle {minor}: pfifo "
                  f"limit {s.queue_packets}"]
    lines += [f"filter add dev {dev} parent 5: prio 1 protocol ip u32 "
              f"match ip protocol 6 0xff match u32 0x00000000 0xc0000000 "
              f"at {TCP_PORTS_OFFSET} flowid {ACK_CLASS}",
              f"filter add dev {dev} parent 5: prio 2 protocol ip u32",
              f"filter add dev {dev} parent 5: prio 2 handle 3: protocol ip u32 "
              f"divisor {BUCKETS}",
              f"filter add dev {dev} parent 5: prio 2 protocol ip u32 ht 801:: "
              f"match ip protocol 6 0xff hashkey mask 0x{(BUCKETS - 1) << 16:08x} "
              f"at {TCP_PORTS_OFFSET} link 3:"]
    for b in range(BUCKETS):
        lines.append(f"filter add dev {dev} parent 5: prio 2 protocol ip u32 ht 3:{b:x}: "
                     f"match u32 0 0 flowid 5:{0x100 + b:x}")
    return lines


def bucket_of(src_port: int) -> int:
    """The fair scheduler's bucket of a TCP flow with this source port."""
    return src_port & (BUCKETS - 1)


def auto_mtu_bytes(rate_mbps: float) -> int:
    """Jumbo frames scaled to the link: ~10 ms of the slowest link per frame, 9000-64000 B.
    Fewer, larger frames let the single-threaded userspace datapath carry more (at 1500 B it
    saturates near 80 Mbit/s, at 9000 near 320, at 64000 above 1280 aggregate); too large a
    frame for a slow link makes sharing coarse (64000 B at 10 Mbit/s: 51 ms per frame)."""
    by_time = int(rate_mbps * 1e6 / 8 * 0.010) // 1000 * 1000
    return max(9000, min(MAX_MTU_BYTES, by_time))

"""Watch the emulator while traffic runs: is the machine, not the fabric, the bottleneck?

Following Mininet-HiFi (Handigol et al., CoNEXT 2012), a run is only as faithful as the CPU
that emulates it. A background thread samples, every `interval_s`:
- each core's busy share, leaving out niced processes (`nice` time: a background batch job at
  nice 10 yields the CPU to the emulator, it does not slow it down) and reporting them apart;
- ovs-vswitchd: the whole process in % of one core (all threads), and its forwarding thread
  (the main thread, which polls every `system` port of the userspace datapath): the share of
  the interval it ran, and the share it was runnable but waited for a CPU
  (/proc/PID/task/TID/schedstat). Run + wait is the thread's demand: near 100% it had
  packets to forward all the time, whether it got the CPU (saturated) or not (starved).

Beside the CPU, the monitor reads what waits in ovs-vswitchd's per-port receive sockets each
sample (/proc/net/packet: bytes received and not yet read by the forwarding thread) and, at
start and stop, the packets those sockets dropped because they were full (`ss`'s skmem d):
packets the emulator itself lost, which a faithful run has none of. With tap ports
(testbed/taps.py) there are no such sockets: the packets waiting for ovs-vswitchd sit in each
tap's ring, which the kernel does not expose (queued bytes and the wait are then None), and
what the rings dropped when full is the taps' transmit drops (/proc/net/dev).

A sample is *saturated* when the forwarding thread's demand is at or above
FORWARDING_SATURATED_PCT, or when the non-niced cores average at or above CORES_SATURATED_PCT
while ovs-vswitchd waited for a CPU at least STARVED_WAIT_PCT of the interval (a full machine
that delays the emulator). The run is flagged (`ok` false) when the forwarding thread's
demand was full in more than MAX_THREAD_FULL_FRACTION of the samples, or the machine was full
in more than MAX_SATURATED_FRACTION (starved), or when ovs-vswitchd's sockets dropped any
packet; `advice` then says what to change.

Why a half for the thread: it busy-polls every port while any packet is about, so its demand
touches 95% in bursts at rates it carries faithfully (quickstart ILP at 80 Mbit/s of host
traffic: 15% of samples, +1.3% against the model; 640 Mbit/s: 10-35%, +2.3% to +3.1%), and
stays there where the emulation drifts (1,280 Mbit/s: 84-92%, +4.4% to +7.0%; 64 hosts at
128 Mbit/s: 69%, +12.0%). One quiet machine, 14 runs (docs/emulation.md, "Fidelity guard").

On Open vSwitch's kernel datapath (emulation.datapath: kernel) no thread forwards: the
kernel switches every packet in softirq context on the core that received it, deferring to
that core's ksoftirqd thread under load. There the "forwarding" figures are the busiest
core's softirq share of the interval (/proc/stat) and the wait of that core's ksoftirqd
thread; the emulator's own losses are the packets the cores' input backlogs dropped
(/proc/net/softnet_stat, second column). The same thresholds apply: a core that does nothing
but switch packets is as saturated as a forwarding thread that never sleeps. This mode is
tested on recorded counters only: no machine mlfabric was measured on has the module.

Why not the whole cores' mean alone (as before): on a machine where another user's niced job
held one core, a quickstart whose forwarding thread never passed 62% of a core was flagged
with 14.25 of 15.0 s "saturated", the cores at 99% (see docs/emulation.md, "Fidelity guard").
"""
from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import dataclass

import psutil

from .ovs import (OVS_RECV_BUFFER_BYTES, PacketSocket, parse_ss_packet, run,
                  vswitchd_packet_sockets, vswitchd_pid)

FORWARDING_SATURATED_PCT = 95.0
CORES_SATURATED_PCT = 95.0
STARVED_WAIT_PCT = 10.0
MAX_SATURATED_FRACTION = 0.05     # samples with the machine full (starved)
MAX_THREAD_FULL_FRACTION = 0.5    # samples with the forwarding thread's demand full
#: The forwarding thread's busy share that `advice` aims at (headroom for bursts).
TARGET_FORWARDING_PCT = 80.0
MAX_MTU_BYTES = 64_000


def _vswitchd() -> psutil.Process | None:
    pid = vswitchd_pid()
    try:
        return psutil.Process(pid) if pid else None
    except psutil.Error:
        return None


def parse_proc_net_packet(text: str) -> dict[int, int]:
    """{socket inode: bytes queued for reading} from /proc/net/packet (Rmem, Inode columns)."""
    out = {}
    for line in text.splitlines()[1:]:
        f = line.split()
        if len(f) >= 9:
            out[int(f[8])] = int(f[6])
    return out


def _queued(inodes: set[int]) -> tuple[int, int]:
    """(bytes queued in all, in the fullest) of the packet sockets `inodes` in this netns."""
    try:
        with open("/proc/net/packet") as f:
            rmem = parse_proc_net_packet(f.read())
    except OSError:
        return 0, 0
    q = [rmem[i] for i in inodes if i in rmem]
    return sum(q), max(q, default=0)


def _net_dev_columns(text: str) -> dict[str, list[int]]:
    """{interface: its 16 counters} from /proc/net/dev (8 receive, then 8 transmit)."""
    out = {}
    for line in text.splitlines()[2:]:
        name, _, rest = line.partition(":")
        f = rest.split()
        if len(f) >= 16:
            out[name.strip()] = [int(x) for x in f[:16]]
    return out


def parse_proc_net_dev(text: str) -> dict[str, int]:
    """{interface: bytes received} from /proc/net/dev."""
    return {name: c[0] for name, c in _net_dev_columns(text).items()}


def parse_proc_net_dev_tx(text: str) -> dict[str, tuple[int, int]]:
    """{interface: (bytes transmitted, packets dropped on transmit)} from /proc/net/dev."""
    return {name: (c[8], c[11]) for name, c in _net_dev_columns(text).items()}


def _net_dev() -> str:
    try:
        with open("/proc/net/dev") as f:
            return f.read()
    except OSError:
        return ""


def _rx_bytes(ifaces: set[str], taps: set[str]) -> int:
    """Bytes that reached ovs-vswitchd's ports so far (in this netns): received on its
    `system` ports' interfaces `ifaces`, or transmitted by the kernel into its `taps`."""
    dev = _net_dev_columns(_net_dev())
    return (sum(dev[i][0] for i in ifaces if i in dev)
            + sum(dev[t][8] for t in taps if t in dev))


def tap_drops(taps: set[str]) -> int:
    """Packets the kernel dropped so far because a tap's ring (what waits for ovs-vswitchd to
    read it) was full: the taps' transmit drops."""
    tx = parse_proc_net_dev_tx(_net_dev())
    return sum(tx.get(t, (0, 0))[1] for t in taps)


def socket_drops(before: list[PacketSocket], after: list[PacketSocket]) -> int:
    """Packets ovs-vswitchd's sockets dropped between two readings (sockets in both)."""
    was = {s.inode: s.drops for s in before}
    return sum(s.drops - was[s.inode] for s in after if s.inode in was)


def parse_task_stat(text: str) -> tuple[str, float]:
    """(comm, utime + stime in clock ticks) from one /proc/PID/task/TID/stat line; comm may
    hold spaces and parentheses, so the fields are counted from the last ')'."""
    comm = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    return comm, float(int(fields[11]) + int(fields[12]))


def parse_schedstat(text: str) -> tuple[float, float]:
    """(ns on a CPU, ns runnable and waiting) from /proc/PID/task/TID/schedstat."""
    run_ns, wait_ns, _ = text.split()
    return float(run_ns), float(wait_ns)


def _read_thread(pid: int, tid: int) -> tuple[float, float] | None:
    """(ns run, ns waited) of one thread, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            return parse_schedstat(f.read())
    except (OSError, ValueError):
        return None


def _wait_ns(pid: int) -> float:
    """ns all of ovs-vswitchd's threads waited for a CPU, summed."""
    total = 0.0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for tid in tids:
        r = _read_thread(pid, int(tid))
        if r:
            total += r[1]
    return total


@dataclass(frozen=True)
class Sample:
    """One interval; CPU figures in % (cores: of each core; ovs-vswitchd: of one core)."""

    t: float
    cores_pct: tuple[float, ...]      # busy outside niced processes, per core
    nice_pct: float                   # niced processes, mean over cores
    vswitchd_pct: float               # the whole process (every thread)
    forwarding_pct: float             # its main thread on a CPU
    forwarding_wait_pct: float        # its main thread runnable, waiting for a CPU
    vswitchd_wait_pct: float          # every thread's waits, summed
    rx_queued_bytes: int = 0          # in ovs-vswitchd's port sockets, not yet read
    rx_queued_max_bytes: int = 0      # in the fullest of them
    rx_mbps: float = 0.0              # arriving at ovs-vswitchd's ports (all together)

    @property
    def cores_mean_pct(self) -> float:
        return sum(self.cores_pct) / len(self.cores_pct) if self.cores_pct else 0.0

    @property
    def forwarding_full(self) -> bool:
        """The forwarding thread had packets (ran or waited to run) the whole interval."""
        return self.forwarding_pct + self.forwarding_wait_pct >= FORWARDING_SATURATED_PCT

    @property
    def cores_full(self) -> bool:
        """Every core busy outside niced work, and ovs-vswitchd kept waiting for one."""
        return (self.cores_mean_pct >= CORES_SATURATED_PCT
                and self.vswitchd_wait_pct >= STARVED_WAIT_PCT)

    @property
    def saturated(self) -> bool:
        return self.forwarding_full or self.cores_full


def parse_softnet_drops(text: str) -> int:
    """Packets every core's input backlog dropped so far: /proc/net/softnet_stat's second
    column (hexadecimal), summed over its one line per core."""
    return sum(int(f[1], 16) for line in text.splitlines() if len(f := line.split()) >= 2)


def softnet_drops() -> int:
    try:
        with open("/proc/net/softnet_stat") as f:
            return parse_softnet_drops(f.read())
    except OSError:
        return 0


def softirq_pcts(prev, cur) -> list[float]:
    """Each core's softirq share (%) between two psutil.cpu_times(percpu=True) readings."""
    out = []
    for a, b in zip(prev, cur):
        total = sum(b) - sum(a)
        out.append(100.0 * max(0.0, b.softirq - a.softirq) / total if total > 0 else 0.0)
    return out


def ksoftirqd_pids() -> dict[int, int]:
    """{core: PID of its ksoftirqd thread} (read only)."""
    out = {}
    for p in psutil.process_iter(["name"]):
        name = p.info["name"] or ""
        if name.startswith("ksoftirqd/") and name[10:].isdigit():
            out[int(name[10:])] = p.pid
    return out


class _Softirq:
    """The kernel datapath's forwarding figures: the busiest core's softirq % and the wait %
    of that core's ksoftirqd thread, per interval."""

    def __init__(self) -> None:
        self.threads = ksoftirqd_pids()
        self.waits = {c: _read_thread(p, p) for c, p in self.threads.items()}

    def step(self, prev, cur, dt_ns: float) -> tuple[float, float]:
        shares = softirq_pcts(prev, cur)
        busiest = max(range(len(shares)), key=shares.__getitem__) if shares else 0
        waits = {c: _read_thread(p, p) for c, p in self.threads.items()}
        a, b = self.waits.get(busiest), waits.get(busiest)
        self.waits = waits
        wait = 100 * (b[1] - a[1]) / dt_ns if a and b else 0.0
        return (shares[busiest] if shares else 0.0), max(0.0, wait)


def _cpu_s(pid: int) -> float:
    """A process's CPU seconds so far (0 when it is gone)."""
    try:
        t = psutil.Process(pid).cpu_times()
        return t.user + t.system
    except psutil.Error:
        return 0.0


def _others_step(others: list[tuple], dt_ns: float) -> tuple[list[tuple], list[tuple]]:
    """One interval of the run's own ovs-vswitchd processes: each (pid, main thread's
    (run, wait) ns, all threads' wait ns, CPU s) read again; returns the new readings and per
    process (forwarding %, forwarding wait %, all threads' wait %, process % of one core)."""
    new, out = [], []
    for p, fwd, waits, cpu in others:
        f2, w2, c2 = _read_thread(p, p), _wait_ns(p), _cpu_s(p)
        run_pct = 100 * (f2[0] - fwd[0]) / dt_ns if fwd and f2 else 0.0
        wait_pct = 100 * (f2[1] - fwd[1]) / dt_ns if fwd and f2 else 0.0
        out.append((run_pct, wait_pct, 100 * max(0.0, w2 - waits) / dt_ns,
                    100 * max(0.0, c2 - cpu) * 1e9 / dt_ns))
        new.append((p, f2, w2, c2))
    return new, out


def _core_busy(prev, cur) -> tuple[list[float], float]:
    """Per-core busy % without nice, and the mean nice %, between two cpu_times(percpu)."""
    busy, nice = [], []
    for a, b in zip(prev, cur):
        total = sum(b) - sum(a)
        if total <= 0:
            busy.append(0.0)
            nice.append(0.0)
            continue
        idle = (b.idle - a.idle) + (getattr(b, "iowait", 0) - getattr(a, "iowait", 0))
        n = (b.nice - a.nice) + (getattr(b, "guest_nice", 0) - getattr(a, "guest_nice", 0))
        busy.append(max(0.0, 100.0 * (total - idle - n) / total))
        nice.append(100.0 * n / total)
    return busy, (sum(nice) / len(nice) if nice else 0.0)


def netns_packet_sockets(pid: int, netns: str) -> list[PacketSocket]:
    """The AF_PACKET sockets of the ovs-vswitchd `pid` that runs in namespace `netns`."""
    out = run(["ip", "netns", "exec", netns, "ss", "-0", "-m", "-p", "-e", "-n", "-H"],
              check=False).stdout
    return parse_ss_packet(out, pid)


class CpuMonitor:
    """`with CpuMonitor(taps) as mon: ...` then `mon.summary()`; `taps`: ovs-vswitchd's tap
    ports (EmulatedFabric.taps), none with `system` ports. `others`: (PID, namespace) of the
    run's own ovs-vswitchd processes (emulation.switch_processes > 1): each sample's
    forwarding figures are then the busiest forwarding thread's, the process figures summed,
    and their sockets' drops count too (their queued bytes and arrivals are not sampled)."""

    def __init__(self, taps: list[str] | tuple[str, ...] = (), interval_s: float = 0.25,
                 others: list[tuple[int, str]] | tuple = (), datapath: str = "user"):
        self.datapath = datapath          # user: a forwarding thread; kernel: softirq
        self.backlog_drops = 0
        self.others = list(others)
        self.others_before: list[PacketSocket] = []
        self.others_after: list[PacketSocket] = []
        self.taps = set(taps)
        self.tap_drops = 0
        self.interval_s = interval_s
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._t0 = 0.0
        self._t1 = 0.0
        self.sockets_before: list[PacketSocket] = []
        self.sockets_after: list[PacketSocket] = []

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
        pid = proc.pid if proc else 0
        self.sockets_before = vswitchd_packet_sockets() if pid else []
        inodes = {s.inode for s in self._ports()}
        ifaces = {s.iface for s in self._ports()} - self.taps
        rx = _rx_bytes(ifaces, self.taps)
        drops0 = tap_drops(self.taps) if self.taps else 0
        cores = psutil.cpu_times(percpu=True)
        fwd = _read_thread(pid, pid) if pid else None
        waits = _wait_ns(pid) if pid else 0.0
        self.others_before = [s for p, ns in self.others for s in netns_packet_sockets(p, ns)]
        others = [(p, _read_thread(p, p), _wait_ns(p), _cpu_s(p)) for p, _ in self.others]
        try:
            if proc is not None:
                proc.cpu_percent()
        except psutil.Error:
            proc = None
        softirq = _Softirq() if self.datapath == "kernel" else None
        backlog0 = softnet_drops() if softirq else 0
        t = time.monotonic()
        while True:   # the last sample covers the time since the one before: a run
            stopped = self._stop.wait(self.interval_s)   # shorter than one interval has one
            now = time.monotonic()
            dt_ns = max(now - t, 1e-6) * 1e9
            cur = psutil.cpu_times(percpu=True)
            busy, nice = _core_busy(cores, cur)
            vs, f_run, f_wait, all_wait = 0.0, 0.0, 0.0, 0.0
            if proc is not None:
                try:
                    vs = proc.cpu_percent()
                except psutil.Error:
                    proc = None
                f2 = _read_thread(pid, pid)
                if fwd and f2:
                    f_run = 100 * (f2[0] - fwd[0]) / dt_ns
                    f_wait = 100 * (f2[1] - fwd[1]) / dt_ns
                w2 = _wait_ns(pid)
                all_wait = 100 * max(0.0, w2 - waits) / dt_ns
                fwd, waits = f2, w2
            if softirq is not None:     # the kernel forwards: its softirq, not a thread
                f_run, f_wait = softirq.step(cores, cur, dt_ns)
            if others:
                others, extra = _others_step(others, dt_ns)
                for o_run, o_wait, o_all_wait, o_pct in extra:
                    if o_run + o_wait > f_run + f_wait:     # the busiest forwarding thread
                        f_run, f_wait = o_run, o_wait
                    all_wait += o_all_wait
                    vs += o_pct
            queued, fullest = _queued(inodes)
            rx2 = _rx_bytes(ifaces, self.taps)
            rx_mbps = (max(0, rx2 - rx) * 8 / (dt_ns / 1e3) if ifaces or self.taps
                       else 0.0)
            rx = rx2
            self.samples.append(Sample(now, tuple(busy), nice, vs, min(f_run, 100.0),
                                       min(f_wait, 100.0), all_wait, queued, fullest,
                                       rx_mbps))
            cores, t = cur, now
            if stopped:
                self.sockets_after = vswitchd_packet_sockets() if pid else []
                self.others_after = [s for p, ns in self.others
                                     for s in netns_packet_sockets(p, ns)]
                self.tap_drops = tap_drops(self.taps) - drops0 if self.taps else 0
                self.backlog_drops = softnet_drops() - backlog0 if softirq else 0
                return

    def _ports(self) -> list[PacketSocket]:
        """ovs-vswitchd's per-port sockets as the run started (not its one send socket)."""
        return [s for s in self.sockets_before if s.iface != "*"]

    def summary(self) -> dict:
        rcvbufs = [s.rcvbuf_bytes for s in self._ports()]
        return summarize(self.samples, self.interval_s, max(self._t1 - self._t0, 0.0),
                         socket_drops(self.sockets_before, self.sockets_after)
                         + socket_drops(self.others_before, self.others_after)
                         + self.tap_drops + self.backlog_drops,
                         min(rcvbufs) if rcvbufs else None,
                         "kernel" if self.datapath == "kernel" else
                         "tap" if self.taps else "system")

    def write_csv(self, path) -> None:
        """Every sample, one row each (CPU in %, t_s from the first sample)."""
        t0 = self.samples[0].t if self.samples else 0.0
        rows = ["t_s,cores_mean_pct,nice_pct,vswitchd_pct,forwarding_pct,"
                "forwarding_wait_pct,vswitchd_wait_pct,rx_queued_bytes,rx_queued_max_bytes,rx_mbps,"
                "saturated"]
        rows += [f"{s.t - t0:.3f},{s.cores_mean_pct:.1f},{s.nice_pct:.1f},{s.vswitchd_pct:.1f},"
                 f"{s.forwarding_pct:.1f},{s.forwarding_wait_pct:.1f},"
                 f"{s.vswitchd_wait_pct:.1f},{s.rx_queued_bytes},{s.rx_queued_max_bytes},"
                 f"{s.rx_mbps:.1f},{int(s.saturated)}" for s in self.samples]
        with open(path, "w") as f:
            f.write("\n".join(rows) + "\n")


def _pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) of values, nearest rank."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


def summarize(samples: list[Sample], interval_s: float, monitored_s: float,
              rx_drops: int = 0, rcvbuf_bytes: int | None = None,
              port_type: str = "system") -> dict:
    """{"ok", "saturated_s", "monitored_s", "samples", "cpu_max_pct", "cpu_mean_pct" (cores
    busy outside niced processes), "nice_mean_pct", "vswitchd_max_pct", "vswitchd_mean_pct"
    (the process, % of one core), "forwarding_max_pct", "forwarding_p90_pct",
    "forwarding_mean_pct" (its main thread on a CPU), "forwarding_wait_mean_pct",
    "vswitchd_wait_mean_pct", "vswitchd_rx_queued_max_bytes" (all port sockets together),
    "vswitchd_rx_queued_mean_bytes", "vswitchd_rx_fullest_max_bytes" (one socket),
    "vswitchd_rx_drops" (packets), "vswitchd_rcvbuf_bytes", "vswitchd_port_type" (system or
    tap: where the drops were counted), "vswitchd_rx_mean_mbps" (arriving
    at its ports), "vswitchd_rx_wait_ms" (Little's law: mean bytes queued / mean arrival rate,
    the time a packet waited for the forwarding thread at each switch it crossed; an upper
    bound, the queue being counted in the kernel's buffer sizes), "cause"} (CPU in %).
    `rx_drops`: packets ovs-vswitchd's port sockets (or taps' rings) dropped; any flags the
    run. `port_type` tap: the queues are not seen, so the queued bytes and the wait are None;
    kernel (the kernel datapath): neither, the forwarding figures are softirq's and the drops
    the cores' input backlogs'. "forwarding_by" says which: vswitchd_thread or softirq."""
    n = len(samples)
    queues_seen = port_type == "system"
    base = {"vswitchd_rx_drops": rx_drops, "vswitchd_rcvbuf_bytes": rcvbuf_bytes,
            "vswitchd_port_type": port_type,
            "forwarding_by": "softirq" if port_type == "kernel" else "vswitchd_thread"}
    if n == 0:
        return {"ok": rx_drops == 0, "saturated_s": 0.0, "monitored_s": monitored_s,
                "samples": 0, "forwarding_full_s": 0.0, "cores_full_s": 0.0,
                "cpu_max_pct": None, "cpu_mean_pct": None, "nice_mean_pct": None,
                "vswitchd_max_pct": None, "vswitchd_mean_pct": None,
                "forwarding_max_pct": None, "forwarding_p90_pct": None,
                "forwarding_mean_pct": None, "forwarding_wait_mean_pct": None,
                "vswitchd_wait_mean_pct": None, "vswitchd_rx_queued_max_bytes": None,
                "vswitchd_rx_queued_mean_bytes": None, "vswitchd_rx_fullest_max_bytes": None,
                "vswitchd_rx_mean_mbps": None, "vswitchd_rx_wait_ms": None, **base,
                "cause": "dropped" if rx_drops else None}
    sat = [s for s in samples if s.saturated]
    busy = [s.forwarding_pct for s in samples]
    full = sum(1 for s in samples if s.forwarding_full)
    starved = sum(1 for s in samples if s.cores_full)
    rx_mbps = sum(s.rx_mbps for s in samples) / n
    queued = sum(s.rx_queued_bytes for s in samples) / n
    wait_ms = 1e3 * queued / (rx_mbps * 1e6 / 8) if rx_mbps > 0 and queues_seen else None
    thread_over = full / n > MAX_THREAD_FULL_FRACTION
    starved_over = starved / n > MAX_SATURATED_FRACTION
    ok = not (thread_over or starved_over or rx_drops)
    # a full machine makes the thread wait too: then the machine is the cause
    cause = ("dropped" if rx_drops else "starved" if starved_over
             else ("softirq" if port_type == "kernel" else "forwarding_thread") if thread_over
             else None)
    return {
        "ok": ok, "saturated_s": len(sat) * interval_s, "monitored_s": monitored_s,
        "samples": n,
        "forwarding_full_s": full * interval_s, "cores_full_s": starved * interval_s,
        "cpu_max_pct": max(max(s.cores_pct, default=0.0) for s in samples),
        "cpu_mean_pct": sum(s.cores_mean_pct for s in samples) / n,
        "nice_mean_pct": sum(s.nice_pct for s in samples) / n,
        "vswitchd_max_pct": max(s.vswitchd_pct for s in samples),
        "vswitchd_mean_pct": sum(s.vswitchd_pct for s in samples) / n,
        "forwarding_max_pct": max(busy), "forwarding_p90_pct": _pct(busy, 0.9),
        "forwarding_mean_pct": sum(busy) / n,
        "forwarding_wait_mean_pct": sum(s.forwarding_wait_pct for s in samples) / n,
        "vswitchd_wait_mean_pct": sum(s.vswitchd_wait_pct for s in samples) / n,
        **({"vswitchd_rx_queued_max_bytes": max(s.rx_queued_bytes for s in samples),
            "vswitchd_rx_queued_mean_bytes": queued,
            "vswitchd_rx_fullest_max_bytes": max(s.rx_queued_max_bytes for s in samples)}
           if queues_seen else {"vswitchd_rx_queued_max_bytes": None,
                                "vswitchd_rx_queued_mean_bytes": None,
                                "vswitchd_rx_fullest_max_bytes": None}),
        "vswitchd_rx_mean_mbps": rx_mbps, "vswitchd_rx_wait_ms": wait_ms,
        **base, "cause": cause,
    }


def advice(summary: dict, host_traffic_mbps: float, mtu_bytes: int, hosts: int,
           load_avg_1min: float | None = None, cpus: int | None = None) -> list[str]:
    """What to change when `summary` (summarize's) is flagged, with the numbers; [] when ok.

    The forwarding thread's work is per packet, so it scales with host traffic / MTU: to bring
    its busy share p (90th percentile) down to TARGET_FORWARDING_PCT, divide the packet rate by
    f = p / target: rates (or hosts, whose traffic adds up) times 1/f, or the MTU times f."""
    if summary.get("ok", True):
        return []
    p90 = summary.get("forwarding_p90_pct") or 0.0
    wait = summary.get("forwarding_wait_mean_pct") or 0.0
    kernel = summary.get("forwarding_by") == "softirq"
    out = []
    if summary.get("cause") == "dropped":
        rb = summary.get("vswitchd_rcvbuf_bytes")
        size = f" ({rb / 2**20:.1f} MiB)" if rb else ""
        fix = (f"; `sudo make setup` raises them to {OVS_RECV_BUFFER_BYTES // 2**20} MiB"
               if rb and rb < OVS_RECV_BUFFER_BYTES else "")
        where = (("tap ports", "a tap's ring (its txqueuelen)")
                 if summary.get("vswitchd_port_type") == "tap"
                 else ("port sockets", f"a socket's receive buffer{size}"))
        if kernel:
            out.append(f"the cores' input backlogs dropped {summary.get('vswitchd_rx_drops')} "
                       "packets (/proc/net/softnet_stat; net.core.netdev_max_backlog): the "
                       "kernel did not switch them in time, so the emulator, not the fabric, "
                       "lost them")
        else:
            out.append(f"ovs-vswitchd's {where[0]} dropped {summary.get('vswitchd_rx_drops')}"
                       f" packets: {where[1]} filled while the forwarding thread served the "
                       f"other ports, so the emulator, not the fabric, lost them{fix}")
    if summary.get("cause") in ("forwarding_thread", "softirq", "dropped"):
        f = max(p90 + wait, FORWARDING_SATURATED_PCT) / TARGET_FORWARDING_PCT
        mtu = min(MAX_MTU_BYTES, int(math.ceil(mtu_bytes * f / 1000.0)) * 1000)
        who = ("the kernel's packet switching (softirq) on its busiest core" if kernel
               else "ovs-vswitchd's forwarding thread")
        out.append(f"{who} was at {p90:.0f}% of a core (90th "
                   f"percentile; waiting for a CPU {wait:.0f}% more) at {host_traffic_mbps:g} "
                   f"Mbit/s of host traffic, MTU {mtu_bytes}: it forwards per packet, so cut "
                   f"the packet rate by {f:.2f}x to reach {TARGET_FORWARDING_PCT:.0f}%:")
        out.append(f"  lower every link rate by {f:.2f}x (host traffic <= "
                   f"{host_traffic_mbps / f:.0f} Mbit/s)")
        if mtu > mtu_bytes:
            out.append(f"  or raise emulation.mtu_bytes from {mtu_bytes} to {mtu} "
                       "(coarser sharing on slow links; see docs/emulation.md, MTU)")
        out.append(f"  or emulate fewer hosts: at most {int(hosts / f)} of {hosts} at these "
                   "rates")
    else:
        load = (f" (load average {load_avg_1min:.2f} on {cpus} cores before the run)"
                if load_avg_1min is not None and cpus else "")
        cores = summary.get("cpu_mean_pct") or 0.0
        forwarder = "softirq on the busiest core" if kernel else "its forwarding thread"
        vs_wait = summary.get("vswitchd_wait_mean_pct") or 0.0
        out.append(f"the cores were {cores:.0f}% busy on average and ovs-vswitchd waited for "
                   f"a CPU {vs_wait:.0f}% of the time, while {forwarder} ran only "
                   f"{p90:.0f}% of a core (90th percentile): other work on this machine "
                   f"starved the emulator{load}. Run again when the machine is idle (load "
                   "average below 1), or lower the host traffic so that the agents need "
                   "less CPU")
    return out

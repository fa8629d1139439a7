"""Fidelity benchmark (a script, not a test; root): up to what aggregate rate is the emulator
faithful on this machine?

    sudo .venv/bin/python -m experiments.benchmarks.fidelity_bench [--rates 5 10 20 40]

For each per-link rate R (Mbit/s) it emulates the quickstart's shape (4x4 leaf-spine, 4 hosts
per leaf, four 4-rank rings, one rank per leaf: 16 flows, so 16 R of host traffic) with the
bytes scaled so that the ideal CCT stays 2.4 s, under ECMP and ILP, after calibrating the same
fabric (one flow; four flows sharing one link; the goodput factor is stored, as `calibrate`
does, and predicts the runs that follow). It prints, per rate, the targets of issue 5:
- one flow reaches >= 93% of the configured rate (agents and iperf3);
- four flows sharing a link get Jain's index >= 0.95;
- |prediction error| <= 5% (each routing's mean CCT against the flow-level model);
- the CPU monitor did not flag the run;
and the largest aggregate rate at which all of them held.

    sudo .venv/bin/python -m experiments.benchmarks.fidelity_bench --probe-ports

instead probes the userspace datapath's port types on one bridge of its own (`mfprobe`, two
ports, two namespaces `mfpa`/`mfpb` of its own, host offloads off as in the emulator): for
`system`, `afxdp` (a PMD thread, native XDP where the driver has it) and `afxdp-nonpmd`, one
TCP flow's goodput (iperf3, median of 3 runs of 3 s, unshaped), whether an HTB shaper at
100 Mbit/s on the switch's egress port holds the flow to its rate, and the largest MTU OVS
accepts on the port (9000 requested). Everything it creates goes on every exit path.

    sudo .venv/bin/python -m experiments.benchmarks.fidelity_bench --probe-idle-ports 0 16 48

one unshaped flow through the same kind of bridge (MTU 9000; `system` ports, or with
`--port-type tap` taps joined to their veths as the emulator joins them) beside N idle ports
(their peers in a namespace `mfpc` of its own): Gbit/s, ovs-vswitchd's cores and its
core-seconds per Gbit, for each N in turn.

    sudo .venv/bin/python -m experiments.benchmarks.fidelity_bench --probe-instances

one unshaped flow over two bridges in a chain (mfpa - mfprobe - mfprobe2 - mfpb), first both
in the machine's ovs-vswitchd, then mfprobe2 in an ovs-vswitchd (and ovsdb-server) the probe
starts in a namespace `mfpo` and stops by PID: Gbit/s and each instance's cores.

    sudo .venv/bin/python -m experiments.benchmarks.fidelity_bench --cpu-split --rates 256

one ILP-only run per rate, printing its error and where the cores went while the 16 agents
ran: ovs-vswitchd's forwarding thread, the agents, softirq + irq, and the machine's busy time.

    sudo .venv/bin/python -m experiments.benchmarks.fidelity_bench --switch-processes 1 2 4 \
        --rates 60 80 100 --repeats 3

the rings of the first mode, ILP only (no calibration: the stored goodput factor predicts),
with the switches spread over N ovs-vswitchd processes (emulation.switch_processes), each
rate `--repeats` times: per N and rate the median prediction error, the busiest forwarding
thread's 90th percentile, how many runs the CPU monitor passed, and the load average around
them; then per N the largest aggregate at which the median error was within 5% and every
run passed the monitor (the faithful aggregate).

`--port-type tap` runs any of these with tap switch ports (testbed/taps.py); default system.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from experiments.calibrate import CalibrationError, calibrate
from testbed import taps
from testbed.ovs import VSWITCHD_GLIBC_TUNABLES, TestbedError, vswitchd_pid
from experiments.config import parse
from experiments.runner import run_experiment
from experiments.benchmarks.harness import conditions

IDEAL_CCT_S = 2.4


def config(rate_mbps: float, scheduler: str = "fair", port_type: str = "system",
           datapath: str = "user") -> dict:
    size = int(IDEAL_CCT_S * rate_mbps * 1e6 / 8 / 1.5)   # 2(n-1)/n = 1.5 for n = 4
    hosts = lambda k: [f"h{k + 4 * i}" for i in range(4)]  # noqa: E731
    return {
        "name": f"fidelity-{rate_mbps:g}mbps", "seed": 1,
        "fabric": {"spines": 4, "leaves": 4, "hosts_per_leaf": 4,
                   "host_link_mbps": rate_mbps, "spine_link_mbps": rate_mbps},
        "jobs": [{"name": f"ring-{k}", "collective": "allreduce", "hosts": hosts(k),
                  "size_bytes": size, "iterations": 3} for k in range(1, 5)],
        "routing": ["ecmp", "ilp"],
        "emulation": {"link_scheduler": scheduler, "mtu_bytes": "auto",
                      "port_type": port_type, "datapath": datapath},
    }


PROBE_NS, PROBE_BR, PROBE_IP = ("mfpa", "mfpb"), "mfprobe", ("10.253.0.1", "10.253.0.2")
PORT_TYPES = ("system", "afxdp", "afxdp-nonpmd")


def _sh(*args: str, ns: str | None = None, check: bool = True) -> str:
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if check and p.returncode:
        raise RuntimeError(f"`{' '.join(cmd)}` failed: {(p.stderr or p.stdout).strip()[:300]}")
    return p.stdout


def _probe_teardown() -> None:
    _sh("ovs-vsctl", "--if-exists", "del-br", PROBE_BR, check=False)
    taps.remove(PROBE_TABLE)
    _PROBE_TAPS.clear()
    for ns in PROBE_NS:
        _sh("ip", "netns", "del", ns, check=False)


def _probe_hosts(mtu: int) -> list[str]:
    """The probe's two hosts: namespaces mfpa/mfpb, each with a veth at `mtu` bytes, an
    address and the emulator's offloads off. Returns the root-side ends (the switch ports)."""
    ports = []
    for i, ns in enumerate(PROBE_NS):
        dev, peer = f"{ns}0", f"{ns}1"
        _sh("ip", "netns", "add", ns)
        _sh("ip", "link", "add", dev, "mtu", str(mtu), "type", "veth", "peer", "name", peer,
            "mtu", str(mtu), "netns", ns)
        _sh("ip", "link", "set", dev, "up")
        _sh("ip", "link", "set", peer, "up", ns=ns)
        _sh("ip", "addr", "add", f"{PROBE_IP[i]}/24", "dev", peer, ns=ns)
        _sh("ethtool", "-K", peer, "tx", "off", "rx", "off", "tso", "off", "gso", "off",
            "gro", "off", ns=ns)
        ports.append(dev)
    return ports


def _probe_flow() -> float:
    """One TCP flow mfpa -> mfpb for 3 s: Gbit/s received (0 when it could not connect)."""
    srv = subprocess.Popen(["ip", "netns", "exec", PROBE_NS[1], "iperf3", "-s", "-1", "-p",
                            "5297"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        p = subprocess.run(["ip", "netns", "exec", PROBE_NS[0], "iperf3", "-c", PROBE_IP[1],
                            "-p", "5297", "-t", "3", "-J", "--connect-timeout", "2000"],
                           capture_output=True, text=True, timeout=20)
        try:
            return json.loads(p.stdout)["end"]["sum_received"]["bits_per_second"] / 1e9
        except (ValueError, KeyError):
            return 0.0
    except subprocess.TimeoutExpired:
        return 0.0
    finally:
        if srv.poll() is None:
            srv.terminate()
        srv.wait(timeout=5)


def probe_ports() -> None:
    """Goodput, shaping and MTU of each userspace port type (see the module docstring)."""
    _probe_teardown()
    try:
        _sh("ovs-vsctl", "add-br", PROBE_BR, "--", "set", "bridge", PROBE_BR,
            "datapath_type=netdev")
        for dev in _probe_hosts(1500):
            _sh("ovs-vsctl", "add-port", PROBE_BR, dev)
        for kind in PORT_TYPES:
            for ns in PROBE_NS:
                _sh("ovs-vsctl", "set", "Interface", f"{ns}0", f"type={kind}",
                    "mtu_request=1500")
            time.sleep(2)
            errors = [_sh("ovs-vsctl", "get", "Interface", f"{ns}0", "error").strip()
                      for ns in PROBE_NS]
            runs = [_probe_flow() for _ in range(3)]
            egress = f"{PROBE_NS[1]}0"       # the switch's port towards mfpb
            _sh("tc", "qdisc", "replace", "dev", egress, "root", "handle", "5:", "htb",
                "default", "1")
            _sh("tc", "class", "add", "dev", egress, "parent", "5:", "classid", "5:1", "htb",
                "rate", "100mbit")
            shaped = _probe_flow()
            sent = _sh("tc", "-s", "qdisc", "show", "dev", egress).split("Sent ")[1].split()[2]
            _sh("tc", "qdisc", "del", "dev", egress, "root")
            _sh("ovs-vsctl", "set", "Interface", egress, "mtu_request=9000")
            time.sleep(1)
            mtu = _sh("ovs-vsctl", "get", "Interface", egress, "mtu").strip()
            print(f"{kind:<13} MTU 1500, one flow: {statistics.median(runs):.2f} Gbit/s (runs "
                  f"{', '.join(f'{r:.2f}' for r in runs)}); with HTB 100 Mbit/s on the "
                  f"switch's egress: {shaped * 1000:.0f} Mbit/s ({sent} packets through the "
                  f"HTB); MTU 9000 requested -> {mtu}; errors {errors}", flush=True)
    finally:
        _probe_teardown()


IDLE_NS = "mfpc"


def _machine_vswitchd() -> int:
    """The machine's ovs-vswitchd PID (the probes measure its CPU)."""
    pid = vswitchd_pid()
    if pid is None:
        raise RuntimeError("ovs-vswitchd is not running")
    return pid


def _cpu_s(pid: int) -> float:
    """A process's CPU seconds so far (user + system, all threads)."""
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


PROBE_TABLE = "mfprobe_taps"    # not mlfabric_*: no run's table


def _probe_ports(devs: list[str], mtu: int, port_type: str) -> None:
    """Add the veths `devs` to the probe's bridge: as `system` ports, or each through a tap
    `<dev>t` joined to it as the emulator joins them (testbed/taps.py). Rebuilds the probe's
    nft table over every tap so far."""
    if port_type == "system":
        _sh("ovs-vsctl", *[w for d in devs for w in (
            "--", "add-port", PROBE_BR, d, "--", "set", "Interface", d, f"mtu_request={mtu}")])
        return
    _sh("ovs-vsctl", *[w for d in devs for w in (
        "--", "add-port", PROBE_BR, f"{d}t", "--", "set", "Interface", f"{d}t", "type=tap",
        f"mtu_request={mtu}")])
    for d in devs:
        _sh("ip", "link", "set", "dev", f"{d}t", "addrgenmode", "none", "mtu", str(mtu), "up")
    _PROBE_TAPS.extend((d, f"{d}t") for d in devs)
    taps.remove(PROBE_TABLE)
    taps.install(PROBE_TABLE, _PROBE_TAPS)


_PROBE_TAPS: list[tuple[str, str]] = []


def probe_idle_ports(counts: list[int], mtu: int = 9000, port_type: str = "system") -> None:
    """One unshaped flow through one bridge (ports of `port_type`, MTU `mtu`) beside n idle
    ports: what each port costs the forwarding thread, which polls every port on each
    wake-up."""
    _probe_teardown()
    _sh("ip", "netns", "del", IDLE_NS, check=False)
    try:
        _sh("ovs-vsctl", "add-br", PROBE_BR, "--", "set", "bridge", PROBE_BR,
            "datapath_type=netdev")
        _sh("ovs-ofctl", "add-flow", PROBE_BR, "actions=NORMAL")
        _sh("ip", "netns", "add", IDLE_NS)
        _probe_ports(_probe_hosts(mtu), mtu, port_type)
        have = 0
        for n in sorted(counts):
            new = [f"mfpi{j}" for j in range(have, n)]
            for dev in new:
                _sh("ip", "link", "add", dev, "mtu", str(mtu), "type", "veth", "peer", "name",
                    f"{dev}p", "mtu", str(mtu), "netns", IDLE_NS)
                _sh("ip", "link", "set", dev, "up")
                _sh("ip", "link", "set", f"{dev}p", "up", ns=IDLE_NS)
            if new:
                _probe_ports(new, mtu, port_type)
            have = n
            time.sleep(2)
            runs = []
            for _ in range(3):
                pid = _machine_vswitchd()
                c0, t0 = _cpu_s(pid), time.monotonic()
                gbps = _probe_flow()
                runs.append((gbps, (_cpu_s(pid) - c0) / (time.monotonic() - t0)))
            gbps, cores = (statistics.median(r[k] for r in runs) for k in (0, 1))
            print(f"{n:>4} idle {port_type} ports beside the flow's 2 (MTU {mtu}): one flow "
                  f"{gbps:.2f} Gbit/s (runs {', '.join(f'{r[0]:.2f}' for r in runs)}), "
                  f"ovs-vswitchd {cores:.2f} cores during the flow, "
                  f"{cores / gbps if gbps else float('nan'):.2f} core-s per Gbit", flush=True)
    finally:
        _probe_teardown()
        _sh("ip", "netns", "del", IDLE_NS, check=False)
        for dev in (f"mfpi{j}" for j in range(max(counts, default=0))):
            _sh("ip", "link", "del", dev, check=False)


CHAIN = ("mfpx0", "mfpx1")      # the veth between the probe's two bridges
SECOND_BR, SECOND_NS = "mfprobe2", "mfpo"


def _second_vswitchd(rundir: Path) -> list[subprocess.Popen]:
    """An ovsdb-server and ovs-vswitchd of the probe's own (rundir, database, sockets), run
    in the foreground so that the probe stops them by their PIDs. ovs-vswitchd runs in a
    network namespace of its own: the userspace datapath's tap device is always called
    `ovs-netdev`, and a second one beside the machine's fails ("Device or resource busy")."""
    db, sock = rundir / "conf.db", f"unix:{rundir}/db.sock"
    _sh("ovsdb-tool", "create", str(db), "/usr/share/openvswitch/vswitch.ovsschema")
    env = os.environ | {"OVS_RUNDIR": str(rundir), "OVS_DBDIR": str(rundir),
                        "GLIBC_TUNABLES": VSWITCHD_GLIBC_TUNABLES}
    procs = [subprocess.Popen(["ovsdb-server", str(db), f"--remote=p{sock}",
                               f"--unixctl={rundir}/ovsdb.ctl",
                               f"--log-file={rundir}/ovsdb.log"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    for _ in range(100):
        if (rundir / "db.sock").exists():
            break
        time.sleep(0.05)
    _sh("ovs-vsctl", f"--db={sock}", "--no-wait", "init")
    procs.append(subprocess.Popen(["ip", "netns", "exec", SECOND_NS, "ovs-vswitchd", sock,
                                   f"--unixctl={rundir}/vswitchd.ctl",
                                   f"--log-file={rundir}/vswitchd.log"], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return procs


def probe_instances(mtu: int = 9000) -> None:
    """One unshaped flow over two bridges in a chain (ns mfpa - mfprobe - mfprobe2 - ns
    mfpb, `system` ports), both bridges in the machine's ovs-vswitchd, then the second in an
    ovs-vswitchd of its own: whether a second forwarding thread carries more."""
    _probe_teardown()
    _sh("ip", "link", "del", CHAIN[0], check=False)
    _sh("ovs-vsctl", "--if-exists", "del-br", SECOND_BR, check=False)
    _sh("ip", "netns", "del", SECOND_NS, check=False)
    with tempfile.TemporaryDirectory(prefix="mfovs") as tmp:
        procs: list[subprocess.Popen] = []
        try:
            _sh("ip", "link", "add", CHAIN[0], "mtu", str(mtu), "type", "veth", "peer", "name",
                CHAIN[1], "mtu", str(mtu))
            for dev in CHAIN:
                _sh("ip", "link", "set", dev, "up")
            _probe_hosts(mtu)
            for layout in ("one ovs-vswitchd", "two ovs-vswitchd"):
                if layout == "one ovs-vswitchd":
                    second = []
                else:
                    _sh("ovs-vsctl", "del-br", SECOND_BR)
                    _sh("ip", "netns", "add", SECOND_NS)
                    for dev in (CHAIN[1], PROBE_NS[1] + "0"):
                        _sh("ip", "link", "set", dev, "netns", SECOND_NS)
                        _sh("ip", "link", "set", dev, "up", ns=SECOND_NS)
                    procs = _second_vswitchd(Path(tmp))
                    second = [f"--db=unix:{tmp}/db.sock"]
                for br, ports, db in ((PROBE_BR, (PROBE_NS[0] + "0", CHAIN[0]), []),
                                      (SECOND_BR, (CHAIN[1], PROBE_NS[1] + "0"), second)):
                    _sh("ovs-vsctl", *db, "--if-exists", "del-br", br)
                    _sh("ovs-vsctl", *db, "add-br", br, "--", "set", "bridge", br,
                        "datapath_type=netdev", *[w for dev in ports for w in (
                            "--", "add-port", br, dev, "--", "set", "Interface", dev,
                            f"mtu_request={mtu}")])
                time.sleep(3)
                pids = [_machine_vswitchd()] + [p.pid for p in procs[1:]]
                runs = []
                for _ in range(3):
                    c0, t0 = [_cpu_s(p) for p in pids], time.monotonic()
                    gbps = _probe_flow()
                    took = time.monotonic() - t0
                    runs.append((gbps, [(_cpu_s(p) - c) / took for p, c in zip(pids, c0)]))
                gbps = statistics.median(r[0] for r in runs)
                cores = [statistics.median(r[1][i] for r in runs) for i in range(len(pids))]
                print(f"{layout}: one flow over two bridges (MTU {mtu}) {gbps:.2f} Gbit/s "
                      f"(runs {', '.join(f'{r[0]:.2f}' for r in runs)}), cores "
                      f"{' + '.join(f'{c:.2f}' for c in cores)}, "
                      f"{sum(cores) / gbps if gbps else float('nan'):.2f} core-s per Gbit",
                      flush=True)
                if procs and not gbps:
                    print("  second ovs-vswitchd's log: " + (Path(tmp) / "vswitchd.log")
                          .read_text()[-1500:], flush=True)
        finally:
            if procs:
                _sh("ovs-vsctl", f"--db=unix:{tmp}/db.sock", "--timeout=5", "--if-exists",
                    "del-br", SECOND_BR, check=False)
            for p in reversed(procs):
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            _sh("ovs-vsctl", "--if-exists", "del-br", SECOND_BR, check=False)
            _sh("ip", "netns", "del", SECOND_NS, check=False)
            _probe_teardown()
            _sh("ip", "link", "del", CHAIN[0], check=False)


def _cpu_times(procs: list[psutil.Process], vswitchd: psutil.Process) -> dict[str, float]:
    """CPU seconds so far: ovs-vswitchd's forwarding (main) thread, the agents, and the
    machine's softirq + irq and busy time."""
    fwd = next((t.user_time + t.system_time for t in vswitchd.threads()
                if t.id == vswitchd.pid), 0.0)
    agents = 0.0
    for p in procs:
        try:
            c = p.cpu_times()
            agents += c.user + c.system
        except psutil.Error:
            pass
    m = psutil.cpu_times()
    return {"forwarding thread": fwd, "agents": agents, "softirq+irq": m.softirq + m.irq,
            "machine busy": m.user + m.nice + m.system + m.softirq + m.irq + m.steal}


def _agents() -> list[psutil.Process]:
    """The run's agent processes (python -m traffic.agent), found by command line."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        if "traffic.agent" in " ".join(p.info["cmdline"] or []):
            found.append(p)
    return found


def cpu_split(rate: float, port_type: str) -> None:
    """Where the cores go while the ILP rings of the benchmark run at `rate` per link: one
    `run` (ILP only), sampled from the moment all 16 agents exist until one has gone."""
    cfg = config(rate, port_type=port_type)
    cfg["routing"] = ["ilp"]
    exp = parse(cfg)
    out: dict = {}

    def sample() -> None:
        agents: list[psutil.Process] = []
        while len(agents) < 16 and not out.get("stop"):
            time.sleep(0.5)
            agents = _agents()
        vs = psutil.Process(_machine_vswitchd())
        t0, c0 = time.monotonic(), _cpu_times(agents, vs)
        last = (t0, c0)
        while not out.get("stop"):
            time.sleep(2.0)
            if not all(a.is_running() for a in agents):
                break
            last = (time.monotonic(), _cpu_times(agents, vs))
        span = last[0] - t0
        out["span_s"] = span
        out["cores"] = {k: (last[1][k] - c0[k]) / span for k in c0} if span > 0 else {}

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    with tempfile.TemporaryDirectory() as tmp:
        res = run_experiment(exp, Path(tmp), log=lambda s: None)
    out["stop"] = True
    th.join(timeout=10)
    err = res["runs"][0]["prediction_error_fraction"]
    cores = ", ".join(f"{k} {v:.2f}" for k, v in out.get("cores", {}).items())
    print(f"{rate:g} Mbit/s per link ({16 * rate:g} aggregate, {port_type} ports): ILP error "
          f"{err:+.1%}; cores over {out.get('span_s', 0):.0f} s of the agents' run: {cores}",
          flush=True)


def processes_sweep(counts: list[int], rates: list[float], repeats: int) -> None:
    """ILP runs of the benchmark's rings per switch_processes count and rate (docstring)."""
    quiet = lambda s: None  # noqa: E731
    best: dict[int, float] = {}
    by_error: dict[int, float] = {}
    for n in counts:
        for rate in rates:
            cfg = config(rate)
            cfg["routing"] = ["ilp"]
            cfg["emulation"]["switch_processes"] = n
            exp = parse(cfg)
            errs, fwd, ok, loads, causes = [], [], 0, [os.getloadavg()[0]], []
            for _ in range(repeats):
                with tempfile.TemporaryDirectory() as tmp:
                    res = run_experiment(exp, Path(tmp), log=quiet)
                run = res["runs"][0]
                errs.append(run["prediction_error_fraction"])
                fwd.append(run["fidelity"]["forwarding_p90_pct"] or 0.0)
                ok += bool(run["fidelity"]["ok"])
                causes.append(run["fidelity"].get("cause") or "ok")
                retrans = run["fidelity"].get("tcp_retrans_segments")
                causes[-1] += f"/{run['fidelity'].get('vswitchd_rx_drops', 0)}d/{retrans}r"
                loads.append(os.getloadavg()[0])
            err = statistics.median(errs)
            holds = abs(err) <= 0.05 and ok == repeats
            if holds:
                best[n] = max(best.get(n, 0.0), 16 * rate)
            if abs(err) <= 0.05:
                by_error[n] = max(by_error.get(n, 0.0), 16 * rate)
            print(f"switch_processes {n}: {rate:g} Mbit/s per link ({16 * rate:g} aggregate, "
                  f"MTU {exp.emulation.mtu_bytes}): ILP error median {err:+.1%} (runs "
                  f"{', '.join(f'{e:+.1%}' for e in errs)}), busiest forwarding thread p90 "
                  f"median {statistics.median(fwd):.0f}%, monitor ok {ok}/{repeats} "
                  f"({', '.join(causes)}: cause/socket drops/retransmitted), load "
                  f"{min(loads):.2f}-{max(loads):.2f} -> "
                  f"{'faithful' if holds else 'not faithful'}", flush=True)
    for n in counts:
        print(f"switch_processes {n}: faithful aggregate "
              + (f"{best[n]:g} Mbit/s" if n in best else "below every rate tried")
              + "; by the error alone "
              + (f"{by_error[n]:g} Mbit/s" if n in by_error else "below every rate tried"),
              flush=True)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", type=float, nargs="+", default=[5, 10, 20, 40, 60, 80])
    ap.add_argument("--scheduler", choices=["fair", "fifo"], default="fair",
                    help="the links' scheduler (emulation.link_scheduler)")
    ap.add_argument("--port-type", choices=["system", "tap"], default="system",
                    help="how ovs-vswitchd reaches its ports (emulation.port_type)")
    ap.add_argument("--datapath", choices=["user", "kernel"], default="user",
                    help="Open vSwitch's datapath (emulation.datapath; kernel needs the "
                         "openvswitch module)")
    ap.add_argument("--probe-ports", action="store_true",
                    help="probe system / afxdp / afxdp-nonpmd ports instead (see above)")
    ap.add_argument("--probe-idle-ports", type=int, nargs="+", metavar="N",
                    help="instead: one flow beside N idle ports (0..256), each N in turn")
    ap.add_argument("--cpu-split", action="store_true",
                    help="instead: where the cores go while the ILP rings run, per rate")
    ap.add_argument("--probe-instances", action="store_true",
                    help="instead: one flow over two bridges, in one ovs-vswitchd or in two")
    ap.add_argument("--switch-processes", type=int, nargs="+", metavar="N",
                    help="instead: ILP runs with the switches over N ovs-vswitchd (1..4)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="runs per rate with --switch-processes (1..20)")
    return ap.parse_args()


def bad_args(args: argparse.Namespace) -> str | None:
    """The one-line refusal of out-of-range arguments, or None."""
    if os.geteuid() != 0:
        return "needs root (it emulates)"
    if args.switch_processes and (not all(1 <= n <= 4 for n in args.switch_processes)
                                  or not 1 <= args.repeats <= 20):
        return "--switch-processes: each N within 1..4, --repeats 1..20"
    if args.probe_idle_ports and not all(0 <= n <= 256 for n in args.probe_idle_ports):
        return "--probe-idle-ports: each N within 0..256"
    return None


def probe(args: argparse.Namespace) -> bool:
    """Run the probe the arguments ask for instead of the rates (True), or nothing (False)."""
    if args.probe_instances:
        probe_instances()
    elif args.switch_processes:
        processes_sweep(args.switch_processes, args.rates, args.repeats)
    elif args.probe_idle_ports:
        probe_idle_ports(args.probe_idle_ports, port_type=args.port_type)
    elif args.probe_ports:
        probe_ports()
    elif args.cpu_split:
        for rate in args.rates:
            cpu_split(rate, args.port_type)
    else:
        return False
    return True


def _joined(res: dict, key: str, shown) -> str:
    """One fidelity field of every run, '/'-joined."""
    return "/".join(shown(r["fidelity"].get(key)) for r in res["runs"])


def rate_row(rate: float, args: argparse.Namespace) -> tuple | None:
    """Calibrate and run the rings at `rate`, print their line; the row, or None when the
    calibration failed (said why)."""
    quiet = lambda s: None
    exp = parse(config(rate, args.scheduler, args.port_type, args.datapath))
    with tempfile.TemporaryDirectory() as tmp:
        try:
            cal = calibrate(exp, Path(tmp) / "cal", duration_s=5.0, log=quiet, store=True)
        except CalibrationError as e:     # the emulator did not keep up: a missed target
            print(f"{rate:>5g} Mbit/s per link: {e} -> targets missed", flush=True)
            return None
        except TestbedError as e:         # iperf3 or a command failed: say so, go on
            print(f"{rate:>5g} Mbit/s per link: calibration failed: {e} -> not measured",
                  flush=True)
            return None
        res = run_experiment(exp, Path(tmp) / "run", log=quiet)
    errs = {r["routing"]: r["prediction_error_fraction"] for r in res["runs"]}
    ok_cpu = all(r["fidelity"]["ok"] for r in res["runs"])
    causes = sorted({r["fidelity"].get("cause") for r in res["runs"]} - {None})
    vs = max(r["fidelity"]["forwarding_max_pct"] or 0 for r in res["runs"])
    vs_mean = _joined(res, "forwarding_mean_pct", lambda v: f"{v or 0:.0f}")
    drops = _joined(res, "vswitchd_rx_drops", lambda v: str(v or 0))
    retrans = _joined(res, "tcp_retrans_segments", str)
    queued = _joined(res, "vswitchd_rx_queued_max_bytes",
                     lambda q: "n/a" if q is None else f"{q / 1e3:.0f}")
    waited = _joined(res, "vswitchd_rx_wait_ms", lambda w: "n/a" if w is None else f"{w:.2f}")
    one = min(cal["one_flow"]["agent_fraction"], cal["one_flow"]["iperf3_fraction"])
    jain = min(cal["shared_link"]["agent_jain"], cal["shared_link"]["iperf3_jain"])
    holds = (one >= 0.93 and jain >= 0.95 and ok_cpu
             and all(abs(e) <= 0.05 for e in errs.values()))
    print(f"{rate:>5g} Mbit/s per link (MTU {exp.emulation.mtu_bytes}, "
          f"{exp.emulation.link_scheduler}, {res['environment']['port_type']} ports), "
          f"{16 * rate:>6g} Mbit/s aggregate: one flow {one:.1%}, Jain {jain:.3f}, errors "
          + ", ".join(f"{k} {v:+.1%}" for k, v in errs.items())
          + f", forwarding ({res['runs'][0]['fidelity'].get('forwarding_by')}) max {vs:.0f}% "
          f"(mean {vs_mean}%), ovs-vswitchd's sockets: queued max {queued} kB, waited "
          f"{waited} ms a switch, dropped {drops}; retransmitted {retrans}; monitor "
          + ("ok" if ok_cpu else f"SATURATED ({', '.join(causes)})")
          + f" -> {'targets hold' if holds else 'targets missed'}", flush=True)
    return (rate, 16 * rate, one, jain, errs, ok_cpu, vs, holds)


def main() -> int:
    args = parse_args()
    why = bad_args(args)
    if why:
        print(f"fidelity_bench: {why}", file=sys.stderr)
        return 2
    with conditions(kernels=False):
        if probe(args):
            return 0
        rows = [r for r in (rate_row(rate, args) for rate in args.rates) if r is not None]
        held = [r[1] for r in rows if r[7]]
        print(f"largest aggregate host traffic with every target met: "
              f"{max(held):g} Mbit/s" if held else "no rate met every target")
    return 0


if __name__ == "__main__":
    sys.exit(main())

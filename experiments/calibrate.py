"""`calibrate`: how close to the configured rate does TCP get on this emulator, and how fairly
do flows share a link? Measured with iperf3 (the reference) and with mlfabric's own agents.

On the config's fabric (rates, MTU, TCP congestion control and datapath as configured):
1. one flow, leaf1 -> leaf2 through spine1: iperf3, then one agent transfer of the same length;
2. k flows (k = min(4, hosts per leaf)) from k hosts of leaf1 to k hosts of leaf2, all pinned
   through spine1 so they share the leaf1 -> spine1 link: iperf3 clients at once, then agents;
   Jain's fairness index over the flows' goodputs.
The agents' single-flow goodput / configured rate is stored as the goodput factor the
predictor uses for this datapath, MTU and TCP (traffic/goodput.py). A 1 s flow first warms the
datapath; a factor below 90% of the theory is measured once more, and if it stays there
nothing is stored and CalibrationError says why (the emulator did not keep up).
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from routing.rules import base_rules, pair_rules
from testbed.installer import install
from testbed.net import EmulatedFabric
from testbed.ovs import MALLOC_WARNING
from testbed.ovs import TestbedError
from testbed.shaping import BUCKETS
from traffic.collectives import Collective, JobSpec, plan_jobs
from traffic.driver import TrafficDriver
from traffic.goodput import (CALIBRATION_FILE, MIN_SHARE_OF_THEORY, calibration_key,
                             plausible_factor, store_calibration, theoretical_goodput_factor)

from .config import Experiment
from .results import environment, write_json

IPERF_CLIENT_PORT_BASE = 40000
IPERF_PORTS_PER_TEST = BUCKETS    # so each test's flows land in the same fair buckets
IPERF_PORT = 5201
WARMUP_S = 1.0            # one iperf3 flow before measuring: a fresh datapath's first can crawl


class CalibrationError(TestbedError):
    """The measurement is not one TCP gives: the emulator did not keep up; nothing stored."""


def jain_index(xs: list[float]) -> float:
    """Jain's fairness index: (sum x)^2 / (n sum x^2); 1.0 = perfectly equal shares."""
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs)) if xs else float("nan")


def _iperf(emu, pairs: list[tuple[str, str]], duration_s: float, tcp_cc: str,
           window_bytes: int = 0, test: int = 0) -> list[float]:
    """Run one iperf3 client per (src, dst) pair at once; receiver goodputs in Mbit/s.
    window_bytes: iperf3 -w (socket buffers, both ends), as the agents' window bound.
    test: this fabric's n-th iperf3 test, which gets client ports of its own (the previous
    test's connections linger in TIME_WAIT on theirs: a calibration at 80 Mbit/s per link
    failed with "unable to connect stream: Address already in use")."""
    servers, clients = [], []
    try:
        for _, dst in pairs:
            ip = emu.fabric.ip_of(dst)
            cmd = ["iperf3", "-s", "-1", "-B", ip, "-p", str(IPERF_PORT)]
            srv = emu.popen(dst, cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            servers.append(srv)
        time.sleep(0.5)  # iperf3 -s has no readiness signal; clients below also retry
        for i, (src, dst) in enumerate(pairs):
            # consecutive client ports, as mlfabric's own connections have: under the fair
            # link scheduler each flow gets its own bucket (testbed/shaping.py)
            cmd = ["iperf3", "-c", emu.fabric.ip_of(dst), "-p", str(IPERF_PORT), "-B",
                   emu.fabric.ip_of(src), "--cport",
                   str(IPERF_CLIENT_PORT_BASE + IPERF_PORTS_PER_TEST * test + i),
                   "-t", f"{duration_s:g}", "-J", "-C", tcp_cc, "--connect-timeout", "3000",
                   *(["-w", str(window_bytes)] if window_bytes else [])]
            cli = emu.popen(src, cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            clients.append(cli)
        out = []
        for cli in clients:
            try:
                stdout, _ = cli.communicate(timeout=duration_s + 30)
                doc = json.loads(stdout)
            except subprocess.TimeoutExpired:
                raise TestbedError(f"iperf3 ran more than {duration_s + 30:g} s") from None
            except ValueError:
                raise TestbedError(f"iperf3 gave no result: {stdout[:200]!r}") from None
            if "error" in doc:
                raise TestbedError(f"iperf3: {doc['error']}")
            out.append(doc["end"]["sum_received"]["bits_per_second"] / 1e6)
        return out
    finally:
        for p in servers + clients:
            if p.poll() is None:
                p.kill()
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:   # the fabric's teardown ends it by PID
                    pass


def _agents(emu, pairs: list[tuple[str, str]], size_bytes: int, tcp_cc: str, seed: int,
            log_dir: Path) -> list[float]:
    """One agent transfer of size_bytes per pair, all at once; goodputs in Mbit/s."""
    specs = [JobSpec(f"cal-{i}", Collective.PIPELINE, [[a, b]], size_bytes)
             for i, (a, b) in enumerate(pairs)]
    plans = plan_jobs(specs)
    driver = TrafficDriver(emu, plans, seed, tcp_cc, 120.0, log_dir)
    try:
        driver.start_agents()
        driver.connect()
        records = driver.run_jobs()
    finally:
        driver.stop_agents()
    rates = []
    for p in plans:
        (_, first, last, _), = records[p.name].iterations[0].transfers
        rates.append(size_bytes * 8 / (last - first) / 1e6)
    return rates


@dataclass
class _Measured:
    """calibrate's measurements (Mbit/s) and what they ran on."""
    iperf_one: float
    agent_one: float
    iperf_k: list[float]
    agent_k: list[float]
    env: dict
    fidelity: dict                    # the CPU monitor's verdict on the one-flow measurement


def calibrate(exp: Experiment, out_dir: Path, duration_s: float = 8.0,
              log: Callable[[str], None] = print, store: bool = True,
              store_path: Path = CALIBRATION_FILE) -> dict:
    """Measure; with `store`, save the goodput factor for later runs on this machine (in
    store_path). Raises CalibrationError, storing nothing, when the factor is implausible or
    the monitor flagged its measurement."""
    from .runner import check_emulable
    check_emulable(exp)
    if len(exp.fabric.leaves) < 2:
        raise TestbedError("calibrate: the fabric needs at least 2 leaves")
    em = exp.emulation
    rate = min(exp.fabric.spec.rates_mbps().values())
    out_dir.mkdir(parents=True, exist_ok=True)
    m = _measure(exp, out_dir, rate, duration_s, log)
    factor = m.agent_one / rate
    result = _record(rate, duration_s, m.env, m.iperf_one, m.agent_one, m.iperf_k, m.agent_k,
                     em.mtu_bytes)
    plausible = plausible_factor(factor, em.mtu_bytes)
    result["fidelity"] = m.fidelity
    result["stored"] = bool(store and plausible and m.fidelity["ok"])
    write_json(out_dir / "calibration.json", result)
    _refuse_unless_faithful(factor, rate, plausible, m, em.mtu_bytes, out_dir)
    key = calibration_key(m.env["calibration_datapath"], em.mtu_bytes, em.tcp_cc,
                          em.link_scheduler)
    if store:
        store_calibration(m.env["calibration_datapath"], em.mtu_bytes, em.tcp_cc,
                          em.link_scheduler, {"goodput_factor": factor,
                                              "measured_at": result["measured_at"],
                                              "link_rate_mbps": rate}, path=store_path)
    log(f"one flow: iperf3 {m.iperf_one:.2f} Mbit/s ({m.iperf_one / rate:.1%}), agent "
        f"{m.agent_one:.2f} Mbit/s ({factor:.1%}); theory "
        f"{theoretical_goodput_factor(em.mtu_bytes):.1%}")
    log(f"{len(m.agent_k)} flows on one link: iperf3 Jain {jain_index(m.iperf_k):.3f} "
        f"({', '.join(f'{x:.2f}' for x in m.iperf_k)} Mbit/s), agents Jain "
        f"{jain_index(m.agent_k):.3f} ({', '.join(f'{x:.2f}' for x in m.agent_k)} Mbit/s)")
    if store:
        log(f"goodput factor {factor:.4f} stored for {key} in {store_path}")
    return result


def _measure(exp: Experiment, out_dir: Path, rate: float, duration_s: float,
             log: Callable[[str], None]) -> _Measured:
    """The four measurements on a fresh fabric, each on empty queues (a previous test's
    backlog would share the link): one flow (iperf3, agents, the latter watched by the
    monitor and measured again when implausible), then k flows sharing one link."""
    f, em = exp.fabric, exp.emulation
    k = min(4, f.spec.hosts_per_leaf)
    leaf1 = [h for h in f.hosts if f.leaf_of(h) == "leaf1"][:k]
    leaf2 = [h for h in f.hosts if f.leaf_of(h) == "leaf2"][:k]
    spine = f.usable_spines("leaf1", "leaf2")[0]
    one, shared = [(leaf1[0], leaf2[0])], list(zip(leaf1, leaf2))
    size = int(rate * 1e6 / 8 * duration_s)
    with EmulatedFabric(f, f"cal-{os.getpid()}-{int(time.time())}", em.settings()) as emu:
        install(base_rules(f) + pair_rules(f, shared, spine), out_dir / "rules")
        log(f"one flow {one[0][0]}->{one[0][1]} via {spine} at {rate:g} Mbit/s, "
            f"{duration_s:g} s each")
        window = emu.settings.window_clamp_bytes
        _iperf(emu, one, WARMUP_S, em.tcp_cc, window)
        emu.wait_until_drained()
        iperf_one = _iperf(emu, one, duration_s, em.tcp_cc, window, test=1)
        emu.wait_until_drained()
        for attempt, logs in enumerate(("logs-one", "logs-one-again")):
            with emu.cpu_monitor() as monitor:      # the factor's measurement, watched
                agent_one = _agents(emu, one, size, em.tcp_cc, exp.seed, out_dir / logs)
            emu.wait_until_drained()
            if attempt or plausible_factor(agent_one[0] / rate, em.mtu_bytes):
                break
            log(f"one flow got {agent_one[0] / rate:.1%} of the link: measuring again")
        fidelity = monitor.summary()
        log(f"{k} flows sharing leaf1->{spine}")
        iperf_k = _iperf(emu, shared, duration_s, em.tcp_cc, window, test=2)
        emu.wait_until_drained()
        agent_k = _agents(emu, shared, size // k, em.tcp_cc, exp.seed, out_dir / "logs-shared")
        env = environment(emu.datapath, em.tcp_cc, exp.seed, em.mtu_bytes)
        env.update(port_type=emu.port_type, calibration_datapath=emu.calibration_datapath,
                   ovs_send_buffer_bytes=emu.send_buffer_bytes,
                   ovs_vswitchd_malloc_tuned=emu.malloc_tuned)
        if emu.malloc_tuned is False:
            log(MALLOC_WARNING)
    return _Measured(iperf_one[0], agent_one[0], iperf_k, agent_k, env, fidelity)


def _refuse_unless_faithful(factor: float, rate: float, plausible: bool, m: _Measured,
                            mtu_bytes: int, out_dir: Path) -> None:
    """CalibrationError (nothing stored) for a factor TCP cannot give, or a measurement the
    CPU monitor flagged."""
    if not plausible:
        raise CalibrationError(
            f"calibrate: one flow got {factor:.1%} of {rate:g} Mbit/s twice, below "
            f"{MIN_SHARE_OF_THEORY:.0%} of the theory's "
            f"{theoretical_goodput_factor(mtu_bytes):.1%}: the emulator did not keep up (load "
            f"average {os.getloadavg()[0]:.1f}); nothing stored; run again on an idle machine "
            "or at a lower rate")
    if not m.fidelity["ok"]:
        raise CalibrationError(
            f"calibrate: the emulator was flagged while one flow measured the factor on the "
            f"{m.env['calibration_datapath']} datapath (cause: {m.fidelity['cause']}; see "
            f"{out_dir / 'calibration.json'}, fidelity); nothing stored; run again on an idle "
            "machine or at a lower rate")


def _record(rate: float, duration_s: float, env: dict, iperf_one: float, agent_one: float,
            iperf_k: list[float], agent_k: list[float], mtu_bytes: int) -> dict:
    """calibration.json's record (rates in Mbit/s, fractions of `rate`)."""
    return {
        "link_rate_mbps": rate, "duration_s": duration_s, "environment": env,
        "one_flow": {"iperf3_mbps": iperf_one, "agent_mbps": agent_one,
                     "iperf3_fraction": iperf_one / rate, "agent_fraction": agent_one / rate},
        "shared_link": {"flows": len(agent_k), "iperf3_mbps": iperf_k, "agent_mbps": agent_k,
                        "iperf3_jain": jain_index(iperf_k), "agent_jain": jain_index(agent_k),
                        "iperf3_aggregate_fraction": sum(iperf_k) / rate,
                        "agent_aggregate_fraction": sum(agent_k) / rate},
        "goodput_factor": agent_one / rate,
        "theoretical_goodput_factor": theoretical_goodput_factor(mtu_bytes),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }

"""Scale benchmark (a script, not a test; root): how long a large fabric takes to build and to
tear down, and what it costs in memory.

    sudo .venv/bin/python experiments/benchmarks/scale_bench.py [--fabric leaf-spine-8x8]
        [--runs 3] [--rate-mbps 5] [--ideal-s 2.4] [--mtu-bytes auto]

Runs `run` (experiments/runner.py) on the fabric with a ring workload (one 2-iteration
all-reduce ring per host slot, one rank per leaf, ILP routing, links at --rate-mbps and
uplinks at twice that), `--runs` times. Prints per run and as medians: build and teardown
seconds, the machine's memory in use with the fabric up against before (MiB), ovs-vswitchd's
resident memory (MiB), the ring's prediction error and the CPU monitor's verdict, and the
external commands the build ran by kind (calls, seconds), so that what is slow shows. Fabrics:
leaf-spine-8x8 (64 hosts, 8 leaves, 4 spines), clos3-64 (64 hosts: 4 pods of 4 leaves and 2
aggs, 4 cores), fat-tree-8 (128 hosts, 80 switches).
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

import testbed.net as net
from experiments.benchmarks.harness import conditions
from experiments.config import parse
from experiments.runner import run_experiment
from testbed.fabric import FabricSpec, build_fabric
from testbed import topologies
from testbed.topologies import fat_tree_spec
from testbed.ovs import vswitchd_pid

FABRICS = {
    "leaf-spine-8x8": FabricSpec(spines=4, leaves=8, hosts_per_leaf=8, host_link_mbps=10,
                                 spine_link_mbps=10),
    "clos3-64": FabricSpec(topology="clos3", pods=4, leaves_per_pod=4, aggs_per_pod=2,
                           cores_per_plane=2, hosts_per_leaf=4, host_link_mbps=10,
                           leaf_agg_mbps=10, agg_core_mbps=10),
    "fat-tree-8": fat_tree_spec(8, 10, 10),
}


class Counter:
    """Wraps testbed.net's `run` and `ns_run`: calls and seconds per command name."""

    def __init__(self):
        self.calls: collections.Counter = collections.Counter()
        self.seconds: collections.Counter = collections.Counter()
        self._run, self._ns_run = net.run, net.ns_run

    def _wrap(self, fn, where: str):
        def wrapped(*args, **kwargs):
            cmd = args[1] if where == "ns" else args[0]
            key = f"{where}:{cmd[0]}" + (f" {cmd[1]}" if cmd[0] == "ovs-vsctl" else "")
            t0 = time.monotonic()
            try:
                return fn(*args, **kwargs)
            finally:
                self.calls[key] += 1
                self.seconds[key] += time.monotonic() - t0
        return wrapped

    def __enter__(self) -> "Counter":
        net.run, net.ns_run = self._wrap(self._run, "root"), self._wrap(self._ns_run, "ns")
        return self

    def __exit__(self, *exc) -> None:
        net.run, net.ns_run = self._run, self._ns_run


def _int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def vswitchd_rss_mib() -> float:
    pid = vswitchd_pid()
    return _rss_mib(pid) if pid else 0.0


def _rss_mib(pid: int) -> float:
    try:
        return psutil.Process(pid).memory_info().rss / 2**20
    except psutil.Error:
        return 0.0


def ring_config(name: str, rate_mbps: float, ideal_s: float = 2.4,
                mtu: int | str = "auto", port_type: str = "system",
                switch_processes: int = 1) -> dict:
    """Rings of one rank per leaf (ring k: the k-th host of every leaf), every host in one,
    routed by ILP; uplinks at twice the host rate so that planned paths never share a link;
    bytes sized for an ideal CCT (one iteration) of `ideal_s` seconds."""
    spec = FABRICS[name]
    up = 2 * rate_mbps
    fabric = topologies.resolved(dataclasses.replace(
        spec, host_link_mbps=rate_mbps, **{k: up for k in ("spine_link_mbps", "leaf_agg_mbps",
                                                            "agg_core_mbps") if getattr(spec, k)}))
    f = build_fabric(spec)
    per_leaf, n_leaves = spec.hosts_per_leaf, len(f.leaves)
    size = int(ideal_s * rate_mbps * 1e6 / 8 / (2 * (n_leaves - 1) / n_leaves))
    jobs = [{"name": f"ring-{k}", "collective": "allreduce", "iterations": 2,
             "size_bytes": size, "hosts": [f"h{k + per_leaf * i}" for i in range(n_leaves)]}
            for k in range(1, per_leaf + 1)]
    return {"name": f"scale-{name}", "seed": 1, "fabric": fabric, "jobs": jobs,
            "routing": ["ilp"], "emulation": {"mtu_bytes": mtu, "port_type": port_type,
                                              "switch_processes": switch_processes}}


class Timed:
    """Times EmulatedFabric's build (__enter__) and teardown (__exit__), and the memory in
    use once built, for every fabric built while active."""

    def __init__(self):
        self.build_s: list[float] = []
        self.teardown_s: list[float] = []
        self.memory_mib: list[float] = []
        self.rss_mib: list[float] = []
        self.rss_delta_mib: list[float] = []
        self.shells_mib: list[float] = []
        self._enter, self._exit = net.EmulatedFabric.__enter__, net.EmulatedFabric.__exit__

    def __enter__(self) -> "Timed":
        timed = self

        def enter(emu):
            used0, rss0 = psutil.virtual_memory().used, vswitchd_rss_mib()
            t0 = time.monotonic()
            out = timed._enter(emu)
            timed.build_s.append(time.monotonic() - t0)
            timed.memory_mib.append((psutil.virtual_memory().used - used0) / 2**20)
            timed.rss_mib.append(vswitchd_rss_mib())
            timed.rss_delta_mib.append(timed.rss_mib[-1] - rss0)
            timed.shells_mib.append(sum(_rss_mib(p["pid"]) for p in emu.record.pids))
            return out

        def exit_(emu, *exc):
            t0 = time.monotonic()
            try:
                return timed._exit(emu, *exc)
            finally:
                timed.teardown_s.append(time.monotonic() - t0)
        net.EmulatedFabric.__enter__, net.EmulatedFabric.__exit__ = enter, exit_
        return self

    def __exit__(self, *exc) -> None:
        net.EmulatedFabric.__enter__, net.EmulatedFabric.__exit__ = self._enter, self._exit


def one_run(name: str, rate_mbps: float, ideal_s: float, mtu: int | str,
            port_type: str = "system", switch_processes: int = 1) -> dict:
    exp = parse(ring_config(name, rate_mbps, ideal_s, mtu, port_type, switch_processes))
    with tempfile.TemporaryDirectory() as tmp, Timed() as t, Counter() as c:
        res = run_experiment(exp, Path(tmp) / "run", log=lambda s: None)
    run = res["runs"][0]
    fid = run["fidelity"]
    return {"build_s": t.build_s[0], "teardown_s": t.teardown_s[0],
            "memory_mib": t.memory_mib[0], "vswitchd_rss_mib": t.rss_mib[0],
            "vswitchd_rss_delta_mib": t.rss_delta_mib[0], "shells_mib": t.shells_mib[0],
            "prediction_error_fraction": run["prediction_error_fraction"],
            "monitor_ok": fid["ok"], "forwarding_max_pct": fid["forwarding_max_pct"],
            "cpu_mean_pct": fid["cpu_mean_pct"], "mtu_bytes": exp.emulation.mtu_bytes,
            "rx_wait_ms": fid.get("vswitchd_rx_wait_ms"),
            "tcp_retrans_segments": fid.get("tcp_retrans_segments"),
            "calls": dict(c.calls), "call_s": dict(c.seconds)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fabric", choices=sorted(FABRICS), default="leaf-spine-8x8")
    ap.add_argument("--runs", type=int, default=3, choices=range(1, 11), metavar="1..10")
    ap.add_argument("--rate-mbps", type=float, default=5.0,
                    help="host link rate (uplinks twice it), 1..100 Mbit/s")
    ap.add_argument("--ideal-s", type=float, default=2.4,
                    help="one iteration's ideal CCT, 1..60 s (longer steps: the per-switch "
                         "forwarding waits weigh less)")
    ap.add_argument("--mtu-bytes", default="auto", help="emulation.mtu_bytes: auto or "
                    "1500..64000")
    ap.add_argument("--port-type", choices=["system", "tap"], default="system",
                    help="how ovs-vswitchd reaches its ports (emulation.port_type)")
    ap.add_argument("--switch-processes", type=int, default=1, choices=range(1, 5),
                    metavar="1..4", help="emulation.switch_processes: ovs-vswitchd processes "
                    "the switches are spread over")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("scale_bench: needs root (it emulates)", file=sys.stderr)
        return 2
    if not 1 <= args.rate_mbps <= 100:
        print("scale_bench: --rate-mbps must be within 1..100", file=sys.stderr)
        return 2
    if not 1 <= args.ideal_s <= 60:
        print("scale_bench: --ideal-s must be within 1..60", file=sys.stderr)
        return 2
    mtu = args.mtu_bytes if args.mtu_bytes == "auto" else _int_or_none(args.mtu_bytes)
    if mtu is None or (mtu != "auto" and not 1500 <= mtu <= 64000):
        print("scale_bench: --mtu-bytes must be auto or within 1500..64000", file=sys.stderr)
        return 2
    with conditions(kernels=False):
        f = build_fabric(FABRICS[args.fabric])
        print(f"{topologies.title(f)}, {args.port_type} ports, {args.switch_processes} switch "
              f"process(es): {len(f.hosts)} hosts, {len(f.switches)} switches, "
              f"{len(f.links) // 2} links; load average before {os.getloadavg()[0]:.2f}")
        rows = []
        for i in range(args.runs):
            r = one_run(args.fabric, args.rate_mbps, args.ideal_s, mtu, args.port_type,
                        args.switch_processes)
            rows.append(r)
            slow = sorted(r["call_s"].items(), key=lambda kv: -kv[1])[:4]
            print(f"run {i + 1}: build {r['build_s']:.1f} s, teardown {r['teardown_s']:.1f} s, "
                  f"memory: node shells {r['shells_mib']:.0f} MiB, ovs-vswitchd RSS "
                  f"{r['vswitchd_rss_mib']:.0f} MiB ({r['vswitchd_rss_delta_mib']:+.0f}), machine "
                  f"{r['memory_mib']:+.0f} MiB (shared: noisy); rings at {args.rate_mbps:g} Mbit/s per host "
                  f"({args.rate_mbps * len(f.hosts):g} aggregate, MTU {r['mtu_bytes']}): ILP error "
                  f"{r['prediction_error_fraction']:+.1%}, monitor "
                  f"{'ok' if r['monitor_ok'] else 'SATURATED'} (forwarding thread max "
                  f"{r['forwarding_max_pct'] or 0:.0f}%, cores {r['cpu_mean_pct'] or 0:.0f}%, "
                  f"wait {r['rx_wait_ms'] or 0:.1f} ms a switch, "
                  f"{r['tcp_retrans_segments'] or 0} segments retransmitted); "
                  "build commands: "
                  + ", ".join(f"{k} x{r['calls'][k]} {s:.1f} s" for k, s in slow), flush=True)
        med = lambda k: statistics.median(r[k] for r in rows)  # noqa: E731
        print(f"median of {len(rows)}: build {med('build_s'):.1f} s, teardown "
              f"{med('teardown_s'):.1f} s, node shells {med('shells_mib'):.0f} MiB, ovs-vswitchd "
              f"RSS {med('vswitchd_rss_mib'):.0f} MiB, ILP error "
              f"{med('prediction_error_fraction'):+.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

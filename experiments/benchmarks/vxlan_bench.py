"""VXLAN benchmark (a script, not a test; root): what one tunnelled link between two machines
could carry, measured between two namespaces of this machine.

    sudo .venv/bin/python experiments/benchmarks/vxlan_bench.py [--runs 3] [--seconds 5]

Two namespaces of its own (mfvxa, mfvxb) joined by one veth pair (the "underlay"); in each a
point-to-point vxlan device (VNI 42, UDP 4789) with the overlay addresses, as testbed/split.py
builds between machines. iperf3 (one TCP flow, cubic) runs over the bare veth and over the
tunnel, at underlay MTUs 1500, 9000 and 65000 (tunnel MTU 50 bytes less), with the offloads
the kernel gives and with them off (as the emulator's ports carry frames, one per packet), and
once through an HTB shaper on the tunnel device (testbed/shaping.py, fair scheduler) to check
that a tunnel is shaped as faithfully as a veth. Prints the median of `--runs` runs per case
(Gbit/s, % of the machine's cores busy outside niced processes) and writes JSON with --out.
Removes everything it created on every exit path; it never touches an interface it did not
create.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil


from experiments.benchmarks.harness import conditions
from testbed.shaping import Shaping, tc_batch
from testbed.split import VXLAN_OVERHEAD_BYTES, VXLAN_PORT

NS = ("mfvxa", "mfvxb")
UNDERLAY = ("192.168.251.1", "192.168.251.2")
OVERLAY = ("10.251.0.1", "10.251.0.2")
VNI = 42
OFFLOADS = ["tx", "rx", "tso", "gso", "gro"]
IPERF_PORT = 5299


def sh(args: list[str], ns: str | None = None, check: bool = True,
       input_text: str | None = None) -> subprocess.CompletedProcess:
    cmd = (["ip", "netns", "exec", ns] if ns else []) + args
    p = subprocess.run(cmd, capture_output=True, text=True, input=input_text, timeout=60)
    if check and p.returncode:
        raise RuntimeError(f"`{' '.join(cmd)}` failed: {(p.stderr or p.stdout).strip()[:300]}")
    return p


def teardown() -> None:
    """Delete this benchmark's namespaces (their veth and vxlan devices go with them)."""
    existing = sh(["ip", "netns", "list"], check=False).stdout.split()
    for ns in NS:
        if ns in existing:
            sh(["ip", "netns", "del", ns], check=False)


def setup(underlay_mtu: int, offloads: bool) -> None:
    teardown()
    for ns in NS:
        sh(["ip", "netns", "add", ns])
        sh(["ip", "link", "set", "lo", "up"], ns)
    sh(["ip", "link", "add", "mfvxa0", "netns", NS[0], "type", "veth", "peer", "name",
        "mfvxb0", "netns", NS[1]])
    for i, ns in enumerate(NS):
        dev, vx = f"mfvx{'ab'[i]}0", f"mfvx{'ab'[i]}vx"
        sh(["ip", "link", "set", dev, "mtu", str(underlay_mtu), "up"], ns)
        sh(["ip", "addr", "add", f"{UNDERLAY[i]}/30", "dev", dev], ns)
        sh(["ip", "link", "add", vx, "type", "vxlan", "id", str(VNI), "local", UNDERLAY[i],
            "remote", UNDERLAY[1 - i], "dstport", str(VXLAN_PORT), "dev", dev], ns)
        sh(["ip", "link", "set", vx, "mtu", str(underlay_mtu - VXLAN_OVERHEAD_BYTES), "up"], ns)
        sh(["ip", "addr", "add", f"{OVERLAY[i]}/24", "dev", vx], ns)
        if not offloads:
            for d in (dev, vx):
                sh(["ethtool", "-K", d] + [w for o in OFFLOADS for w in (o, "off")], ns,
                   check=False)   # a feature a device lacks is not an error here


def iperf(dst: str, seconds: float) -> tuple[float, float]:
    """(goodput Gbit/s, CPU in % of all cores: user, system and interrupts, not niced
    processes) of one TCP flow NS[0] -> dst."""
    server = subprocess.Popen(["ip", "netns", "exec", NS[1], "iperf3", "-s", "-1", "-p",
                               str(IPERF_PORT)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 5
        while "LISTEN" not in sh(["ss", "-ltn", f"sport = :{IPERF_PORT}"], NS[1]).stdout:
            if time.monotonic() > deadline:
                raise RuntimeError("iperf3 server did not listen in 5 s")
            time.sleep(0.05)
        psutil.cpu_times_percent()
        out = sh(["iperf3", "-c", dst, "-p", str(IPERF_PORT), "-t", f"{seconds:g}", "-J",
                  "-C", "cubic"], NS[0]).stdout
        t = psutil.cpu_times_percent()   # niced work (other users' batch jobs) left out
        cpu = t.user + t.system + t.irq + t.softirq
        bps = json.loads(out)["end"]["sum_received"]["bits_per_second"]
        return bps / 1e9, cpu
    finally:
        if server.poll() is None:
            server.terminate()
        server.wait(timeout=5)


def shape(rate_mbps: float, underlay_mtu: int) -> None:
    inner = underlay_mtu - VXLAN_OVERHEAD_BYTES
    batch = tc_batch("mfvxavx", Shaping(rate_mbps, inner, 100, "fair"))
    sh(["tc", "-batch", "-"], NS[0], input_text="\n".join(batch) + "\n")


CASES = [  # (name, underlay MTU, over the tunnel, offloads on, HTB rate or None)
    ("veth", 1500, False, True, None), ("vxlan", 1500, True, True, None),
    ("veth", 9000, False, True, None), ("vxlan", 9000, True, True, None),
    ("veth", 65000, False, True, None), ("vxlan", 65000, True, True, None),
    ("veth", 9000, False, False, None), ("vxlan", 9000, True, False, None),
    ("vxlan", 65000, True, False, None),
    ("vxlan+htb", 9000, True, False, 1000.0),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, choices=range(1, 21), metavar="1..20")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("vxlan_bench: needs root (it creates namespaces)", file=sys.stderr)
        return 2
    if not 1 <= args.seconds <= 60:
        print("vxlan_bench: --seconds must be within 1..60", file=sys.stderr)
        return 2
    with conditions(kernels=False):
        load1 = os.getloadavg()[0]
        print(f"load average (1 min) before: {load1:.2f}; {args.runs} runs x {args.seconds:g} s "
              f"per case, medians")
        rows = []
        try:
            for name, mtu, tunnel, offl, rate in CASES:
                setup(mtu, offl)
                if rate:
                    shape(rate, mtu)
                runs = [iperf(OVERLAY[1] if tunnel else UNDERLAY[1], args.seconds)
                        for _ in range(args.runs)]
                gbps = statistics.median(r[0] for r in runs)
                cpu = statistics.median(r[1] for r in runs)
                row = {"case": name, "underlay_mtu_bytes": mtu,
                       "inner_mtu_bytes": mtu - VXLAN_OVERHEAD_BYTES if tunnel else mtu,
                       "offloads": offl, "htb_rate_mbps": rate, "runs": args.runs,
                       "goodput_gbps_median": gbps, "goodput_gbps_all": [r[0] for r in runs],
                       "cpu_pct_median": cpu}
                rows.append(row)
                extra = f", {gbps * 1000 / rate:.1%} of the HTB rate" if rate else ""
                print(f"{name:<10} underlay MTU {mtu:>5}, offloads {'on ' if offl else 'off'}: "
                      f"{gbps:6.2f} Gbit/s (runs {', '.join(f'{r[0]:.2f}' for r in runs)}), "
                      f"CPU {cpu:.0f}% of 2 cores{extra}", flush=True)
        finally:
            teardown()
    if args.out:
        args.out.write_text(json.dumps({"load_avg_1min": load1, "cases": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the integration tests share: a small config and a check that nothing was left behind."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import psutil

from testbed.registry import STATE_DIR, our_bridges

ROOT = Path(__file__).resolve().parents[2]


def small_config(routing: list[str], iterations: int = 2, size_bytes: int = 300_000) -> dict:
    """2 spines, 2 leaves, 2 hosts per leaf; two 2-rank rings crossing the leaves."""
    return {
        "name": "itest", "seed": 3,
        "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 2, "host_link_mbps": 10,
                   "spine_link_mbps": 10},
        "jobs": [
            {"name": "ring-a", "collective": "allreduce", "hosts": ["h1", "h3"],
             "size_bytes": size_bytes, "iterations": iterations},
            {"name": "ring-b", "collective": "allreduce", "hosts": ["h2", "h4"],
             "size_bytes": size_bytes, "iterations": iterations},
        ],
        "routing": routing,
    }


def nft_tables() -> list[str]:
    """mlfabric's nftables tables (tap ports join their veths through them: testbed/taps.py)."""
    out = subprocess.run(["nft", "list", "tables", "netdev"], capture_output=True, text=True)
    return sorted(line.split()[-1] for line in out.stdout.splitlines()
                  if line.split()[-1:] and line.split()[-1].startswith("mlfabric_"))


def node_shells() -> list[str]:
    """Mininet node shells alive on this machine (`bash ... mininet:<node>`), read only:
    a run must have ended every one it started."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmd = proc.info["cmdline"] or []
        if (proc.info["status"] != psutil.STATUS_ZOMBIE and cmd
                and cmd[-1].startswith("mininet:") and "bash" in " ".join(cmd)):
            found.append(f"{proc.pid}:{cmd[-1]}")
    return sorted(found)


def run_netns() -> list[str]:
    """Network namespaces of runs' own ovs-vswitchd processes (testbed/instances.py)."""
    d = Path("/run/netns")
    return sorted(p.name for p in d.iterdir() if p.name.startswith("mlf")) if d.exists() else []


def run_ovs_processes() -> list[str]:
    """ovsdb-server / ovs-vswitchd processes a run started (their files under STATE_DIR)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmd = proc.info["cmdline"] or []
        if (proc.info["status"] != psutil.STATUS_ZOMBIE and cmd
                and any(c.startswith(("ovs-vswitchd", "ovsdb-server")) for c in cmd[:5])
                and str(STATE_DIR) in " ".join(cmd)):
            found.append(f"{proc.pid}:{' '.join(cmd[:5])}")
    return sorted(found)


def leftovers() -> dict:
    """Anything an mlfabric run could leave: tagged bridges, fabric interfaces (veths and
    taps), nftables tables, records, node shells, its own OVS processes, their namespaces
    and run directories."""
    bridges = our_bridges()
    names = subprocess.run(["ip", "-j", "link", "show"], capture_output=True, text=True).stdout
    intfs = [i["ifname"] for i in json.loads(names)
             if i["ifname"].startswith(SWITCH_PREFIXES)]
    records = sorted(p.name for p in STATE_DIR.glob("*.json")) if STATE_DIR.exists() else []
    rundirs = sorted(p.name for p in STATE_DIR.glob("*.ovs*")) if STATE_DIR.exists() else []
    return {"bridges": bridges, "interfaces": intfs, "nft_tables": nft_tables(),
            "records": records, "shells": node_shells(), "netns": run_netns(),
            "ovs_processes": run_ovs_processes(), "ovs_rundirs": rundirs}


#: Interface names of every fabric kind's switches (their ports are <switch>-ethN).
SWITCH_PREFIXES = ("leaf", "spine", "agg", "core", "edge", "rail", "sw")
NOTHING = {"bridges": [], "interfaces": [], "nft_tables": [], "records": [], "shells": [],
           "netns": [], "ovs_processes": [], "ovs_rundirs": []}

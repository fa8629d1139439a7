"""Open vSwitch on this machine: is it running, which datapath can it use, start it if asked.

Every command is an argument list; nothing is killed here.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

OVS_CTL = "/usr/share/openvswitch/scripts/ovs-ctl"


class TestbedError(RuntimeError):
    """The machine cannot emulate the fabric (missing tools, OVS down, a command failed)."""


def run(cmd: list[str], timeout_s: float = 30.0, check: bool = True,
        input_text: str | None = None) -> subprocess.CompletedProcess:
    """Run one command (argument list), capture its output, raise TestbedError on failure."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                              input=input_text)
    except FileNotFoundError as e:
        raise TestbedError(f"{cmd[0]} is not installed; run `make setup` first") from e
    except subprocess.TimeoutExpired as e:
        raise TestbedError(f"`{' '.join(cmd)}` took more than {timeout_s:g} s") from e
    if check and proc.returncode != 0:
        raise TestbedError(f"`{' '.join(cmd)}` failed ({proc.returncode}): "
                           f"{(proc.stderr or proc.stdout).strip()[:500]}")
    return proc


def ovs_running() -> bool:
    if shutil.which("ovs-vsctl") is None:
        return False
    return run(["ovs-vsctl", "--timeout=3", "show"], check=False).returncode == 0


def start_ovs() -> None:
    """Start ovsdb-server and ovs-vswitchd without systemd (idempotent)."""
    if ovs_running():
        return
    if not Path(OVS_CTL).exists():
        raise TestbedError("Open vSwitch is not installed; run `make setup` first")
    run([OVS_CTL, "start", "--system-id=random"], timeout_s=60, check=False)
    if not ovs_running():
        raise TestbedError("Open vSwitch did not start (ovs-ctl start); see `ovs-ctl status`")


def kernel_datapath_available() -> bool:
    """True where the openvswitch kernel module is loaded (ovs-ctl loads it when it can)."""
    return Path("/sys/module/openvswitch").exists()


def pick_datapath(requested: str) -> str:
    """'kernel' or 'user' for Mininet's OVSSwitch; `requested` is auto|kernel|user."""
    if requested == "auto":
        return "kernel" if kernel_datapath_available() else "user"
    if requested == "kernel" and not kernel_datapath_available():
        raise TestbedError("emulation.datapath: kernel requested but the openvswitch module is "
                           "not loaded; use auto or user")
    return requested


def ovs_version() -> str:
    out = run(["ovs-vsctl", "--version"], check=False).stdout
    return out.splitlines()[0].strip() if out else "unknown"

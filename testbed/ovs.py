"""Open vSwitch on this machine: is it running, which datapath can it use, is its packet send
buffer large enough (testbed/bootstrap.sh installs and starts it).

Every command is an argument list; nothing is killed here.
"""
from __future__ import annotations

import re
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
        # in a session of its own: a Ctrl-C at the terminal (sent to the whole foreground
        # process group) must not kill a teardown step halfway
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                              input=input_text, start_new_session=True)
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


#: Send buffer that ovs-vswitchd's one AF_PACKET send socket needs (userspace datapath).
#: Every packet OVS sends stays charged to that single socket until the port's HTB queue
#: releases it; when the buffer is full, sendmmsg() fails with ENOBUFS and OVS drops the packet
#: without counting it anywhere. With the kernel default (212,992 B, about a dozen 9000-byte
#: frames for the whole switch) the quickstart lost ~190 segments per run and its ILP
#: efficiency fell from 0.98 to 0.86. The socket takes net.core.wmem_default when
#: ovs-vswitchd first sends, so testbed/bootstrap.sh raises it before starting OVS.
OVS_SEND_BUFFER_BYTES = 8 * 1024 * 1024


def ovs_send_buffer_bytes() -> int | None:
    """The send buffer of ovs-vswitchd's AF_PACKET send socket, or None if it has none yet."""
    out = run(["ss", "-0", "-m", "-p"], check=False).stdout
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if '"ovs-vswitchd"' in line and "[0]:*" in line:
            text = line + (lines[i + 1] if i + 1 < len(lines) else "")
            m = re.search(r"\btb(\d+)", text)
            if m:
                return int(m.group(1))
    return None


def check_send_buffer() -> int:
    """Raise TestbedError unless the userspace datapath can queue without silent drops."""
    tb = ovs_send_buffer_bytes()
    if tb is None:
        tb = int(Path("/proc/sys/net/core/wmem_default").read_text())
    if tb < OVS_SEND_BUFFER_BYTES:
        raise TestbedError(
            f"ovs-vswitchd's packet send buffer is {tb} B (< {OVS_SEND_BUFFER_BYTES}): the "
            "userspace datapath would drop packets silently; run `sudo make setup` (raises "
            "net.core.wmem_default and restarts ovs-vswitchd)")
    return tb

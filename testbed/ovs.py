"""Open vSwitch on this machine: is it running, which datapath can it use, are its packet
sockets' buffers large enough (testbed/bootstrap.sh installs and starts it).

Every command is an argument list; nothing is killed here.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
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
        # stdin: the input, or /dev/null (never the caller's: ovs-vsctl aborts on a closed fd 0)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                              input=input_text, start_new_session=True,
                              **({} if input_text is not None else {"stdin": subprocess.DEVNULL}))
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


#: glibc malloc settings ovs-vswitchd is started with (testbed/bootstrap.sh prints them with
#: `python -m testbed.ovs tunables`). Before every recvmmsg() on every `system` port the
#: userspace datapath allocates 32 MTU-sized buffers and frees those it did not fill. With
#: glibc's defaults the frees hand the heap's top back to the kernel (trimmed above 128 KiB)
#: and the next batch grows it again; ovs-ctl starts ovs-vswitchd with --mlockall, so every
#: growth is faulted in and locked at once. Right after an OVS start, that held one flow at
#: 57-68% of an 80 Mbit/s link (MTU 64000; 5 of 5 first calibrations); with the heap never
#: trimmed (and grown in 64 MiB steps) 99.5% (2 of 2), as `--no-mlockall` also gave (3 of 3).
VSWITCHD_GLIBC_TUNABLES = ("glibc.malloc.trim_threshold=1073741824:"
                           "glibc.malloc.top_pad=67108864:glibc.malloc.mmap_threshold=1048576")

MALLOC_WARNING = ("warning: ovs-vswitchd runs without mlfabric's malloc settings: right after "
                  "it starts, one flow can get as little as 57% of its link (testbed/ovs.py); "
                  "`sudo make setup` restarts it with them")


def vswitchd_pid() -> int | None:
    """The running ovs-vswitchd's PID from its pidfile, or None."""
    rundir = Path(os.environ.get("OVS_RUNDIR", "/var/run/openvswitch"))
    try:
        pid = int((rundir / "ovs-vswitchd.pid").read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if Path(f"/proc/{pid}").exists() else None


def vswitchd_malloc_tuned() -> bool | None:
    """Whether ovs-vswitchd runs with VSWITCHD_GLIBC_TUNABLES; None if it is not running.
    (glibc cuts the variable at its first ':' in the process's own copy of its environment
    while parsing it, so only the first setting shows in /proc/PID/environ.)"""
    pid = vswitchd_pid()
    if pid is None:
        return None
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    want = f"GLIBC_TUNABLES={VSWITCHD_GLIBC_TUNABLES.split(':')[0]}".encode()
    return any(item.split(b":")[0] == want for item in env)


#: Receive buffer each of ovs-vswitchd's per-port AF_PACKET sockets needs. A port's socket
#: holds what arrived while the forwarding thread was busy with the other ports; when it is
#: full the kernel drops the packet (counted only in the socket's own drop counter). The
#: sockets take net.core.rmem_default when the ports are added, i.e. at each fabric's build:
#: with the kernel's 212,992 B (three 64000-byte frames) the 1,280 Mbit/s fidelity run lost
#: 22 packets there and retransmitted 18 segments; with 8 MiB none, and 4 (tail-loss probes).
OVS_RECV_BUFFER_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class PacketSocket:
    """One of ovs-vswitchd's AF_PACKET sockets, from `ss -0 -m -p -e` (bytes, packets)."""

    iface: str            # the port's interface; '*' for the one send socket
    inode: int
    queued_bytes: int     # received, not yet read by the forwarding thread (skmem r)
    rcvbuf_bytes: int     # skmem rb
    sndbuf_bytes: int     # skmem tb
    drops: int            # packets dropped because the receive buffer was full (skmem d)


def parse_ss_packet(text: str, pid: int | None = None) -> list[PacketSocket]:
    """ovs-vswitchd's packet sockets (only `pid`'s, when given) in `ss -0 -m -p -e -n -H`
    output, where each socket's skmem continues on an indented line."""
    records: list[str] = []
    for line in text.splitlines():
        if line[:1].isspace() and records:
            records[-1] += " " + line.strip()
        elif line.strip():
            records.append(line.strip())
    out = []
    for rec in records:
        owner = re.search(r'\("ovs-vswitchd",pid=(\d+),', rec)
        mem = re.search(r"skmem:\(([^)]*)\)", rec)
        ino = re.search(r"\bino:(\d+)", rec)
        fields = rec.split()
        if not (owner and mem and ino) or len(fields) < 4:
            continue
        if pid is not None and int(owner.group(1)) != pid:
            continue
        sk = {m.group(1): int(m.group(2)) for m in re.finditer(r"([a-z]+)(\d+)", mem.group(1))}
        out.append(PacketSocket(iface=fields[3].rsplit(":", 1)[-1], inode=int(ino.group(1)),
                                queued_bytes=sk.get("r", 0), rcvbuf_bytes=sk.get("rb", 0),
                                sndbuf_bytes=sk.get("tb", 0), drops=sk.get("d", 0)))
    return out


def vswitchd_packet_sockets() -> list[PacketSocket]:
    """The running ovs-vswitchd's AF_PACKET sockets ([] when it has none or is not running)."""
    pid = vswitchd_pid()
    if pid is None:
        return []
    return parse_ss_packet(run(["ss", "-0", "-m", "-p", "-e", "-n", "-H"], check=False).stdout,
                           pid)


def ovs_send_buffer_bytes() -> int | None:
    """The send buffer of ovs-vswitchd's AF_PACKET send socket, or None if it has none yet."""
    return next((s.sndbuf_bytes for s in vswitchd_packet_sockets() if s.iface == "*"), None)


def sysctl_bytes(name: str) -> int:
    """net.core.`name` (wmem_default, rmem_default) in bytes."""
    return int(Path(f"/proc/sys/net/core/{name}").read_text())


def check_socket_buffers() -> int:
    """Raise TestbedError unless the userspace datapath can queue without silent drops: the
    send socket's buffer and the receive buffer its port sockets will get (returns the
    send buffer's bytes)."""
    tb = ovs_send_buffer_bytes()
    if tb is None:
        tb = sysctl_bytes("wmem_default")
    if tb < OVS_SEND_BUFFER_BYTES:
        raise TestbedError(
            f"ovs-vswitchd's packet send buffer is {tb} B (< {OVS_SEND_BUFFER_BYTES}): the "
            "userspace datapath would drop packets silently; run `sudo make setup` (raises "
            "net.core.wmem_default and restarts ovs-vswitchd)")
    rb = sysctl_bytes("rmem_default")
    if rb < OVS_RECV_BUFFER_BYTES:
        raise TestbedError(
            f"net.core.rmem_default is {rb} B (< {OVS_RECV_BUFFER_BYTES}): ovs-vswitchd's port "
            "sockets would drop what arrives while its forwarding thread is busy; run "
            "`sudo make setup` (raises it)")
    return tb


if __name__ == "__main__":   # for testbed/bootstrap.sh
    import sys
    if sys.argv[1:] == ["tunables"]:
        print(VSWITCHD_GLIBC_TUNABLES)
    elif sys.argv[1:] == ["buffers"]:             # the two sysctls bootstrap sets
        print(OVS_SEND_BUFFER_BYTES, OVS_RECV_BUFFER_BYTES)
    elif sys.argv[1:] == ["malloc-tuned"]:       # exit 1: running without them
        sys.exit(0 if vswitchd_malloc_tuned() is not False else 1)
    else:
        print("usage: python -m testbed.ovs tunables|buffers|malloc-tuned", file=sys.stderr)
        sys.exit(2)

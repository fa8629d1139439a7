"""One machine's fabric over several ovs-vswitchd processes (`emulation.switch_processes: N`).

Process 0 is the machine's own Open vSwitch (the one testbed/bootstrap.sh starts and tunes),
in the root network namespace. Processes 1..N-1 are the run's: each an ovsdb-server with its
own database and run directory, and an ovs-vswitchd in a network namespace of its own (the
userspace datapath's `ovs-netdev` device exists once per namespace), both started in the
foreground and recorded by PID (testbed/registry.py), so that teardown and `mlfabric clean`
stop them by PID and then delete their namespace and run directory::

    root namespace (process 0)           namespace mlf<run>p1 (process 1)
    leaf1 leaf2  spine1 spine2   veth    leaf3 leaf4  spine3 spine4
      |  \\____________________________/  |
    h1 .. (hosts: Mininet namespaces)       links between processes: a veth whose ends sit in
                                            the two processes' namespaces

Switches are placed as testbed/split.py places machines: pods (leaf groups) whole and in
order, the top tier balanced. Every OVS command for a switch goes to its process: ovs-vsctl
with `--db`, ovs-ofctl to the bridge's management socket, ovs-appctl to the process's control
socket (`ofctl_target`, `appctl_prefixes`; the placement of the live fabric is registered
here while it is built, and forgotten at teardown).
"""
from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .fabric import Fabric
from .ovs import (OVS_RECV_BUFFER_BYTES, OVS_SEND_BUFFER_BYTES, VSWITCHD_GLIBC_TUNABLES,
                  TestbedError, run)

OVS_SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"
#: How long a process's sockets may take to appear (seen: ~0.1 s for ovsdb-server, ~0.3 s
#: for ovs-vswitchd on an idle machine).
START_TIMEOUT_S = 20.0
UNIX_PATH_MAX = 107          # sun_path holds 108 bytes with its NUL


def process_count(fabric: Fabric, asked: int) -> int:
    """The processes a fabric is built with: `asked`, at most one per pod (or leaf); a
    fabric of one leaf group (the non-blocking reference's one switch) gets one."""
    return max(1, min(asked, len(fabric.leaf_groups)))


def placement(fabric: Fabric, processes: int) -> dict[str, int]:
    """Every switch -> the process (0..processes-1) that runs it, as split_fabric places
    machines (pods whole, in order; the top tier balanced over the processes)."""
    if processes == 1:
        return {sw: 0 for sw in fabric.switches}
    from .split import split_fabric
    owner = split_fabric(fabric, processes).owner
    return {sw: owner.get(sw, 0) for sw in fabric.switches}   # NVLink switches: the first


@dataclass(frozen=True)
class OvsInstance:
    """Process `index` (>= 1) of run `run_id`: where its files, sockets and namespace are."""

    run_id: str
    index: int
    state_dir: Path

    @property
    def netns(self) -> str:
        return f"mlf{self.run_id}p{self.index}"

    @property
    def rundir(self) -> Path:
        return self.state_dir / f"{self.run_id}.ovs{self.index}"

    @property
    def db_sock(self) -> Path:
        return self.rundir / "db.sock"

    @property
    def db(self) -> str:
        return f"unix:{self.db_sock}"

    @property
    def vswitchd_ctl(self) -> Path:
        return self.rundir / "vswitchd.ctl"

    def vsctl(self) -> list[str]:
        return ["ovs-vsctl", f"--db={self.db}"]

    def appctl(self) -> list[str]:
        return ["ovs-appctl", "-t", str(self.vswitchd_ctl)]

    def mgmt(self, bridge: str) -> str:
        """ovs-ofctl's target for `bridge` in this process: its management socket."""
        return f"unix:{self.rundir / bridge}.mgmt"

    def check_paths(self, bridges: list[str]) -> None:
        longest = max([str(self.vswitchd_ctl)] + [self.mgmt(b)[5:] for b in bridges], key=len)
        if len(longest) > UNIX_PATH_MAX:
            raise TestbedError(f"MLFABRIC_STATE_DIR is too long for a unix socket path "
                               f"({longest}: {len(longest)} > {UNIX_PATH_MAX} bytes); use a "
                               "shorter directory")


# -- the live fabric's placement: which process each switch's OVS commands go to ------------
_TARGETS: dict[str, OvsInstance] = {}
_INSTANCES: list[OvsInstance] = []


_VSWITCHD_PIDS: dict[int, int] = {}


def register(where: dict[str, OvsInstance], vswitchd_pids: dict[int, int]) -> None:
    """The live fabric's switches in processes >= 1 (switches not named: process 0), and
    each process's ovs-vswitchd PID by index."""
    forget()
    _TARGETS.update(where)
    _INSTANCES[:] = sorted(set(where.values()), key=lambda i: i.index)
    _VSWITCHD_PIDS.update(vswitchd_pids)


def forget() -> None:
    _TARGETS.clear()
    _INSTANCES.clear()
    _VSWITCHD_PIDS.clear()


def ofctl_target(switch: str) -> str:
    """What ovs-ofctl is given for `switch`: its name (process 0) or its management socket."""
    inst = _TARGETS.get(switch)
    return inst.mgmt(switch) if inst else switch


def appctl_prefixes() -> list[list[str]]:
    """ovs-appctl for every live process: the machine's, then the run's."""
    return [["ovs-appctl"]] + [i.appctl() for i in _INSTANCES]


# -- starting one process ------------------------------------------------------------------
def _wait_for(path: Path, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not path.exists():
        if proc.poll() is not None:
            raise TestbedError(f"{what} exited ({proc.returncode}) before it opened {path}")
        if time.monotonic() > deadline:
            raise TestbedError(f"{what} did not open {path} in {START_TIMEOUT_S:g} s")
        time.sleep(0.05)


def _namespace_buffers(netns: str) -> None:
    """The packet sockets' buffers ovs-vswitchd needs (testbed/ovs.py), in its namespace
    (a new namespace had the root's 8 MiB on kernel 6.18; a kernel whose new namespaces start
    from the defaults gets them raised; one where they are global has them from bootstrap)."""
    for name, want in (("wmem_default", OVS_SEND_BUFFER_BYTES),
                       ("rmem_default", OVS_RECV_BUFFER_BYTES)):
        now = run(["ip", "netns", "exec", netns, "sysctl", "-n", f"net.core.{name}"],
                  check=False)
        if now.returncode == 0 and int(now.stdout.strip() or 0) < want:
            run(["ip", "netns", "exec", netns, "sysctl", "-q", "-w", f"net.core.{name}={want}"])


def start(inst: OvsInstance, add_pid) -> int:
    """Start process `inst`: its namespace, database, ovsdb-server and ovs-vswitchd (returns
    its PID). Each daemon is passed to `add_pid(pid, cmdline)` (the run record) right after
    it starts; the namespace and run directory must be in the record already."""
    inst.rundir.mkdir(parents=True, exist_ok=True)
    run(["ip", "netns", "add", inst.netns])
    run(["ip", "-n", inst.netns, "link", "set", "dev", "lo", "up"])
    _namespace_buffers(inst.netns)
    db = inst.rundir / "conf.db"
    run(["ovsdb-tool", "create", str(db), OVS_SCHEMA])
    env = {**os.environ, "OVS_RUNDIR": str(inst.rundir), "OVS_DBDIR": str(inst.rundir),
           "OVS_LOGDIR": str(inst.rundir), "GLIBC_TUNABLES": VSWITCHD_GLIBC_TUNABLES}
    server = ["ovsdb-server", str(db), f"--remote=punix:{inst.db_sock}",
              f"--unixctl={inst.rundir / 'ovsdb.ctl'}",
              f"--log-file={inst.rundir / 'ovsdb.log'}"]
    proc = _daemon(server, env, add_pid)
    _wait_for(inst.db_sock, proc, f"ovsdb-server of switch process {inst.index}")
    # the socket's file exists from bind(), before ovsdb-server listens on it: a connection
    # then is refused, so ovs-vsctl retries until it is accepted (at most START_TIMEOUT_S)
    run([*inst.vsctl(), f"--timeout={START_TIMEOUT_S:g}", "--retry", "--no-wait", "init"],
        timeout_s=START_TIMEOUT_S + 5)
    vswitchd = ["ip", "netns", "exec", inst.netns, "ovs-vswitchd", inst.db,
                f"--unixctl={inst.vswitchd_ctl}", f"--log-file={inst.rundir / 'vswitchd.log'}"]
    proc = _daemon(vswitchd, env, add_pid)
    _wait_for(inst.vswitchd_ctl, proc, f"ovs-vswitchd of switch process {inst.index}")
    return proc.pid


def _daemon(cmd: list[str], env: dict, add_pid) -> subprocess.Popen:
    """Start a daemon in the foreground, in a session of its own (a terminal's Ctrl-C reaches
    mlfabric, which stops it by PID), and record it at once."""
    from .signals import deferred
    with deferred():
        proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        add_pid(proc.pid, cmd)
    return proc


def vswitchd_pids() -> list[int]:
    """PIDs of the live run's own ovs-vswitchd processes (process 1, 2, ...)."""
    return [_VSWITCHD_PIDS[i.index] for i in _INSTANCES if i.index in _VSWITCHD_PIDS]

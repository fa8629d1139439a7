"""Machines of a split fabric, reached over OpenSSH (the config's `machines:`; design in
docs/multi-machine.md). No mininet here.

Every command is an argument list. ssh hands the remote side one string, which the remote
user's shell splits again, so each argument is quoted with shlex.quote (`remote_command`):
a config value never reaches a shell unquoted, here or there. One multiplexed connection
per machine (ControlMaster=auto, ControlPath in a directory of the run's own, ControlPersist),
as Mininet's RemoteMixin does; `close` ends it (`ssh -O exit`), by its socket, not by name.

Pre-flight (`preflight_batch`, `parse_preflight`, `preflight_problems`): one ssh per machine
that prints, between markers, the user id, Open vSwitch's version, the mlfabric commit of
the checkout at the coordinator's path, whether the VXLAN port is taken, and the machine's
clock (the coordinator's before and after the call bound the offset: NTP's midpoint rule).
"""
from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .ovs import TestbedError
from .split import VXLAN_PORT

NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
USER_RE = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
HOST_RE = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}))*$")
PATH_RE = re.compile(r"^/[A-Za-z0-9._/-]{0,200}$")
#: Clock offsets larger than this make CCTs taken on two clocks disagree by more than the
#: 5% the split runs are held to on a 2 s step; CCTs are the coordinator's (one clock) anyway,
#: so this bounds only the agents' own logs.
MAX_CLOCK_OFFSET_S = 0.1
SSH_CONNECT_TIMEOUT_S = 5
CONTROL_PERSIST_S = 600


class RemoteError(TestbedError):
    """A machine cannot take part (unreachable, not root, another OVS, a port in use...)."""


@dataclass(frozen=True)
class MachineSpec:
    """One entry of the config's `machines:`."""

    name: str
    address: str
    user: str = "root"
    ovs_rundir: str | None = None    # where that machine's ovs-vswitchd keeps its sockets

    def as_dict(self) -> dict:
        return {"name": self.name, "address": self.address, "user": self.user,
                **({"ovs_rundir": self.ovs_rundir} if self.ovs_rundir else {})}


def check_address(value: str) -> bool:
    """An IPv4/IPv6 address or a DNS name (nothing a shell or ssh would read as an option)."""
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        return bool(HOST_RE.match(value)) and not value.startswith("-")


def ssh_base(m: MachineSpec, control_dir: Path, master: str = "auto",
             persist: str = str(CONTROL_PERSIST_S)) -> list[str]:
    """ssh to `m` over its multiplexed connection (started by the first call); with
    $MLFABRIC_SSH_CONFIG, ssh reads that file instead of ~/.ssh/config. `master` / `persist`:
    ssh's ControlMaster / ControlPersist (a split run's part server is the master itself,
    "yes" / "no", so that the connection ends with it: experiments/split_run.py)."""
    cfg = os.environ.get("MLFABRIC_SSH_CONFIG")
    return ["ssh", *(["-F", cfg] if cfg else []), "-o", "BatchMode=yes", "-o", "LogLevel=ERROR",
            "-o", f"ConnectTimeout={SSH_CONNECT_TIMEOUT_S}",
            "-o", f"ControlMaster={master}", "-o", f"ControlPath={control_dir}/{m.name}.sock",
            "-o", f"ControlPersist={persist}", "-o", "ServerAliveInterval=2",
            "-o", "ServerAliveCountMax=3", "-l", m.user, m.address]


def remote_command(m: MachineSpec, control_dir: Path, args: list[str]) -> list[str]:
    """The local argument list that runs `args` on `m`, each argument quoted for the far
    shell (ssh joins its arguments into one string)."""
    return [*ssh_base(m, control_dir), "--", shlex.join(args)]


def remote_batch(m: MachineSpec, control_dir: Path, cmds: list[list[str]]) -> list[str]:
    """One ssh that runs `cmds` in order on `m`, each between markers (see split_batch);
    every command runs whatever the previous ones returned."""
    script = "; ".join(f"echo {MARK}{i}; {shlex.join(c)} 2>&1; echo {MARK}rc$?"
                       for i, c in enumerate(cmds))
    return [*ssh_base(m, control_dir), "--", script]


MARK = "@@mlfabric@@"


def split_batch(text: str, n: int) -> list[tuple[str, int | None]]:
    """remote_batch's output: per command (its output, its exit code; None: never ran)."""
    out: list[tuple[str, int | None]] = []
    for i in range(n):
        start = text.find(f"{MARK}{i}\n")
        if start < 0:
            out.append(("", None))
            continue
        body = text[start + len(f"{MARK}{i}\n"):]
        end = body.find(f"{MARK}rc")
        if end < 0:
            out.append((body, None))
            continue
        rc = re.match(r"\d+", body[end + len(MARK) + 2:])
        out.append((body[:end], int(rc.group()) if rc else None))
    return out


def close(m: MachineSpec, control_dir: Path) -> None:
    """End `m`'s multiplexed connection (by its control socket; none open: nothing to do)."""
    if (control_dir / f"{m.name}.sock").exists():
        subprocess.run([*ssh_base(m, control_dir), "-O", "exit"], capture_output=True,
                       timeout=10, stdin=subprocess.DEVNULL)


# -- pre-flight --------------------------------------------------------------------------
def preflight_cmds(checkout: str) -> list[list[str]]:
    """What every machine is asked before anything is built (see preflight_problems)."""
    return [["id", "-u"], ["ovs-vsctl", "--version"],
            ["git", "-C", checkout, "rev-parse", "HEAD"],
            ["ss", "-H", "-u", "-l", "-n", f"sport = :{VXLAN_PORT}"],
            ["date", "+%s.%N"]]


@dataclass(frozen=True)
class Facts:
    """What one machine said in pre-flight (None: the command did not answer)."""

    uid: int | None
    ovs_version: str | None
    commit: str | None
    vxlan_port_free: bool | None
    clock_offset_s: float | None     # the machine's clock minus the coordinator's


def parse_preflight(batch: list[tuple[str, int | None]], t_send: float,
                    t_recv: float) -> Facts:
    """split_batch's five answers; t_send / t_recv: the coordinator's clock (time.time())
    around the call, whose midpoint the machine's clock is compared with."""
    def ok(i: int) -> str | None:
        text, rc = batch[i]
        return text.strip() if rc == 0 else None
    uid = ok(0)
    ver = ok(1)
    ver_m = re.search(r"\(Open vSwitch\) (\d+\.\d+(\.\d+)?)", ver or "")
    commit = ok(2)
    ports = batch[3]
    clock = ok(4)
    try:
        offset = float(clock) - (t_send + t_recv) / 2 if clock else None
    except ValueError:
        offset = None
    return Facts(int(uid) if uid and uid.isdigit() else None,
                 ver_m.group(1) if ver_m else None,
                 commit if commit and re.fullmatch(r"[0-9a-f]{40}", commit) else None,
                 (ports[0].strip() == "") if ports[1] == 0 else None, offset)


def preflight_problems(name: str, facts: Facts, ovs_version: str, commit: str,
                       max_offset_s: float = MAX_CLOCK_OFFSET_S) -> list[str]:
    """One line per thing that keeps machine `name` out, each naming the fix; [] when ready.
    `ovs_version` / `commit`: the coordinator's (every machine must run the same)."""
    out = []
    if facts.uid != 0:
        out.append(f"machines.{name}: not root (uid {facts.uid}); give a user that is root "
                   "there (user: root)")
    if facts.ovs_version is None:
        out.append(f"machines.{name}: Open vSwitch does not answer; run `make setup` there")
    elif facts.ovs_version != ovs_version:
        out.append(f"machines.{name}: Open vSwitch {facts.ovs_version}, the coordinator has "
                   f"{ovs_version}; install the same version on every machine")
    if facts.commit is None:
        out.append(f"machines.{name}: no mlfabric checkout at the coordinator's path; clone "
                   "it there")
    elif facts.commit != commit:
        out.append(f"machines.{name}: mlfabric {facts.commit[:10]}, the coordinator has "
                   f"{commit[:10]}; check out the same commit on every machine")
    if facts.vxlan_port_free is False:
        out.append(f"machines.{name}: UDP port {VXLAN_PORT} (VXLAN) is in use; stop what "
                   "holds it (`ss -ulnp`)")
    if facts.clock_offset_s is None:
        out.append(f"machines.{name}: its clock could not be read")
    elif abs(facts.clock_offset_s) > max_offset_s:
        out.append(f"machines.{name}: clock {facts.clock_offset_s:+.3f} s off the "
                   f"coordinator's (at most {max_offset_s:g} s); run NTP (chrony) there")
    return out


def preflight(m: MachineSpec, control_dir: Path, checkout: str, ovs_version: str,
              commit: str, timeout_s: float = 20.0) -> list[str]:
    """Ask `m` (one ssh over its multiplexed connection); its problems, [] when ready."""
    cmds = preflight_cmds(checkout)
    t_send = time.time()
    try:
        p = subprocess.run(remote_batch(m, control_dir, cmds), capture_output=True, text=True,
                           timeout=timeout_s, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return [f"machines.{m.name}: no answer over ssh in {timeout_s:g} s ({m.address})"]
    t_recv = time.time()
    if p.returncode == 255:      # ssh's own failure: the machine was not reached
        why = (p.stderr.strip().splitlines() or ["?"])[-1][:200]
        return [f"machines.{m.name}: unreachable over ssh as {m.user}@{m.address} ({why})"]
    facts = parse_preflight(split_batch(p.stdout, len(cmds)), t_send, t_recv)
    offset = clock_offset_s(m, control_dir)      # over the connection the batch opened
    facts = dataclasses.replace(facts, clock_offset_s=offset)
    return preflight_problems(m.name, facts, ovs_version, commit)


#: Run on the far side by clock_offset_s: one `date` per line read (a fixed text, no config).
CLOCK_LOOP = "while read -r _; do date +%s.%N; done"


def clock_offset_s(m: MachineSpec, control_dir: Path, tries: int = 5) -> float | None:
    """`m`'s clock minus the coordinator's, by the midpoint rule over one ssh session that
    answers each line with its clock (CLOCK_LOOP): the try with the shortest round trip
    (a pipe's, ms; a new ssh per reading is not symmetric: its start-up comes before the
    reading, 0.14-0.3 s late on one clock at load 7). None: no answer."""
    try:
        p = subprocess.Popen(remote_command(m, control_dir, ["sh", "-c", CLOCK_LOOP]),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, bufsize=1)
    except OSError:
        return None
    best: tuple[float, float] | None = None
    try:
        for _ in range(tries):
            t0 = time.time()
            p.stdin.write("\n")
            p.stdin.flush()
            line = p.stdout.readline()
            t1 = time.time()
            try:
                there = float(line.strip())
            except ValueError:
                break
            if best is None or t1 - t0 < best[0]:
                best = (t1 - t0, there - (t0 + t1) / 2)
    except (OSError, ValueError):
        pass
    finally:
        try:
            p.stdin.close()
        except OSError:
            pass
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return None if best is None else best[1]


def local_facts(checkout: str) -> tuple[str, str]:
    """The coordinator's (Open vSwitch version, mlfabric commit) every machine must match."""
    from .ovs import run
    ver = re.search(r"\(Open vSwitch\) (\d+\.\d+(\.\d+)?)",
                    run(["ovs-vsctl", "--version"]).stdout)
    commit = run(["git", "-C", checkout, "rev-parse", "HEAD"]).stdout.strip()
    if ver is None:
        raise RemoteError("ovs-vsctl --version: no version in its output; run `make setup`")
    return ver.group(1), commit


def preflight_all(machines: tuple[MachineSpec, ...], checkout: str,
                  control_dir: Path) -> list[str]:
    """Every machine's pre-flight at once (one thread and one ssh each); every problem, one
    line each, in the machines' order; [] when all are ready. The multiplexed connections
    stay open (ControlPersist) for what follows; `close` ends them."""
    from concurrent.futures import ThreadPoolExecutor
    ovs_version, commit = local_facts(checkout)
    with ThreadPoolExecutor(max_workers=min(16, len(machines))) as pool:
        found = list(pool.map(lambda m: preflight(m, control_dir, checkout, ovs_version,
                                                  commit), machines))
    return [p for probs in found for p in probs]


def run_remote(m: MachineSpec, control_dir: Path, args: list[str], cwd: str,
               timeout_s: float = 120.0) -> tuple[int, str]:
    """Run `args` on `m` in directory `cwd`: (exit code, its last line of output; ssh's own
    failure says unreachable, code 255)."""
    cmd = [*ssh_base(m, control_dir), "--", f"cd {shlex.quote(cwd)} && {shlex.join(args)}"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return 124, f"no answer over ssh in {timeout_s:g} s ({m.address})"
    out, err = p.stdout.strip().splitlines(), p.stderr.strip().splitlines()
    if p.returncode == 255:
        return 255, f"unreachable over ssh as {m.user}@{m.address} ({(err or ['?'])[-1][:200]})"
    lines = out if p.returncode == 0 else (err or out)
    return p.returncode, (lines or [""])[-1][:300]

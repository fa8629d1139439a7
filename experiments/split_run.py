"""`run` over several machines (the config's `machines:`): the coordinator's side.

    coordinator (this process)                       machine k (over ssh, same checkout path)
    pre-flight on every machine (testbed/remote.py)
    one ssh per machine, the master of its           python -m experiments.part serve
      connection: the part server's channel   --->     probe, build (its part of split_fabric:
    controller, driver, CCTs                           hosts, switches in its own ovs-vswitchd,
      rules: each switch's bundle to its machine       its tunnel ends), bundles, dump, settle,
      agents: one ssh session per agent, over          set_link, ping, teardown
        the same connection                   --->   python -m experiments.part agent RUN HOST
                                                       (execs the agent in the host's namespace)

`SplitEmulation` has what the runner asks of testbed/net.py's EmulatedFabric (fabric,
settings, popen for agents, set_link, datapath...) and serves testbed/installer.py's switch
commands (`use_remote`), so the run's steps are the one-machine steps. Every ssh the
coordinator starts is its child with PR_SET_PDEATHSIG (SIGTERM), in a session of its own (a
terminal's Ctrl-C reaches mlfabric, which tears down in order): if the coordinator dies, even
by SIGKILL, the channels close and each part server tears its part down on end of input.

Clocks: agents stamp their events with their machine's time.monotonic(); each machine's
offset from the coordinator's monotonic clock is measured over its channel (the midpoint of
the shortest of CLOCK_TRIES round trips, error at most half that round trip) and the agents'
times are moved onto the coordinator's clock (traffic/driver.py), so every CCT is on one
clock. Namespace machines share one clock: their measured offsets are within that error of 0.
"""
from __future__ import annotations

import ctypes
import json
import logging
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from testbed import installer, remote
from testbed.ovs import TestbedError
from testbed.remote import MachineSpec
from testbed.signals import deferred
from testbed.split import SplitError, check_mtu, split_fabric

from .config import ConfigError
from .part import PING_INTERVAL_S

#: A network device's name as `ip` prints it (checked before it is joined into a path).
IFNAME = re.compile(r"[A-Za-z0-9_.-]{1,15}")

log = logging.getLogger(__name__)

CHECKOUT = Path(__file__).resolve().parents[1]
CLOCK_TRIES = 7
BUILD_TIMEOUT_S = 300.0
CALL_TIMEOUT_S = 60.0
TEARDOWN_TIMEOUT_S = 60.0
PR_SET_PDEATHSIG = 1


_PRCTL = ctypes.CDLL(None, use_errno=True).prctl     # resolved here, not in a forked child


def _die_with(parent: int):
    """preexec_fn of an ssh child: die with `parent`, the coordinator (SIGTERM). Only a libc
    call in the child (the coordinator has threads); a parent already gone is seen by pid."""
    def setup() -> None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:
            os._exit(1)
    return setup


class Channel:
    """One machine's part server over its ssh (the connection's master)."""

    def __init__(self, m: MachineSpec, index: int, control: Path, err_path: Path):
        self.m, self.index, self.control = m, index, control
        self.lock = threading.Lock()
        self.lost: str | None = None
        self.buf = b""
        self.built = False
        cmd = [*remote.ssh_base(m, control, master="yes", persist="no"), "--",
               f"cd {shlex.quote(str(CHECKOUT))} && "
               + shlex.join([sys.executable, "-m", "experiments.part", "serve"])]
        self.err = open(err_path, "wb")
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self.err, start_new_session=True,
                                         preexec_fn=_die_with(os.getpid()))
        except BaseException:
            self.err.close()
            raise

    def call(self, req: dict, timeout_s: float = CALL_TIMEOUT_S) -> dict:
        """One request, its answer; TestbedError (one line, naming the machine) otherwise."""
        with self.lock:
            if self.lost:
                raise TestbedError(f"machines.{self.m.name}: lost ({self.lost})")
            try:
                self.proc.stdin.write((json.dumps(req) + "\n").encode())
                self.proc.stdin.flush()
                line = self._readline(timeout_s)
                out = json.loads(line)
            except (OSError, ValueError, TestbedError) as e:
                self.lost = (str(e) if isinstance(e, TestbedError) else
                             f"ssh: {e}" if isinstance(e, OSError) else
                             f"not an answer: {line[:80]!r}")
                raise TestbedError(f"machines.{self.m.name}: lost ({self.lost})") from None
            except BaseException:   # Ctrl-C, SIGTERM mid-call: its answer is never read,
                self.lost = "interrupted"    # so the channel is out of step: end of input
                raise                        # tears that part down
        if not isinstance(out, dict) or not out.get("ok"):
            why = out.get("error") if isinstance(out, dict) else out
            raise TestbedError(f"machines.{self.m.name}: {req.get('op')}: {why}")
        return out

    def _readline(self, timeout_s: float) -> bytes:
        deadline = time.monotonic() + timeout_s
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TestbedError(f"no answer over ssh in {timeout_s:g} s")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    why = self._ssh_error()
                    raise TestbedError(f"its ssh ended{': ' + why if why else ''}")
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def _ssh_error(self) -> str:
        """ssh's last word (its stderr, shared with the part server's: Mininet's "*** "
        warnings left out) and its exit code."""
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        try:
            text = [x for x in Path(self.err.name).read_text(errors="replace").splitlines()
                    if x.strip() and not x.startswith("*** ")]
        except OSError:
            text = []
        code = self.proc.poll()
        return ((text[-1][:200] + " ") if text else "") + f"(ssh exit {code})"

    def close(self, timeout_s: float = 10.0) -> None:
        """End the ssh (its stdin closed: the part server tears down on end of input);
        `timeout_s` for that teardown before ssh is ended."""
        with self.lock:
            self.lost = self.lost or "closed"
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.err.close()


def fold(problems: list[str]) -> str:
    """Several machines' problems as one line: the first, and how many more."""
    more = f" (and {len(problems) - 1} more: `mlfabric preflight`)" if len(problems) > 1 else ""
    return problems[0] + more


def machine_problems(machines: tuple[MachineSpec, ...], control: Path) -> list[str]:
    """Every machine's pre-flight problems (remote.preflight_all), their ssh connections
    closed after: the run's own start afresh."""
    try:
        return remote.preflight_all(machines, str(CHECKOUT), control)
    finally:
        with deferred():
            for m in machines:
                remote.close(m, control)


def underlay_mtu(m: MachineSpec, control: Path) -> int | str:
    """The MTU of the device that holds `m`'s address there, or the problem, one line."""
    rc, line = remote.run_remote(m, control, ["ip", "-o", "addr", "show", "to", m.address], "/")
    fields = line.split()
    dev = fields[1].split("@")[0] if len(fields) >= 2 else ""
    if rc or not IFNAME.fullmatch(dev):
        return (f"machines.{m.name}.address: no device holds {m.address} on that machine; "
                "give its underlay address")
    rc, line = remote.run_remote(m, control, ["cat", f"/sys/class/net/{dev}/mtu"], "/")
    return int(line) if rc == 0 and line.isdigit() else f"machines.{m.name}: {line}"


def check_machines(exp) -> None:
    """ConfigError, one line, unless every machine of `exp` is ready (preflight) and the
    fabric's MTU fits a VXLAN tunnel over their underlays: what `run` checks before it
    writes anything or builds."""
    control = Path(tempfile.mkdtemp(prefix="mlf-ssh-"))     # short: a unix socket's path
    try:
        problems = machine_problems(exp.machines, control)
        if problems:
            raise ConfigError(fold(problems))
        try:
            mtus = [underlay_mtu(m, control) for m in exp.machines]
        finally:
            with deferred():
                for m in exp.machines:
                    remote.close(m, control)
    finally:
        shutil.rmtree(control, ignore_errors=True)
    problems = [x for x in mtus if isinstance(x, str)]
    if problems:
        raise ConfigError(fold(problems))
    try:
        check_mtu(split_fabric(exp.fabric, len(exp.machines),
                               [m.address for m in exp.machines], min(mtus)),
                  exp.emulation.mtu_bytes)
    except SplitError as e:
        raise ConfigError(str(e)) from None


class SplitEmulation:
    """A fabric built over the config's machines; use as `with SplitEmulation(...) as emu:`.
    It offers what the runner uses of EmulatedFabric."""

    def __init__(self, exp, run_id: str, settings, log_dir: Path,
                 say=print):
        self.exp, self.fabric, self.run_id, self.settings = exp, exp.fabric, run_id, settings
        self.machines: tuple[MachineSpec, ...] = exp.machines
        self.log_dir, self.say = log_dir, say
        self.control = Path(tempfile.mkdtemp(prefix="mlf-ssh-"))
        self.channels: list[Channel] = []
        self.split = None
        self.owner: dict[str, int] = {}
        self.offsets: list[dict] = []
        self.agents: list[subprocess.Popen] = []
        self.built: list[dict] = []
        self.datapath = "unknown"
        self.port_type = "system"
        self.send_buffer_bytes = None
        self.malloc_tuned = None
        self.taps: list[str] = []
        self.other_vswitchds: list[tuple[int, str]] = []
        self._stop = threading.Event()
        self._pinger: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> "SplitEmulation":
        try:
            self._preflight()
            self._build()
        except BaseException:
            self.__exit__(*sys.exc_info())      # leftovers said, the build's error raised
            raise
        return self

    def _preflight(self) -> None:
        problems = machine_problems(self.machines, self.control)
        if problems:
            raise ConfigError(fold(problems))

    def _parallel(self, fn, items) -> list:
        with ThreadPoolExecutor(max_workers=min(16, len(items))) as pool:
            return list(pool.map(fn, items))

    def _build(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for i, m in enumerate(self.machines):
            self.channels.append(Channel(m, i, self.control, self.log_dir / f"ssh-{m.name}.log"))
        try:
            probes = self._parallel(lambda c: c.call({"op": "probe", "ip": c.m.address}),
                                    self.channels)
        except TestbedError as e:      # an address no device holds there: bad input
            if "probe: no device holds" in str(e):
                raise ConfigError(str(e)) from None
            raise
        mtu = min(p["mtu"] for p in probes)
        ips = [m.address for m in self.machines]
        try:
            self.split = split_fabric(self.fabric, len(self.machines), ips, mtu)
            check_mtu(self.split, self.settings.mtu_bytes)
        except SplitError as e:
            raise ConfigError(str(e)) from None
        self.owner = self.split.owner
        config = self.exp.resolved()
        self._start_pinger()

        def build(c: Channel) -> dict:
            c.built = True     # from here on its teardown is asked for, whatever the answer
            return c.call({"op": "build", "run_id": self.part_run(c.index), "config": config,
                           "machine": c.index, "ips": ips, "underlay_mtu": mtu,
                           "dev": probes[c.index]["dev"]}, timeout_s=BUILD_TIMEOUT_S)
        self.built = self._parallel(build, self.channels)
        first = self.built[0]
        for c, b in zip(self.channels[1:], self.built[1:]):
            for key in ("datapath", "port_type", "calibration_datapath"):
                if b[key] != first[key]:
                    raise TestbedError(f"machines.{c.m.name}: its {key} is {b[key]}, "
                                       f"{self.machines[0].name}'s {first[key]}: one run needs "
                                       "one kind of switch on every machine")
        self.datapath, self.port_type = first["datapath"], first["port_type"]
        self.send_buffer_bytes = first["send_buffer_bytes"]
        self.malloc_tuned = first["malloc_tuned"]
        self._calibration_datapath = first["calibration_datapath"]
        self.offsets = self._parallel(self._clock, self.channels)
        installer.use_remote(self)

    def part_run(self, index: int) -> str:
        """The run id of machine `index`'s part (its record and namespace names)."""
        return f"{self.run_id}m{index}"

    def _clock(self, c: Channel) -> dict:
        """Machine c's monotonic clock minus the coordinator's: the midpoint of the shortest
        round trip of CLOCK_TRIES (module docstring)."""
        best = None
        for _ in range(CLOCK_TRIES):
            t0 = time.monotonic()
            there = c.call({"op": "clock"})["monotonic_s"]
            t1 = time.monotonic()
            if best is None or t1 - t0 < best[0]:
                best = (t1 - t0, there - (t0 + t1) / 2)
        return {"clock_offset_s": best[1], "clock_round_trip_s": best[0]}

    def _start_pinger(self) -> None:
        def ping() -> None:
            while not self._stop.wait(PING_INTERVAL_S):
                for c in self.channels:
                    if self._stop.is_set():
                        return
                    if not c.lost and c.lock.acquire(blocking=False):
                        c.lock.release()       # idle: ping it (a busy channel is alive)
                        try:
                            c.call({"op": "ping"}, timeout_s=3 * PING_INTERVAL_S + 5)
                        except TestbedError:
                            pass
        self._pinger = threading.Thread(target=ping, daemon=True)
        self._pinger.start()

    def __exit__(self, *exc) -> None:
        """Every machine's part removed (in parallel); the agents' ssh sessions ended; what
        could not be reached is said in one line (TestbedError unless the run already
        failed)."""
        with deferred():
            installer.use_remote(None)
            self._stop.set()
            if self._pinger is not None:
                self._pinger.join(timeout=3 * PING_INTERVAL_S + 10)
            for p in self.agents:
                if p.poll() is None:
                    p.terminate()
            for p in self.agents:
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            left = self._parallel(self._teardown, self.channels) if self.channels else []
            shutil.rmtree(self.control, ignore_errors=True)
        bad = [x for x in left if x]
        if bad:
            line = ("; ".join(bad) + "; `mlfabric clean --machines CONFIG` removes what is "
                    "left once they answer")
            if exc and exc[0] is not None:
                self.say(f"error: {line}")
            else:
                raise TestbedError(line)

    def _teardown(self, c: Channel) -> str:
        """Ask c's part server to tear down, then end its ssh; '' when all was removed."""
        why = ""
        if c.built:
            try:
                out = c.call({"op": "teardown"}, timeout_s=TEARDOWN_TIMEOUT_S)
                if out.get("left"):
                    why = f"machines.{c.m.name}: left {out['left']}"
            except TestbedError as e:
                why = f"{e} (part {self.part_run(c.index)} not torn down from here)"
        c.close()
        return why

    # -- what the runner asks of a fabric ----------------------------------------------------
    @property
    def calibration_datapath(self) -> str:
        return self._calibration_datapath

    def channel_of(self, node: str) -> Channel:
        return self.channels[self.owner[node]]

    def set_link(self, u: str, v: str, up: bool) -> None:
        """Link u-v up or down on the machine(s) that hold its ends (a tunnel: both)."""
        for k in sorted({self.owner[u], self.owner[v]}):
            self.channels[k].call({"op": "set_link", "u": u, "v": v, "up": up})

    def popen(self, host: str, cmd: list[str], **kwargs) -> subprocess.Popen:
        """A traffic agent in `host` (cmd: traffic/driver.py's, its plan file last): one ssh
        session over the machine's connection running `experiments.part agent`, the plan
        sent as its first line. The Popen carries `clock_offset_s` (the machine's)."""
        if cmd[1:3] != ["-m", "traffic.agent"]:
            raise TestbedError(f"a split run starts traffic agents only, not {cmd[:3]}")
        c = self.channel_of(host)
        plan = Path(cmd[3]).read_text()
        ssh = [*remote.ssh_base(c.m, self.control, master="no", persist="no"), "--",
               f"cd {shlex.quote(str(CHECKOUT))} && " + shlex.join(
                   [sys.executable, "-m", "experiments.part", "agent", self.part_run(c.index),
                    host])]
        kwargs.pop("env", None)
        kwargs.pop("cwd", None)
        with deferred():
            proc = subprocess.Popen(ssh, start_new_session=True,
                                    preexec_fn=_die_with(os.getpid()),
                                    **kwargs)
            self.agents.append(proc)
        proc.stdin.write(json.dumps(json.loads(plan)).encode() + b"\n")   # one line
        proc.stdin.flush()
        proc.clock_offset_s = self.offsets[c.index]["clock_offset_s"]
        return proc

    # -- testbed/installer.py's RemoteSwitches ---------------------------------------------
    def apply_bundles(self, texts: dict[str, str], label: str) -> None:
        per: dict[int, dict[str, str]] = {}
        for sw, text in texts.items():
            per.setdefault(self.owner[sw], {})[sw] = text
        self._parallel(lambda k: self.channels[k].call(
            {"op": "bundles", "texts": per[k], "label": label}), sorted(per))

    def dump_flows(self, switch: str) -> str:
        return self.channel_of(switch).call({"op": "dump", "switch": switch})["text"]

    def settle(self) -> None:
        self._parallel(lambda c: c.call({"op": "settle"}), self.channels)

    def cpu_monitor(self) -> "SplitMonitor":
        """The CPU monitor of every machine (each part's own, testbed/monitor.py)."""
        return SplitMonitor(self)

    def environment(self) -> dict:
        """environment.json's record of the split: machines, clocks, placement."""
        return {"machines": [{**m.as_dict(), **o, "switches": b.get("switches"),
                              "hosts": b.get("hosts")}
                             for m, o, b in zip(self.machines, self.offsets, self.built)],
                "split": self.split.as_dict() if self.split else None}


class SplitMonitor:
    """Every machine's CPU monitor over the traffic, as one: the verdict is the worst
    machine's (its summary, ok only if every machine's is), with each machine's in
    "machines"; write_csv writes the worst machine's samples at the path and each machine's
    beside it (cpu_samples-NAME.csv)."""

    def __init__(self, emu: SplitEmulation):
        self.emu = emu
        self.results: list[dict] = []

    def __enter__(self) -> "SplitMonitor":
        self.emu._parallel(lambda c: c.call({"op": "monitor_start"}), self.emu.channels)
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is None:
            self.results = self.emu._parallel(lambda c: c.call({"op": "monitor_stop"}),
                                              self.emu.channels)
        # the run already failed: each part's teardown stops its monitor

    def _worst(self) -> int:
        return max(range(len(self.results)), key=lambda k: (
            not self.results[k]["summary"].get("ok", True),
            self.results[k]["summary"].get("forwarding_max_pct") or 0.0))

    def summary(self) -> dict:
        worst = self.results[self._worst()]["summary"]
        ok = all(r["summary"].get("ok", True) for r in self.results)
        return {**worst, "ok": ok, "machines": [
            {"name": c.m.name, **{k: r["summary"].get(k) for k in
                                  ("ok", "forwarding_max_pct", "vswitchd_rx_drops")}}
            for c, r in zip(self.emu.channels, self.results)]}

    def write_csv(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        for c, r in zip(self.emu.channels, self.results):
            (path.parent / f"{path.stem}-{c.m.name}{path.suffix}").write_text(r["csv"])
        path.write_text(self.results[self._worst()]["csv"])

"""One machine's part of a split run: `python -m experiments.part serve` and
`python -m experiments.part agent PART_RUN HOST`, started over ssh by the coordinator
(experiments/split_run.py) in the checkout at the coordinator's path.

`serve` reads one JSON request per line on stdin and answers one JSON line on stdout::

    {"op": "probe", "ip": A}            -> {"dev", "mtu"}: the underlay device holding A
    {"op": "clock"}                     -> {"monotonic_s"}: this machine's time.monotonic()
    {"op": "build", "run_id", "config", "machine", "ips", "underlay_mtu", "dev"}
                                        -> {"datapath", "hosts", ...}: the part, built
    {"op": "bundles", "texts": {switch: text}, "label"} -> one `ovs-ofctl bundle` per switch,
                                           then the datapath's flows purged
    {"op": "dump", "switch"}            -> {"text"}: `ovs-ofctl dump-flows`
    {"op": "settle"}                    -> revalidator/wait
    {"op": "set_link", "u", "v", "up"}  -> this machine's end(s) of link u-v
    {"op": "monitor_start"} / {"op": "monitor_stop"} -> {"summary", "csv"}: the CPU monitor
                                           (testbed/monitor.py) of this machine and its
                                           part's ovs-vswitchd, over the traffic
    {"op": "ping"}                      -> {}: the coordinator is alive
    {"op": "teardown"}                  -> {"left"}: everything removed; the server exits

Every answer has "ok" (false: "error", one line). The part is built by testbed/net.py's
EmulatedFabric (its own ovs-vswitchd in a namespace of its own, its hosts, its tunnels), which
writes a run record on this machine before it creates anything, so `mlfabric clean` here
finishes the job after a crash. The server tears the part down on every way out: the request,
end of stdin (the coordinator died, or ssh dropped), SIGTERM / SIGHUP, or no request for
HEARTBEAT_TIMEOUT_S (the coordinator pings every PING_INTERVAL_S; an underlay that went dead
leaves the channel open without a word).

`agent` runs one traffic agent in a host of the live part: it reads the agent's plan as the
first line of its stdin, writes it into the part's run directory, appends its own PID to the
part's agents file (the server adds it to the run record at its next request), and execs
`mnexec -a <host shell PID> python -m traffic.agent PLAN`; stdin and stdout, from then on the
agent's, are the coordinator's ssh channel (traffic/driver.py's pipe protocol, unchanged).
"""
from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from testbed.installer import OFCTL, run_parallel
from testbed.instances import OvsInstance
from testbed.ovs import TestbedError, run
from testbed.registry import STATE_DIR, identity

#: The coordinator pings each part this often (s); a part that hears nothing for
#: HEARTBEAT_TIMEOUT_S while idle tears itself down.
PING_INTERVAL_S = 2.0
HEARTBEAT_TIMEOUT_S = 20.0
HOSTS_FILE = "hosts.json"
AGENTS_FILE = "agents.pids"
#: A part's run id (SplitEmulation.part_run: coordinator PID, start time, machine index) and
#: a host name, checked before either is joined into a path.
PART_RUN = re.compile(r"[0-9]{1,10}-[0-9]{1,12}m[0-9]{1,4}")
HOST_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}")
#: A bundle file's label (its name's prefix).
LABEL = re.compile(r"[A-Za-z0-9_-]{1,32}")
#: The longest plan line an agent reads (bytes): a job's DAG for one host.
MAX_PLAN_BYTES = 1 << 28


class Part:
    """The live part of this machine and what the server knows of it."""

    def __init__(self) -> None:
        self.emu = None
        self.lock = threading.RLock()    # requests and teardown, one at a time
        self.last_s = time.monotonic()
        self.busy = False
        self.adopted = 0
        self.monitor = None       # testbed/monitor.py's CpuMonitor of this part, while asked

    # -- requests ------------------------------------------------------------------------
    def handle(self, req: dict) -> dict:
        if not isinstance(req, dict):
            raise TestbedError("a request is a JSON object with an op")
        op = req.get("op")
        if op == "ping":
            return {}
        if op == "clock":
            return {"monotonic_s": time.monotonic()}
        if op == "probe":
            return probe(req["ip"])
        if op == "build":
            return self.build(req)
        if self.emu is None:
            raise TestbedError(f"{op}: nothing is built on this machine")
        inst = self.emu.instances[0]
        if op == "bundles":
            texts, label = req.get("texts"), req.get("label", "b")
            if not isinstance(texts, dict) or not isinstance(label, str) \
                    or not LABEL.fullmatch(label):
                raise TestbedError("bundles: expected texts (switch -> rules) and a label")
            for sw in texts:
                self._switch(sw)
            d = inst.rundir / "bundles"
            d.mkdir(exist_ok=True)
            cmds = []
            for sw, text in sorted(texts.items()):
                path = d / f"{req.get('label', 'b')}-{sw}.bundle"
                path.write_text(text)
                cmds.append([*OFCTL, "bundle", inst.mgmt(sw), str(path)])
            run_parallel(cmds)
            run([*inst.appctl(), "revalidator/purge"])
            return {}
        if op == "dump":
            sw = self._switch(req.get("switch"))
            return {"text": run([*OFCTL, "dump-flows", inst.mgmt(sw)]).stdout}
        if op == "settle":
            run([*inst.appctl(), "revalidator/wait"])
            return {}
        if op == "set_link":
            self.emu.set_link(req["u"], req["v"], bool(req["up"]))
            return {}
        if op == "monitor_start":
            self.monitor = self.emu.cpu_monitor()
            self.monitor.__enter__()
            return {}
        if op == "monitor_stop":
            mon, self.monitor = self.monitor, None
            if mon is None:
                raise TestbedError("monitor_stop: no monitor runs")
            mon.__exit__(None, None, None)
            path = inst.rundir / "cpu_samples.csv"
            mon.write_csv(path)
            return {"summary": json.loads(json.dumps(mon.summary(), default=str)),
                    "csv": path.read_text()}
        raise TestbedError(f"unknown request {op!r}")

    def _switch(self, name) -> str:
        """`name` if it is a switch of this part, else TestbedError (before any path)."""
        if not isinstance(name, str) or name not in self.emu.switches:
            raise TestbedError(f"no switch {str(name)[:40]!r} in this machine's part")
        return name

    def build(self, req: dict) -> dict:
        from testbed.net import EmulatedFabric
        from testbed.net import Part as NetPart
        from testbed.split import split_fabric

        from .config import parse
        if self.emu is not None:
            raise TestbedError("build: this machine's part is built already")
        if not isinstance(req.get("run_id"), str) or not PART_RUN.fullmatch(req["run_id"]):
            raise TestbedError("build: run_id is not a part's run id (PID-TIMEmINDEX)")
        exp = parse(req["config"])
        split = split_fabric(exp.fabric, len(req["ips"]), list(req["ips"]),
                             int(req["underlay_mtu"]))
        emu = EmulatedFabric(exp.fabric, req["run_id"], exp.emulation.settings(),
                             NetPart(split, int(req["machine"]), req["dev"]))
        self.emu = emu          # torn down on every way out, even if __enter__ fails half way
        emu.__enter__()
        hosts = {h: emu.host(h).pid for h in emu.hosts}
        (emu.instances[0].rundir / HOSTS_FILE).write_text(json.dumps(hosts))
        return {"datapath": emu.datapath, "port_type": emu.port_type,
                "send_buffer_bytes": emu.send_buffer_bytes, "malloc_tuned": emu.malloc_tuned,
                "calibration_datapath": emu.calibration_datapath, "hosts": sorted(hosts),
                "switches": emu.switches, "vswitchd_pid": emu.vswitchd_pids.get(1)}

    def adopt_agents(self) -> None:
        """Agents started since the last request (their PIDs in the agents file) go into
        the run record, so that teardown and `mlfabric clean` end them."""
        if self.emu is None:
            return
        path = self.emu.instances[0].rundir / AGENTS_FILE
        if not path.exists():
            return
        lines = path.read_text().splitlines()
        for line in lines[self.adopted:]:
            words = line.split()
            if len(words) == 2 and words[0].isdigit():
                self.emu.record.pids.append({"pid": int(words[0]), "started": float(words[1]),
                                             "cmdline": ["traffic.agent"],
                                             "stop_signal": "SIGTERM"})
        if len(lines) > self.adopted:
            self.emu.record.save()
        self.adopted = len(lines)

    def teardown(self) -> list:
        """Remove the part (testbed/net.py's teardown: every process by PID, the namespace,
        the run directory, the record); what could not be removed. Under the lock: a second
        caller (the watchdog, a signal, end of input) waits for the first to finish."""
        with self.lock:
            if self.emu is None:
                return []
            try:
                self.adopt_agents()
            except (OSError, ValueError):
                pass
            emu, self.emu = self.emu, None
            if self.monitor is not None:
                self.monitor.__exit__(None, None, None)
                self.monitor = None
            emu.__exit__(None, None, None)
            return [str(emu.record.path)] if emu.record.path.exists() else []


def probe(ip: str) -> dict:
    """The device that holds address `ip` here (the underlay) and its MTU."""
    out = run(["ip", "-j", "addr", "show"]).stdout
    for dev in json.loads(out):
        if any(a.get("local") == ip for a in dev.get("addr_info", [])):
            return {"dev": dev["ifname"], "mtu": int(dev["mtu"])}
    raise TestbedError(f"no device holds {ip} on this machine; machines.address must be its "
                       "underlay address")


def _write(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _watchdog(part: Part, stop: threading.Event) -> None:
    """Tear the part down when the coordinator has been silent too long, then exit."""
    while not stop.wait(1.0):
        if not part.busy and time.monotonic() - part.last_s > HEARTBEAT_TIMEOUT_S:
            print(f"part: no word from the coordinator in {HEARTBEAT_TIMEOUT_S:g} s; "
                  "tearing down", file=sys.stderr)
            try:
                part.teardown()
            finally:
                os._exit(3)


def serve() -> int:
    """The request loop (module docstring); the part is torn down on every way out."""
    from testbed.signals import Terminated, raise_terminated
    signal.signal(signal.SIGTERM, raise_terminated)
    signal.signal(signal.SIGHUP, raise_terminated)
    part, stop = Part(), threading.Event()
    threading.Thread(target=_watchdog, args=(part, stop), daemon=True).start()
    try:
        for line in sys.stdin:
            part.last_s, part.busy = time.monotonic(), True
            try:
                req = json.loads(line)
                if req.get("op") == "teardown":
                    _write({"ok": True, "left": part.teardown()})
                    return 0
                with part.lock:
                    part.adopt_agents()
                    out = part.handle(req)
                _write({"ok": True, **out})
            except Exception as e:     # noqa: BLE001 - every failure is answered, one line
                _write({"ok": False, "error": " ".join(str(e).split())[:500]})
            finally:
                part.last_s, part.busy = time.monotonic(), False
        return 0
    except (KeyboardInterrupt, Terminated):
        return 1
    finally:
        stop.set()
        part.teardown()


class AgentInputError(ValueError):
    """`agent`'s arguments or plan line are not what the coordinator sends."""


def _agent_target(part_run: str, host: str) -> tuple[Path, int]:
    """The part's run directory and the PID of `host`'s namespace, from the part's record;
    AgentInputError for names the record does not hold."""
    if not PART_RUN.fullmatch(part_run):
        raise AgentInputError(f"{part_run!r} is not a part's run id (PID-TIMEmINDEX)")
    if not HOST_NAME.fullmatch(host):
        raise AgentInputError(f"{host!r} is not a host name")
    rundir = OvsInstance(part_run, 1, STATE_DIR).rundir      # the part's one process
    try:
        hosts = json.loads((rundir / HOSTS_FILE).read_text())
    except (OSError, ValueError):
        raise AgentInputError(f"no part {part_run} runs on this machine") from None
    if not isinstance(hosts, dict) or not isinstance(hosts.get(host), int):
        raise AgentInputError(f"part {part_run} has no host {host}")
    return rundir, hosts[host]


def _plan_line(read: Callable[[], bytes] = lambda: os.read(0, 1)) -> dict:
    """The plan: stdin's first line, read byte by byte (the rest is the agent's)."""
    line = b""
    while not line.endswith(b"\n"):
        ch = read()
        if not ch:
            raise AgentInputError("no plan on stdin")
        line += ch
        if len(line) > MAX_PLAN_BYTES:
            raise AgentInputError(f"a plan line over {MAX_PLAN_BYTES} bytes")
    try:
        plan = json.loads(line)
    except ValueError:
        raise AgentInputError("the plan line is not JSON") from None
    index = plan.get("job_index") if isinstance(plan, dict) else None
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < 10**6:
        raise AgentInputError("the plan has no job_index")
    return plan


def agent(part_run: str, host: str) -> int:
    """Check the names against the part's record, read the plan, record this PID, become
    the agent in `host`'s namespace. Bad input: one line on stderr, exit 2, nothing
    written."""
    try:
        rundir, pid = _agent_target(part_run, host)
        plan = _plan_line()
    except AgentInputError as e:
        print(f"agent {host[:40]!r}: {e}", file=sys.stderr)
        return 2
    path = rundir / f"plan-{plan['job_index']}-{host}.json"
    path.write_text(json.dumps(plan))
    me = identity(os.getpid())
    with open(rundir / AGENTS_FILE, "a") as f:
        f.write(f"{os.getpid()} {me['started']}\n")
    root = Path(__file__).resolve().parents[1]
    os.environ.update(PYTHONPATH=str(root), PYTHONUNBUFFERED="1")
    os.chdir(root)
    os.execvp("mnexec", ["mnexec", "-a", str(pid), sys.executable, "-m", "traffic.agent",
                         str(path)])
    return 1    # not reached


def main(argv: list[str]) -> int:
    if argv[1:2] == ["serve"]:
        return serve()
    if argv[1:2] == ["agent"] and len(argv) == 4:
        return agent(argv[2], argv[3])
    print("usage: python -m experiments.part serve | agent PART_RUN HOST", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

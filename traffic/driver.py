"""Runner side of the traffic step: start one agent per (job, host), drive iterations, time them.

Step 5 of a run (config -> fabric -> routes -> rules -> **traffic** -> measure -> teardown).
Jobs start at `start_s` after every agent is connected; an iteration of a job is started on all
its agents at once and ends when every agent has verified every byte it expects (the slowest
ring); then the job computes for `compute_s` and starts the next one. Iteration CCT = last byte
received by any rank - first rank's start. Every wait has a deadline.
"""
from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from testbed.fabric import Fabric

from .collectives import JobPlan

REPO_ROOT = Path(__file__).resolve().parent.parent


class TrafficError(RuntimeError):
    """An agent failed, or a collective did not finish within its deadline."""


@dataclass
class IterationRecord:
    iteration: int
    start_s: float          # time.monotonic() of the first rank's start
    end_s: float            # last byte verified by any rank
    bytes_received: int
    #: [tid, first_byte_s, last_byte_s, bytes] (bytes: what the part carried; adaptive parts
    #: carry a share of their transfer that only the run decides)
    transfers: list[list] = field(default_factory=list)
    retrans_segments: int = 0   # TCP retransmissions of the job's connections since they opened
    #: per conn_id, since it opened: retrans_segments, reordering_seen (sender),
    #: out_of_order_packets (receiver); None where the kernel does not count one
    tcp: dict[int, dict] = field(default_factory=dict)

    @property
    def cct_s(self) -> float:
        return self.end_s - self.start_s


@dataclass
class JobRecord:
    name: str
    iterations: list[IterationRecord] = field(default_factory=list)
    verified: bool = False


class FlowWatch(Protocol):
    """A controller that follows the transfers in flight (recompute="flows"): told when an
    iteration starts and when each transfer arrives, then ticked once per batch of agent
    events and when it asks (times: seconds since the jobs' clock started)."""

    def iteration_started(self, job: str, t: float) -> None: ...

    def transfer_received(self, job: str, tid: int, t: float) -> None: ...

    def due_s(self) -> float | None:
        """When the watch wants a tick (a re-plan held back), or None."""
        ...

    def tick(self, t: float) -> None:
        """Act on what changed since the last tick (e.g. re-plan the flows in flight)."""
        ...


def agent_plans(fabric: Fabric, plan: JobPlan, seed: int, tcp_cc: str,
                timeout_s: float, window_clamp_bytes: int = 0,
                report_transfers: bool = False) -> dict[str, dict]:
    """The JSON plan of every rank of one job, keyed by host."""
    conns = {c.conn_id: c for c in plan.connections}
    pools = _pool_keys(plan)
    out: dict[str, dict] = {}
    for h in dict.fromkeys(plan.spec.hosts):
        out[h] = {
            "host": h, "job_index": plan.index, "ip": fabric.ip_of(h),
            "listen_port": plan.listen_port, "seed": seed, "timeout_s": timeout_s,
            "tcp_cc": tcp_cc, "window_clamp_bytes": window_clamp_bytes,
            "report_transfers": report_transfers,
            "outgoing": [{"conn_id": c.conn_id, "dst_ip": fabric.ip_of(c.dst),
                          "dst_port": c.dst_port, "src_port": c.src_port}
                         for c in plan.connections if c.sender == h],
            "incoming": [{"conn_id": c.conn_id, "src_ip": fabric.ip_of(c.sender),
                          "src_port": c.src_port}
                         for c in plan.connections if c.dst == h],
            "sends": [{"tid": t.tid, "conn_id": t.conn_id, "size_bytes": t.size_bytes,
                       "deps": list(t.deps), **pools.get(t.tid, {})}
                      for t in plan.transfers if conns[t.conn_id].sender == h],
            "recvs": [{"tid": t.tid, "conn_id": t.conn_id, "size_bytes": t.size_bytes,
                       **pools.get(t.tid, {})}
                      for t in plan.transfers if conns[t.conn_id].dst == h],
        }
    return out


def _tcp_counters(events: list[dict]) -> dict[int, dict]:
    """The ranks' per-connection TCP counters (the sender's and the receiver's halves)."""
    out: dict[int, dict] = {}
    for e in events:
        for cid, counters in e.get("tcp", {}).items():
            out.setdefault(int(cid), {}).update(counters)
    return out


def _pool_keys(plan: JobPlan) -> dict[int, dict]:
    """Per part of an adaptive split (traffic/collectives.py `pool`): its pool, the pool's
    bytes and parts, and the piece size its subflows take."""
    size: dict[int, int] = {}
    parts: dict[int, int] = {}
    for t in plan.transfers:
        if t.pool >= 0:
            size[t.pool] = size.get(t.pool, 0) + t.size_bytes
            parts[t.pool] = parts.get(t.pool, 0) + 1
    return {t.tid: {"pool": t.pool, "pool_bytes": size[t.pool], "pool_parts": parts[t.pool],
                    "piece_bytes": plan.spec.split_piece_bytes}
            for t in plan.transfers if t.pool >= 0}


class _AgentProc:
    def __init__(self, job: str, host: str, proc: subprocess.Popen):
        self.job, self.host, self.proc = job, host, proc
        self.buffer = b""
        #: its machine's monotonic clock minus the runner's (a split run's agents on other
        #: machines: experiments/split_run.py); its events' times are moved onto the runner's
        self.clock_offset_s: float = getattr(proc, "clock_offset_s", 0.0)

    def on_runner_clock(self, event: dict) -> dict:
        """A "done" event's times on the runner's clock (unchanged on one machine)."""
        off = self.clock_offset_s
        if off and event.get("event") == "done":
            event["start_s"] -= off
            event["recv"] = [[t[0], t[1] - off, t[2] - off, *t[3:]] for t in event["recv"]]
        return event

    def send(self, cmd: dict) -> None:
        try:
            self.proc.stdin.write((json.dumps(cmd) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise TrafficError(f"agent {self.job}/{self.host} is gone ({e})") from e


class TrafficDriver:
    """Starts agents in the emulated hosts and runs every job to completion."""

    def __init__(self, emu, plans: list[JobPlan], seed: int, tcp_cc: str,
                 iteration_timeout_s: float, log_dir: Path, watch: FlowWatch | None = None):
        """`watch`: told of every transfer as it arrives (the agents report each)."""
        self.emu, self.plans, self.seed, self.tcp_cc = emu, plans, seed, tcp_cc
        self.timeout_s = iteration_timeout_s
        self.log_dir = log_dir
        self.watch = watch
        self.agents: list[_AgentProc] = []
        self.t0 = 0.0   # time.monotonic() when the jobs' clock started (run_jobs)
        self.sel = selectors.DefaultSelector()

    # -- process control -------------------------------------------------------------------
    def start_agents(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), PYTHONUNBUFFERED="1")
        for plan in self.plans:
            for host, aplan in agent_plans(self.emu.fabric, plan, self.seed, self.tcp_cc,
                                           self.timeout_s,
                                           self.emu.settings.subflow_window_clamp_bytes(
                                               plan.spec.subflows),
                                           report_transfers=getattr(
                                               self.watch, "wants_transfers",
                                               self.watch is not None)).items():
                # absolute: the agent runs in the repository's folder, not the caller's
                path = (self.log_dir / f"plan-{plan.name}-{host}.json").resolve()
                path.write_text(json.dumps(aplan))
                err = open(self.log_dir / f"agent-{plan.name}-{host}.log", "wb")
                cmd = [sys.executable, "-m", "traffic.agent", str(path)]
                proc = self.emu.popen(host, cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=err, env=env, cwd=str(REPO_ROOT))
                err.close()
                agent = _AgentProc(plan.name, host, proc)
                os.set_blocking(proc.stdout.fileno(), False)
                self.sel.register(proc.stdout, selectors.EVENT_READ, agent)
                self.agents.append(agent)

    def stop_agents(self) -> None:
        for a in self.agents:
            if a.proc.poll() is None:
                try:
                    a.send({"cmd": "exit"})
                except TrafficError:
                    pass
        deadline = time.monotonic() + 5.0
        for a in self.agents:
            try:
                a.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                a.proc.kill()
                try:
                    a.proc.wait(timeout=5.0)
                except subprocess.TimeoutExpired:  # the fabric's teardown ends it by PID
                    pass
        for a in self.agents:
            try:
                self.sel.unregister(a.proc.stdout)
            except (KeyError, ValueError):
                pass
            for f in (a.proc.stdin, a.proc.stdout):
                try:
                    f.close()
                except OSError:
                    pass
        self.agents = []

    def _events(self, timeout_s: float):
        """Yield (agent, event) pairs that arrive within timeout_s."""
        for key, _ in self.sel.select(timeout=max(0.0, timeout_s)):
            agent: _AgentProc = key.data
            chunk = os.read(key.fileobj.fileno(), 65536)
            if not chunk:
                self.sel.unregister(key.fileobj)
                try:
                    code = agent.proc.wait(timeout=5.0)
                except subprocess.TimeoutExpired:
                    code = "closed its output but still runs"
                raise TrafficError(f"agent {agent.job}/{agent.host} exited ({code}); "
                                   f"see {self.log_dir}/agent-{agent.job}-{agent.host}.log")
            agent.buffer += chunk
            while b"\n" in agent.buffer:
                line, agent.buffer = agent.buffer.split(b"\n", 1)
                try:
                    event = json.loads(line)
                except ValueError:
                    raise TrafficError(f"agent {agent.job}/{agent.host} wrote a line that is "
                                       f"not an event: {line[:200]!r}") from None
                if event.get("event") == "error":
                    raise TrafficError(f"agent {agent.job}/{agent.host}: {event['message']}")
                yield agent, agent.on_runner_clock(event)

    def _barrier(self, name: str, agents: list[_AgentProc], timeout_s: float) -> None:
        waiting = {id(a) for a in agents}
        deadline = time.monotonic() + timeout_s
        while waiting:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TrafficError(f"{len(waiting)} agents not {name} within {timeout_s:g} s")
            for agent, event in self._events(left):
                if event.get("event") == name:
                    waiting.discard(id(agent))

    # -- the run ---------------------------------------------------------------------------
    def connect(self, timeout_s: float = 30.0) -> None:
        self._barrier("listening", self.agents, timeout_s)
        for a in self.agents:
            a.send({"cmd": "connect"})
        self._barrier("connected", self.agents, timeout_s)

    def run_jobs(self, on_start: Callable[[list[str], float], None] | None = None,
                 on_finish: Callable[[str, float], None] | None = None,
                 timers: list[tuple[float, Callable[[float], None]]] = (),
                 on_iteration: Callable[[str, IterationRecord], None] | None = None
                 ) -> dict[str, JobRecord]:
        """Run every job's iterations; returns per-job records (times in time.monotonic()).

        Hooks for a controller, all called with seconds since the jobs' clock started
        (`self.t0`): on_start(jobs, t) just before jobs send their first byte (jobs that
        start together come in one call), on_finish(job, t) after a job's last iteration,
        and each timer (at_s, fn) once at at_s; on_iteration(job, record) after each verified
        iteration (progress lines); the driver's `watch`, of iterations and transfers. They
        run synchronously: traffic waits."""
        run = _JobsRun(self, on_start, on_finish, timers, on_iteration)
        while run.next_go or run.running:
            run.start_due()
            now = time.monotonic()
            for job, st in run.running.items():
                if now > st["deadline"]:
                    raise TrafficError(f"job {job} iteration {st['iteration']} did not finish "
                                       f"within {self.timeout_s:g} s")
            for agent, event in self._events(min(run.wake() - now, 1.0)):
                kind = event.get("event")
                if kind == "received" and self.watch is not None:
                    self.watch.transfer_received(agent.job, int(event["tid"]),
                                                 time.monotonic() - self.t0)
                elif kind == "done":
                    run.agent_done(agent, event)
            if self.watch is not None:
                self.watch.tick(time.monotonic() - self.t0)
        if run.waits.left:
            raise TrafficError(f"{run.waits.left} jobs never started: they wait for jobs that "
                               "did not end")
        return run.records


class _Waits:
    """Streams (JobSpec.after): which jobs become due when a job ends, and when."""

    def __init__(self, plans: list[JobPlan], t0: float):
        self.waiting = {p.name: len(p.spec.after) for p in plans if p.spec.after}
        self.at = {p.name: t0 + p.spec.start_s for p in plans}
        self.then: dict[str, list[tuple[str, float]]] = {}
        for p in plans:
            for name, gap in p.spec.after:
                self.then.setdefault(name, []).append((p.name, gap))

    @property
    def left(self) -> int:
        return len(self.waiting)

    def ended(self, job: str, end_s: float) -> dict[str, float]:
        """Job ended at end_s (time.monotonic()): the jobs now due, and when."""
        due = {}
        for name, gap in self.then.get(job, ()):
            self.at[name] = max(self.at[name], end_s + gap)
            self.waiting[name] -= 1
            if not self.waiting[name]:
                del self.waiting[name]
                due[name] = self.at[name]
        return due


class _JobsRun:
    """The state of TrafficDriver.run_jobs: which job runs which iteration, and what is due."""

    def __init__(self, driver: TrafficDriver, on_start, on_finish, timers, on_iteration):
        self.d = driver
        self.on_start, self.on_finish, self.on_iteration = on_start, on_finish, on_iteration
        plans = driver.plans
        self.by_job = {p.name: [a for a in driver.agents if a.job == p.name] for p in plans}
        self.timers = sorted(timers, key=lambda t: t[0])
        self.specs = {p.name: p.spec for p in plans}
        self.expected_bytes = {p.name: p.bytes_per_iteration() for p in plans}
        self.records = {p.name: JobRecord(p.name) for p in plans}
        self.t0 = driver.t0 = time.monotonic()
        # job -> when to start; jobs that wait for others (JobSpec.after) join when those end
        self.next_go = {p.name: self.t0 + p.spec.start_s for p in plans if not p.spec.after}
        self.waits = _Waits(plans, self.t0)
        self.running: dict[str, dict] = {}   # job -> {"iteration", "deadline", "done"}

    def start_due(self) -> None:
        """Fire the timers due, then start the iterations due (first ones after on_start;
        the watch, if any, is ticked after them by run_jobs)."""
        t0, watch = self.t0, self.d.watch
        now = time.monotonic()
        while self.timers and t0 + self.timers[0][0] <= now:
            _, fn = self.timers.pop(0)
            fn(now - t0)
            now = time.monotonic()
        due = [j for j, at in self.next_go.items() if at <= now]
        first = [j for j in due if not self.records[j].iterations]
        if first and self.on_start:
            self.on_start(first, now - t0)   # rules first; only the jobs it saw start now
            now = time.monotonic()
        for job in due:
            it = len(self.records[job].iterations)
            if watch is not None:
                watch.iteration_started(job, now - t0)
            for a in self.by_job[job]:
                a.send({"cmd": "iterate", "iteration": it})
            self.running[job] = {"iteration": it, "deadline": now + self.d.timeout_s,
                                 "done": {}}
            del self.next_go[job]

    def wake(self) -> float:
        """The next time (time.monotonic()) something is due."""
        due = self.d.watch.due_s() if self.d.watch is not None else None
        return min([*self.next_go.values(), *(s["deadline"] for s in self.running.values()),
                    *(self.t0 + at for at, _ in self.timers[:1]),
                    *([] if due is None else [self.t0 + due])], default=time.monotonic())

    def agent_done(self, agent: _AgentProc, event: dict) -> None:
        """One rank finished its iteration; when all have, record and verify it."""
        st = self.running.get(agent.job)
        if st is None or event["iteration"] != st["iteration"]:
            raise TrafficError(f"agent {agent.job}/{agent.host}: unexpected {event}")
        st["done"][agent.host] = event
        if len(st["done"]) < len(self.by_job[agent.job]):
            return
        evs = list(st["done"].values())
        transfers = sorted(t for e in evs for t in e["recv"])
        rec = IterationRecord(
            iteration=st["iteration"], start_s=min(e["start_s"] for e in evs),
            end_s=max(t[2] for t in transfers),
            bytes_received=sum(e["bytes_received"] for e in evs), transfers=transfers,
            retrans_segments=sum(e.get("retrans_segments", 0) for e in evs),
            tcp=_tcp_counters(evs))
        expected = self.expected_bytes[agent.job]
        if rec.bytes_received != expected or not all(e["verified"] for e in evs):
            raise TrafficError(f"job {agent.job} iteration {rec.iteration}: received "
                               f"{rec.bytes_received} B, expected {expected} B")
        job_rec = self.records[agent.job]
        job_rec.iterations.append(rec)
        del self.running[agent.job]
        if self.on_iteration:
            self.on_iteration(agent.job, rec)
        spec = self.specs[agent.job]
        if len(job_rec.iterations) < spec.iterations:
            self.next_go[agent.job] = time.monotonic() + spec.compute_s
        else:
            job_rec.verified = True  # every iteration's bytes checked above
            self.next_go.update(self.waits.ended(agent.job, rec.end_s))
            if self.on_finish:
                self.on_finish(agent.job, time.monotonic() - self.t0)

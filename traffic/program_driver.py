"""Runner side of program jobs: start every rank in its host, read its step records, end it.

Step 5 of a run for configs of program jobs (traffic/programs.py). Each rank runs in its
Mininet host as the child of testbed/rankns.py, the init of the rank's own PID, UTS and
mount namespaces (its own hostname, which resolves to its fabric address), with the
rendezvous variables and the job's `env` (`<job>-rank<r>.env.json`), in its own session. The
run records its PID and ends its process group on every exit path; whatever the rank forked
lives in its PID namespace and ends with it, whatever session or group it moved to. Its
standard output goes to `<job>-rank<r>.out` (step records read as they arrive), its standard
error to `<job>-rank<r>.err`. A rank is done when it exits (its children may still hold its
output for a moment: they are being ended). A job starts at its start_s, has finished when
every rank has exited 0, and fails (ProgramError, one line) when a rank exits otherwise or
outlives timeout_s; the runner's teardown then ends the other ranks.
"""
from __future__ import annotations

import json
import os
import selectors
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from testbed.fabric import Fabric
from testbed.rankns import namespace_command

from .driver import TrafficError
from .programs import ProgramSpec, StepLog, job_steps, rank_env, rank_path

PROGRAMS_DIR = Path(__file__).resolve().parent.parent / "experiments" / "programs"


#: A line of a rank's output longer than this cannot be a step record: it is copied to the
#: rank's .out file but not kept whole in memory (bytes).
MAX_STEP_LINE_BYTES = 65536
#: Bytes read from a rank's output at a time.
READ_BYTES = 65536
#: How long a rank whose output ended is given to exit before it is followed by its PID (s).
EXIT_WAIT_S = 0.5


class ProgramError(TrafficError):
    """A rank exited non-zero, or ran past its job's timeout_s."""


class LineReader:
    """Splits a byte stream into lines in time linear in its length; a line longer than
    `limit` bytes is dropped (reported as None once, at its end)."""

    def __init__(self, limit: int = MAX_STEP_LINE_BYTES):
        self.limit, self.part, self.overlong = limit, bytearray(), False

    def feed(self, chunk: bytes) -> list[bytes | None]:
        """The lines `chunk` completes (None for an overlong one), without their newline."""
        lines: list[bytes | None] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            lines.append(None if self.overlong else bytes(self.part + chunk[start:end]))
            self.part.clear()
            self.overlong = False
            start = end + 1
        if not self.overlong:
            self.part += chunk[start:]
            if len(self.part) > self.limit:
                self.part.clear()
                self.overlong = True
        return lines

    def end(self) -> bytes | None:
        """At the end of the stream: the last line if it had no newline (None if overlong
        or empty)."""
        last = None if self.overlong or not self.part else bytes(self.part)
        self.part.clear()
        self.overlong = False
        return last


@dataclass
class _Rank:
    job: str
    rank: int
    host: str
    proc: subprocess.Popen
    out: object                       # the .out file the rank's stdout is copied to
    err_path: Path
    log: StepLog = field(default_factory=StepLog)
    lines: LineReader = field(default_factory=LineReader)
    exit_code: int | None = None
    closed: bool = False


@dataclass
class ProgramRecord:
    """One program job's run: its steps (slowest rank each), wall time, ranks' exit codes."""
    name: str
    started_s: float = 0.0            # seconds since the jobs' clock started
    ended_s: float | None = None
    exit_codes: list[int | None] = field(default_factory=list)
    steps: list[dict] = field(default_factory=list)
    bad_step_lines: int = 0

    @property
    def wall_s(self) -> float | None:
        return None if self.ended_s is None else self.ended_s - self.started_s


def rank_command(spec: ProgramSpec, host: str, hosts_file: Path, env_file: Path
                 ) -> list[str]:
    """The argument list that starts rank `host` of `spec` in its own PID, UTS and mount
    namespaces, with the environment of `env_file` (testbed/rankns.py)."""
    return namespace_command(host, str(hosts_file.resolve()), str(env_file.resolve()),
                             list(spec.argv))


class ProgramDriver:
    """Starts the program jobs' ranks at their start_s and follows them to their end."""

    def __init__(self, emu, programs: list[ProgramSpec], log_dir: Path, hosts_file: Path):
        self.emu, self.programs, self.log_dir = emu, programs, log_dir
        self.hosts_file = hosts_file
        self.fabric: Fabric = emu.fabric
        self.ranks: dict[str, list[_Rank]] = {}
        self.records = {p.name: ProgramRecord(p.name) for p in programs}
        self.sel = selectors.DefaultSelector()
        self.t0 = 0.0

    def _env(self, spec: ProgramSpec, index: int, rank: int) -> dict[str, str]:
        ip_of = {h: self.fabric.ip_of(h) for h in spec.hosts}
        env = dict(os.environ, PATH=rank_path())
        env.update(rank_env(spec, index, rank, ip_of, f"{spec.hosts[rank]}-eth0"))
        env["PYTHONPATH"] = os.pathsep.join(
            [str(PROGRAMS_DIR)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH")
                                   else []))
        env.update(dict(spec.env))
        return env

    def start(self, spec: ProgramSpec, now_s: float) -> None:
        """Start every rank of `spec` (recorded by PID before anything else happens)."""
        index = self.programs.index(spec)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        ranks = []
        for r, host in enumerate(spec.hosts):
            base = self.log_dir / f"{spec.name}-rank{r}"
            env_file = base.with_suffix(".env.json")
            fd = os.open(env_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(self._env(spec, index, r), f)
            out = open(base.with_suffix(".out"), "wb")
            with open(base.with_suffix(".err"), "wb") as err:
                proc = self.emu.popen(host, rank_command(spec, host, self.hosts_file, env_file),
                                      group=True, stdout=subprocess.PIPE, stderr=err,
                                      cwd=spec.cwd)
            os.set_blocking(proc.stdout.fileno(), False)
            rank = _Rank(spec.name, r, host, proc, out, base.with_suffix(".err"))
            self.sel.register(proc.stdout, selectors.EVENT_READ, rank)
            ranks.append(rank)
        self.ranks[spec.name] = ranks
        self.records[spec.name].started_s = now_s

    def _read(self, rank: _Rank, chunk: bytes, now_s: float, on_step) -> None:
        """Copy a rank's output to its file; on_step(job, step, t) once every rank of the
        job has recorded that step."""
        rank.out.write(chunk)
        self._lines(rank, rank.lines.feed(chunk), now_s, on_step)

    def _lines(self, rank: _Rank, lines: list[bytes | None], now_s: float, on_step) -> None:
        for line in lines:
            if line is None:
                continue
            step = rank.log.feed(line.decode(errors="replace"), now_s, self.t0)
            if step is None or on_step is None:
                continue
            ranks = self.ranks[rank.job]
            if all(step in r.log.steps for r in ranks):
                on_step(rank.job, step, max(r.log.steps[step][1] for r in ranks))

    def _close(self, rank: _Rank) -> None:
        """Stop reading a rank whose output ended (EOF) or whose process exited."""
        if not rank.closed:
            rank.closed = True
            self.sel.unregister(rank.proc.stdout)
            rank.out.close()

    def _drain(self, rank: _Rank, now_s: float, on_step) -> None:
        """Read what an exited rank left in its pipe (a child it forked may hold the pipe
        open until its namespace is gone: stop at the first empty read)."""
        for _ in range(256):            # at most 16 MiB after the exit
            try:
                chunk = os.read(rank.proc.stdout.fileno(), READ_BYTES)
            except BlockingIOError:
                return
            if not chunk:
                return
            self._read(rank, chunk, now_s, on_step)

    def _exited(self, rank: _Rank) -> None:
        """The rank's process has exited: record its code; a non-zero code fails the job."""
        self._close(rank)
        rank.exit_code = rank.proc.returncode
        if rank.exit_code != 0:
            raise ProgramError(f"jobs.{rank.job}: rank {rank.rank} ({rank.host}) exited "
                               f"with {rank.exit_code}; see {rank.err_path}")

    def poll(self, timeout_s: float, on_step=None) -> list[str]:
        """Read what the ranks wrote within timeout_s; returns the jobs that finished now.
        A rank is done when its process has exited, whoever still holds its output."""
        for key, _ in self.sel.select(timeout=max(0.0, timeout_s)):
            rank: _Rank = key.data
            chunk = os.read(key.fileobj.fileno(), READ_BYTES)
            if chunk:
                self._read(rank, chunk, time.monotonic() - self.t0, on_step)
            else:
                # EOF: its last line needs no newline
                self._lines(rank, [rank.lines.end()], time.monotonic() - self.t0, on_step)
                try:                    # the rank is exiting, or closed its output
                    rank.proc.wait(timeout=EXIT_WAIT_S)
                except subprocess.TimeoutExpired:
                    pass                # runs on: its exit, seen below, ends it
                self._close(rank)
        done = []
        for name, ranks in self.ranks.items():
            if self.records[name].ended_s is not None:
                continue
            now_s = time.monotonic() - self.t0
            for rank in ranks:
                if rank.exit_code is None and rank.proc.poll() is not None:
                    if not rank.closed:
                        self._drain(rank, now_s, on_step)
                    self._exited(rank)
            if all(r.exit_code == 0 for r in ranks):
                self._finish(name, now_s)
                done.append(name)
        return done

    def _finish(self, name: str, now_s: float) -> None:
        rec = self.records[name]
        ranks = self.ranks[name]
        rec.ended_s = now_s
        rec.exit_codes = [r.exit_code for r in ranks]
        rec.steps = job_steps([r.log for r in ranks])
        rec.bad_step_lines = sum(r.log.bad for r in ranks)

    def check_deadlines(self, now_s: float) -> None:
        for spec in self.programs:
            rec = self.records[spec.name]
            if spec.name in self.ranks and rec.ended_s is None \
                    and now_s - rec.started_s > spec.timeout_s:
                late = next(r for r in self.ranks[spec.name] if r.exit_code is None)
                raise ProgramError(f"jobs.{spec.name}: rank {late.rank} ({late.host}) still "
                                   f"runs after timeout_s {spec.timeout_s:g} s; ended")

    def run(self, on_start: Callable[[list[str], float], None] | None = None,
            on_finish: Callable[[str, float], None] | None = None,
            on_step: Callable[[str, int, float], None] | None = None,
            tick: Callable[[float], float | None] | None = None) -> dict[str, ProgramRecord]:
        """Run every program job to its end. Hooks (times: seconds since the jobs' clock
        started): on_start(jobs, t) just before their ranks start, on_finish(job, t) when
        every rank exited 0, on_step(job, step, t) per step record, tick(t) after every
        batch of output (returns when it wants to be called again, or None)."""
        self.t0 = time.monotonic()
        waiting = sorted(self.programs, key=lambda p: p.start_s)
        running: set[str] = set()
        due = None
        while waiting or running:
            now_s = time.monotonic() - self.t0
            start = [p for p in waiting if p.start_s <= now_s]
            if start:
                if on_start:
                    on_start([p.name for p in start], now_s)
                for p in start:
                    self.start(p, time.monotonic() - self.t0)
                    running.add(p.name)
                    waiting.remove(p)
            self.check_deadlines(now_s)
            wake = [p.start_s for p in waiting[:1]] + ([due] if due is not None else [])
            wake += [self.records[n].started_s + s.timeout_s for s in self.programs
                     for n in [s.name] if n in running]
            for name in self.poll(min([1.0] + [w - now_s for w in wake]), on_step):
                running.discard(name)
                if on_finish:
                    on_finish(name, time.monotonic() - self.t0)
            if tick is not None:
                due = tick(time.monotonic() - self.t0)
        return self.records

    def stop(self) -> None:
        """End every rank still running (by the PIDs started, their process groups too) and
        close their files; the fabric's teardown would end them anyway."""
        from testbed.registry import end_processes, identity
        alive = [r for ranks in self.ranks.values() for r in ranks if r.proc.poll() is None]
        end_processes([{**(identity(r.proc.pid) or {"pid": r.proc.pid, "started": None}),
                        "group": True} for r in alive])
        for ranks in self.ranks.values():
            for r in ranks:
                for f in (r.proc.stdout, r.out):
                    try:
                        f.close()
                    except OSError:
                        pass

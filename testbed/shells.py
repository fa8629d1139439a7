"""Mininet node classes whose shells a Ctrl-C cannot kill halfway, and whose death is noticed.

Mininet talks to every node (host or switch) through an interactive bash on a pty. Its own
`startShell` starts it with `mnexec -cd`, which leaves the new process in the terminal's
process group until mnexec has closed every descriptor and called setsid: a Ctrl-C (SIGINT to
the whole foreground group) in that window killed the shell, and Mininet, which keeps the pty's
far end open itself, then waited for its prompt forever (outside pass: 5 of 17 group-SIGINTs
during a build hung; `[mnexec] <defunct>`, the main thread in `n_tty_read`). Here:

- the shell starts in a session of its own (`start_new_session`: setsid before exec), so a
  terminal's Ctrl-C reaches mlfabric, never the shells it is building;
- its PID is recorded (testbed/registry.py) before a signal can act, then signals act at once:
  the prompt is awaited outside any held section, for at most SHELL_START_S;
- the parent keeps no copy of the pty's far end: a shell that dies (any time, build or run)
  reads as end of file, and every `node.cmd` waiting on it raises instead of waiting forever.

Teardown never goes through the shells (`release`): the run's record ends them by PID.
"""
from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import time

from mininet.node import Host, OVSSwitch

from .ovs import TestbedError
from .signals import deferred

#: A shell that shows no prompt within this long is taken as failed (seen: ~10 ms each).
SHELL_START_S = 30.0
PROMPT = chr(127)


class ShellError(TestbedError):
    """A node's shell died or never answered."""


class _RecordedShell:
    """Mixin over a Mininet node: the shell as the module docstring says. The node's params
    carry `record` (testbed/registry.py RunRecord), where the shell's PID goes."""

    def startShell(self, mnopts=None) -> None:  # noqa: N802, ARG002 - Mininet's name
        cmd = (["mnexec", "-n"] if self.inNamespace else []) + [
            "env", f"PS1={PROMPT}", "bash", "--norc", "--noediting", "-is", f"mininet:{self.name}"]
        master, slave = pty.openpty()
        try:
            with deferred():        # started and recorded as one step
                self.shell = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave,
                                              start_new_session=True)
                try:
                    self.params["record"].add_pid(self.shell.pid, cmd, stop_signal="SIGHUP")
                except BaseException:   # not recorded: nothing else could end it
                    self.shell.kill()
                    self.shell.wait()
                    raise
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        self.master, self.slave = master, None
        self.stdin = self.stdout = os.fdopen(master, "r")
        self.pid = self.shell.pid
        self.pollOut = select.poll()
        self.pollOut.register(self.stdout)
        self.outToNode[self.stdout.fileno()] = self
        self.inToNode[self.stdin.fileno()] = self
        self.execed, self.lastCmd, self.lastPid, self.readbuf = False, None, None, ""
        try:
            self._await_prompt()
            self.waiting = False
            self.cmd("unset HISTFILE; stty -echo; set +m")
        except BaseException:
            self._end_shell()
            raise

    def read(self, size: int = 1024) -> str:
        """Mininet's buffered read, with the shell's end as ShellError (EIO or end of file on
        a pty whose only far end was the shell's)."""
        if len(self.readbuf) < size:
            try:
                data = os.read(self.stdout.fileno(), size - len(self.readbuf))
            except OSError:
                data = b""
            if not data:
                raise ShellError(f"{self.name}: its shell (pid {self.pid}) exited")
            self.readbuf += self.decoder.decode(data)
        out, self.readbuf = self.readbuf[:size], self.readbuf[size:]
        return out

    def _await_prompt(self) -> None:
        deadline = time.monotonic() + SHELL_START_S
        seen = ""
        while not seen.endswith(PROMPT):
            if time.monotonic() > deadline:
                raise ShellError(f"{self.name}: its shell showed no prompt in "
                                 f"{SHELL_START_S:g} s")
            if self.pollOut.poll(100):
                seen = (seen + self.read(1024))[-64:]

    def _end_shell(self) -> None:
        """End this node's own shell (by the PID it started) and close its pty."""
        if self.shell is not None and self.shell.poll() is None:
            self.shell.send_signal(signal.SIGHUP)
            try:
                self.shell.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.shell.kill()
                self.shell.wait(timeout=2)
        self._close()

    def _close(self) -> None:
        if self.stdout is not None:
            self.outToNode.pop(self.stdout.fileno(), None)
            self.inToNode.pop(self.stdout.fileno(), None)
            self.stdout.close()
            self.stdin = self.stdout = None

    def cleanup(self) -> None:
        """Mininet's cleanup (it closes the pty's far end, which this class never keeps)."""
        self._close()
        if self.shell is not None:
            try:
                self.shell.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        self.shell = None


class RecordedHost(_RecordedShell, Host):
    """A Mininet host whose shell starts as the module docstring says."""


class RecordedOVSSwitch(_RecordedShell, OVSSwitch):
    """Mininet's OVSSwitch, its shell started as the module docstring says."""


class InstanceOVSSwitch(RecordedOVSSwitch):
    """A RecordedOVSSwitch in one of the run's own ovs-vswitchd processes: every ovs-vsctl
    Mininet runs for it goes to that process's database (param `db`, testbed/instances.py)."""

    def vsctl(self, *args, **kwargs):
        return self.cmd("ovs-vsctl", f"--db={self.params['db']}", *args, **kwargs)


def release(net) -> None:
    """After the run's record has ended every shell by PID: close each node's pty and reap
    its shell (at most 2 s each, though they are gone by then). Nothing goes through a shell."""
    for node in list(net.hosts) + list(net.switches):
        try:
            node.cleanup()
        except OSError:
            pass

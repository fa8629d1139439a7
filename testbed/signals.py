"""Signals during setup and teardown: held while a step that must not be cut runs, then acted on.

A run is stopped by SIGINT (Ctrl-C, exit 130), SIGTERM (exit 143), SIGHUP (its terminal or
ssh session closed, 129) or SIGQUIT (Ctrl-\\, 131), turned into exceptions
(`KeyboardInterrupt`, `Terminated`) so that every `with`/`finally` tears down. Blocking the
signals with `pthread_sigmask` is not enough: it blocks them for the calling thread only, the
kernel delivers them to any other thread of the process, and Python then raises them in the main
thread anyway. `deferred()` instead swaps the Python-level handlers for ones that only record the
signal; when the block ends the old handlers come back and the first recorded signal is raised
again, so the process ends as it would have, after the block has finished.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

HELD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
#: Signals that end a command like SIGTERM (Terminated), with their words for the last line.
ENDING = {signal.SIGTERM: "terminated", signal.SIGHUP: "hung up", signal.SIGQUIT: "quit"}


class Terminated(BaseException):
    """SIGTERM, SIGHUP or SIGQUIT arrived (`signum`): unwind like Ctrl-C so that every
    `with`/`finally` tears down."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__(signum)
        self.signum = signum


#: Signals turned into exceptions and not yet caught at the top (experiments/__main__.py).
#: An exception raised by a handler that runs inside a finalizer (a weakref callback, a
#: __del__) is printed as "Exception ignored" and lost: a sweep then ran on and exited 0 after a
#: SIGTERM. The command checks this list when it ends and exits as the signal asked.
PENDING: list[int] = []


def raise_terminated(signum, frame) -> None:  # noqa: ARG001 - signal handler signature
    PENDING.append(signum)
    raise Terminated(signum)


def raise_interrupt(signum, frame) -> None:  # noqa: ARG001 - signal handler signature
    """SIGINT as Python's own handler turns it (KeyboardInterrupt), remembered in PENDING."""
    PENDING.append(signum)
    raise KeyboardInterrupt()


@contextmanager
def deferred() -> Iterator[list[int]]:
    """Hold SIGINT, SIGTERM, SIGHUP and SIGQUIT for the duration of the block (main thread only; elsewhere a
    no-op). Yields the list of signals received so far. If the block raises, its exception
    goes on and the held signals are dropped (the run is already unwinding)."""
    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    got: list[int] = []
    old = {s: signal.signal(s, lambda signum, frame: got.append(signum)) for s in HELD}
    try:
        yield got
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    if got:
        signal.raise_signal(got[0])   # as if it arrived now, under the usual handlers

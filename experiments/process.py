"""The command's process at its two ends: standard descriptors a caller closed, on the way in
(`open_std_fds`), and the exit once the work is done (`exit_now`)."""
from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn


def open_std_fds() -> None:
    """Standard descriptors closed by the caller become /dev/null: otherwise the next file
    opened takes their number and every child inherits it as its stdin or output (with fd 0
    closed, `ovs-vsctl` aborted and `run` said Open vSwitch was not running)."""
    for fd, mode in ((0, os.O_RDONLY), (1, os.O_WRONLY), (2, os.O_WRONLY)):
        try:
            os.fstat(fd)
        except OSError:
            got = os.open(os.devnull, mode)
            if got != fd:
                os.dup2(got, fd)
                os.close(got)
            os.set_inheritable(fd, True)   # os.open's are close-on-exec: children need it
    for name, fd in (("stdin", 0), ("stdout", 1), ("stderr", 2)):
        if getattr(sys, name) is None:   # Python leaves these None when the fd was closed
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))


def one_blas_thread() -> None:
    """OpenBLAS on one thread in this process (unless the caller chose): numpy's import
    otherwise starts a thread per core (~0.035 s of CPU on two cores), for linear algebra
    `predict` does not do (vector products at most). Before numpy is imported, or it is too
    late (OpenBLAS reads it when it loads)."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def exit_now(code: int) -> NoReturn:
    """End the process with `code` once the command is done: the exit handlers run and the
    standard streams are flushed, as at any exit, but the interpreter's teardown (freeing
    every module and object, numba's LLVM state among them) is skipped. With another thread
    still running (not a daemon), the usual exit, which waits for it."""
    if any(t.is_alive() and not t.daemon for t in threading.enumerate()
           if t is not threading.main_thread()):
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):    # a closed pipe: Python's own exit says 120
            code = code or 120
    os._exit(code)

"""The results folder (`--out`) of run, predict and calibrate.

`check_out` is called once the config is known and before anything is built or written: it
resolves --out to an absolute path and refuses, with one ConfigError line naming --out, an empty
value, a file, a folder on a kernel file system (/proc, /sys, /dev), a folder this user cannot
write (permissions, read-only or immutable), a full file system, and a folder that already holds
earlier mlfabric results (unless --force). With --force, `OutDir.clear` later removes only what
mlfabric writes there (the names in RESULT_FILES and RESULT_DIRS, each routing's folder, and
the rep-N folders of --repeat),
never anything else and never outside --out; symlinks are removed, never followed.

`writing(path)` names the file in an OSError that has none (a full disk while writing).
"""
from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from routing import STRATEGIES

from .config import ConfigError, quote, run_dir_name

#: Files mlfabric writes at the top of --out (runner.py, predict.py, calibrate.py).
RESULT_FILES = ("results.json", "config.yaml", "environment.json", "fabric.txt",
                "emulated_vs_predicted.png", "timeline.png", "calibration.json",
                "results.csv", "sweep.json", "efficiency.csv", "report.html")
#: Folders it writes there: each routing's (also `<strategy>-at-host`), and calibrate's.
RESULT_DIRS = tuple(sorted({run_dir_name(s) for s in STRATEGIES}
                           | {run_dir_name(f"{s}@host") for s in STRATEGIES if s != "ecmp"}
                           | {"rules", "logs-one", "logs-shared", "plots", "points"}))
#: `--repeat N` writes one run folder per repetition: rep-1 .. rep-N.
REPEAT_DIR = re.compile(r"rep-[0-9]{1,4}")
#: Refused as --out: kernel file systems, by path and by mount type.
KERNEL_PATHS = ("/proc", "/sys", "/dev")
KERNEL_FS_TYPES = {"proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "debugfs",
                   "tracefs", "securityfs", "pstore", "bpf", "configfs", "fusectl", "mqueue",
                   "hugetlbfs", "binfmt_misc", "efivarfs", "autofs", "rpc_pipefs", "nsfs"}
#: Refused when the file system of --out has less free space than this.
MIN_FREE_BYTES = 16 * 1024 * 1024


@dataclass
class OutDir:
    """A checked results folder; `stale` are mlfabric's earlier results that --force removes."""

    path: Path
    stale: list[str] = field(default_factory=list)

    def clear(self) -> None:
        """Remove `stale` (names directly inside `path`): files and symlinks are unlinked,
        folders removed with everything in them, without following any symlink."""
        for name in self.stale:
            target = self.path / name
            if target.parent != self.path:          # never anything but a direct child
                continue
            if target.is_symlink() or not target.is_dir():
                with contextlib.suppress(FileNotFoundError):
                    target.unlink()
            else:
                shutil.rmtree(target)
        self.stale = []


def _shown(p: Path | str) -> str:
    s = str(p)
    return s if len(s) <= 120 and s.isprintable() else quote(s)


def _mount_type(p: Path) -> str | None:
    """The file system type of the mount that holds existing path `p`."""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return None
    best, fstype = "", None
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        mnt = parts[1].replace("\\040", " ")
        inside = str(p) == mnt or str(p).startswith(mnt.rstrip("/") + "/")
        if inside and len(mnt) >= len(best):
            best, fstype = mnt, parts[2]
    return fstype


def earlier_results(folder: Path) -> list[str]:
    """The names mlfabric writes that are already in `folder`, sorted."""
    try:
        names = set(os.listdir(folder))
    except OSError:
        return []
    return sorted(names & (set(RESULT_FILES) | set(RESULT_DIRS))
                  | {n for n in names if REPEAT_DIR.fullmatch(n)})


def check_out(raw: str | None, default: Path, force: bool = False) -> OutDir:
    """Resolve and check --out (None: `default`); raises ConfigError("--out: ...")."""
    if raw is not None and not raw.strip():
        raise ConfigError("--out: empty; give a folder for the results, e.g. --out results/x")
    text = str(default) if raw is None else raw
    if "\0" in text:
        raise ConfigError("--out: contains a NUL byte; give a folder for the results")
    try:
        path = Path(os.path.abspath(text)).resolve()
    except (OSError, RuntimeError, ValueError) as e:
        raise ConfigError(f"--out: {_shown(text)} cannot be resolved ({e}); give another "
                          "folder") from None
    shown = _shown(path)
    if path == Path("/") or any(path == Path(k) or Path(k) in path.parents
                                for k in KERNEL_PATHS):
        raise ConfigError(f"--out: {shown} is not a place for results; give a folder of "
                          "your own, e.g. results/x")
    try:
        existing = path
        while not existing.exists():
            existing = existing.parent
        if existing != path and not existing.is_dir():
            raise ConfigError(f"--out: {_shown(existing)} is a file, not a folder; give "
                              "another path")
        if existing == path and not path.is_dir():
            raise ConfigError(f"--out: {shown} exists and is not a folder; give a folder "
                              "for the results")
        if _mount_type(existing) in KERNEL_FS_TYPES:
            raise ConfigError(f"--out: {shown} is on a kernel file system; give a folder "
                              "of your own, e.g. results/x")
        if not os.access(existing, os.W_OK | os.X_OK, effective_ids=os.access
                         in os.supports_effective_ids):
            raise ConfigError(f"--out: {_shown(existing)} is not writable (permissions, a "
                              "read-only file system or the immutable flag); give another "
                              "folder")
        free = shutil.disk_usage(existing).free
        if free < MIN_FREE_BYTES:
            raise ConfigError(f"--out: the file system of {shown} has only {free:,} bytes "
                              f"free; free some space or give another folder")
    except OSError as e:
        raise ConfigError(f"--out: {shown}: {e.strerror or e}; give another folder") from None
    stale = earlier_results(path) if path.is_dir() else []
    if stale and not force:
        listed = ", ".join(stale[:3]) + (", ..." if len(stale) > 3 else "")
        raise ConfigError(f"--out: {shown} already holds results ({listed}); give a new "
                          "folder, or add --force to replace them")
    return OutDir(path, stale)


_HELD: list[int] = []    # descriptors of locked folders: a lock lasts as long as the process


def lock(out: OutDir, command: str) -> None:  # noqa: ARG001 - named for readers
    """Lock the folder `out` for the rest of this process (flock on the folder itself, so no
    file is written; released when the process exits, even on a crash): a second command
    writing there at once refuses, in one ConfigError line naming the first (found in
    /proc/locks). Creates the folder."""
    import fcntl
    out.path.mkdir(parents=True, exist_ok=True)
    fd = os.open(out.path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _lock_holder(fd)
        os.close(fd)
        raise ConfigError(f"--out: {_shown(out.path)} is being written now by {holder}; wait "
                          "until it ends, or give another folder") from None
    _HELD.append(fd)


def _lock_holder(fd: int) -> str:
    """Who holds the flock on the file behind `fd`: 'pid N (`mlfabric sweep ...`, started
    HH:MM:SS)', from /proc/locks (pid, then major:minor:inode)."""
    import psutil
    import time
    st = os.fstat(fd)
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        f = line.split()
        if "FLOCK" in f and len(f) > 5 and f[5] == dev:
            try:
                p = psutil.Process(int(f[4]))
                cmd = " ".join(p.cmdline()[1:5])
                return (f"pid {p.pid} (`{quote(cmd)}`, started "
                        f"{time.strftime('%H:%M:%S', time.localtime(p.create_time()))})")
            except (psutil.Error, ValueError):
                return f"pid {f[4]}"
    return "another mlfabric command"


#: errnos that mean the disk (or quota) is full.
FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Re-raise an OSError without a file name (e.g. ENOSPC from write()) naming `path`."""
    try:
        yield
    except OSError as e:
        if e.filename is None:
            raise OSError(e.errno, f"{e.strerror or e} while writing", str(path)) from None
        raise


def name_the_folder(e: OSError, folder: Path) -> OSError:
    """A full-disk OSError that names no file: the same error naming the results folder."""
    if e.filename is None and e.errno in FULL:
        return OSError(e.errno, f"{e.strerror} while writing results in", str(folder))
    return e

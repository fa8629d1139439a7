"""Reading another tool's input files with a bound: a regular file of at most MAX_INPUT_BYTES.

Pure code. Every importer (SimAI, Chakra, floodns, the replayed flow log, `comm_groups`) reads
through `read_bytes`, so a path that is a device (`/dev/zero`), a FIFO or a folder, or a file
that is larger than the bound (checked by `stat` and again while reading, since a file can
grow), is refused in one line instead of being read until memory runs out.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

#: Largest input file read (bytes): the largest published workload files are a few MB (SimAI's
#: 9,216-GPU example) and Chakra traces of big models some tens of MB per rank; 256 MiB keeps a
#: file and what is parsed from it well inside this machine's memory.
MAX_INPUT_BYTES = 256 * 1024 * 1024


class InputFileError(ValueError):
    """An input file that cannot be read within the bound; the message names the file."""


def _open_checked(p: Path, limit: int) -> int:
    """A read-only descriptor of regular file `p` of at most `limit` bytes; InputFileError."""
    try:   # non-blocking: opening a FIFO waits for a writer otherwise
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise InputFileError(f"{p}: cannot be read ({e.strerror or type(e).__name__})") from None
    st = os.fstat(fd)
    problem = ("is a folder, not a file" if stat.S_ISDIR(st.st_mode) else
               "not a regular file (a device, FIFO or socket)" if not stat.S_ISREG(st.st_mode)
               else f"{st.st_size:,} bytes; at most {limit:,}" if st.st_size > limit else None)
    if problem:
        os.close(fd)
        raise InputFileError(f"{p}: {problem}")
    return fd


def check_file(path: str | Path, limit: int) -> None:
    """Refuse (InputFileError) what `read_bytes` would, without reading: for files a parser
    then streams (the results' own CSVs, read by the report)."""
    os.close(_open_checked(Path(path), limit))


def read_bytes(path: str | Path, limit: int | None = None) -> bytes:
    """The contents of regular file `path`, at most `limit` bytes (default MAX_INPUT_BYTES);
    InputFileError otherwise."""
    p = Path(path)
    limit = MAX_INPUT_BYTES if limit is None else limit
    fd = _open_checked(p, limit)
    with os.fdopen(fd, "rb") as f:
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise InputFileError(f"{p}: cannot be read ({e.strerror or type(e).__name__})") \
                from None
    if len(data) > limit:
        raise InputFileError(f"{p}: more than {limit:,} bytes")
    return data


def read_text(path: str | Path, limit: int | None = None) -> str:
    """`read_bytes` decoded as UTF-8; InputFileError naming the byte that is not."""
    data = read_bytes(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputFileError(f"{path}: not UTF-8 text (byte {e.start:,})") from None

"""What travels on an agent connection: framed, deterministic, checksummed messages.

Each transfer is a 28-byte header (magic, job index, iteration, tid, size in bytes as 64 bits,
CRC-32 of the payload) followed by the payload. The payload is a deterministic function of (seed, job,
iteration, tid), so the receiver recomputes exactly what it should have received: a byte out of
place, a short or long message, or a message out of order is a mismatch.

A part of an adaptive split (traffic/collectives.py `pool`) is a sequence of pieces, each a
header and payload of its own, keyed "tid/k" for the subflow's k-th piece, ended by a header of
size 0: the receiver does not know in advance how many bytes a subflow will carry.
"""
from __future__ import annotations

import random
import struct
import zlib
from collections.abc import Iterator

MAGIC = 0x4D4C4642  # "MLFB"
HEADER = struct.Struct("!IIIIQI")  # magic, job_index, iteration, tid, size_bytes, crc32
BLOCK_BYTES = 64 * 1024
_POOL_BLOCKS = 16


class _Pool:
    """16 random 64 KiB blocks per seed; a payload is a seeded walk over them."""

    cache: dict[int, list[bytes]] = {}

    @classmethod
    def blocks(cls, seed: int) -> list[bytes]:
        if seed not in cls.cache:
            rng = random.Random(seed)
            cls.cache[seed] = [rng.randbytes(BLOCK_BYTES) for _ in range(_POOL_BLOCKS)]
        return cls.cache[seed]


def payload_pieces(seed: int, job_index: int, iteration: int, tid: int | str,
                   size_bytes: int) -> Iterator[bytes]:
    """The payload of one transfer (or of piece "tid/k"), in pieces of at most BLOCK_BYTES."""
    blocks = _Pool.blocks(seed)
    walk = random.Random(f"{seed}/{job_index}/{iteration}/{tid}")
    left = size_bytes
    while left > 0:
        block = blocks[walk.randrange(_POOL_BLOCKS)]
        start = walk.randrange(BLOCK_BYTES // 2)
        n = min(left, BLOCK_BYTES - start)
        yield block[start:start + n]
        left -= n


def payload_crc(seed: int, job_index: int, iteration: int, tid: int | str,
                size_bytes: int) -> int:
    crc = 0
    for piece in payload_pieces(seed, job_index, iteration, tid, size_bytes):
        crc = zlib.crc32(piece, crc)
    return crc


class ExpectedCrc:
    """payload_crc, computed piece by piece as the bytes it checks arrive."""

    def __init__(self, seed: int, job_index: int, iteration: int, tid: int | str,
                 size_bytes: int):
        self._pieces = payload_pieces(seed, job_index, iteration, tid, size_bytes)
        self._done = 0
        self.crc = 0

    def advance(self, received_bytes: int) -> int:
        """Cover at least `received_bytes` of the payload; the CRC so far."""
        while self._done < received_bytes:
            piece = next(self._pieces)
            self.crc = zlib.crc32(piece, self.crc)
            self._done += len(piece)
        return self.crc


def header(job_index: int, iteration: int, tid: int, size_bytes: int, crc: int) -> bytes:
    return HEADER.pack(MAGIC, job_index, iteration, tid, size_bytes, crc)

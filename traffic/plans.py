"""The workload's records: a job (`JobSpec`: its collective, hosts, size, iterations and
streams), its plan (`JobPlan`: the TCP connections it opens and one iteration's transfers, a
list of `Transfer` or the array form `Transfers`) and the ports its connections use.

Pure code. What the records mean, and the planners that make a JobPlan from a JobSpec:
traffic/collectives.py (which callers import these names from).
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np


class WorkloadError(ValueError):
    """A job that cannot be turned into flows."""


class Collective(str, Enum):
    ALLREDUCE = "allreduce"
    ALLGATHER = "allgather"
    REDUCE_SCATTER = "reducescatter"
    ALLTOALL = "alltoall"
    PIPELINE = "pipeline"          # point-to-point chain stage i -> i+1
    FLOWS = "flows"                # independent long flows, one per [src, dst] group
    CUSTOM = "custom"              # the transfers given in JobSpec.p2p (a custom collective)


#: TCP port every agent of job j listens on is LISTEN_PORT_BASE + j.
LISTEN_PORT_BASE = 5001
#: Source port of connection c is SOURCE_PORT_BASE + c, so each flow's 5-tuple is known in advance;
#: past SOURCE_PORT_SPAN connections it wraps (see `source_port`), never exceeding 65535.
SOURCE_PORT_BASE = 20000
SOURCE_PORT_MAX = 65535
SOURCE_PORT_SPAN = SOURCE_PORT_MAX - SOURCE_PORT_BASE + 1


def source_port(conn_id: int) -> int:
    """Source TCP port of connection `conn_id`: SOURCE_PORT_BASE + conn_id, wrapped into
    SOURCE_PORT_BASE..65535 (identical to the unwrapped value below 45,536 connections)."""
    return SOURCE_PORT_BASE + conn_id % SOURCE_PORT_SPAN


@dataclass(frozen=True, slots=True)
class Connection:
    """One TCP connection: the unit that routing places on a spine."""

    conn_id: int          # unique over the whole experiment
    job: str
    src: str              # host names, e.g. "h1"
    dst: str
    src_port: int
    dst_port: int
    #: PXN: the GPU whose bytes these are, moved over NVLink to `src` (a GPU of its server on
    #: the destination's rail), which sends them through its own NIC; "" when src's own
    nvlink_from: str = ""

    @property
    def sender(self) -> str:
        """The GPU that sends the bytes (the emulator's sending agent, the rules' nw_src):
        nvlink_from under PXN, else src."""
        return self.nvlink_from or self.src

    @property
    def host_pair(self) -> bool:
        """All IPv4 traffic from src to dst whatever its ports (both 0): a program's traffic,
        whose ports are ephemeral, as declared or as the controller learned it."""
        return self.src_port == 0 and self.dst_port == 0


@dataclass(frozen=True, slots=True)
class Transfer:
    """One message of one iteration; `tid` is unique within its job."""

    tid: int
    conn_id: int
    size_bytes: int
    step: int
    deps: tuple[int, ...] = ()
    #: split "adaptive": the tid of the transfer's first part; the parts of one transfer
    #: share its bytes (each subflow takes the next piece when it has sent its last)
    pool: int = -1


class Transfers(Sequence):
    """One iteration's transfers as arrays (the ring and all-to-all planners' output): a
    read-only sequence of Transfer, each made when read, in ~48 B per transfer where a list of
    Transfer objects takes ~300 (a SimAI workload plans 137 M). Its values are exactly those
    the object planners made; the predictor and the CSV writer read the arrays directly."""

    def __init__(self, tid: np.ndarray, conn: np.ndarray, size: np.ndarray, step: np.ndarray,
                 dep_ptr: np.ndarray, dep: np.ndarray):
        self.tid, self.conn, self.size, self.step = tid, conn, size, step
        self.dep_ptr, self.dep = dep_ptr, dep             # deps of i: dep[dep_ptr[i]:...]

    def __len__(self) -> int:
        return int(self.tid.size)

    def _one(self, i: int) -> Transfer:
        lo, hi = int(self.dep_ptr[i]), int(self.dep_ptr[i + 1])
        return Transfer(int(self.tid[i]), int(self.conn[i]), int(self.size[i]),
                        int(self.step[i]), tuple(self.dep[lo:hi].tolist()))

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._one(k) for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("transfer index out of range")
        return self._one(i)

    def __iter__(self) -> Iterator[Transfer]:
        ptr = self.dep_ptr.tolist()
        dep = self.dep.tolist()
        for k, (t, c, b, st) in enumerate(zip(self.tid.tolist(), self.conn.tolist(),
                                              self.size.tolist(), self.step.tolist())):
            yield Transfer(t, c, b, st, tuple(dep[ptr[k]:ptr[k + 1]]))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None                      # type: ignore[assignment]  (a list's equality)

    def __repr__(self) -> str:
        return f"Transfers({len(self)} transfers)"

    @staticmethod
    def join(parts: list[Transfers]) -> Transfers:
        """The parts' transfers in order (each part's dep_ptr starting at 0)."""
        ptrs, base = [np.zeros(1, np.int64)], 0
        for p in parts:
            ptrs.append(p.dep_ptr[1:] + base)
            base += p.dep.size
        cat = (lambda name: np.concatenate([getattr(p, name) for p in parts])
               if parts else np.zeros(0, np.int64))
        return Transfers(cat("tid"), cat("conn"), cat("size"), cat("step"),
                         np.concatenate(ptrs), cat("dep"))


#: How a transfer's K subflows share its bytes (JobSpec.split).
SPLITS = ("even", "adaptive")
#: An adaptive subflow's bytes written but not yet sent, at most (the agents' TCP_NOTSENT_LOWAT;
#: without it a subflow on a slow path hoards pieces in its socket). The model's tail of each
#: part is half a piece plus this.
ADAPTIVE_UNSENT_BYTES = 16 * 1024


@dataclass(frozen=True)
class P2P:
    """One given transfer of a custom collective: `deps` are indices of earlier P2Ps whose
    bytes must have arrived before this one starts."""

    src: str
    dst: str
    size_bytes: int
    deps: tuple[int, ...] = ()


@dataclass
class JobSpec:
    """A job: one or more groups of hosts (rank order) that each run `collective` on
    `size_bytes`; an iteration ends when every group has finished (the slowest ring), then
    the job computes for `compute_s` before the next iteration."""

    name: str
    collective: Collective
    groups: list[list[str]]
    size_bytes: int
    iterations: int = 1
    compute_s: float = 0.0
    start_s: float = 0.0
    #: K > 1: every connection is K TCP connections and every transfer K parts (split_subflows)
    subflows: int = 1
    #: how the K parts share a transfer's bytes: "even" (fixed parts) or "adaptive" (pieces of
    #: split_piece_bytes, taken by whichever subflow is free; see split_subflows)
    split: str = "even"
    split_piece_bytes: int = 1 << 20
    #: streams: (job name, gap_s): start only once that job has ended, plus gap_s seconds
    after: tuple[tuple[str, float], ...] = ()
    #: the stream (an importer's communicator) the job is issued on; "" for none. With
    #: plan_jobs(connections="stream") the jobs of one stream share their connections
    stream: str = ""
    #: Collective.CUSTOM: the transfers (groups is then the one list of hosts they use)
    p2p: tuple[P2P, ...] = ()
    #: a program's traffic (traffic/programs.py): the same DAG, its connections host pairs
    #: (ports 0), modelled and routed but sent by the program, not by agents
    host_pairs: bool = False
    #: NCCL's channels (traffic/nccl.py): each group runs as this many rings that split
    #: size_bytes, channel c's order rotated by c in every server block of `channels` ranks
    channels: int = 1
    #: NCCL's algorithm for an all-reduce on servers: "ring" (rail-aligned channels) or
    #: "hierarchical" (traffic/rings.hierarchical_allreduce)
    algorithm: str = "ring"
    #: PXN: a transfer to another server's GPU on another rail first crosses NVLink to the
    #: sender's server GPU on the receiver's rail (traffic/nccl.py); only with `servers`
    pxn: bool = True
    #: where the job's GPUs sit (traffic/nccl.ServerMap) on a fabric with NVLink; else None
    servers: Any = None

    @property
    def hosts(self) -> list[str]:
        return [h for g in self.groups for h in g]

    @property
    def group_size(self) -> int:
        return max(map(len, self.groups))


@dataclass
class JobPlan:
    """A job made explicit: its connections and one iteration's transfers."""

    spec: JobSpec
    index: int
    connections: list[Connection]
    transfers: Sequence[Transfer] = field(default_factory=list)   # a list, or Transfers

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def listen_port(self) -> int:
        return LISTEN_PORT_BASE + self.index

    def bytes_per_iteration(self) -> int:
        if isinstance(self.transfers, Transfers):
            return int(self.transfers.size.sum())
        return sum(t.size_bytes for t in self.transfers)


def split_bytes(total: int, parts: int) -> list[int]:
    """Split `total` bytes into `parts` chunks whose sizes differ by at most one byte."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def check_groups(spec: JobSpec, min_size: int = 2) -> None:
    """Every group has at least min_size distinct hosts and the job some bytes; WorkloadError
    naming the job otherwise."""
    if not spec.groups:
        raise WorkloadError(f"jobs.{spec.name}.hosts: a job needs at least one group of hosts")
    for g in spec.groups:
        if len(g) < min_size:
            raise WorkloadError(
                f"jobs.{spec.name}.hosts: {spec.collective.value} needs at least {min_size} hosts")
        if len(set(g)) != len(g):
            raise WorkloadError(f"jobs.{spec.name}.hosts: a host appears twice in one group")
    if spec.size_bytes < 1:
        raise WorkloadError(f"jobs.{spec.name}.size_bytes: must be a positive number of bytes")


def connection(spec: JobSpec, index: int, conn_id: int, src: str, dst: str) -> Connection:
    """Connection conn_id of job `index` from src to dst: its source port, the job's port."""
    return Connection(conn_id=conn_id, job=spec.name, src=src, dst=dst,
                      src_port=source_port(conn_id), dst_port=LISTEN_PORT_BASE + index)


def connections(spec: JobSpec, index: int, first_id: int, srcs: Sequence[str],
                dsts: Sequence[str]) -> list[Connection]:
    """`connection` for each pair (srcs[i], dsts[i]), ids first_id, first_id + 1, ...; built
    in one pass (a ring of 2,048 ranks on 8 channels is 16,384 of them)."""
    name, port, base, span = spec.name, LISTEN_PORT_BASE + index, SOURCE_PORT_BASE, \
        SOURCE_PORT_SPAN
    new = object.__new__
    s_id, s_job, s_src, s_dst, s_sport, s_dport, s_via = _SLOT_SETTERS
    out = []
    for i, a, b in zip(range(first_id, first_id + len(srcs)), srcs, dsts):
        c = new(Connection)
        s_id(c, i)
        s_job(c, name)
        s_src(c, a)
        s_dst(c, b)
        s_sport(c, base + i % span)
        s_dport(c, port)
        s_via(c, "")
        out.append(c)
    return out


def relayed(c: Connection, relay: str) -> Connection:
    """Connection(c.conn_id, c.job, relay, c.dst, c.src_port, c.dst_port, nvlink_from=c.src):
    `c` sent by PXN's relay GPU (traffic/nccl.py), built as `connections` builds records."""
    s_id, s_job, s_src, s_dst, s_sport, s_dport, s_via = _SLOT_SETTERS
    out = object.__new__(Connection)
    s_id(out, c.conn_id)
    s_job(out, c.job)
    s_src(out, relay)
    s_dst(out, c.dst)
    s_sport(out, c.src_port)
    s_dport(out, c.dst_port)
    s_via(out, c.src)
    return out


#: Connection's fields' slot setters, in field order: `connections` fills each slot of a new
#: record directly (the frozen dataclass's __init__ goes through object.__setattr__ per field,
#: ~1.7x the time at 65,536 connections); the records are equal to Connection(...)'s.
_SLOT_SETTERS = tuple(Connection.__dict__[f].__set__ for f in Connection.__slots__)

"""Collectives as explicit data: the TCP connections a job opens and the transfers it sends.

Pure code. A job's iteration is a small DAG: each `Transfer` moves `size_bytes` over one
`Connection` and may start only when the transfers named in `deps` have been fully received
(and the previous transfer on the same connection is done: a connection is one byte stream).
The emulated agents and the flow-level predictor both execute exactly this DAG.

Ring all-reduce of S bytes over ranks [h1, h5, h9, h13] (n = 4): connection i goes from rank i
to rank (i+1) mod n; 2(n-1) = 6 steps; in step k every rank sends one chunk of about S/n bytes,
and rank i's step-k send waits for the step-(k-1) chunk it receives from rank i-1 (NCCL's ring).
Steps 0..n-2 are the reduce-scatter, steps n-1..2n-3 the all-gather.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class WorkloadError(ValueError):
    """A job that cannot be turned into flows."""


class Collective(str, Enum):
    ALLREDUCE = "allreduce"


#: TCP port every agent of job j listens on is LISTEN_PORT_BASE + j.
LISTEN_PORT_BASE = 5001
#: Source port of connection c is SOURCE_PORT_BASE + c, so each flow's 5-tuple is known in advance.
SOURCE_PORT_BASE = 20000


@dataclass(frozen=True)
class Connection:
    """One TCP connection: the unit that routing places on a spine."""

    conn_id: int          # unique over the whole experiment
    job: str
    src: str              # host names, e.g. "h1"
    dst: str
    src_port: int
    dst_port: int


@dataclass(frozen=True)
class Transfer:
    """One message of one iteration; `tid` is unique within its job."""

    tid: int
    conn_id: int
    size_bytes: int
    step: int
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

    @property
    def hosts(self) -> list[str]:
        return [h for g in self.groups for h in g]

    @property
    def group_size(self) -> int:
        return max(len(g) for g in self.groups)


@dataclass
class JobPlan:
    """A job made explicit: its connections and one iteration's transfers."""

    spec: JobSpec
    index: int
    connections: list[Connection]
    transfers: list[Transfer] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def listen_port(self) -> int:
        return LISTEN_PORT_BASE + self.index

    def bytes_per_iteration(self) -> int:
        return sum(t.size_bytes for t in self.transfers)


def split_bytes(total: int, parts: int) -> list[int]:
    """Split `total` bytes into `parts` chunks whose sizes differ by at most one byte."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def ring_allreduce(spec: JobSpec, index: int, first_conn_id: int) -> JobPlan:
    """Reduce-scatter then all-gather around each ring of `spec.groups` (see module docstring)."""
    conns: list[Connection] = []
    transfers: list[Transfer] = []
    for ring in spec.groups:
        n = len(ring)
        if n < 2:
            raise WorkloadError(f"jobs.{spec.name}.hosts: a ring needs at least 2 hosts")
        if spec.size_bytes < n:
            raise WorkloadError(
                f"jobs.{spec.name}.size_bytes: must be at least the ring size ({n})")
        ring_conns = [
            Connection(
                conn_id=first_conn_id + len(conns) + i,
                job=spec.name,
                src=ring[i],
                dst=ring[(i + 1) % n],
                src_port=SOURCE_PORT_BASE + first_conn_id + len(conns) + i,
                dst_port=LISTEN_PORT_BASE + index,
            )
            for i in range(n)
        ]
        chunks = split_bytes(spec.size_bytes, n)
        t0 = len(transfers)
        for k in range(2 * (n - 1)):
            for i in range(n):
                # reduce-scatter step k: rank i sends chunk (i - k); all-gather: (i + 1 - k')
                chunk = (i - k) % n if k < n - 1 else (i + 1 - (k - (n - 1))) % n
                deps = () if k == 0 else (t0 + (k - 1) * n + (i - 1) % n,)
                transfers.append(Transfer(
                    tid=t0 + k * n + i, conn_id=ring_conns[i].conn_id,
                    size_bytes=chunks[chunk], step=k, deps=deps,
                ))
        conns.extend(ring_conns)
    return JobPlan(spec=spec, index=index, connections=conns, transfers=transfers)


def plan_jobs(specs: list[JobSpec]) -> list[JobPlan]:
    """Turn every job into connections and transfers, numbering connections globally."""
    plans: list[JobPlan] = []
    next_conn = 0
    for index, spec in enumerate(specs):
        if spec.collective is Collective.ALLREDUCE:
            plan = ring_allreduce(spec, index, next_conn)
        else:  # pragma: no cover - Collective is closed
            raise WorkloadError(f"jobs.{spec.name}.collective: unsupported {spec.collective}")
        next_conn += len(plan.connections)
        plans.append(plan)
    return plans


def bus_factor(collective: Collective, n: int) -> float:
    """nccl-tests busbw = algbw x this factor."""
    if collective is Collective.ALLREDUCE:
        return 2 * (n - 1) / n
    return (n - 1) / n


def ideal_cct_s(spec: JobSpec, host_link_mbps: float) -> float:
    """CCT on a non-blocking fabric, where only the host links (full duplex) limit, in seconds."""
    n = spec.group_size
    if spec.collective is Collective.ALLREDUCE:
        # each rank sends and receives 2(n-1) chunks of S/n bytes, one step after another
        chunk = max(split_bytes(spec.size_bytes, n))
        return 2 * (n - 1) * chunk * 8 / (host_link_mbps * 1e6)
    raise WorkloadError(f"no closed form for {spec.collective}")  # pragma: no cover

"""Collectives as explicit data: the TCP connections a job opens and the transfers it sends.

Pure code. A job's iteration is a small DAG: each `Transfer` moves `size_bytes` over one
`Connection` and may start only when the transfers named in `deps` have been fully received
(and the previous transfer on the same connection is done: a connection is one byte stream).
The emulated agents and the flow-level predictor both execute exactly this DAG.

Ring all-reduce of S bytes over ranks [h1, h5, h9, h13] (n = 4): connection i goes from rank i
to rank (i+1) mod n; 2(n-1) = 6 steps; in step k every rank sends one chunk of about S/n bytes,
and rank i's step-k send waits for the step-(k-1) chunk it receives from rank i-1 (NCCL's ring).
Steps 0..n-2 are the reduce-scatter, steps n-1..2n-3 the all-gather.

The other collectives follow the same rules (S = `size_bytes`, n = ranks in a group, B = the
host link rate; nccl-tests conventions for S):

* all-gather (ring): S is the gathered buffer; n-1 steps, in step k rank i forwards chunk
  (i - k) mod n of about S/n bytes to rank i+1, after receiving it from rank i-1 in step k-1.
  Ideal time (n-1)/n x S / B; busbw = algbw x (n-1)/n.
* reduce-scatter (ring): S is each rank's input; the same n-1 step chain (chunk (i - k - 1) mod n).
  Ideal time (n-1)/n x S / B; busbw = algbw x (n-1)/n.
* all-to-all: S is what each rank sends in total, S/n to each rank (its own chunk stays local):
  one connection from every rank to every other, one transfer each, no dependencies.
  Ideal time (n-1)/n x S / B (the n-1 flows share the sender's link); busbw = algbw x (n-1)/n.
* pipeline point-to-point: stage i sends S bytes to stage i+1 (n-1 connections), and stage i+1
  forwards only after receiving: a chain. Ideal time (n-1) x S / B; busbw = algbw (sendrecv).
* flows: every group is one [src, dst] pair that sends S bytes at once, no dependencies (the
  traffic patterns of traffic/patterns.py); a host may appear in several pairs. Ideal time at
  least the busiest host link's bytes / B (exact for permutations); busbw = algbw.
* custom: the transfers are given (`JobSpec.p2p`: src, dst, bytes, the transfers each waits
  for), as a custom collective's point-to-point sends are (MSCCLang, ASTRA-sim's custom
  collectives); one connection per (src, dst) pair, in order of first use. Ideal time: the
  longer of the DAG's critical path and the busiest host link's bytes, both at B.

Streams: a job may start only after other jobs have ended (`JobSpec.after`: (job, gap_s)
pairs: not before that job's last iteration ended plus gap_s), as the collectives queued on
one NCCL communicator (a stream) run one after another, and as compute between them delays
the next. The predictor and the emulator's driver both honour it; `check_after` refuses
unknown names and cycles.

Source ports: connection c uses SOURCE_PORT_BASE + (c mod SOURCE_PORT_SPAN), so ports stay in
20000..65535 at any scale; `plan_jobs` checks that every connection's 5-tuple is unique.

The records (JobSpec, JobPlan, Connection, Transfer, Transfers, the ports) live in
traffic/plans.py and are imported here too; this module plans them, the rings in
traffic/rings.py (re-exported here).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .plans import (ADAPTIVE_UNSENT_BYTES, LISTEN_PORT_BASE, P2P, SOURCE_PORT_BASE,  # noqa: F401
                    SOURCE_PORT_MAX, SOURCE_PORT_SPAN, SPLITS, Collective, Connection, JobPlan,
                    JobSpec, Transfer, Transfers, WorkloadError, source_port, split_bytes)
from .nccl import pxn_connections
from .rings import ring_allreduce, ring_chain, ring_hops
from .plans import check_groups, connection


def all_to_all(spec: JobSpec, index: int, first_conn_id: int,
               make_conns: bool = True) -> JobPlan:
    """Every rank sends S/n bytes to every other rank of its group at once: one connection and
    one transfer per ordered pair (i, j), i != j, in that order, no dependencies (rank j
    receives chunk j of the split). make_conns=False: the transfers only (connections=[])."""
    check_groups(spec)
    conns: list[Connection] = []
    sizes: list[np.ndarray] = []
    chunks: dict[int, np.ndarray] = {}   # group size -> each pair's bytes, row-major
    for group in spec.groups:
        n = len(group)
        if spec.size_bytes < n:
            raise WorkloadError(
                f"jobs.{spec.name}.size_bytes: must be at least the group size ({n})")
        if n not in chunks:
            row = np.array(split_bytes(spec.size_bytes, n), dtype=np.int64)
            chunks[n] = np.broadcast_to(row, (n, n))[~np.eye(n, dtype=bool)]
        if make_conns:
            base = first_conn_id + len(conns)
            conns.extend(connection(spec, index, base + k, a, b) for k, (a, b) in enumerate(
                (a, b) for a in group for b in group if a != b))
        sizes.append(chunks[n])
    size = np.concatenate(sizes) if sizes else np.zeros(0, np.int64)
    m = size.size                       # one transfer per connection, in order, no deps
    return JobPlan(spec=spec, index=index, connections=conns, transfers=Transfers(
        np.arange(m, dtype=np.int64), np.arange(first_conn_id, first_conn_id + m,
                                                dtype=np.int64),
        size, np.zeros(m, np.int64), np.zeros(m + 1, np.int64), np.zeros(0, np.int64)))


def pipeline_p2p(spec: JobSpec, index: int, first_conn_id: int) -> JobPlan:
    """Pipeline point-to-point: stage i -> stage i+1 carries S bytes, and stage i+1 forwards
    only once it has received (transfer i depends on transfer i-1); groups run in parallel."""
    check_groups(spec)
    conns: list[Connection] = []
    transfers: list[Transfer] = []
    for stages in spec.groups:
        t0 = len(transfers)
        for i in range(len(stages) - 1):
            c = connection(spec, index, first_conn_id + len(conns), stages[i], stages[i + 1])
            conns.append(c)
            transfers.append(Transfer(tid=t0 + i, conn_id=c.conn_id, size_bytes=spec.size_bytes,
                                      step=i, deps=() if i == 0 else (t0 + i - 1,)))
    return JobPlan(spec=spec, index=index, connections=conns, transfers=transfers)


def independent_flows(spec: JobSpec, index: int, first_conn_id: int) -> JobPlan:
    """One connection and one transfer of S bytes per [src, dst] group, all at once."""
    check_groups(spec)
    conns: list[Connection] = []
    transfers: list[Transfer] = []
    for g in spec.groups:
        if len(g) != 2:
            raise WorkloadError(f"jobs.{spec.name}.groups: a flow is one [src, dst] pair, "
                                f"got {len(g)} hosts")
        c = connection(spec, index, first_conn_id + len(conns), g[0], g[1])
        conns.append(c)
        transfers.append(Transfer(tid=len(transfers), conn_id=c.conn_id,
                                  size_bytes=spec.size_bytes, step=0))
    return JobPlan(spec=spec, index=index, connections=conns, transfers=transfers)


def custom_p2p(spec: JobSpec, index: int, first_conn_id: int) -> JobPlan:
    """The given transfers (spec.p2p) in order: one connection per (src, dst) pair, in order
    of first use; transfer i waits for the transfers in its deps (earlier indices only)."""
    if not spec.p2p:
        raise WorkloadError(f"jobs.{spec.name}: a custom collective needs its transfers")
    conns: dict[tuple[str, str], Connection] = {}
    transfers: list[Transfer] = []
    for i, t in enumerate(spec.p2p):
        if t.src == t.dst or t.size_bytes < 1 or any(not 0 <= d < i for d in t.deps):
            raise WorkloadError(f"jobs.{spec.name}: transfer {i} ({t.src}->{t.dst}, "
                                f"{t.size_bytes} B, deps {t.deps[:4]}) must join two hosts, "
                                "carry bytes and wait only for earlier transfers")
        c = conns.get((t.src, t.dst))
        if c is None:
            c = connection(spec, index, first_conn_id + len(conns), t.src, t.dst)
            conns[t.src, t.dst] = c
        transfers.append(Transfer(tid=i, conn_id=c.conn_id, size_bytes=t.size_bytes,
                                  step=_depth(spec.p2p, i, transfers), deps=tuple(t.deps)))
    return JobPlan(spec=spec, index=index, connections=list(conns.values()),
                   transfers=transfers)


def _depth(p2p: tuple[P2P, ...], i: int, done: list[Transfer]) -> int:
    """Transfer i's step: 1 + the deepest transfer it waits for (0 without dependencies)."""
    return 1 + max((done[d].step for d in p2p[i].deps), default=-1)


_PLANNERS = {
    Collective.ALLREDUCE: ring_allreduce,
    Collective.ALLGATHER: ring_chain,
    Collective.REDUCE_SCATTER: ring_chain,
    Collective.ALLTOALL: all_to_all,
    Collective.PIPELINE: pipeline_p2p,
    Collective.FLOWS: independent_flows,
    Collective.CUSTOM: custom_p2p,
}


#: The planners that plan transfers without making connections (make_conns=False).
_ARRAY_PLANNERS = (ring_allreduce, ring_chain, all_to_all, ring_hops)

#: The collectives `ring_flows` turns into one flow per connection.
RINGS = (Collective.ALLREDUCE, Collective.ALLGATHER, Collective.REDUCE_SCATTER)


def ring_flows(plan: JobPlan) -> JobPlan:
    """A ring job's iteration as one transfer per connection (Semantics ring_sync "flow"):
    its steps' bytes summed, sent at once with no dependencies, in connection order. Every
    hop of a ring moves 2(n-1)/n x S (all-reduce) as in the step DAG; the steps' pipeline
    becomes the fluid steady state: equal CCTs when every hop gets one rate, 2(n-1) times
    fewer transfers (n-1 for all-gather and reduce-scatter)."""
    ts = plan.transfers
    conn = np.fromiter((t.conn_id for t in ts), np.int64, len(ts)) \
        if not isinstance(ts, Transfers) else ts.conn
    size = np.fromiter((t.size_bytes for t in ts), np.int64, len(ts)) \
        if not isinstance(ts, Transfers) else ts.size
    ids = np.unique(conn)               # connection order: every ring hop carries a step
    lo = int(ids.min()) if ids.size else 0
    total = np.bincount(conn - lo, weights=size, minlength=ids.size)
    m = ids.size
    merged = Transfers(np.arange(m, dtype=np.int64), ids, total[ids - lo].astype(np.int64),
                       np.zeros(m, np.int64), np.zeros(m + 1, np.int64), np.zeros(0, np.int64))
    return dataclasses.replace(plan, transfers=merged)


#: Semantics.connections: each job its own connections, or a stream's jobs share them.
CONNECTIONS = ("job", "stream")


def plan_jobs(specs: list[JobSpec], ring_sync: str = "rank",
              connections: str = "job") -> list[JobPlan]:
    """Turn every job into connections and transfers, numbering connections globally;
    ring_sync "flow": ring jobs as one flow per connection (`ring_flows`); connections
    "stream": a job on the same stream, collective, subflows and groups as an earlier one
    sends on that job's connections (`share_key`), as NCCL's collectives reuse their
    communicator's connections (the plans then hold one list object between them:
    `unique_connections`), and a job equal to an earlier one on them in all its planner reads
    (`plan_key`) holds that job's Transfers (read-only arrays, planned once).

    Raises WorkloadError if two connections would share a 5-tuple (only possible past
    SOURCE_PORT_SPAN connections, when source ports wrap), or for a job that waits for an
    unknown job or for itself (`check_after`)."""
    check_after(specs)
    plans: list[JobPlan] = []
    next_conn = 0
    seen = FiveTuples()
    shared: dict[tuple, tuple[int, list[Connection]]] = {}   # share_key -> (first id, conns)
    planned: dict[tuple, JobPlan] = {}        # a shared job's plan, by what its planner reads
    for index, spec in enumerate(specs):
        planner = _PLANNERS.get(Collective(spec.collective))
        if planner is None:  # pragma: no cover - Collective is closed
            raise WorkloadError(f"jobs.{spec.name}.collective: unsupported {spec.collective}")
        as_flows = ring_sync == "flow" and spec.collective in RINGS
        if as_flows and spec.algorithm == "ring":
            planner, as_flows = ring_hops, False         # ring_flows without the steps
        share = share_key(spec) if connections == "stream" else None
        again = (share, plan_key(spec), planner, as_flows) if share in shared else None
        if again in planned:                     # the same transfers on the same connections
            plans.append(dataclasses.replace(planned[again], spec=spec, index=index))
            continue
        if share in shared and spec.subflows == 1 and planner in _ARRAY_PLANNERS:
            plan = planner(spec, index, next_conn, make_conns=False)   # on shared ones
        else:
            plan = planner(spec, index, next_conn)
        if as_flows:
            plan = ring_flows(plan)
        plan = split_subflows(pxn_connections(plan), spec.subflows, next_conn)
        if spec.host_pairs:
            plan = dataclasses.replace(plan, connections=[
                dataclasses.replace(c, src_port=0, dst_port=0) for c in plan.connections])
        if share in shared:
            plans.append(_on_shared(plan, next_conn, *shared[share]))
            if isinstance(plans[-1].transfers, Transfers):
                planned[again] = plans[-1]
            continue
        if share is not None:
            shared[share] = (next_conn, plan.connections)
        seen.add(spec, plan.connections)
        next_conn += len(plan.connections)
        plans.append(plan)
    return plans


class FiveTuples:
    """The 5-tuples of the connections planned so far, each new job's checked against them:
    by their (source port, destination port) alone while those never repeat (a job's
    connections have consecutive ids, each job its own listening port), by the whole 5-tuple
    (`_check_five_tuples`) from the first job whose port pairs do repeat."""

    def __init__(self) -> None:
        self.ports: set[int] = set()            # src_port << 16 | dst_port
        self.earlier: list[list[Connection]] = []
        self.full: dict[tuple[str, str, int, int], int] | None = None

    def add(self, spec: JobSpec, conns: list[Connection]) -> None:
        """Add `conns` (job `spec`'s); WorkloadError naming the first whose 5-tuple an
        earlier connection holds."""
        if self.full is None:
            keys = [c.src_port << 16 | c.dst_port for c in conns]
            if len(set(keys)) == len(keys) and self.ports.isdisjoint(keys):
                self.ports.update(keys)
                self.earlier.append(conns)
                return
            self.full = {}
            for done in self.earlier:
                self.full.update(((c.src, c.dst, c.src_port, c.dst_port), c.conn_id)
                                 for c in done)
            self.ports, self.earlier = set(), []
        _check_five_tuples(spec, conns, self.full)


def _check_five_tuples(spec: JobSpec, conns: list[Connection],
                       seen: dict[tuple[str, str, int, int], int]) -> None:
    """Add conns' 5-tuples to `seen` (5-tuple -> conn_id); WorkloadError naming the first one
    that an earlier connection holds."""
    keys = [(c.src, c.dst, c.src_port, c.dst_port) for c in conns]
    if len(set(keys)) == len(keys) and seen.keys().isdisjoint(keys):
        seen.update(zip(keys, (c.conn_id for c in conns)))
        return
    for c, key in zip(conns, keys):
        if key in seen:
            raise WorkloadError(
                f"jobs.{spec.name}: connection {c.conn_id} ({c.src}->{c.dst}) would reuse the "
                f"5-tuple of connection {seen[key]} (source ports wrap every "
                f"{SOURCE_PORT_SPAN} connections)")
        seen[key] = c.conn_id


def share_key(spec: JobSpec) -> tuple | None:
    """What makes two jobs' connections the same under connections "stream": the stream,
    collective, subflows and groups (the planners are functions of these); None for a job
    on no stream, a custom collective or a program's host pairs (never shared)."""
    if not spec.stream or spec.p2p or spec.host_pairs:
        return None
    return (spec.stream, Collective(spec.collective), spec.subflows, spec.channels, spec.pxn,
            tuple(map(tuple, spec.groups)))


def plan_key(spec: JobSpec) -> tuple:
    """What a planner reads of a job beyond its `share_key` (not its name, index, start,
    iterations, compute or `after`): two jobs on the same shared connections and equal here
    get equal transfers, so the second holds the first's (read-only) Transfers."""
    return (spec.size_bytes, spec.split, spec.split_piece_bytes, spec.algorithm,
            id(spec.servers), spec.p2p)


def _on_shared(plan: JobPlan, first: int, base: int, conns: list[Connection]) -> JobPlan:
    """`plan` (connections numbered from `first`) on the connections `conns` (numbered from
    `base`, made by the same planner for the same groups, so in the same order)."""
    ts, shift = plan.transfers, base - first
    if isinstance(ts, Transfers):
        moved = Transfers(ts.tid, ts.conn + shift, ts.size, ts.step, ts.dep_ptr, ts.dep)
    else:
        moved = [dataclasses.replace(t, conn_id=t.conn_id + shift) for t in ts]
    return dataclasses.replace(plan, connections=conns, transfers=moved)


def unique_connections(plans: list[JobPlan]) -> list[Connection]:
    """Every connection of `plans` once, in plan order: plans that share a stream's
    connections (plan_jobs connections="stream") hold the same list, taken once."""
    seen: set[int] = set()
    out: list[Connection] = []
    for p in plans:
        if id(p.connections) not in seen:
            seen.add(id(p.connections))
            out.extend(p.connections)
    return out


def split_subflows(plan: JobPlan, k: int, first_conn_id: int) -> JobPlan:
    """The job's DAG with K subflows (NCCL's sockets per connection, RoCE's queue pairs):
    every connection becomes K connections (consecutive ids from `first_conn_id`, so each its
    own source port), every transfer of S bytes K parts of split_bytes(S, K) sent at once, one
    on each, and whatever depended on the transfer waits for all K parts. Part p of a transfer
    follows part p of the connection's previous transfer. With split "adaptive" the parts
    name their transfer's first part as their `pool`: their sizes are then only where they
    start, the agents and the predictor share the pool's bytes among them as they go.
    K = 1 returns `plan` itself."""
    if k == 1:
        return plan
    adaptive = plan.spec.split == "adaptive"
    conns, sub = [], {}
    for c in plan.connections:
        for part in range(k):
            cid = first_conn_id + len(conns)
            conns.append(dataclasses.replace(c, conn_id=cid, src_port=source_port(cid)))
            sub[c.conn_id, part] = cid
    transfers: list[Transfer] = []
    parts_of: dict[int, tuple[int, ...]] = {}
    for t in plan.transfers:
        if t.size_bytes < k:
            raise WorkloadError(f"jobs.{plan.spec.name}.subflows: a transfer of {t.size_bytes} "
                                f"bytes cannot be split into {k} parts of at least one byte; "
                                "use fewer subflows or more bytes")
        deps = tuple(d for dep in t.deps for d in parts_of[dep])
        first = len(transfers)
        for part, size in enumerate(split_bytes(t.size_bytes, k)):
            transfers.append(Transfer(first + part, sub[t.conn_id, part], size, t.step, deps,
                                      first if adaptive else -1))
        parts_of[t.tid] = tuple(range(first, first + k))
    return dataclasses.replace(plan, connections=conns, transfers=transfers)


def group_counts(collective: Collective, n: int,
                 ring_sync: str = "rank") -> tuple[int, int, int]:
    """(connections, transfers per iteration, bytes sent per iteration / size_bytes) of one
    group of n ranks, as the planners above plan them, counted without building them (the
    config bounds a job's size with it; tests/unit/traffic/test_workloads.py checks it against
    plan_jobs)."""
    if ring_sync == "flow" and collective in RINGS:
        return n, n, 2 * (n - 1) if collective is Collective.ALLREDUCE else n - 1
    if collective is Collective.ALLREDUCE:
        return n, 2 * (n - 1) * n, 2 * (n - 1)
    if collective in (Collective.ALLGATHER, Collective.REDUCE_SCATTER):
        return n, (n - 1) * n, n - 1
    if collective is Collective.ALLTOALL:
        return n * (n - 1), n * (n - 1), n - 1
    if collective is Collective.FLOWS:
        return 1, 1, 1                  # one [src, dst] pair
    if collective is Collective.CUSTOM:
        return n * (n - 1), n * n, n    # a bound; JobSpec.p2p has the real count
    return n - 1, n - 1, n - 1          # pipeline


def bus_factor(collective: Collective, n: int) -> float:
    """nccl-tests busbw = algbw x this factor: 2(n-1)/n for all-reduce, (n-1)/n for all-gather,
    reduce-scatter and all-to-all, 1 for point-to-point (sendrecv)."""
    if collective is Collective.ALLREDUCE:
        return 2 * (n - 1) / n
    if collective in (Collective.PIPELINE, Collective.FLOWS, Collective.CUSTOM):
        return 1.0
    return (n - 1) / n


def ideal_cct_s(spec: JobSpec, host_link_mbps: float) -> float:
    """CCT on a non-blocking fabric, where only the host links (full duplex) limit, in seconds.

    Ring steps run back to back at the full link rate (the largest chunk sets each step's
    pace), all-to-all's n-1 concurrent flows share the sender's link (and the receiver's), a
    pipeline's hops run one after another. Exact when n divides S; otherwise off by at most a
    few bytes' time (chunks differ by one byte)."""
    n = spec.group_size
    bits_per_s = host_link_mbps * 1e6
    chunk = max(split_bytes(spec.size_bytes, n)) if spec.size_bytes >= n else spec.size_bytes
    if spec.collective is Collective.ALLREDUCE:
        # each rank sends and receives 2(n-1) chunks of S/n bytes, one step after another
        return 2 * (n - 1) * chunk * 8 / bits_per_s
    if spec.collective in (Collective.ALLGATHER, Collective.REDUCE_SCATTER):
        return (n - 1) * chunk * 8 / bits_per_s
    if spec.collective is Collective.ALLTOALL:
        # rank i sends every chunk but its own; receivers take n-1 chunks of their own size
        chunks = split_bytes(spec.size_bytes, n)
        busiest = max(max(spec.size_bytes - c for c in chunks), (n - 1) * max(chunks))
        return busiest * 8 / bits_per_s
    if spec.collective is Collective.PIPELINE:
        return (n - 1) * spec.size_bytes * 8 / bits_per_s
    if spec.collective is Collective.FLOWS:
        # the busiest host link (sender's or receiver's): exact when each host sends and
        # receives at most one flow, a lower bound otherwise (max-min need not reach it)
        out: dict[str, int] = {}
        inn: dict[str, int] = {}
        for src, dst in spec.groups:
            out[src] = out.get(src, 0) + 1
            inn[dst] = inn.get(dst, 0) + 1
        return max(*out.values(), *inn.values()) * spec.size_bytes * 8 / bits_per_s
    if spec.collective is Collective.CUSTOM:
        return _custom_ideal_s(spec, bits_per_s)
    raise WorkloadError(f"no closed form for {spec.collective}")  # pragma: no cover


def _custom_ideal_s(spec: JobSpec, bits_per_s: float) -> float:
    """A custom collective alone: the longer of its critical path (each transfer at the full
    link rate after those it waits for) and its busiest host link's bytes."""
    end: list[float] = []
    load: dict[tuple[str, str], int] = {}
    for t in spec.p2p:
        end.append(max((end[d] for d in t.deps), default=0.0) + t.size_bytes * 8 / bits_per_s)
        for key in (("out", t.src), ("in", t.dst)):
            load[key] = load.get(key, 0) + t.size_bytes
    return max(max(end, default=0.0), max(load.values(), default=0) * 8 / bits_per_s)


def check_after(specs: list[JobSpec]) -> None:
    """Every `after` names an earlier-defined or later job of `specs`, gaps are finite and
    >= 0, and no job waits for itself through others (WorkloadError names the job)."""
    names = {s.name: i for i, s in enumerate(specs)}
    for s in specs:
        for name, gap in s.after:
            if name not in names:
                raise WorkloadError(f"jobs.{s.name}.after: no job named {name!r}")
            if not 0 <= gap < float("inf"):
                raise WorkloadError(f"jobs.{s.name}.after: gap {gap!r} s after {name!r} must "
                                    "be a number >= 0")
    order = after_order(specs)
    if len(order) != len(specs):
        stuck = next(s.name for i, s in enumerate(specs) if i not in set(order))
        raise WorkloadError(f"jobs.{stuck}.after: waits for itself through other jobs")


def after_order(specs: list[JobSpec]) -> list[int]:
    """Indices of `specs` in an order where each job comes after the jobs it waits for
    (jobs in a cycle are left out)."""
    names = {s.name: i for i, s in enumerate(specs)}
    succ: list[list[int]] = [[] for _ in specs]
    left = [0] * len(specs)
    for i, s in enumerate(specs):
        for name, _ in s.after:
            if name in names:
                succ[names[name]].append(i)
                left[i] += 1
    ready = [i for i in range(len(specs)) if not left[i]]
    order = []
    while ready:
        i = ready.pop()
        order.append(i)
        for k in succ[i]:
            left[k] -= 1
            if not left[k]:
                ready.append(k)
    return order


def ideal_schedule(specs: list[JobSpec], host_link_mbps: float) -> dict[str, tuple[float, float]]:
    """Each job's (first start, last end) in s when every iteration takes its ideal CCT and
    jobs wait for those in `after` (a closed-form bound; the predictor's `ideal` also shares
    host links between jobs that overlap)."""
    names = {s.name: i for i, s in enumerate(specs)}
    out: dict[str, tuple[float, float]] = {}
    for i in after_order(specs):
        s = specs[i]
        start = max([s.start_s] + [out[specs[names[n]].name][1] + g for n, g in s.after])
        its = s.iterations
        out[s.name] = (start, start + its * ideal_cct_s(s, host_link_mbps)
                       + (its - 1) * s.compute_s)
    return out


def with_port_offset(plans: list[JobPlan], offset: int, emulated: bool = True
                     ) -> list[JobPlan]:
    """Copies of `plans` whose connections use source port SOURCE_PORT_BASE +
    (conn_id + offset) mod SOURCE_PORT_SPAN. Successive runs on one fabric use different
    offsets, so that a late segment of an earlier run's connection (a retransmission after its
    agents exited) can never be counted as, or mistaken for, a flow of the next run; that
    needs room (emulated); in the model a shift only changes what ECMP hashes, and 5-tuples
    unique before it stay unique (every port moves by the same amount)."""
    n = len(unique_connections(plans))
    if emulated and n > SOURCE_PORT_SPAN // 2:
        raise WorkloadError(f"{n} connections leave no room to shift source ports between runs")
    moved: dict[int, list[Connection]] = {}        # a shared list is shifted once
    for p in plans:
        if not p.spec.host_pairs and id(p.connections) not in moved:
            moved[id(p.connections)] = [
                dataclasses.replace(c, src_port=source_port(c.conn_id + offset))
                for c in p.connections]
    return [p if p.spec.host_pairs else dataclasses.replace(p, connections=moved[
        id(p.connections)]) for p in plans]

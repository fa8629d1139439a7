"""The ring planners: all-reduce (reduce-scatter then all-gather) and the one-way chains
(all-gather, reduce-scatter) around each group, as arrays (traffic/plans.Transfers); NCCL's
channels on servers (one ring per channel, traffic/nccl.py), and the hierarchical all-reduce
(reduce-scatter inside each server, all-reduce across servers per rail, all-gather inside).
The rules of each collective: traffic/collectives.py's docstring, which re-exports these.
"""
from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from .nccl import channel_groups
from .plans import (Collective, Connection, JobPlan, JobSpec, Transfers, WorkloadError,
                    check_groups, connections, split_bytes)


def ring_allreduce(spec: JobSpec, index: int, first_conn_id: int,
                   make_conns: bool = True) -> JobPlan:
    """Reduce-scatter then all-gather around each ring of `spec.groups` (see module docstring).
    make_conns=False: the transfers only (connections=[]: a job on shared connections)."""
    if spec.algorithm == "hierarchical":
        return hierarchical_allreduce(spec, index, first_conn_id, make_conns)
    if spec.channels > 1:
        return _on_channels(ring_allreduce, spec, index, first_conn_id, make_conns)
    _check_rings(spec)

    def sizes(n: int) -> np.ndarray:
        # reduce-scatter step k: rank i sends chunk (i - k); all-gather: (i + 1 - k')
        k = np.arange(2 * (n - 1))[:, None]
        i = np.arange(n)[None, :]
        chunk = np.where(k < n - 1, (i - k) % n, (i + 1 - (k - (n - 1))) % n)
        return np.array(split_bytes(spec.size_bytes, n))[chunk]
    return _ring_plan(spec, index, first_conn_id, make_conns, lambda n: 2 * (n - 1), sizes)


def ring_chain(spec: JobSpec, index: int, first_conn_id: int,
               make_conns: bool = True) -> JobPlan:
    """Ring all-gather or reduce-scatter: n-1 forwarding steps around each ring (see the
    module docstring); the step-k send of rank i waits for rank i-1's step-(k-1) send.
    make_conns=False: the transfers only (connections=[]: a job on shared connections)."""
    if spec.channels > 1:
        return _on_channels(ring_chain, spec, index, first_conn_id, make_conns)
    _check_rings(spec)
    shift = 0 if spec.collective is Collective.ALLGATHER else 1

    def sizes(n: int) -> np.ndarray:
        k = np.arange(n - 1)[:, None]
        i = np.arange(n)[None, :]
        return np.array(split_bytes(spec.size_bytes, n))[(i - k - shift) % n]
    return _ring_plan(spec, index, first_conn_id, make_conns, lambda n: n - 1, sizes)


def _ring_plan(spec: JobSpec, index: int, first_conn_id: int, make_conns: bool,
               steps_of, sizes_of) -> JobPlan:
    """The rings of `spec.groups` in order, ring r's connections numbered after ring r-1's
    and its transfers after ring r-1's; a run of rings of one size n is planned at once
    (every ring of a size sends the same bytes per step: sizes_of(n), (steps_of(n), n))."""
    conns: list[Connection] = []
    parts: list[Transfers] = []
    t0 = base = 0                        # transfers, connections so far
    for n, run in itertools.groupby(len(g) for g in spec.groups):
        if spec.size_bytes < n:
            raise WorkloadError(
                f"jobs.{spec.name}.size_bytes: must be at least the ring size ({n})")
        rings = len(list(run))
        one = _ring_steps(n, steps_of(n), 0, 0, sizes_of(n))
        parts.append(_repeat_ring(one, rings, t0, first_conn_id + base, n))
        t0, base = t0 + rings * len(one), base + rings * n
    if make_conns:
        cid = first_conn_id
        for ring in spec.groups:
            n = len(ring)
            conns += connections(spec, index, cid, ring, ring[1:] + ring[:1])
            cid += n
    return JobPlan(spec=spec, index=index, connections=conns, transfers=Transfers.join(parts))


def _on_channels(planner, spec: JobSpec, index: int, first_conn_id: int,
                 make_conns: bool) -> JobPlan:
    """The job's rings as NCCL's channels (traffic/nccl.py): channel c's rings
    (channel_groups) on split_bytes(S, channels)[c] bytes, planned by `planner` one after
    another (connections and transfers numbered on), all at once."""
    conns: list[Connection] = []
    parts: list[Transfers] = []
    cid, t0 = first_conn_id, 0
    for c, size in enumerate(split_bytes(spec.size_bytes, spec.channels)):
        sub = dataclasses.replace(spec, groups=channel_groups(spec, c), size_bytes=size,
                                  channels=1)
        p = planner(sub, index, cid, make_conns)
        ts = p.transfers
        parts.append(Transfers(ts.tid + t0, ts.conn, ts.size, ts.step, ts.dep_ptr, ts.dep + t0))
        conns.extend(p.connections)
        cid, t0 = cid + sum(len(g) for g in sub.groups), t0 + len(ts)
    return JobPlan(spec=spec, index=index, connections=conns, transfers=Transfers.join(parts))


def _repeat_ring(one: Transfers, rings: int, t0: int, conn0: int, n: int) -> Transfers:
    """`rings` copies of one ring's transfers (numbered from 0, on connections 0..n-1): copy
    r's transfers from t0 + r x len(one), on connections from conn0 + r x n."""
    per, deps = len(one), one.dep.size
    r = np.arange(rings, dtype=np.int64)[:, None]
    t_off = t0 + per * r
    ptr = np.zeros(rings * per + 1, dtype=np.int64)
    ptr[1:] = (one.dep_ptr[1:][None, :] + deps * r).ravel()
    return Transfers((one.tid + t_off).ravel(), (one.conn + conn0 + n * r).ravel(),
                     np.tile(one.size, rings), np.tile(one.step, rings), ptr,
                     (one.dep + t_off).ravel())


def _ring_steps(n: int, steps: int, t0: int, conn0: int, size: np.ndarray) -> Transfers:
    """A ring's transfers (steps x n, step-major; rank i sends on connection conn0 + i):
    rank i's step-k send waits for rank i-1's step-(k-1) send. size: (steps, n) bytes."""
    k = np.repeat(np.arange(steps, dtype=np.int64), n)
    i = np.tile(np.arange(n, dtype=np.int64), steps)
    has = k > 0
    dep = (t0 + (k - 1) * n + (i - 1) % n)[has]
    dep_ptr = np.zeros(steps * n + 1, dtype=np.int64)
    np.cumsum(has, out=dep_ptr[1:])
    return Transfers(t0 + k * n + i, conn0 + i, size.reshape(-1).astype(np.int64), k,
                     dep_ptr, dep)


def hierarchical_allreduce(spec: JobSpec, index: int, first_conn_id: int,
                           make_conns: bool = True) -> JobPlan:
    """All-reduce of S in three phases over servers of k = spec.channels GPUs (each group
    server block by server block, as traffic/nccl.on_servers orders it): reduce-scatter of S
    inside every server, all-reduce of split_bytes(S, k)[j] across the servers on rail j
    (GPU j of each), all-gather of S inside every server on the reduce-scatter's connections.
    A GPU starts a phase once it has received the last transfer of the one before."""
    k = spec.channels
    if k < 2 or any(len(g) % k for g in spec.groups):
        raise WorkloadError(f"jobs.{spec.name}.algorithm: hierarchical needs every server of "
                            "the job to hold the same number (> 1) of its GPUs")
    blocks = [g[s:s + k] for g in spec.groups for s in range(0, len(g), k)]
    flat = dataclasses.replace(spec, groups=blocks, channels=1, algorithm="ring")
    inside = ring_chain(dataclasses.replace(flat, collective=Collective.REDUCE_SCATTER),
                        index, first_conn_id)
    phases, conns = [inside], list(inside.connections)
    for j, size in enumerate(split_bytes(spec.size_bytes, k)):
        rails = [[g[s + j] for s in range(0, len(g), k)] for g in spec.groups if len(g) > k]
        if rails:
            rail = ring_allreduce(dataclasses.replace(flat, groups=rails, size_bytes=size),
                                  index, first_conn_id + len(conns))
            phases.append(rail)
            conns += rail.connections
    gather = ring_chain(dataclasses.replace(flat, collective=Collective.ALLGATHER), index,
                        first_conn_id)            # on the reduce-scatter's connections
    transfers = _chain_phases([inside, _parallel(phases[1:]), gather], conns)
    return JobPlan(spec=spec, index=index, connections=conns if make_conns else [],
                   transfers=transfers)


def _parallel(plans: list[JobPlan]) -> JobPlan | None:
    """Plans that run side by side as one phase (the rails' rings), transfers numbered on."""
    if not plans:
        return None
    parts, t0 = [], 0
    for p in plans:
        ts = p.transfers
        parts.append(Transfers(ts.tid + t0, ts.conn, ts.size, ts.step, ts.dep_ptr, ts.dep + t0))
        t0 += len(ts)
    return dataclasses.replace(plans[0], connections=[c for p in plans for c in p.connections],
                               transfers=Transfers.join(parts))


def _chain_phases(phases: list[JobPlan | None], conns: list[Connection]) -> Transfers:
    """The phases' transfers one after another (tids and steps numbered on); each GPU's
    first sends of a phase wait for the last transfer it received in the phase before."""
    index = {h: i for i, h in enumerate(dict.fromkeys(h for c in conns for h in (c.src, c.dst)))}
    cid0 = conns[0].conn_id                  # the phases' connections are numbered on
    src_of = np.array([index[c.src] for c in conns], np.int64)
    dst_of = np.array([index[c.dst] for c in conns], np.int64)
    parts, t0, s0, last = [], 0, 0, None
    for p in phases:
        if p is None:
            continue
        ts = p.transfers
        src, dst = src_of[ts.conn - cid0], dst_of[ts.conn - cid0]
        extra = np.full(len(ts), -1, np.int64)
        if last is not None:
            first = ts.step == 0
            extra[first] = last[src[first]]
        tid = ts.tid + t0
        parts.append(_with_deps(Transfers(tid, ts.conn, ts.size, ts.step + s0, ts.dep_ptr,
                                          ts.dep + t0), extra))
        top = np.full(len(index), -1, np.int64)
        np.maximum.at(top, dst, ts.step)
        mine = ts.step == top[dst]                  # each GPU's last received transfer
        last = np.full(len(index), -1, np.int64)
        last[dst[mine]] = tid[mine]
        t0, s0 = t0 + len(ts), s0 + int(ts.step.max()) + 1
    return Transfers.join(parts)


def _with_deps(ts: Transfers, extra: np.ndarray) -> Transfers:
    """ts with transfer i also waiting for extra[i] (when >= 0)."""
    has = extra >= 0
    old = np.diff(ts.dep_ptr)
    ptr = np.zeros(len(ts) + 1, np.int64)
    np.cumsum(old + has, out=ptr[1:])
    dep = np.empty(int(ptr[-1]), np.int64)
    dep[np.repeat(ptr[:-1] - ts.dep_ptr[:-1], old) + np.arange(ts.dep.size)] = ts.dep
    dep[ptr[1:][has] - 1] = extra[has]
    return Transfers(ts.tid, ts.conn, ts.size, ts.step, ptr, dep)


def ring_hops(spec: JobSpec, index: int, first_conn_id: int,
              make_conns: bool = True) -> JobPlan:
    """A ring job as one flow per hop (ring_sync "flow"), without planning its steps: hop i
    of a ring of n carries what its steps would (all-reduce 2S minus chunks i+1 and i+2,
    all-gather S minus chunk i+1, reduce-scatter S minus chunk i, chunks of split_bytes(S,
    n)), channel by channel; equal to collectives.ring_flows of the step plan."""
    _check_rings(spec)
    if spec.channels > 1:
        parts = [(channel_groups(spec, c), s)
                 for c, s in enumerate(split_bytes(spec.size_bytes, spec.channels))]
    else:
        parts = [(spec.groups, spec.size_bytes)]
    kind = Collective(spec.collective)
    conns: list[Connection] = []
    sizes: list[np.ndarray] = []
    cid = first_conn_id
    for groups, size in parts:
        for ring in groups:
            n = len(ring)
            if size < n:
                raise WorkloadError(
                    f"jobs.{spec.name}.size_bytes: must be at least the ring size ({n})")
            chunk, i = np.array(split_bytes(size, n), dtype=np.int64), np.arange(n)
            sizes.append(2 * size - chunk[(i + 1) % n] - chunk[(i + 2) % n]
                         if kind is Collective.ALLREDUCE else
                         size - chunk[(i + 1) % n] if kind is Collective.ALLGATHER else
                         size - chunk[i])
            if make_conns:
                conns += connections(spec, index, cid, ring, ring[1:] + ring[:1])
            cid += n
    m = cid - first_conn_id
    return JobPlan(spec=spec, index=index, connections=conns, transfers=Transfers(
        np.arange(m, dtype=np.int64), np.arange(first_conn_id, cid, dtype=np.int64),
        np.concatenate(sizes) if sizes else np.zeros(0, np.int64), np.zeros(m, np.int64),
        np.zeros(m + 1, np.int64), np.zeros(0, np.int64)))


def _check_rings(spec: JobSpec) -> None:
    """The planners' checks of a ring job's groups (WorkloadError naming the job)."""
    if Collective(spec.collective) is Collective.ALLREDUCE:
        for ring in spec.groups:
            if len(ring) < 2:
                raise WorkloadError(f"jobs.{spec.name}.hosts: a ring needs at least 2 hosts")
    else:
        check_groups(spec)

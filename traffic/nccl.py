"""Collectives as NCCL runs them on servers of several GPUs (testbed/servers.py): one
transform of the jobs, as subflows are one, applied when the fabric has NVLink.

* Rail-aligned rings (all-reduce, all-gather, reduce-scatter; NCCL's ring algorithm, what it
  picks for large messages). A ring's ranks go server by server, and inside a server by GPU
  index. When every server of the ring holds the same k > 1 of its ranks, the ring runs as
  k channels (NCCL's channels, one per NIC), each on split_bytes(S, k)[c] bytes, channel c's
  order rotated by c inside every server: 2 servers x 4 GPUs, channel 1 is
  g1 g2 g3 g0 | g1 g2 g3 g0 (server 1 | server 2), so its hop between servers leaves
  server 1 from g0 for g1 of server 2. Hops inside a server cross NVLink only.
* Hierarchical all-reduce (`algorithm: hierarchical`, traffic/rings.py): reduce-scatter
  inside every server, all-reduce across servers per rail, all-gather inside.
* PXN (`pxn`, NCCL's default since 2.12): a transfer to a GPU of another server whose GPU
  index (its NIC's rail) differs from the sender's first crosses NVLink to the sender's
  server GPU of the receiver's index, which sends it through its own NIC: the bytes stay on
  one rail. Above, channel 1's hop g0 -> g1 of server 2 leaves by g1's NIC of server 1.
  Without PXN the sender's own NIC sends it, across rails. The same rule holds for
  all-to-all and every other collective.

Not modelled (docs/servers.md): NCCL's tree, NVLS, CollNet and PAT algorithms.
"""
from __future__ import annotations

import dataclasses
from operator import attrgetter

from testbed.servers import ServerMap

from .plans import Collective, JobPlan, JobSpec, relayed

#: A job's `algorithm` on servers: rail-aligned rings, or (all-reduce) the hierarchical one.
ALGORITHMS = ("ring", "hierarchical")

#: The collectives NCCL runs as rings (channels apply to them).
RING_COLLECTIVES = (Collective.ALLREDUCE, Collective.ALLGATHER, Collective.REDUCE_SCATTER)


def rail_order(group: list[str], servers: ServerMap) -> tuple[list[str], int]:
    """A ring's ranks server by server (servers in order of first appearance), by GPU index
    inside each, and its channels: k when every server holds k > 1 of its ranks and the ring
    spans several servers, else 1."""
    first: dict[int, int] = {}
    for h in group:
        first.setdefault(servers.place[h][0], len(first))
    order = sorted(group, key=lambda h: (first[servers.place[h][0]], servers.place[h][1]))
    counts = {s: 0 for s in first}
    for h in group:
        counts[servers.place[h][0]] += 1
    k = next(iter(counts.values()))
    channels = k if len(counts) > 1 and k > 1 and all(c == k for c in counts.values()) else 1
    return order, channels


def on_servers(spec: JobSpec, servers: ServerMap) -> JobSpec:
    """`spec` as NCCL runs it on these servers: rings in rail order with their channels
    (every ring of the job must agree on them, else one channel), and PXN's relays applied
    when planned (`spec.servers`)."""
    spec = dataclasses.replace(spec, servers=servers)
    if Collective(spec.collective) not in RING_COLLECTIVES:
        return spec
    ordered = [rail_order(list(g), servers) for g in spec.groups]
    channels = {c for _, c in ordered}
    return dataclasses.replace(spec, groups=[g for g, _ in ordered],
                               channels=channels.pop() if len(channels) == 1 else 1)


def channel_groups(spec: JobSpec, c: int) -> list[list[str]]:
    """Channel c's rings: each ring's server blocks (spec.channels ranks each) rotated by c."""
    k = spec.channels
    return [[h for s in range(0, len(g), k) for h in (g[s + c:s + k] + g[s:s + c])]
            for g in spec.groups]


def pxn_connections(plan: JobPlan) -> JobPlan:
    """The plan's connections with PXN's relays (ServerMap.relay): each such connection
    leaves by the relay's NIC, `nvlink_from` naming the GPU whose bytes it carries."""
    spec = plan.spec
    if spec.servers is None or not spec.pxn:
        return plan
    conns = plan.connections
    relays = spec.servers.relays_of(map(attrgetter("src"), conns),
                                    map(attrgetter("dst"), conns))
    if all(r is None for r in relays):
        return plan
    out = [c if r is None else relayed(c, r) for c, r in zip(conns, relays)]
    return dataclasses.replace(plan, connections=out)

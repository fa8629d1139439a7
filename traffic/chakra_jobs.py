"""Chakra traces (traffic/chakra.py reads them) to JobSpecs on streams: pure code.

Rank r runs on hosts[r]. Within a rank, a node starts when its dependencies have ended
(a dependency on a node missing from the file is ignored and counted, as Chakra's feeder
ignores it) and lasts duration_micros (us), except communication, which lasts what the network
makes it last: every time is kept as terms {job: s after it ends} (traffic/streams.py), so
each job waits for exactly the jobs and compute before it.

* The k-th collective of a process group, over all its ranks, is one job (all-reduce,
  all-gather, reduce-scatter, all-to-all over the group's hosts in rank order), queued after
  the group's (k-1)-th: a process group is a stream. pg_name "" or "0" is every rank (as
  ASTRA-sim reads it); other names come from `comm_groups` or the trace's METADATA nodes
  (`process_group:init`: [{"pg_name": .., "ranks": [..]}], empty ranks: every rank).
* REDUCE, GATHER, SCATTER, BROADCAST, BARRIER and REDUCE_SCATTER_BLOCK run as a delay of
  their duration_micros, as ASTRA-sim replays BROADCAST; a collective node without comm_type
  (a CPU-side op of a PyTorch-derived trace) likewise; each is counted.
* A send matched with its receive (src, dst, tag, in order) is a transfer: the receive ends
  when it has arrived. Transfers linked by a rank's dependencies (a send after a receive, as a
  ring's steps are) form one job: a custom collective (Collective.CUSTOM) with its own
  dependency DAG; a lone send is a point-to-point job. Compute inside a custom collective
  (a reduction's kernels) is not modelled: its CCT is the network's.

Errors are ChakraError with one line naming the file and the record.
"""
from __future__ import annotations

import json
from pathlib import Path

from traffic.chakra import (COLL, COLLECTIVES, MAX_COMM_BYTES, METADATA, RECV, SEND,
                            UNMODELLED, ChakraError, Node)
from traffic.collectives import P2P, Collective, JobSpec
from traffic.streams import MAX_AFTER, START, Notes

Terms = dict[str, float]


def _merge(into: Terms, other: Terms, shift: float = 0.0) -> None:
    for k, v in other.items():
        v += shift
        if into.get(k, -1.0) < v:
            into[k] = v


def _int_attr(path: Path, n: Node, key: str, lo: int, hi: int) -> int:
    v = n.comm(key)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ChakraError(f"{path}: record {n.record}: node {n.id} needs an integer {key}")
    if not lo <= v <= hi:
        raise ChakraError(f"{path}: record {n.record}: {key} {v} is not from {lo} to {hi}")
    return v


def metadata_groups(traces, ranks: int) -> dict[str, list[int]]:
    """Process groups recorded in METADATA nodes (ASTRA-sim's issue_pytorch_pg_metadata)."""
    out: dict[str, list[int]] = {}
    for path, nodes in traces.values():
        for n in nodes:
            if n.type != METADATA or len(n.inputs) < 4:
                continue
            try:
                items = json.loads(n.inputs[2:-2])
                for it in items:
                    rs = [int(r) for r in it["ranks"]] or list(range(ranks))
                    out[str(it["pg_name"])] = rs
            except (ValueError, TypeError, KeyError):
                raise ChakraError(f"{path}: record {n.record}: a METADATA node's process "
                                  "groups are not [{\"pg_name\": .., \"ranks\": [..]}]") from None
    return out


class _Rank:
    """One rank's nodes in an order where dependencies come first."""

    def __init__(self, rank: int, path: Path, nodes: list[Node], notes: Notes):
        self.rank, self.path, self.nodes = rank, path, nodes
        self.by_id: dict[int, Node] = {}
        for n in nodes:
            if n.id in self.by_id:
                raise ChakraError(f"{path}: record {n.record}: node id {n.id} appears twice")
            self.by_id[n.id] = n
        self.deps = {n.id: tuple(d for d in dict.fromkeys(n.deps) if d in self.by_id)
                     for n in nodes}
        missing = sum(len(set(n.deps)) - len(self.deps[n.id]) for n in nodes)
        if missing:
            notes.skip("dependencies on nodes missing from the file (ignored)", missing)
        ctrl = {n.id: set(n.ctrl) - set(n.deps[:len(n.deps) - len(n.ctrl)]) for n in nodes}
        every = self.deps
        self.deps = {i: tuple(d for d in ds if d not in ctrl[i]) for i, ds in every.items()}
        self.order = self._topological()              # on data dependencies
        pos = {n.id: k for k, n in enumerate(self.order)}
        self.deps = {i: tuple(d for d in ds if d not in ctrl[i] or pos[d] < pos[i])
                     for i, ds in every.items()}
        cut = sum(len(every[i]) - len(self.deps[i]) for i in every)
        if cut:
            notes.skip("control dependencies that close a cycle (ignored)", cut)

    def _topological(self) -> list[Node]:
        """Dependencies first. A control dependency that would close a cycle is then dropped
        (Chakra's feeder schedules on data dependencies; its PyTorch-derived test trace has
        such cycles)."""
        state: dict[int, int] = {}
        order: list[Node] = []
        for root in self.nodes:
            stack = [root.id]
            while stack:
                nid = stack[-1]
                if state.get(nid) == 2:
                    stack.pop()
                    continue
                state[nid] = 1
                todo = []
                for d in self.deps[nid]:
                    if state.get(d) == 1:
                        n = self.by_id[nid]
                        raise ChakraError(f"{self.path}: record {n.record}: dependency cycle "
                                          f"through node {d}")
                    if state.get(d) != 2:
                        todo.append(d)
                if todo:
                    stack.extend(todo)
                    continue
                state[nid] = 2
                order.append(self.by_id[nid])
                stack.pop()
        return order


class _Builder:
    """Matches collectives and transfers across ranks, then times every node in terms."""

    def __init__(self, traces, hosts: list[str], groups: dict[str, list[int]], notes: Notes):
        self.hosts, self.notes = hosts, notes
        self.ranks = len(traces)
        self.groups = groups
        self.rk = [_Rank(r, p, nodes, notes) for r, (p, nodes) in sorted(traces.items())]
        self.coll_of: dict[tuple[int, int], tuple[str, int]] = {}   # (rank, node) -> (pg, k)
        self.colls: dict[tuple[str, int], list[tuple[int, Node]]] = {}
        self.xfer_of: dict[tuple[int, int], int] = {}               # (rank, node) -> transfer
        self.xfers: list[tuple[int, int, int, Node]] = []           # src, dst, size, send
        self.delays: set[tuple[int, int]] = set()
        self.links: list[tuple[int, int]] = []                       # receives' predecessors

    # -- classification ------------------------------------------------------------------
    def members(self, path: Path, n: Node) -> tuple[str, list[int]]:
        pg = n.comm("pg_name", "")
        if not isinstance(pg, str):
            raise ChakraError(f"{path}: record {n.record}: pg_name must be a string")
        if pg in ("", "0") and pg not in self.groups:
            return "", list(range(self.ranks))
        rs = self.groups.get(pg)
        if rs is None:
            raise ChakraError(f"{path}: record {n.record}: unknown process group {pg!r} "
                              f"(known: {sorted(self.groups)[:5]}; give jobs_from.comm_groups)")
        if len(rs) > len(self.hosts) or any(not 0 <= r < self.ranks for r in rs):
            raise ChakraError(f"{path}: record {n.record}: process group {pg!r} has "
                              f"{len(rs)} ranks {rs[:4]}..., larger than the fabric "
                              f"({len(self.hosts)} hosts) or beyond the {self.ranks} traces")
        return pg, rs

    def classify(self) -> None:
        sends: dict[tuple[int, int, int], list[tuple[int, Node]]] = {}
        recvs: dict[tuple[int, int, int], list[tuple[int, Node]]] = {}
        for rk in self.rk:
            count: dict[str, int] = {}
            for n in rk.nodes:
                if n.type == COLL:
                    self._collective(rk, n, count)
                elif n.type in (SEND, RECV):
                    peer = _int_attr(rk.path, n, "comm_dst" if n.type == SEND else "comm_src",
                                     0, self.ranks - 1)
                    tag = n.comm("comm_tag", 0)
                    key = (rk.rank, peer, tag) if n.type == SEND else (peer, rk.rank, tag)
                    (sends if n.type == SEND else recvs).setdefault(key, []).append((rk.rank, n))
        for key, sent in sends.items():
            got = recvs.get(key, [])
            if len(got) < len(sent):
                rank, n = sent[len(got)]
                raise ChakraError(f"{self.rk[rank].path}: record {n.record}: send to rank "
                                  f"{key[1]} (tag {key[2]}) has no matching receive")
            for (rank, s), (rr, r) in zip(sent, got):
                size = _int_attr(self.rk[rank].path, s, "comm_size", 1, MAX_COMM_BYTES)
                self.xfer_of[rank, s.id] = self.xfer_of[rr, r.id] = len(self.xfers)
                self.xfers.append((key[0], key[1], size, s))
        for key, got in recvs.items():
            if len(got) > len(sends.get(key, [])):
                rank, n = got[len(sends.get(key, []))]
                raise ChakraError(f"{self.rk[rank].path}: record {n.record}: receive from "
                                  f"rank {key[0]} (tag {key[2]}) has no matching send")

    def _collective(self, rk: _Rank, n: Node, count: dict[str, int]) -> None:
        t = n.comm("comm_type")
        if t is None or isinstance(t, bool) or not isinstance(t, int):
            self.notes.skip("collective nodes without comm_type (run as their duration)")
            self.delays.add((rk.rank, n.id))
            return
        if t in UNMODELLED:
            self.notes.skip(f"{UNMODELLED[t]} (run as its duration, as ASTRA-sim does)")
            self.delays.add((rk.rank, n.id))
            return
        if t not in COLLECTIVES:
            raise ChakraError(f"{rk.path}: record {n.record}: unknown comm_type {t}")
        pg, rs = self.members(rk.path, n)
        if rk.rank not in rs:
            raise ChakraError(f"{rk.path}: record {n.record}: rank {rk.rank} is not in its "
                              f"process group {pg!r}")
        k = count.get(pg, 0)
        count[pg] = k + 1
        self.coll_of[rk.rank, n.id] = (pg, k)
        self.colls.setdefault((pg, k), []).append((rk.rank, n))

    # -- transfers into jobs ------------------------------------------------------------
    def transfer_deps(self) -> list[set[int]]:
        """Each transfer's nearest transfers before its send on the sender's rank (through
        compute, not through collectives)."""
        deps: list[set[int]] = [set() for _ in self.xfers]
        for rk in self.rk:
            anc: dict[int, set[int]] = {}
            for n in rk.order:
                a: set[int] = set()
                for d in rk.deps[n.id]:
                    t = self.xfer_of.get((rk.rank, d))
                    if t is not None:
                        a.add(t)
                    elif (rk.rank, d) not in self.coll_of:
                        a |= anc[d]
                anc[n.id] = a
                t = self.xfer_of.get((rk.rank, n.id))
                if t is not None and n.type == SEND:
                    deps[t] = a
                elif t is not None:
                    self.links.extend((t, x) for x in a)   # posted after them: one job
        return deps

    def p2p_jobs(self) -> tuple[list[JobSpec], list[str]]:
        """One job per set of linked transfers; and each transfer's job name."""
        deps = self.transfer_deps()
        parent = list(range(len(self.xfers)))

        def root(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i
        for t, ds in enumerate(deps):
            for d in ds:
                parent[root(d)] = root(t)
        for t, d in self.links:
            parent[root(d)] = root(t)
        comps: dict[int, list[int]] = {}
        for t in range(len(self.xfers)):
            comps.setdefault(root(t), []).append(t)
        specs, name_of = [], [""] * len(self.xfers)
        for members in comps.values():
            spec = self._p2p_spec(members, deps, len(specs))
            for t in members:
                name_of[t] = spec.name
            specs.append(spec)
        return specs, name_of

    def _p2p_spec(self, members: list[int], deps: list[set[int]], c: int) -> JobSpec:
        h = self.hosts
        src, dst, size, s = self.xfers[members[0]]
        if len(members) == 1:
            return JobSpec(f"r{src}n{s.id}-send", Collective.PIPELINE, [[h[src], h[dst]]], size)
        order, done, left = [], set(), list(members)
        while left:                         # transfers after those they wait for
            ready = [t for t in left if deps[t] <= done]
            if not ready:
                raise ChakraError(f"{self.rk[src].path}: record {s.record}: the sends and "
                                  "receives linked to this send wait for one another")
            order += ready
            done |= set(ready)
            left = [t for t in left if t not in done]
        pos = {t: i for i, t in enumerate(order)}
        p2p = tuple(P2P(h[self.xfers[t][0]], h[self.xfers[t][1]], self.xfers[t][2],
                        tuple(sorted(pos[d] for d in deps[t]))) for t in order)
        ranks = sorted({x for t in order for x in self.xfers[t][:2]})
        sent: dict[int, int] = {}
        for t in order:
            sent[self.xfers[t][0]] = sent.get(self.xfers[t][0], 0) + self.xfers[t][2]
        return JobSpec(f"custom{c}-r{src}n{s.id}", Collective.CUSTOM, [[h[r] for r in ranks]],
                       max(sent.values()), p2p=p2p)

    # -- times ---------------------------------------------------------------------------
    def timing(self, coll_name: dict[tuple[str, int], str], xfer_name: list[str]
               ) -> tuple[dict[str, Terms], Terms]:
        """Each job's start terms (over its ranks' nodes), and the program's end terms."""
        start_of: dict[str, Terms] = {}
        tail: Terms = {}
        count = 0
        for rk in self.rk:
            end: dict[int, Terms] = {}
            for n in rk.order:
                start: Terms = {}
                for d in rk.deps[n.id]:
                    _merge(start, end[d])
                if not rk.deps[n.id]:
                    start[START] = 0.0
                job = (coll_name.get(self.coll_of.get((rk.rank, n.id)))
                       or (xfer_name[self.xfer_of[rk.rank, n.id]]
                           if (rk.rank, n.id) in self.xfer_of else None))
                if job is None:
                    e: Terms = {}
                    _merge(e, start, n.duration_s)
                elif n.type == RECV:
                    e = dict(start)
                    _merge(e, {job: 0.0})
                else:
                    _merge(start_of.setdefault(job, {}), start)
                    e = {job: 0.0}
                end[n.id] = e
                count += len(e)
                if count > 20 * MAX_AFTER:
                    raise ChakraError(f"{rk.path}: more than {20 * MAX_AFTER:,} dependency "
                                      "terms between collectives")
            for n in rk.order:
                _merge(tail, end[n.id])
        return start_of, tail

    def collective_specs(self) -> tuple[list[JobSpec], dict[tuple[str, int], str]]:
        """One job per (process group, k-th collective) seen on every rank of its group."""
        specs, names = [], {}
        for (pg, k), got in self.colls.items():
            rank0, n0 = got[0]
            path0 = self.rk[rank0].path
            _, want = self.members(path0, n0)
            kind = COLLECTIVES[n0.comm("comm_type")]
            size = _int_attr(path0, n0, "comm_size", 0, MAX_COMM_BYTES)
            for rank, n in got:
                if COLLECTIVES.get(n.comm("comm_type")) != kind or n.comm("comm_size") != size:
                    raise ChakraError(f"{self.rk[rank].path}: record {n.record}: collective "
                                      f"{k} of group {pg!r} differs from rank {rank0}'s "
                                      f"({kind.value}, {size} B)")
            if sorted(r for r, _ in got) != sorted(want):
                raise ChakraError(f"{path0}: record {n0.record}: collective {k} of group "
                                  f"{pg!r} is missing on ranks "
                                  f"{sorted(set(want) - {r for r, _ in got})[:5]}")
            if len(want) < 2 or size < len(want):
                self.notes.skip("collectives in groups of one rank or smaller than their "
                                "group (no traffic)")
                continue
            name = f"r{rank0}n{n0.id}-{kind.value}"[:64]
            names[pg, k] = name
            specs.append(JobSpec(name, kind, [[self.hosts[r] for r in want]], size))
        return specs, names


def job_specs(traces, hosts: list[str], host_link_mbps: float,
              groups: dict[str, list[int]] | None = None,
              notes: Notes | None = None) -> list[JobSpec]:
    """The traces' communication as JobSpecs on streams, rank r -> hosts[r]; `groups` maps
    a pg_name to its ranks (ASTRA-sim's communicator groups) over the trace's own."""
    notes = notes if notes is not None else Notes("chakra", "us")
    ranks = len(traces)
    if ranks > len(hosts):
        raise ChakraError(f"{traces[0][0]}: {ranks} ranks but the fabric has {len(hosts)} "
                          "hosts")
    b = _Builder(traces, hosts, {**metadata_groups(traces, ranks), **(groups or {})}, notes)
    b.classify()
    colls, coll_name = b.collective_specs()
    p2p, xfer_name = b.p2p_jobs()
    start_of, tail = b.timing(coll_name, xfer_name)
    last: dict[str, str] = {}                  # stream (process group) -> its latest job
    for (pg, k), name in sorted(coll_name.items(), key=lambda kv: kv[0][1]):
        spec = next(s for s in colls if s.name == name)
        _stream(spec, start_of.get(name, {}), last.get(pg))
        spec.stream = f"pg {pg}"
        last[pg] = name
    for spec in p2p:
        _stream(spec, start_of.get(spec.name, {}), None)
    specs = sorted(colls + p2p, key=lambda s: s.start_s)
    notes.collectives = len(specs)
    notes.tail = tail
    return specs


def _stream(spec: JobSpec, start: Terms, prev: str | None) -> None:
    """Set the job's start_s and after from its start terms and its stream's previous job."""
    after = {k: v for k, v in start.items() if k not in (START, spec.name)}
    if prev is not None:
        after[prev] = max(after.get(prev, 0.0), 0.0)
    spec.start_s = start.get(START, 0.0)
    spec.after = tuple(after.items())

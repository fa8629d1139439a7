"""The `jobs` section: explicit collectives (experiments/config/explicit.py), model jobs
(traffic/models.py), Hedera's patterns (traffic/patterns.py) and program jobs
(experiments/config/programs.py), and the size of what they plan, counted before it is built.
"""
from __future__ import annotations

import dataclasses
import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

from testbed.fabric import Fabric
from traffic.collectives import (SOURCE_PORT_SPAN, SPLITS, Collective, JobSpec, WorkloadError,
                                 group_counts, plan_key, share_key)
from traffic.nccl import ALGORITHMS, on_servers
from traffic.predictor import LAZY_TRANSFERS

from .limits import (BYTES_HELD_PER_TRANSFER, BYTES_PER_CONNECTION, BYTES_PER_TRANSFER, MAX_DP,
                     MAX_ITERATIONS, MAX_JOBS, MAX_PIECE_BYTES, MAX_PREDICT_BYTES,
                     MAX_SCALE_BYTES, MAX_SEED, MAX_SIZE_BYTES, MAX_SUBFLOWS, MAX_TRANSFER_RUNS,
                     MIN_PIECE_BYTES, PIECE_WHY)
from .explicit import explicit_job, hosts_list
from .keys import MODEL_JOB_KEYS, PATTERN_JOB_KEYS
from .programs import program_job
from .readers import ConfigError, _check_keys, _int, _num, _fmt, _name, _choice, quote
from .records import SubflowDefaults


def _model_job(d: dict, where: str, fabric: Fabric, rng: random.Random,
               used: set[str]) -> JobSpec:
    _check_keys(d, MODEL_JOB_KEYS, where)
    from traffic import models  # the presets live with the workloads
    name = _name(d, "name", where)
    model = _choice(d, "model", where, sorted(models.MODELS))
    placement = _choice(d, "placement", where, list(models.PLACEMENTS), "random-tors",
                        " (explicit placement: list the rings as groups of a collective job)")
    dp = _int(d, "dp", where, minimum=2, maximum=MAX_DP)
    scale = _num(d, "scale_bytes", where, 1.0, maximum=MAX_SCALE_BYTES)
    ring_bytes = models.MODELS[model].ring_bytes(scale)
    if ring_bytes > MAX_SIZE_BYTES:
        raise ConfigError(f"{where}.scale_bytes: {scale:g} gives {ring_bytes:,} bytes per ring, "
                          f"more than {MAX_SIZE_BYTES:,} (1 TiB)")
    try:
        return models.model_job(
            name=name, model=model, dp=dp, fabric=fabric, rng=rng, used=used,
            iterations=_int(d, "iterations", where, 1, maximum=MAX_ITERATIONS),
            start_s=_num(d, "start_s", where, 0.0, positive=False),
            compute_s=(_num(d, "compute_s", where, positive=False)
                       if "compute_s" in d else None),
            scale_bytes=scale, placement=placement)
    except WorkloadError as e:
        raise ConfigError(_job_key(str(e), [name], where)) from None


def _pattern_job(d: dict, where: str, fabric: Fabric, seed: int, used: set[str]) -> JobSpec:
    """Hedera's long-flow patterns (traffic/patterns.py) over `hosts` (default: every host
    that no other job uses), one flow of size_bytes per sender."""
    from traffic import patterns
    _check_keys(d, PATTERN_JOB_KEYS, where)
    name = _name(d, "name", where)
    pattern = _choice(d, "pattern", where, list(patterns.PATTERNS))
    for key, only in (("stride", "stride"), ("p_leaf", "staggered"), ("p_pod", "staggered"),
                      ("hotspots", "hotspot"), ("flows_per_host", "random")):
        if key in d and pattern != only:
            raise ConfigError(f"{where}.{key}: only for pattern: {only} (this job is "
                              f"pattern: {pattern}); remove it")
    hosts = (hosts_list(d["hosts"], f"{where}.hosts", fabric) if "hosts" in d
             else [h for h in fabric.hosts if h not in used])
    if len(set(hosts)) != len(hosts):
        raise ConfigError(f"{where}.hosts: a host is listed twice")
    if len(hosts) < 2:
        raise ConfigError(f"{where}.hosts: a pattern needs at least 2 hosts, {len(hosts)} free")
    p_leaf = _num(d, "p_leaf", where, 0.0, positive=False, maximum=1.0)
    p_pod = _num(d, "p_pod", where, 0.0, positive=False, maximum=1.0)
    if p_leaf + p_pod > 1.0:
        raise ConfigError(f"{where}.p_pod: p_leaf + p_pod = {_fmt(p_leaf + p_pod)} > 1; "
                          "they are probabilities of disjoint choices")
    if pattern == "stride" and "stride" not in d:
        raise ConfigError(f"{where}.stride: missing; host x sends to x + stride, e.g. "
                          "stride: 4")
    per_host = _int(d, "flows_per_host", where, 1, maximum=len(hosts) - 1)
    flows = len(hosts) * per_host           # counted before they are drawn (a flow each)
    if predict_bytes(flows, flows) > MAX_PREDICT_BYTES:
        raise ConfigError(f"{where}.flows_per_host: {len(hosts):,} hosts x {per_host:,} = "
                          f"{flows:,} flows pass the {MAX_PREDICT_BYTES / 2 ** 30:.0f} GiB a "
                          "prediction may take on this machine; use fewer flows per host")
    try:
        pairs = patterns.pattern_pairs(
            fabric, hosts, pattern, _int(d, "seed", where, seed, minimum=0, maximum=MAX_SEED),
            stride_hosts=_int(d, "stride", where, 1, maximum=len(hosts) - 1),
            p_leaf=p_leaf, p_pod=p_pod,
            hotspots=_int(d, "hotspots", where, 1, maximum=len(hosts) - 1),
            flows_per_host=per_host)
    except WorkloadError as e:
        raise ConfigError(f"{where}.{e}") from None
    return JobSpec(
        name=name, collective=Collective.FLOWS, groups=[list(p) for p in pairs],
        size_bytes=_int(d, "size_bytes", where, maximum=MAX_SIZE_BYTES, why="1 TiB"),
        iterations=_int(d, "iterations", where, 1, maximum=MAX_ITERATIONS),
        compute_s=_num(d, "compute_s", where, 0.0, positive=False),
        start_s=_num(d, "start_s", where, 0.0, positive=False))


def _job_key(msg: str, names: list[str], *wheres: str) -> str:
    """traffic/ names a job's key `jobs.<name>.key`; the config's messages say `jobs[i].key`."""
    for name, where in zip(names, wheres or [f"jobs[{i}]" for i in range(len(names))]):
        for prefix in (f"jobs.{name}.", f"jobs.{name}:"):
            if msg.startswith(prefix):
                return where + msg[len(prefix) - 1:]
    return msg


def _program_hosts(fabric: Fabric, rng: random.Random, used: set[str]):
    """A program job's hosts: `hosts` as listed, or `ranks` placed by `placement`."""
    from traffic import models

    def hosts_of(d: dict, where: str) -> list[str]:
        if "hosts" in d:
            if "placement" in d or "ranks" in d:
                raise ConfigError(f"{where}: give hosts, or placement and ranks, not both")
            return hosts_list(d["hosts"], f"{where}.hosts", fabric)
        placement = _choice(d, "placement", where, list(models.PLACEMENTS), "packed")
        ranks = _int(d, "ranks", where, maximum=len(fabric.hosts))
        try:
            return models.place(fabric, ranks, placement, rng, used, f"jobs.{d.get('name')}",
                                f"{where}.ranks")
        except WorkloadError as e:
            raise ConfigError(str(e)) from None
    return hosts_of


def _jobs(v: Any, fabric: Fabric, seed: int, base_dir=None) -> tuple[list[JobSpec], list]:
    """The jobs (collectives, and program jobs' declared traffic as host pairs) and the
    program jobs (traffic/programs.py ProgramSpec)."""
    if not isinstance(v, list) or not v:
        raise ConfigError("jobs: expected a non-empty list of jobs")
    if len(v) > MAX_JOBS:
        raise ConfigError(f"jobs: {len(v):,} jobs; at most {MAX_JOBS:,} (each listens on its "
                          "own port)")
    rng = random.Random(seed)
    for i, d in enumerate(v):
        if not isinstance(d, dict):
            raise ConfigError(f"jobs[{i}]: expected a mapping with name, collective, hosts, "
                              f"..., got {type(d).__name__}")
    # explicit jobs first, so that placed jobs avoid the hosts they already use; then model
    # jobs in order; pattern jobs last (by default they take every host still free)
    kinds = {i: ("program" if "program" in d else "model" if "model" in d
                 else "pattern" if "pattern" in d else "explicit") for i, d in enumerate(v)}
    explicit = {i: explicit_job(d, f"jobs[{i}]", fabric)
                for i, d in enumerate(v) if kinds[i] == "explicit"}
    used = {h for j in explicit.values() for h in j.hosts}
    hosts_of = _program_hosts(fabric, rng, used)
    programs = {i: program_job(d, f"jobs[{i}]", fabric, rng, used, base_dir, hosts_of)
                for i, d in enumerate(v) if kinds[i] == "program" and "hosts" in d}
    used.update(h for p, _ in programs.values() for h in p.hosts)
    placed = {i: _model_job(d, f"jobs[{i}]", fabric, rng, used)
              for i, d in enumerate(v) if kinds[i] == "model"}
    programs.update({i: program_job(d, f"jobs[{i}]", fabric, rng, used, base_dir, hosts_of)
                     for i, d in enumerate(v) if kinds[i] == "program" and "hosts" not in d})
    placed.update({i: _pattern_job(d, f"jobs[{i}]", fabric, seed, used)
                   for i, d in enumerate(v) if kinds[i] == "pattern"})
    placed.update({i: programs[i][1] for i in programs if programs[i][1] is not None})
    index = [i for i in range(len(v)) if i in explicit or i in placed]
    jobs: list[JobSpec] = [explicit[i] if i in explicit else placed[i] for i in index]
    names: set[str] = set()
    for name in ([j.name for j in jobs if not j.host_pairs]
                 + [programs[i][0].name for i in sorted(programs)]):
        if name in names:
            raise ConfigError(f"jobs: job name {name!r} appears twice; names must be unique")
        names.add(name)
    ranks = [(i, j.name, j.hosts if j.collective is not Collective.FLOWS
              else list(dict.fromkeys(j.hosts))) for i, j in zip(index, jobs)
             if not j.host_pairs]
    ranks += [(i, p.name, list(p.hosts)) for i, (p, _) in programs.items()]
    seen: dict[str, str] = {}
    for i, name, hosts in sorted(ranks, key=lambda r: r[0]):
        # a flows job's host may send and receive in several pairs; any other rank is one host
        for h in hosts:
            if h in seen:
                key = "groups" if "groups" in v[i] else "hosts"
                also = "in this job" if seen[h] == name else f"also in job {seen[h]!r}"
                raise ConfigError(f"jobs[{i}].{key}: host {h!r} is listed twice ({also}); "
                                  "give each rank its own host")
            seen[h] = name
    return jobs, [programs[i][0] for i in sorted(programs)]


def subflow_settings(jobs: list[JobSpec], doc: dict) -> tuple[list[JobSpec], SubflowDefaults]:
    """Each job's `subflows` (1..MAX_SUBFLOWS), `split` and `split_piece_bytes`: its own keys,
    else the config's top-level ones, and the top-level values. traffic/collectives.py's
    split_subflows turns them into connections and parts when the jobs are planned."""
    top = SubflowDefaults(
        _int(doc, "subflows", "config", 1, maximum=MAX_SUBFLOWS,
             why="NCCL's sockets per connection"),
        _choice(doc, "split", "config", SPLITS, "even"),
        _int(doc, "split_piece_bytes", "config", 1 << 20, minimum=MIN_PIECE_BYTES,
             maximum=MAX_PIECE_BYTES, why=PIECE_WHY))
    raw = doc.get("jobs") if isinstance(doc.get("jobs"), list) else []
    out = []
    for i, j in enumerate(jobs):
        d = raw[i] if i < len(raw) and isinstance(raw[i], dict) else {}
        where = f"jobs[{i}]"
        if j.host_pairs and top.subflows > 1:
            raise ConfigError(f"subflows: {top.subflows} cannot apply to {where} "
                              f"({j.name}), a program's traffic routed by host pair (its "
                              "subflows are the program's own); drop the top-level subflows")
        k = _int(d, "subflows", where, top.subflows, maximum=MAX_SUBFLOWS,
                 why="NCCL's sockets per connection")
        split = _choice(d, "split", where, SPLITS, top.split)
        piece = _int(d, "split_piece_bytes", where, top.split_piece_bytes,
                     minimum=MIN_PIECE_BYTES, maximum=MAX_PIECE_BYTES, why=PIECE_WHY)
        new = dataclasses.replace(j, subflows=k, split=split, split_piece_bytes=piece)
        out.append(j if new == j else new)
    return out, top


def server_settings(jobs: list[JobSpec], doc: dict, fabric: Fabric) -> list[JobSpec]:
    """Each job's `pxn` (default true, NCCL's) and `algorithm` (ring, or hierarchical for an
    all-reduce) and, on a fabric with NVLink, the job as NCCL runs it on its servers
    (traffic/nccl.py: rail-aligned ring channels, PXN's relays)."""
    raw = doc.get("jobs") if isinstance(doc.get("jobs"), list) else []
    servers = fabric.server_map
    out = []
    for i, j in enumerate(jobs):
        d = raw[i] if i < len(raw) and isinstance(raw[i], dict) else {}
        pxn = d.get("pxn", True)
        if not isinstance(pxn, bool):
            raise ConfigError(f"jobs[{i}].pxn: expected true or false, got {quote(pxn)}")
        algorithm = _choice(d, "algorithm", f"jobs[{i}]", ALGORITHMS, "ring")
        if ("pxn" in d or algorithm != "ring") and servers is None:
            key = "pxn" if "pxn" in d else "algorithm"
            raise ConfigError(f"jobs[{i}].{key}: this needs servers of several GPUs on NVLink; "
                              f"give fabric.gpus_per_server and nvlink_mbps, or drop {key}")
        if servers is not None and not j.host_pairs:
            j = on_servers(dataclasses.replace(j, pxn=pxn, algorithm=algorithm), servers)
            _check_algorithm(j, i, doc)
        out.append(j)
    return out


def _check_algorithm(j: JobSpec, i: int, doc: dict) -> None:
    """A hierarchical all-reduce: an all-reduce over servers that each hold the same number
    (> 1) of its GPUs, planned in its phases (ring_sync: rank); ConfigError otherwise."""
    if j.algorithm != "hierarchical":
        return
    sem = doc.get("semantics") if isinstance(doc.get("semantics"), dict) else {}
    if Collective(j.collective) is not Collective.ALLREDUCE or j.channels < 2:
        raise ConfigError(f"jobs[{i}].algorithm: hierarchical is an all-reduce over servers "
                          "that each hold the same number (> 1) of its GPUs; use ring")
    if sem.get("ring_sync", "rank") != "rank":
        raise ConfigError(f"jobs[{i}].algorithm: hierarchical runs in three phases, which "
                          "semantics.ring_sync: flow would overlap; use ring_sync: rank")


def _counts(j: JobSpec, ring_sync: str = "rank") -> tuple[int, int]:
    """(connections, transfers per iteration) job j plans, counted without planning it."""
    if j.p2p:                           # a custom collective: its given transfers
        return len({(x.src, x.dst) for x in j.p2p}) * j.subflows, len(j.p2p) * j.subflows
    c = t = 0
    for n, k in Counter(map(len, j.groups)).items():     # groups of each size, counted once
        gc, gt, _ = group_counts(j.collective, n, ring_sync)
        c, t = c + k * gc * j.subflows * j.channels, t + k * gt * j.subflows * j.channels
    return c, t


def counted(jobs: list[JobSpec], ring_sync: str = "rank", connections: str = "job"
            ) -> Iterator[tuple[JobSpec, int, int, int]]:
    """(job, its new connections, its transfers per iteration, the transfers it holds) as
    plan_jobs would plan them: under connections "stream" a job that shares an earlier job's
    connections adds none, and from the third job equal on them in all its planner reads
    (`plan_key`) on it holds the second's transfers, none of its own."""
    shared: set[tuple] = set()
    plans: Counter = Counter()
    for j in jobs:
        c, t = _counts(j, ring_sync)
        key = share_key(j) if connections == "stream" else None
        held = t
        if key is not None:
            c = 0 if key in shared else c
            shared.add(key)
            again = (key, plan_key(j))
            held = 0 if plans[again] >= 2 else t
            plans[again] += 1
        yield j, c, t, held


def predict_bytes(transfers: int, connections: int, in_flight: int | None = None,
                  held: int | None = None) -> int:
    """The memory a prediction of that many transfers per iteration and connections takes,
    at most, when at most `in_flight` of the transfers are in jobs in flight at once (None:
    all) and `held` of them are planned arrays of their own (None: all; shared plans hold
    one); bytes, measured (experiments/config/limits.py)."""
    flying = transfers if in_flight is None else min(in_flight, transfers)
    return ((transfers if held is None else held) * BYTES_HELD_PER_TRANSFER
            + flying * (BYTES_PER_TRANSFER - BYTES_HELD_PER_TRANSFER)
            + connections * BYTES_PER_CONNECTION)


class _InFlight:
    """The most transfers in jobs in flight at once, bounded before the run: a stream runs
    one job at a time (its largest counts), a job on no stream may run beside any other, and
    below LAZY_TRANSFERS the predictor holds every job's DAG at once."""

    def __init__(self) -> None:
        self.loose = self.total = 0
        self.streams: dict[str, int] = {}
        self.most = 0                                 # sum of self.streams' values

    def add(self, j: JobSpec, transfers: int) -> int:
        """Count job j (its transfers per iteration); the bound so far."""
        self.total += transfers
        if j.stream:
            old = self.streams.get(j.stream, 0)
            if transfers > old:
                self.streams[j.stream] = transfers
                self.most += transfers - old
        else:
            self.loose += transfers
        return self.bound

    @property
    def bound(self) -> int:
        return self.total if self.total <= LAZY_TRANSFERS else self.loose + self.most


def predict_size(jobs: list[JobSpec], ring_sync: str = "rank", connections: str = "job"
                 ) -> tuple[int, int, int]:
    """(connections, transfers per iteration, predict_bytes) of `jobs`, as _check_size
    counts them."""
    conns = transfers = held = 0
    flight = _InFlight()
    for j, c, t, h in counted(jobs, ring_sync, connections):
        conns, transfers, held = conns + c, transfers + t, held + h
        flight.add(j, t)
    return conns, transfers, predict_bytes(transfers, conns, flight.bound, held)


def _check_size(jobs: list[JobSpec], routing: list[str], source: str | None = None,
                ring_sync: str = "rank", connections: str = "job") -> None:
    """Connections and transfers, counted before they are built (as semantics' ring_sync
    and connections plan them: a stream's shared connections count once). `source`: the
    jobs_from key the jobs came from (messages then name it and the job)."""
    conns = transfers = runs = held = 0
    past = None                        # where the memory estimate passed MAX_PREDICT_BYTES
    flight = _InFlight()
    for i, (j, c, t, h) in enumerate(counted(jobs, ring_sync, connections)):
        where = f"jobs_from.{source}: job {j.name}" if source else f"jobs[{i}]"
        conns, transfers, runs = conns + c, transfers + t, runs + t * j.iterations
        held += h
        if predict_bytes(transfers, conns, flight.add(j, t), held) > MAX_PREDICT_BYTES \
                and past is None:
            past = where
        if past is None and runs > MAX_TRANSFER_RUNS:
            raise ConfigError(f"{where}{'' if source else '.iterations'}: the jobs up to here "
                              f"run {runs:,} "
                              f"transfers in all; at most {MAX_TRANSFER_RUNS:,}: use fewer "
                              "iterations or smaller groups")
    if past is not None:
        need = predict_bytes(transfers, conns, flight.bound, held)
        raise ConfigError(f"{past}: passes the {MAX_PREDICT_BYTES / 2 ** 30:.0f} GiB a "
                          f"prediction may take on this machine (the jobs send {transfers:,} "
                          f"transfers per iteration over {conns:,} connections, "
                          f"~{need / 2 ** 30:,.1f} GiB at ~{BYTES_HELD_PER_TRANSFER} B per "
                          f"transfer, ~{BYTES_PER_TRANSFER} B per transfer of the jobs in "
                          f"flight at once and ~{BYTES_PER_CONNECTION:,} B per connection); use "
                          f"fewer or smaller groups{_lighter(source, ring_sync, connections)}")


def _lighter(source: str | None, ring_sync: str, connections: str) -> str:
    """The semantics an imported workload could use to need less, as the error's hint."""
    if source is None or (ring_sync == "flow" and connections == "stream"):
        return ""
    if connections != "stream":
        return (", or semantics.connections: stream (a stream's collectives share their "
                "connections: docs/prediction.md)")
    return ", or semantics.ring_sync: flow (rings as flows: docs/prediction.md)"


def check_source_ports(jobs: list[JobSpec], routing: list[str]) -> None:
    """`run`'s bound (not `predict`'s): every routing's run on one fabric gives each
    connection its own TCP source port, so routings x connections must fit half the
    source-port span (the other half shifts between repetitions)."""
    conns = sum(_counts(j)[0] for j in jobs)
    if len(routing) * conns > SOURCE_PORT_SPAN // 2:
        raise ConfigError(f"routing: {len(routing)} routings x {conns} connections exceed "
                          f"the {SOURCE_PORT_SPAN // 2} source ports runs can use without "
                          "reusing one another's; list fewer routings or smaller jobs "
                          "(`predict` has no such bound)")

"""floodns traffic pairs in: the reference paper's experiment inputs as our JobSpecs.

Pure code. floodns (ofircohen205/dcn-simulators, MIT) reads one file per job from a traffic
folder, `job_<id>-<MODEL>.txt`, one line per directed ring edge after a `#` header:

    src dst src_tor dst_tor start_time_ns flow_size_bytes compute_time_ns ring_index
    544 256 14 5 10978710563 7333333334 1238769231 0

Its topology (the same in all of the paper's runs) is a 2-level leaf-spine: ToRs 0..63,
cores 64..95, servers 96..2143 with 32 per ToR (server s on ToR (s - 96) // 32), every link
100 bit/ns in each direction. We map it one to one onto our fabric keys:

    server s -> host h{s - 95}     ToR t -> leaf{t + 1}     core c -> spine{c - 63}
    64 ToRs x 32 cores x 32 servers, 100 bit/ns -> leaves 64, spines 32, hosts_per_leaf 32,
    host_link_mbps = spine_link_mbps = 100,000
    k failed cores (floodns fails the highest ids, 96 - k .. 95) -> spine{33 - k}..spine32

Each ring index is one ring: its edges form a cycle (ring order = the cycle from the first
listed edge's source). A ring of R servers all-reduces R x flow_size bytes in our terms: our
ring all-reduce sends size_bytes / R per step, which is exactly floodns's flow_size. Start and
compute times are the files' nanoseconds in seconds. floodns runs 11 iterations per job.

Errors are FloodnsError with one line naming the file and line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from traffic import files
from traffic.collectives import Collective, JobSpec

#: floodns's run length: 11 iterations are logged (a 12th runs only its first step).
FLOODNS_ITERATIONS = 11
#: Bits per ns of every floodns link (`link_data_rate_bit_per_ns`) -> Mbit/s.
MBPS_PER_BIT_PER_NS = 1000.0
#: A traffic folder holds at most this many job files, a file at most this many lines.
MAX_JOB_FILES = 1000
MAX_LINES = 1_000_000
_FILE_RE = re.compile(r"job_(\d+)-([A-Za-z0-9._]+)\.txt")
#: Bounds of the numbers in a line (ns and bytes): one week and 1 TiB, as our configs allow.
MAX_NS = 7 * 86_400 * 10 ** 9
MAX_FLOW_BYTES = 2 ** 40


class FloodnsError(ValueError):
    """A floodns input we cannot read; the message names the file and line."""


@dataclass(frozen=True)
class FloodnsTopology:
    """floodns's 2-level topology: node ids are ToRs, then cores, then servers."""

    tors: int = 64
    cores: int = 32
    servers_per_tor: int = 32
    link_bit_per_ns: float = 100.0

    @property
    def first_core(self) -> int:
        return self.tors

    @property
    def first_server(self) -> int:
        return self.tors + self.cores

    @property
    def servers(self) -> int:
        return self.tors * self.servers_per_tor

    def tor_of(self, server: int) -> int:
        return (server - self.first_server) // self.servers_per_tor

    def host(self, server: int) -> str:
        """Server id -> our host name (h1 is server 96)."""
        return f"h{server - self.first_server + 1}"

    def leaf(self, tor: int) -> str:
        return f"leaf{tor + 1}"

    def spine(self, core: int) -> str:
        return f"spine{core - self.first_core + 1}"

    def failed_spines(self, failed_cores: int) -> list[str]:
        """floodns fails the `failed_cores` highest core ids: our highest spines."""
        if not 0 <= failed_cores < self.cores:
            raise FloodnsError(f"failed_cores: must be from 0 to {self.cores - 1}, "
                               f"got {failed_cores}")
        return [self.spine(c) for c in range(self.first_server - failed_cores,
                                             self.first_server)]

    def fabric_section(self, failed_cores: int = 0) -> dict:
        """Our `fabric:` YAML keys for this topology with `failed_cores` failed."""
        mbps = self.link_bit_per_ns * MBPS_PER_BIT_PER_NS
        return {"spines": self.cores, "leaves": self.tors,
                "hosts_per_leaf": self.servers_per_tor, "host_link_mbps": mbps,
                "spine_link_mbps": mbps, "failed_spines": self.failed_spines(failed_cores)}


PAPER_TOPOLOGY = FloodnsTopology()


@dataclass
class FloodnsJob:
    """One job file: its rings (server ids in ring order, keyed by ring_index)."""

    job_id: int
    model: str
    path: Path
    rings: dict[int, list[int]]
    start_ns: int
    flow_bytes: int
    compute_ns: int

    @property
    def name(self) -> str:
        """Our job name: the file's stem, e.g. job_0-BLOOM."""
        return f"job_{self.job_id}-{self.model}"

    def spec(self, topo: FloodnsTopology = PAPER_TOPOLOGY,
             iterations: int = FLOODNS_ITERATIONS) -> JobSpec:
        """This job as a ring all-reduce JobSpec on our hosts (one group per ring)."""
        groups = [[topo.host(s) for s in self.rings[k]] for k in sorted(self.rings)]
        size = max(len(g) for g in groups)
        return JobSpec(name=self.name, collective=Collective.ALLREDUCE, groups=groups,
                       size_bytes=self.flow_bytes * size, iterations=iterations,
                       compute_s=self.compute_ns / 1e9, start_s=self.start_ns / 1e9)


def _ring_order(edges: list[tuple[int, int, int]], where: str) -> list[int]:
    """The cycle through a ring's (src, dst, line) edges, from the first edge's source."""
    nxt: dict[int, int] = {}
    dsts: set[int] = set()
    for src, dst, line in edges:
        if src in nxt:
            raise FloodnsError(f"{where}:{line}: server {src} sends twice in one ring; a "
                               "ring's edges must form one cycle")
        if dst in dsts:
            raise FloodnsError(f"{where}:{line}: server {dst} receives twice in one ring; a "
                               "ring's edges must form one cycle")
        nxt[src] = dst
        dsts.add(dst)
    order = [edges[0][0]]
    while True:             # each server sends and receives at most once: a path or a cycle
        s = nxt.get(order[-1])
        if s is None:
            raise FloodnsError(f"{where}:{edges[0][2]}: the ring is not closed (server "
                               f"{order[-1]} receives but never sends)")
        if s == order[0]:
            break
        order.append(s)
    if len(order) < len(nxt):
        raise FloodnsError(f"{where}:{edges[0][2]}: the ring's {len(nxt)} edges form more "
                           "than one cycle")
    return order


def _ints(line: str, where: str) -> list[int]:
    parts = line.split()
    if len(parts) != 8:
        raise FloodnsError(f"{where}: expected 8 columns (src dst src_tor dst_tor "
                           f"start_time flow_size compute_time ring_index), got {len(parts)}")
    try:
        return [int(p) for p in parts]
    except ValueError:
        raise FloodnsError(f"{where}: every column must be an integer") from None


def read_job_file(path: str | Path, topo: FloodnsTopology = PAPER_TOPOLOGY) -> FloodnsJob:
    """Parse one `job_<id>-<MODEL>.txt`; FloodnsError (file:line: ...) on bad input."""
    p = Path(path)
    m = _FILE_RE.fullmatch(p.name)
    if not m:
        raise FloodnsError(f"{p}: not a floodns job file name (job_<id>-<MODEL>.txt)")
    try:
        text = files.read_text(p)
    except files.InputFileError as e:
        raise FloodnsError(str(e)) from None
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        raise FloodnsError(f"{p}: {len(lines):,} lines; at most {MAX_LINES:,}")
    rings: dict[int, list[tuple[int, int, int]]] = {}
    first: tuple[int, int, int, int] | None = None
    lo, hi = topo.first_server, topo.first_server + topo.servers - 1
    for n, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{p}:{n}"
        src, dst, stor, dtor, start, size, compute, ring = _ints(line, where)
        for what, s, tor in (("src", src, stor), ("dst", dst, dtor)):
            if not lo <= s <= hi:
                raise FloodnsError(f"{where}: {what} {s} is not a server ({lo}..{hi})")
            if topo.tor_of(s) != tor:
                raise FloodnsError(f"{where}: server {s} sits on ToR {topo.tor_of(s)}, the "
                                   f"line says {tor}")
        if src == dst:
            raise FloodnsError(f"{where}: a connection from server {src} to itself")
        if not 0 <= start <= MAX_NS or not 0 <= compute <= MAX_NS:
            raise FloodnsError(f"{where}: start_time and compute_time must be from 0 to "
                               f"{MAX_NS:,} ns (one week)")
        if not 1 <= size <= MAX_FLOW_BYTES:
            raise FloodnsError(f"{where}: flow_size must be from 1 to {MAX_FLOW_BYTES:,} "
                               "bytes")
        if ring < 0:
            raise FloodnsError(f"{where}: ring_index must be >= 0")
        if first is None:
            first = (start, size, compute, n)
        elif (start, size, compute) != first[:3]:
            raise FloodnsError(f"{where}: start_time, flow_size and compute_time differ "
                               f"from line {first[3]}; one job has one of each")
        rings.setdefault(ring, []).append((src, dst, n))
    if first is None:
        raise FloodnsError(f"{p}: no ring edges (an empty or truncated file)")
    order = {k: _ring_order(v, str(p)) for k, v in sorted(rings.items())}
    tors = {topo.tor_of(s) for r in order.values() for s in r}
    if len(tors) < 2:
        raise FloodnsError(f"{p}: the job sits on one ToR, and floodns skips such jobs; "
                           "remove the file")
    return FloodnsJob(int(m.group(1)), m.group(2), p, order, *first[:3])


def read_traffic_dir(path: str | Path, topo: FloodnsTopology = PAPER_TOPOLOGY
                     ) -> list[FloodnsJob]:
    """Every job file of a floodns traffic folder (e.g. concurrent_jobs_3/ring_size_4), in
    job id order; a server used by two jobs is an error."""
    d = Path(path)
    if not d.is_dir():
        raise FloodnsError(f"{d}: no such floodns traffic folder")
    files = sorted(f for f in d.iterdir() if f.is_file() and f.suffix == ".txt")
    if not files:
        raise FloodnsError(f"{d}: no job_<id>-<MODEL>.txt files")
    if len(files) > MAX_JOB_FILES:
        raise FloodnsError(f"{d}: {len(files)} job files; at most {MAX_JOB_FILES}")
    jobs = sorted((read_job_file(f, topo) for f in files), key=lambda j: j.job_id)
    owner: dict[int, str] = {}
    ids: set[int] = set()
    for j in jobs:
        if j.job_id in ids:
            raise FloodnsError(f"{j.path}: job id {j.job_id} appears in two files")
        ids.add(j.job_id)
        for s in (s for r in j.rings.values() for s in r):
            if s in owner and owner[s] != j.name:
                raise FloodnsError(f"{j.path}: server {s} is also used by {owner[s]}")
            owner[s] = j.name
    return jobs


def job_specs(path: str | Path, iterations: int = FLOODNS_ITERATIONS,
              topo: FloodnsTopology = PAPER_TOPOLOGY) -> list[JobSpec]:
    """A floodns traffic folder as our JobSpecs (see the module docstring for the mapping)."""
    return [j.spec(topo, iterations) for j in read_traffic_dir(path, topo)]

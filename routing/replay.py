"""Route replay: each connection takes the path floodns logged for it.

Pure code. floodns writes `logs_floodns/flow_info.csv`, one line per flow and no header:

    flow_id,src,dst,path,start_ns,end_ns,duration_ns,size_bits,mean_rate_bit_per_ns,
    0,544,256,544-[1857]->14-[1800]->68-[649]->5-[704]->256,10978710564,11565377231,...

`path` alternates node ids and link ids: server -> ToR -> core -> ToR -> server (a flow within
one ToR has no core). Our connection src -> dst (hosts, mapped as in traffic/floodns.py) is
matched to floodns's flows from the same server to the same server; they are taken in order of
start, and the first one's path is the connection's (leaf, spine, leaf). That is exact when
floodns never moves a flow (its ECMP hashes (src, dst) only, so every iteration repeats the
same paths); `ReplayLog.changed_pairs` counts the pairs whose later flows took another path
(floodns's central strategies reroute in flight and log only the last path: compare our own
strategies with theirs instead).

The plan is fixed for the whole run (like a host-enforced plan): experiments/predict.py gives
it to the controller's policy as `static`.
"""
from __future__ import annotations

import io
import re
import time
from dataclasses import dataclass, field
from pathlib import Path as FilePath

from testbed.fabric import Fabric
from traffic.collectives import Connection
from traffic.floodns import PAPER_TOPOLOGY, FloodnsTopology

from .base import RoutingError, RoutingPlan, SolveStats
from .paths import Path

#: The routing name that replays a flow log (not one of STRATEGIES: it needs the log).
REPLAY = "replay"
#: A flow log longer than this is refused (the paper's largest runs log ~100,000 flows).
MAX_LOG_LINES = 20_000_000
#: ... and bytes (floodns writes ~60 bytes a line): a file past this is refused unread.
MAX_LOG_BYTES = 2 * 1024 ** 3
_HOP = re.compile(r"-\[\d+\]->")


class ReplayError(RoutingError):
    """A flow log that cannot be read or does not fit the experiment; names file and line."""


@dataclass
class ReplayLog:
    """(src server, dst server) -> the switch nodes of its first flow (the earliest start;
    of equal starts, the smaller path), and how many distinct switch paths its flows took."""

    path: FilePath
    first: dict[tuple[int, int], tuple[int, ...]] = field(default_factory=dict)
    paths: dict[tuple[int, int], int] = field(default_factory=dict)
    lines: int = 0

    def first_path(self, src: int, dst: int) -> tuple[int, ...] | None:
        return self.first.get((src, dst))

    @property
    def changed_pairs(self) -> int:
        """Pairs whose flows did not all take one path."""
        return sum(1 for n in self.paths.values() if n > 1)

    def keep(self, runs: dict[tuple[int, int], dict[tuple[int, ...], int]]) -> None:
        """Keep each pair's first path and path count from `runs`: pair -> {switch path:
        its earliest start (ns)}."""
        for pair, starts in runs.items():
            self.first[pair] = (next(iter(starts)) if len(starts) == 1
                                else min((s, p) for p, s in starts.items())[1])
            self.paths[pair] = len(starts)


def read_flow_log(path: str | FilePath) -> ReplayLog:
    """Parse floodns's flow_info.csv; ReplayError (file:line: ...) on bad input."""
    p = FilePath(path)
    if not p.is_file():
        raise ReplayError(f"{p}: no such floodns flow log (logs_floodns/flow_info.csv)")
    if p.stat().st_size > MAX_LOG_BYTES:
        raise ReplayError(f"{p}: {p.stat().st_size:,} bytes; at most {MAX_LOG_BYTES:,}")
    log = ReplayLog(p)
    runs: dict[tuple[int, int], dict[tuple[int, ...], int]] = {}
    try:
        data = p.read_bytes()
        if _read_well_formed(log, data):
            return log
        with io.TextIOWrapper(io.BytesIO(data), encoding="utf-8") as f:
            for n, line in enumerate(f, start=1):
                if n > MAX_LOG_LINES:
                    raise ReplayError(f"{p}: more than {MAX_LOG_LINES:,} lines")
                if line.strip():
                    _add_flow(runs, line, f"{p}:{n}")
                    log.lines = n
    except (OSError, UnicodeDecodeError) as e:
        raise ReplayError(f"{p}: cannot be read ({type(e).__name__})") from None
    if not runs:
        raise ReplayError(f"{p}: no flows (an empty floodns flow log)")
    log.keep(runs)
    return log


#: A well-formed line: ASCII digits, then src,dst,path (group 1, checked once per distinct
#: text by _read_well_formed) and start. A file of such lines only is read at once; any
#: other goes line by line (_add_flow), which names the first bad line.
_LINE = re.compile(rb"^[^,\n]*,(\d+,\d+,\d[\d\[\]>-]*),\d+,.*$", re.MULTILINE)
#: ... and its start too, read only for the pairs that took more than one path.
_LINE_START = re.compile(rb"^[^,\n]*,(\d+,\d+,\d[\d\[\]>-]*),(\d+),", re.MULTILINE)
#: A path's text: 3-5 nodes, node and link ids alternating.
_PATH = re.compile(rb"\d+(?:-\[\d+\]->\d+){2,4}")
_HOP_BYTES = re.compile(rb"-\[\d+\]->")


def _read_well_formed(log: ReplayLog, data: bytes) -> bool:
    """Fill `log` from the whole file's bytes when they are ASCII, every line is well formed
    and every path runs from its src to its dst (what line by line gives, ~0.03 s instead of
    0.45 s of CPU for floodns's 64,320-line logs: a flow's start is read only where its pair
    took more than one path); False, `log` untouched, if not."""
    if not data.isascii():
        return False
    if not data.endswith(b"\n"):
        data += b"\n"
    lines = data.count(b"\n")
    if lines > MAX_LOG_LINES:
        return False
    keys = _LINE.findall(data)
    if len(keys) != lines:              # one match per line at most: a line did not match
        return False
    runs: dict[tuple[int, int], dict[tuple[int, ...], int]] = {}
    switches: dict[bytes, tuple[tuple[int, int], tuple[int, ...]]] = {}
    for key in dict.fromkeys(keys):     # the distinct src,dst,path texts, in order
        src, dst, path = key.split(b",")
        if not _PATH.fullmatch(path):
            return False
        nodes = tuple(int(x) for x in _HOP_BYTES.split(path))
        if nodes[0] != int(src) or nodes[-1] != int(dst):
            return False                # line by line: names the line
        pair, hops = (int(src), int(dst)), nodes[1:-1]
        switches[key] = pair, hops
        runs.setdefault(pair, {})[hops] = -1            # its start: read below if needed
    moved = {k for k, (pair, _) in switches.items() if len(runs[pair]) > 1}
    if moved:
        for key, start in _LINE_START.findall(data):
            if key in moved:
                pair, hops = switches[key]
                s, starts = int(start), runs[pair]
                if starts[hops] < 0 or s < starts[hops]:
                    starts[hops] = s
    log.keep(runs)
    log.lines = lines
    return True


def _add_flow(runs: dict[tuple[int, int], dict[tuple[int, ...], int]], line: str,
              where: str) -> None:
    cols = line.rstrip("\n").split(",")
    if len(cols) < 6:
        raise ReplayError(f"{where}: expected flow_id,src,dst,path,start,end,... "
                          f"({len(cols)} columns)")
    try:
        src, dst, start = int(cols[1]), int(cols[2]), int(cols[4])
        nodes = tuple(int(x) for x in _HOP.split(cols[3]))
    except ValueError:
        raise ReplayError(f"{where}: src, dst, start and the path's nodes must be integers "
                          f"(path like 544-[1857]->14-[1800]->68-[649]->5-[704]->256)") from None
    if len(nodes) < 3 or nodes[0] != src or nodes[-1] != dst:
        raise ReplayError(f"{where}: the path must run from src {src} to dst {dst} over "
                          "switches")
    starts = runs.setdefault((src, dst), {})
    hops = nodes[1:-1]
    if hops not in starts or start < starts[hops]:
        starts[hops] = start


def _switch_path(fabric: Fabric, nodes: tuple[int, ...], topo: FloodnsTopology,
                 conn: Connection) -> Path | None:
    """floodns switch ids (ToR [core ToR]) -> our (leaf, spine, leaf), None within a leaf."""
    if len(nodes) == 1:
        return None
    if len(nodes) != 3 or not (topo.first_core <= nodes[1] < topo.first_server):
        raise ReplayError(f"flow {conn.job}:{conn.src}->{conn.dst}: logged path over "
                          f"{list(nodes)} is not ToR-core-ToR")
    path = (topo.leaf(nodes[0]), topo.spine(nodes[1]), topo.leaf(nodes[2]))
    a, b = fabric.leaf_of(conn.src), fabric.leaf_of(conn.dst)
    if (path[0], path[2]) != (a, b) or path not in fabric.switch_paths(a, b):
        raise ReplayError(f"flow {conn.job}:{conn.src}->{conn.dst}: logged path "
                          f"{'/'.join(path)} is not a live path from {a} to {b} here")
    return path


def server_of(host: str, topo: FloodnsTopology = PAPER_TOPOLOGY) -> int:
    """Our host name -> floodns server id (h1 is server 96)."""
    return int(host[1:]) - 1 + topo.first_server


def route_replay(fabric: Fabric, conns: list[Connection], log: ReplayLog,
                 topo: FloodnsTopology = PAPER_TOPOLOGY) -> RoutingPlan:
    """Every connection's path from `log` (its first flow's); RoutingError when one has no
    logged flow or its path is not live in `fabric` (e.g. failed spines differ)."""
    t0 = time.perf_counter()
    path_of: dict[int, Path | None] = {}
    for c in conns:
        nodes = log.first_path(server_of(c.src, topo), server_of(c.dst, topo))
        if nodes is None:
            raise ReplayError(f"flow {c.job}:{c.src}->{c.dst} (servers "
                              f"{server_of(c.src, topo)}->{server_of(c.dst, topo)}) is not in "
                              f"{log.path}")
        path_of[c.conn_id] = _switch_path(fabric, nodes, topo, c)
    status = f"replayed {log.path.name} ({log.changed_pairs} pairs changed path)"
    return RoutingPlan(REPLAY, path_of, SolveStats(time.perf_counter() - t0, status, None, None))

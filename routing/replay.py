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
    """(src server, dst server) -> the switch-node paths of its flows, in order of start."""

    path: FilePath
    flows: dict[tuple[int, int], list[tuple[int, tuple[int, ...]]]] = field(default_factory=dict)
    lines: int = 0

    def first_path(self, src: int, dst: int) -> tuple[int, ...] | None:
        runs = self.flows.get((src, dst))
        return None if not runs else min(runs)[1]

    @property
    def changed_pairs(self) -> int:
        """Pairs whose flows did not all take one path."""
        return sum(1 for runs in self.flows.values() if len({p for _, p in runs}) > 1)


def read_flow_log(path: str | FilePath) -> ReplayLog:
    """Parse floodns's flow_info.csv; ReplayError (file:line: ...) on bad input."""
    p = FilePath(path)
    if not p.is_file():
        raise ReplayError(f"{p}: no such floodns flow log (logs_floodns/flow_info.csv)")
    if p.stat().st_size > MAX_LOG_BYTES:
        raise ReplayError(f"{p}: {p.stat().st_size:,} bytes; at most {MAX_LOG_BYTES:,}")
    log = ReplayLog(p)
    try:
        with p.open(encoding="utf-8") as f:
            if _read_well_formed(log, f.read()):
                return log
            f.seek(0)
            for n, line in enumerate(f, start=1):
                if n > MAX_LOG_LINES:
                    raise ReplayError(f"{p}: more than {MAX_LOG_LINES:,} lines")
                if line.strip():
                    _add_flow(log, line, f"{p}:{n}")
                    log.lines = n
    except (OSError, UnicodeDecodeError) as e:
        raise ReplayError(f"{p}: cannot be read ({type(e).__name__})") from None
    if not log.flows:
        raise ReplayError(f"{p}: no flows (an empty floodns flow log)")
    return log


#: A well-formed line (ASCII digits, 3-5 nodes on the path): a file of such lines only is
#: read at once by _read_well_formed; any other goes line by line (_add_flow), which names
#: the first bad line.
_LINE = re.compile(r"^[^,\n]*,(\d+),(\d+),(\d+(?:-\[\d+\]->\d+){2,4}),(\d+),[^,\n]*(?:,[^\n]*)?$",
                   re.ASCII | re.MULTILINE)


def _read_well_formed(log: ReplayLog, text: str) -> bool:
    """Fill `log` from the whole file's text when every line is well formed and every path
    runs from its src to its dst (the same flows, in the same order, as line by line: 0.2 s
    instead of 0.45 s of CPU for floodns's 47,168-line logs); False, `log` untouched, if not."""
    if not text.endswith("\n"):
        text += "\n"
    lines = text.count("\n")
    if lines > MAX_LOG_LINES:
        return False
    rows = _LINE.findall(text)
    if len(rows) != lines:              # one match per line at most: a line did not match
        return False
    nodes = {path: tuple(int(x) for x in _HOP.split(path)) for path in {r[2] for r in rows}}
    for src, dst, path in {r[:3] for r in rows}:
        if nodes[path][0] != int(src) or nodes[path][-1] != int(dst):
            return False                # line by line: names the line
    switches = {path: n[1:-1] for path, n in nodes.items()}
    flows: dict[tuple[int, int], list[tuple[int, tuple[int, ...]]]] = {}
    by_text: dict[tuple[str, str], list] = {}
    for src, dst, path, start in rows:
        runs = by_text.get((src, dst))
        if runs is None:
            runs = by_text[src, dst] = flows.setdefault((int(src), int(dst)), [])
        runs.append((int(start), switches[path]))
    log.flows, log.lines = flows, lines
    return True


def _add_flow(log: ReplayLog, line: str, where: str) -> None:
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
    log.flows.setdefault((src, dst), []).append((start, nodes[1:-1]))


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

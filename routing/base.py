"""What every routing strategy returns: one spine per connection, plus how the solve went.

Pure code. A strategy is a function (fabric, connections, seed, previous) -> RoutingPlan.
Intra-leaf connections take no spine (None). Link loads count flows (connections) per directed
leaf->spine and spine->leaf link, the quantity the paper's ILP minimizes.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from testbed.fabric import Fabric
from traffic.collectives import Connection


class RoutingError(ValueError):
    """A connection that no live path can carry, or an unknown strategy."""


@dataclass
class SolveStats:
    time_s: float
    status: str = "ok"                       # e.g. "optimal", "feasible", "heuristic", "hash"
    gap: float | None = None                 # relative optimality gap; None where unknown
    lower_bound_link_flows: int | None = None
    # Solver strategies (ilp, mmf) only, None elsewhere: whether the MILP solver (CBC) ran at
    # all (False: optimality was proven by a bound, e.g. the warm start met the lower bound, so
    # `time_s` is no CBC time), and how many CBC solves were made.
    solver_ran: bool | None = None
    solver_calls: int | None = None
    # which solvers ran ("cbc", "highs", "cbc, highs"); None when none did
    solver: str | None = None
    # mmf on paths: the rounds left unproven, each {"layer": "jobs" | "links", "k": level,
    # "found": the count kept, "bound": its proven lower bound}: the stated gap of a
    # "feasible" status. None (and absent from as_dict) elsewhere.
    open_rounds: list[dict] | None = None

    def as_dict(self) -> dict:
        out = {"time_s": self.time_s, "status": self.status, "gap": self.gap,
               "lower_bound_link_flows": self.lower_bound_link_flows,
               "solver_ran": self.solver_ran, "solver_calls": self.solver_calls,
               "solver": self.solver}
        if self.open_rounds is not None:
            out["open_rounds"] = self.open_rounds
        return out


@dataclass
class RoutingPlan:
    """A route per connection: `path_of[conn_id]` is a switch path (leafA, ..., leafB), one of
    Fabric.switch_paths, or None within one leaf. (A leaf-spine kernel may name just the
    spine; `routing.route` turns it into the path.)"""

    strategy: str
    path_of: dict[int, tuple[str, ...] | str | None]
    stats: SolveStats = field(default_factory=lambda: SolveStats(0.0))

    @property
    def spine_of(self) -> dict[int, str | None]:
        """Leaf-spine view: each route's spine (None within a leaf)."""
        return {cid: p if p is None or isinstance(p, str) else (p[1] if len(p) == 3 else None)
                for cid, p in self.path_of.items()}


def inter_leaf(fabric: Fabric, conns: list[Connection]) -> list[Connection]:
    return [c for c in conns if fabric.leaf_of(c.src) != fabric.leaf_of(c.dst)]


def _switch_paths(fabric: Fabric, conns: list[Connection],
                  routes: dict[int, tuple[str, ...] | str | None]) -> Iterator[tuple[str, ...]]:
    """Each routed connection's switch path (a leaf-spine route's spine made leaf-spine-leaf)."""
    for c in conns:
        r = routes.get(c.conn_id)
        if r is None:
            continue
        yield (fabric.leaf_of(c.src), r, fabric.leaf_of(c.dst)) if isinstance(r, str) else tuple(r)


def link_flow_counts(fabric: Fabric, conns: list[Connection],
                     routes: dict[int, tuple[str, ...] | str | None]) -> Counter:
    """Flows per directed switch-to-switch link, every tier; a route is a switch path (or, in
    a leaf-spine fabric, its spine)."""
    load: Counter = Counter()
    for r in _switch_paths(fabric, conns, routes):
        for e in zip(r, r[1:]):
            load[e] += 1
    return load


def max_link_flows(fabric: Fabric, conns: list[Connection],
                   routes: dict[int, tuple[str, ...] | str | None]) -> int:
    """The most flows on any switch link (by link ids when every route is a live path)."""
    ids: list[int] = []
    for r in _switch_paths(fabric, conns, routes):
        got = fabric.route_links(r)
        if got is None:                  # (a route that is not a live path: count by name)
            return max(link_flow_counts(fabric, conns, routes).values(), default=0)
        ids += got
    return int(np.bincount(ids).max()) if ids else 0


def lower_bound_link_flows(fabric: Fabric, conns: list[Connection]) -> int:
    """No routing beats ceil(flows leaving (entering) a leaf / its live uplinks (downlinks))."""
    out_deg: Counter = Counter()
    in_deg: Counter = Counter()
    for c in inter_leaf(fabric, conns):
        out_deg[fabric.leaf_of(c.src)] += 1
        in_deg[fabric.leaf_of(c.dst)] += 1
    bound = 0
    for leaf, d in out_deg.items():
        up = sum(fabric.is_live(leaf, s) for s in fabric.spines)
        bound = max(bound, math.ceil(d / up))
    for leaf, d in in_deg.items():
        down = sum(fabric.is_live(s, leaf) for s in fabric.spines)
        bound = max(bound, math.ceil(d / down))
    return bound


# -- flat integer view for the fast strategies ---------------------------------------------------
@dataclass
class FlowTable:
    """Inter-leaf flows as flat integer arrays, for hot loops (no networkx lookups inside).

    Leaves and spines are 0-based indices into `leaf_names` / `spine_names`. `up_live[a][s]`
    (leaf a -> spine s) and `down_live[b][s]` (spine s -> leaf b) are the live flags. Link loads
    are kept by the strategies as flat lists indexed `leaf * n_spines + spine`, one list for
    uplinks and one for downlinks. `cand[i]` is the tuple of spines usable by flow i (shared
    between flows of the same leaf pair).
    """

    conns: list[Connection]                 # every connection, input order
    flows: list[Connection]                 # inter-leaf connections only
    src: list[int]                          # source leaf index per flow
    dst: list[int]                          # destination leaf index per flow
    job: list[int]                          # job index per flow (into job_names)
    job_names: list[str]
    leaf_names: list[str]
    spine_names: list[str]
    up_live: list[list[bool]]
    down_live: list[list[bool]]
    pair_cand: dict[tuple[int, int], tuple[int, ...]]
    cand: list[tuple[int, ...]]

    @property
    def n_spines(self) -> int:
        return len(self.spine_names)

    @property
    def n_leaves(self) -> int:
        return len(self.leaf_names)

    def flow_name(self, i: int) -> str:
        c = self.flows[i]
        return f"{c.job}:{c.src}->{c.dst} (conn {c.conn_id})"


def flow_table(fabric: Fabric, conns: list[Connection]) -> FlowTable:
    """Build the FlowTable of `conns`; raises RoutingError naming a flow with no live spine."""
    g = fabric.graph
    nodes = g.nodes
    leaf_names = fabric.leaves
    spine_names = fabric.spines
    leaf_idx = {name: i for i, name in enumerate(leaf_names)}
    spine_idx = {name: i for i, name in enumerate(spine_names)}
    S = len(spine_names)
    up_live = [[False] * S for _ in leaf_names]
    down_live = [[False] * S for _ in leaf_names]
    succ = g.succ
    for a, leaf in enumerate(leaf_names):
        row = up_live[a]
        for nbr, attrs in succ[leaf].items():
            s = spine_idx.get(nbr)
            if s is not None:
                row[s] = bool(attrs["live"])
    for s, spine in enumerate(spine_names):
        for nbr, attrs in succ[spine].items():
            down_live[leaf_idx[nbr]][s] = bool(attrs["live"])

    host_leaf: dict[str, int] = {}
    flows: list[Connection] = []
    src: list[int] = []
    dst: list[int] = []
    job: list[int] = []
    job_idx: dict[str, int] = {}
    pair_cand: dict[tuple[int, int], tuple[int, ...]] = {}
    cand: list[tuple[int, ...]] = []
    for c in conns:
        a = host_leaf.get(c.src)
        if a is None:
            a = host_leaf[c.src] = leaf_idx[nodes[c.src]["leaf"]]
        b = host_leaf.get(c.dst)
        if b is None:
            b = host_leaf[c.dst] = leaf_idx[nodes[c.dst]["leaf"]]
        if a == b:
            continue
        pc = pair_cand.get((a, b))
        if pc is None:
            ua, db = up_live[a], down_live[b]
            pc = pair_cand[a, b] = tuple(s for s in range(S) if ua[s] and db[s])
        if not pc:
            raise RoutingError(
                f"flow {c.job}:{c.src}->{c.dst} (conn {c.conn_id}) has no live spine "
                f"between {leaf_names[a]} and {leaf_names[b]}")
        j = job_idx.get(c.job)
        if j is None:
            j = job_idx[c.job] = len(job_idx)
        flows.append(c)
        src.append(a)
        dst.append(b)
        job.append(j)
        cand.append(pc)
    return FlowTable(conns=list(conns), flows=flows, src=src, dst=dst, job=job,
                     job_names=list(job_idx), leaf_names=leaf_names, spine_names=spine_names,
                     up_live=up_live, down_live=down_live, pair_cand=pair_cand, cand=cand)


def table_lower_bound(t: FlowTable) -> int:
    """Same bound as lower_bound_link_flows, from a FlowTable (flows per live up/downlink)."""
    out_deg = Counter(t.src)
    in_deg = Counter(t.dst)
    bound = 0
    for a, d in out_deg.items():
        bound = max(bound, math.ceil(d / max(1, sum(t.up_live[a]))))
    for b, d in in_deg.items():
        bound = max(bound, math.ceil(d / max(1, sum(t.down_live[b]))))
    return bound


def spine_of_from_assignment(t: FlowTable, assign: list[int]) -> dict[int, str | None]:
    """conn_id -> spine name for every connection (None for intra-leaf ones)."""
    spine_of: dict[int, str | None] = {c.conn_id: None for c in t.conns}
    names = t.spine_names
    for c, s in zip(t.flows, assign):
        spine_of[c.conn_id] = names[s]
    return spine_of


def assignment_from_spine_of(t: FlowTable, spine_of: dict[int, str | None] | None) -> list[int]:
    """Per flow: the spine index in `spine_of` when still usable for its leaf pair, else -1."""
    if not spine_of:
        return [-1] * len(t.flows)
    idx = {name: i for i, name in enumerate(t.spine_names)}
    out: list[int] = []
    for c, cand in zip(t.flows, t.cand):
        s = idx.get(spine_of.get(c.conn_id) or "", -1)
        out.append(s if s in cand else -1)
    return out


def assignment_loads(t: FlowTable, assign: list[int]) -> tuple[list[int], list[int]]:
    """Flat up/down link loads (index leaf * n_spines + spine) of a (possibly partial) assignment."""
    S = t.n_spines
    up = [0] * (t.n_leaves * S)
    down = [0] * (t.n_leaves * S)
    for a, b, s in zip(t.src, t.dst, assign):
        if s >= 0:
            up[a * S + s] += 1
            down[b * S + s] += 1
    return up, down

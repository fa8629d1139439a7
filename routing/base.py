"""What every routing strategy returns: one spine per connection, plus how the solve went.

Pure code. A strategy is a function (fabric, connections, seed, previous) -> RoutingPlan.
Intra-leaf connections take no spine (None). Link loads count flows (connections) per directed
leaf->spine and spine->leaf link, the quantity the paper's ILP minimizes.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

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

    def as_dict(self) -> dict:
        return {"time_s": self.time_s, "status": self.status, "gap": self.gap,
                "lower_bound_link_flows": self.lower_bound_link_flows}


@dataclass
class RoutingPlan:
    strategy: str
    spine_of: dict[int, str | None]          # conn_id -> spine (None: same leaf)
    stats: SolveStats = field(default_factory=lambda: SolveStats(0.0))


def inter_leaf(fabric: Fabric, conns: list[Connection]) -> list[Connection]:
    return [c for c in conns if fabric.leaf_of(c.src) != fabric.leaf_of(c.dst)]


def candidate_spines(fabric: Fabric, conn: Connection) -> list[str]:
    """Live spines for `conn`; raises RoutingError naming the connection when there is none."""
    a, b = fabric.leaf_of(conn.src), fabric.leaf_of(conn.dst)
    spines = fabric.usable_spines(a, b)
    if not spines:
        raise RoutingError(
            f"flow {conn.job}:{conn.src}->{conn.dst} (conn {conn.conn_id}) has no live spine "
            f"between {a} and {b}")
    return spines


def link_flow_counts(fabric: Fabric, conns: list[Connection],
                     spine_of: dict[int, str | None]) -> Counter:
    """Flows per directed leaf<->spine link."""
    load: Counter = Counter()
    for c in conns:
        s = spine_of.get(c.conn_id)
        if s is None:
            continue
        load[(fabric.leaf_of(c.src), s)] += 1
        load[(s, fabric.leaf_of(c.dst))] += 1
    return load


def max_link_flows(fabric: Fabric, conns: list[Connection],
                   spine_of: dict[int, str | None]) -> int:
    load = link_flow_counts(fabric, conns, spine_of)
    return max(load.values(), default=0)


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

"""Epochs: when the set of active flows changes, recompute the routing and measure the churn.

Pure code. `recompute(strategy, fabric, conns, previous)` routes the new connections with the
named strategy and reports churn: among the flows present in both epochs (same conn_id), how
many now take a different path. With `low_churn=True` (default) the strategy is given the
previous assignment: greedy and annealing start from it, edge-coloring maps colours to spines to
agree with it, ilp and mmf warm-start from it and keep flows on their old spine where the
optimal counts allow. ecmp ignores it (a hash does not move a flow unless its spines change).
"""
from __future__ import annotations

from dataclasses import dataclass

from testbed.fabric import Fabric
from traffic.collectives import Connection

from .base import RoutingPlan, max_link_flows
from .paths import Path
from .registry import route


@dataclass
class EpochResult:
    plan: RoutingPlan
    common: int            # flows present in both epochs
    churned: int           # of those, flows whose path changed
    changed_ids: list[int]
    max_link_flows: int

    @property
    def churn_fraction(self) -> float:
        return self.churned / self.common if self.common else 0.0

    def as_dict(self) -> dict:
        return {"common": self.common, "churned": self.churned,
                "churn_fraction": self.churn_fraction, "max_link_flows": self.max_link_flows}


def churn(previous: dict[int, Path | None],
          current: dict[int, Path | None]) -> tuple[int, list[int]]:
    """(flows in both maps, ids of those whose path differs)."""
    common = [cid for cid in current if cid in previous]
    changed = [cid for cid in common if previous[cid] != current[cid]]
    return len(common), changed


def recompute(strategy: str, fabric: Fabric, conns: list[Connection],
              previous: dict[int, str | None] | None, seed: int = 0,
              low_churn: bool = True, **options) -> EpochResult:
    """Route `conns` for the new epoch and compare with `previous` (conn_id -> path);
    `options` go to the strategy (e.g. time_limit_s)."""
    plan = route(strategy, fabric, conns, seed=seed,
                 previous=previous if (low_churn and previous) else None, **options)
    common, changed = churn(previous or {}, plan.path_of)
    return EpochResult(plan, common, len(changed), changed,
                       max_link_flows(fabric, conns, plan.path_of))

"""Groups of interchangeable flows (the same leaf pair, and job when asked) and assignments
as counts per group: what the min-max ILPs and mmf's cuts and bounds share.
"""
from __future__ import annotations

from collections import defaultdict

from .base import FlowTable


#: Groups of interchangeable flows: key -> flow indices (key ends with (src leaf, dst leaf)).
Groups = dict[tuple[int, ...], list[int]]


def flow_groups(t: FlowTable, by_job: bool = False) -> Groups:
    """Flows grouped by leaf pair (and by job first when `by_job`)."""
    groups: Groups = defaultdict(list)
    for i, (a, b, j) in enumerate(zip(t.src, t.dst, t.job)):
        groups[(j, a, b) if by_job else (a, b)].append(i)
    return dict(groups)


def counts_to_assignment(t: FlowTable, groups: Groups, counts: dict[tuple, dict[int, int]],
                         prefer: list[int] | None) -> list[int]:
    """Give each flow of a group one spine so that spine s gets counts[key][s] flows.

    Flows whose `prefer` spine still has room keep it (low churn)."""
    assign = [-1] * len(t.flows)
    for key, ids in groups.items():
        left = dict(counts[key])
        rest = []
        for i in ids:
            p = prefer[i] if prefer is not None else -1
            if p >= 0 and left.get(p, 0) > 0:
                assign[i] = p
                left[p] -= 1
            else:
                rest.append(i)
        pool = [s for s, k in sorted(left.items()) for _ in range(k)]
        for i, s in zip(rest, pool):
            assign[i] = s
    return assign


def assignment_counts(groups: Groups, assign: list[int]) -> dict[tuple, dict[int, int]]:
    """Per group: how many of its flows each spine (or path) index carries."""
    out: dict[tuple, dict[int, int]] = {}
    for key, ids in groups.items():
        c: dict[int, int] = defaultdict(int)
        for i in ids:
            c[assign[i]] += 1
        out[key] = dict(c)
    return out

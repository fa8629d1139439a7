"""mmf's bound search as plain Python: the references the compiled kernels
(routing/mmf_search.py, used by routing/mmf_bounds.py's Bounds) are compared against."""
from __future__ import annotations

import numpy as np

from routing.mmf_bounds import Bounds


def side_fits(demand: list[int], U: int) -> bool:
    """Can U links carry demand[c] flows of jobs at level c (c = 1..A), each flow on a link
    whose load is at most its job's level? Links are given the smallest loads that the
    prefix demands need (Hall's condition on nested sets), the rest the top level."""
    used = cap = total = 0
    for c in range(1, len(demand)):
        total += demand[c]
        if total > cap:
            x = -(-(total - cap) // c)
            used += x
            cap += c * x
    return used <= U


def side_hot_links(demand: list[int], U: int, k: int) -> int:
    """The fewest of U links at >= k flows when demand[c] flows of jobs at level c
    (c = 1..A) must each sit on a link no fuller than c (U + 1: impossible). Links below k
    carry at most k - 1; links at >= k only flows of jobs at >= k."""
    A = len(demand) - 1
    for h in range(U + 1):
        cool = U - h                 # links below k
        spare = 0                    # room left on links opened so far
        hot = 0
        ok = True
        for c in range(1, A + 1):
            need = demand[c] - spare
            if need <= 0:
                spare = -need
                continue
            if c < k - 1:            # only links capped at c can take these flows
                x = -(-need // c)
                if x > cool:
                    ok = False
                    break
                cool -= x
                spare = c * x - need
            else:
                if c == k - 1 or cool:   # the remaining cool links, each at k - 1
                    spare += (k - 1) * cool
                    cool = 0
                    need = demand[c] - spare
                    if need <= 0:
                        spare = -need
                        continue
                if c < k:
                    ok = False
                    break
                x = -(-need // c)
                hot += x
                spare = c * x - need
        if ok and hot <= h:
            return h
    return U + 1


def fits_reference(self: Bounds, levels: list[int]) -> bool:
    """Bounds._fits as the plain loop."""
    A = self.A
    for (dj, U), pairs in zip(self.sides, self.on_side):
        demand = [0] * (A + 1)
        for j, n in pairs:
            demand[levels[j] or A] += n
        if not side_fits(demand, U):
            return False
    return True


def hot_reference(self: Bounds, levels: list[int], k: int) -> int:
    """Bounds._hot as the plain loop."""
    A = self.A
    total = 0
    for (dj, U), pairs in zip(self.full, self.on_side):
        demand = [0] * (A + 1)
        for j, n in pairs:
            demand[levels[j] or A] += n
        total += side_hot_links(demand, U, k)
    return total


def dominated(k: int, fixes: dict[int, int], J: int):
    """The jobs search's skip (mmf_search._undominated): level lv below the highest allowed
    (top) is dominated by lv + 1 unless lv + 1 is k or a fix's level that can bind."""
    return lambda lv, top: lv < top and lv + 1 != k and not any(
        f == lv + 1 and n < J for f, n in fixes.items())


def search(self: Bounds, objective, part, fixes: dict[int, int],
           skip=lambda lv, top: False) -> int | None:
    """Min of `objective(levels)` over level assignments meeting `fixes` (level k ->
    at most that many jobs at >= k) that fit; None when the budget runs out. On a
    partial assignment (unassigned jobs: level 0) `objective` must not exceed its value
    on any completion (it prunes the search). `part(levels, j)`: the terms of
    `objective` that job j's level changes (objective = the rest + part), so that a
    step that sets one job's level computes only those, and checks only its sides (the
    others fit at the step before)."""
    A, J, order = self.A, self.J, self.order
    levels = np.zeros(J, np.int64)
    best = [None]
    nodes = [0]

    def dfs(idx: int, rest: int) -> bool:
        nodes[0] += 1
        if nodes[0] > self.node_budget:
            return False
        if idx == 0:
            if not self._fits(levels):
                return True
            value = objective(levels)
        else:
            if not self._fits_of(levels, order[idx - 1]):
                return True
            value = rest + part(levels, order[idx - 1])
        if best[0] is not None and value >= best[0]:
            return True
        if idx == J:
            best[0] = value
            return True
        j = order[idx]
        rest = value - part(levels, j)           # (j unassigned here)
        room = [(k, n - int((levels >= k).sum())) for k, n in fixes.items()]
        allowed = [lv for lv in range(1, A + 1)
                   if not any(lv >= k and left < 1 for k, left in room)]
        for lv in allowed:
            if skip(lv, allowed[-1]):
                continue
            levels[j] = lv
            ok = dfs(idx + 1, rest)
            levels[j] = 0
            if not ok:
                return False
        return True

    return best[0] if dfs(0, 0) else None


def search_python(self: Bounds, layer: str, k: int, fixes: dict[int, int]) -> int | None:
    """Bounds._search_compiled in Python."""
    if layer == "jobs":
        return search(self, lambda lv: int((lv >= k).sum()), lambda lv, j: int(lv[j] >= k),
                      fixes, dominated(k, fixes, self.J))
    return search(self, lambda lv: self._hot(lv, k), lambda lv, j: self._hot_of(lv, k, j),
                  fixes)


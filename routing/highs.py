"""HiGHS (highspy) as the ILPs' solver: a model kept in memory, columns and rows added as
arrays, solved from a start solution within a time limit.

Pure code; highspy is imported on first use. Measured on experiments/configs/clos3-2048-whatif.yaml
(the min-max ILP on paths at its four epochs that need a solver, 1,216-192 flows): CBC through
PuLP (a model file written and read again per solve) stopped at its 10 s limit with max link
flows 4, 4, 4 in 19, 18, 10 s; HiGHS proved 3, 2, 2 optimal in 2.8, 1.5, 0.7 s.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

OPTIMAL, FEASIBLE, NONE = "optimal", "feasible", "none"


@dataclass
class Outcome:
    """A solve: `status` (OPTIMAL, FEASIBLE: a solution but not proven, NONE), the solution
    (`x`, None without one), its objective and the proven lower bound on the objective."""
    status: str
    x: np.ndarray | None
    objective: float
    bound: float


def version() -> str:
    from highspy._core import _Highs
    return _Highs().version()


class Model:
    """A minimization model in HiGHS, built column by column and row by row."""

    def __init__(self):
        from highspy._core import _Highs    # (highspy.Highs prints a banner on stdout)
        self.h = _Highs()
        self.h.setOptionValue("output_flag", False)
        self.h.setOptionValue("mip_rel_gap", 0.0)       # objectives here are integers:
        self.h.setOptionValue("mip_abs_gap", 0.99)      # proven optimal means exactly
        self.n_cols = 0

    def add_columns(self, lo, hi, integer: bool) -> np.ndarray:
        """Columns with these bounds; their indices."""
        from highspy import HighsVarType
        lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
        idx = np.arange(self.n_cols, self.n_cols + len(lo), dtype=np.int32)
        self.h.addVars(len(lo), lo, hi)
        if integer and len(idx):
            self.h.changeColsIntegrality(len(idx), idx, np.full(
                len(idx), HighsVarType.kInteger.value, dtype=np.uint8))
        self.n_cols += len(lo)
        return idx

    def add_rows(self, rows: list[tuple[float, float, list[int], list[float]]]) -> None:
        """Rows (lower, upper, columns, coefficients)."""
        if not rows:
            return
        starts = np.cumsum([0] + [len(r[2]) for r in rows[:-1]]).astype(np.int32)
        index = np.array([c for r in rows for c in r[2]], dtype=np.int32)
        value = np.array([v for r in rows for v in r[3]], dtype=float)
        self.h.addRows(len(rows), np.array([r[0] for r in rows], dtype=float),
                       np.array([r[1] for r in rows], dtype=float), len(index), starts,
                       index, value)

    def minimize(self, cost: np.ndarray, start: np.ndarray | None, time_limit_s: float
                 ) -> Outcome:
        """Minimize cost . x in about time_limit_s seconds; `start` (a feasible solution, or
        None) is kept when HiGHS finds nothing better. HiGHS starts from nothing: given the
        start as a solution, HiGHS 1.16 after presolve handed it back in place of the better
        one it reported, and without presolve (or given the start's objective as a cutoff)
        ran to the time limit where it needs 1.8-3.0 s from nothing (the clos3-2048-whatif
        ILP's epochs)."""
        from highspy import HighsModelStatus
        h = self.h
        cost = np.asarray(cost, dtype=float)
        h.changeColsCost(self.n_cols, np.arange(self.n_cols, dtype=np.int32), cost)
        cutoff = float(cost @ start) if start is not None else np.inf
        h.setOptionValue("time_limit", max(0.05, float(time_limit_s)))
        h.run()
        info, status = h.getInfo(), h.getModelStatus()
        bound = info.mip_dual_bound if np.isfinite(info.mip_dual_bound) else -np.inf
        x = np.asarray(h.getSolution().col_value) if info.primal_solution_status == 2 else None
        if x is None or not float(cost @ x) < cutoff:
            if status == HighsModelStatus.kOptimal and start is not None:  # as good
                return Outcome(OPTIMAL, np.asarray(start, dtype=float), cutoff, cutoff)
            return Outcome(NONE if start is None else FEASIBLE,
                           None if start is None else np.asarray(start, dtype=float),
                           cutoff, min(bound, cutoff))
        objective = float(cost @ x)
        optimal = status == HighsModelStatus.kOptimal
        return Outcome(OPTIMAL if optimal else FEASIBLE, x, objective,
                       objective if optimal else bound)

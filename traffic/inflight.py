"""Which connections carry a transfer now, from the transfers received so far (pure code).

An emulated run's controller re-plans the flows in flight (epoch policy recompute="flows")
knowing only what the agents report: an iteration began, a transfer was received. A transfer
is in flight from the moment its predecessors are received (its `deps`, and the previous
transfer on its connection: the predictor's rule, traffic/predictor.py) until it is received
itself.
"""
from __future__ import annotations

from traffic.collectives import JobPlan


class InFlight:
    """The transfers in flight of every job, iteration by iteration."""

    def __init__(self, plans: list[JobPlan]):
        self._conn: dict[str, dict[int, int]] = {}      # job -> tid -> conn_id
        self._preds: dict[str, dict[int, set[int]]] = {}
        self._left: dict[str, dict[int, int]] = {}      # job -> tid -> predecessors not received
        self._succ: dict[str, dict[int, list[int]]] = {}
        self._flying: dict[str, set[int]] = {}          # job -> tids in flight
        for p in plans:
            conn = {t.tid: t.conn_id for t in p.transfers}
            preds: dict[int, set[int]] = {}
            last_on: dict[int, int] = {}
            for t in p.transfers:
                preds[t.tid] = set(t.deps) | ({last_on[t.conn_id]} if t.conn_id in last_on
                                              else set())
                last_on[t.conn_id] = t.tid
            succ: dict[int, list[int]] = {tid: [] for tid in conn}
            for tid, ps in preds.items():
                for q in ps:
                    succ[q].append(tid)
            self._conn[p.name], self._preds[p.name], self._succ[p.name] = conn, preds, succ
            self._flying[p.name] = set()

    def begin(self, job: str) -> None:
        """`job` starts an iteration: the transfers without predecessors take off."""
        self._left[job] = {tid: len(ps) for tid, ps in self._preds[job].items()}
        self._flying[job] = {tid for tid, n in self._left[job].items() if n == 0}

    def received(self, job: str, tid: int) -> None:
        """Transfer `tid` of `job` arrived: it lands, the ones waiting only for it take off."""
        self._flying[job].discard(tid)
        left = self._left[job]
        for s in self._succ[job][tid]:
            left[s] -= 1
            if left[s] == 0:
                self._flying[job].add(s)

    def end(self, job: str) -> None:
        """`job` ended its iteration (every transfer received)."""
        self._flying[job] = set()

    def conns(self) -> list[int]:
        """The connections (conn ids, ascending) carrying a transfer now."""
        return sorted({self._conn[j][tid] for j, tids in self._flying.items() for tid in tids})

"""Progress inside a long prediction: the predictor's hook (traffic/predictor.py `progress`)
and the terminal line `predict` draws with it (experiments/progress.py)."""
from __future__ import annotations

import io

from experiments.progress import PredictionProgress
from testbed.fabric import FabricSpec, build_fabric
from traffic import predictor
from traffic.collectives import Collective, JobSpec, plan_jobs


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_hook_reports_transfers_done_of_all_and_simulated_time(monkeypatch):
    monkeypatch.setattr(predictor, "PROGRESS_EVERY_S", 0.0)
    monkeypatch.setattr(predictor, "PROGRESS_BATCHES", 1)
    fabric = build_fabric(FabricSpec(spines=2, leaves=2, hosts_per_leaf=2, host_link_mbps=10,
                                     spine_link_mbps=10))
    plans = plan_jobs([JobSpec(name="r", collective=Collective.ALLREDUCE,
                               groups=(("h1", "h2", "h3", "h4"),), size_bytes=4_000_000,
                               iterations=3)])
    seen: list[tuple[float, int, int]] = []
    spine_of = {c.conn_id: "spine1" for p in plans for c in p.connections}
    plain = predictor.predict(fabric, plans, spine_of)
    pred = predictor.predict(fabric, plans, spine_of, progress=lambda *a: seen.append(a))
    total = sum(len(p.transfers) * p.spec.iterations for p in plans)
    assert len(seen) > 3 and {t for _, _, t in seen} == {total}
    assert [d for _, d, _ in seen] == sorted(d for _, d, _ in seen) and seen[-1][1] <= total
    assert [s for s, _, _ in seen] == sorted(s for s, _, _ in seen)
    assert pred.jobs["r"].cct_s == plain.jobs["r"].cct_s        # watching changes nothing


def test_the_line_is_drawn_on_a_terminal_only_and_cleared_at_the_end():
    tty = _Tty()
    follow = PredictionProgress("ecmp", tty)
    assert follow.on
    follow(12.3456, 250, 1000)
    follow.end()
    text = tty.getvalue()
    assert "[ecmp] 25.0% of 1,000 transfers, 12.346 s simulated, about" in text
    assert text.endswith("\r\033[K")
    pipe = io.StringIO()
    assert not PredictionProgress("ecmp", pipe).on

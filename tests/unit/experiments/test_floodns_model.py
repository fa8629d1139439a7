"""floodns_model: floodns's runs and ours alternate round by round, medians and ratios printed."""
from __future__ import annotations

import argparse

import pytest

from experiments.benchmarks import floodns_model


def test_rounds_alternate_floodns_then_ours_and_print_ratios_of_medians(monkeypatch, capsys,
                                                                         tmp_path):
    seen: list[str] = []
    walls = iter([10.0, 30.0, 20.0])                       # floodns ECMP per round

    def floodns_round(args, case, work):
        seen.append("floodns")
        w = next(walls)
        return {"ecmp": (w, w / 2, {1: 2.5}), "mcvlc": (4.0, 2.0, {1: 1.25})}

    def ours_timed(args, case, routing, work):
        seen.append(routing)
        return (0.5, 0.25, {"job": 1.25})

    monkeypatch.setattr(floodns_model, "floodns_round", floodns_round)
    monkeypatch.setattr(floodns_model, "ours_timed", ours_timed)
    args = argparse.Namespace(repeats=3, pairs=floodns_model.DEFAULT_PAIRS)
    floodns_model.one_case(args, "1-0-2", tmp_path)
    ours = list(floodns_model.DEFAULT_PAIRS)
    # round 1: floodns, the untimed warm-up, ours; then floodns and ours in turn
    assert seen == ["floodns", "replay", *ours, "floodns", *ours, "floodns", *ours]
    out = capsys.readouterr().out
    assert "1-0-2   floodns ecmp: wall  20.000 s, CPU  10.000 s (medians of 3)" in out
    assert "floodns ecmp / ours replay: wall   40.0x, CPU   40.0x" in out
    assert "floodns mcvlc / ours greedy: wall    8.0x, CPU    8.0x" in out
    assert "per-job means, last round: 1.250000 s" in out


def test_pairs_pick_floodns_strategies_ecmp_first(monkeypatch, tmp_path):
    ran: list[str] = []

    def run_floodns(floodns, cp, data, case, strategy, work, reuse):
        ran.append(strategy)
        (work / f"{case}-{strategy}").mkdir(parents=True)
        (work / f"{case}-{strategy}" / "cpu_s.txt").write_text("1.5\n")
        return {1: 2.0}, 3.0

    monkeypatch.setattr(floodns_model, "run_floodns", run_floodns)
    args = argparse.Namespace(pairs=["replay", "edge-coloring", "ecmp"], floodns=tmp_path,
                              classpath="cp", data=tmp_path)
    out = floodns_model.floodns_round(args, "1-0-2", tmp_path)
    assert ran == ["ecmp", "edge_coloring"]                 # each strategy once
    assert out["edge_coloring"] == (3.0, 1.5, {1: 2.0})


def test_repeats_out_of_range_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(SystemExit) as e:
        floodns_model.main(["--floodns", str(tmp_path), "--classpath", "cp", "--repeats", "0",
                            "--work", str(tmp_path / "w")])
    assert e.value.code == 2
    assert not (tmp_path / "w").exists()

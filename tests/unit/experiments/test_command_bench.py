"""command_bench: bad input refused before anything runs; the sides alternate after one untimed
run each; a failed command raises naming its checkout."""
from __future__ import annotations

from pathlib import Path

import pytest

from experiments.benchmarks import command_bench


def test_bad_repeats_and_baseline_are_refused_with_exit_2(tmp_path):
    for argv in (["cfg.yaml", "--repeats", "0"],
                 ["cfg.yaml", "--baseline", str(tmp_path / "nowhere")]):
        with pytest.raises(SystemExit) as e:
            command_bench.main(argv)
        assert e.value.code == 2


def test_sides_alternate_after_an_untimed_run_each(monkeypatch, tmp_path, capsys):
    (tmp_path / "experiments").mkdir()
    seen: list[Path] = []
    walls = iter(range(1, 100))

    def run_once(checkout, argv, out):
        seen.append(checkout)
        w = float(next(walls))
        return w, w / 2, 100.0 * w, {"mmf": {
            "solve": {"time_s": 1.0, "time_s_max": 0.5, "count": 10, "status": "optimal"},
            "predict_wall_s": w / 4, "iteration_time_s": 0.25, "ideal_iteration_time_s": 0.2}}

    monkeypatch.setattr(command_bench, "run_once", run_once)
    assert command_bench.main(["cfg.yaml", "--repeats", "2", "--baseline", str(tmp_path)]) == 0
    here = command_bench.HERE
    assert seen == [tmp_path, here] * 3
    out = capsys.readouterr().out
    # timed: baseline 3, 5 and this checkout 4, 6 (the first pair untimed)
    assert "baseline: wall 4.00 s (3.00-5.00), CPU 2.00 s (1.50-2.50)" in out
    assert "this checkout: wall 5.00 s (4.00-6.00)" in out
    assert "ratio this / baseline (medians): wall 1.250, CPU 1.250, peak RSS 1.250" in out
    assert "run 1 mmf: solve 1.000 s, slowest 0.500 s, 10 solves, status optimal" in out
    assert "predicted in 1.00 s; iteration 0.25 s (ideal 0.2 s)" in out


def test_a_failed_command_raises_naming_its_checkout(tmp_path):
    with pytest.raises(RuntimeError, match=str(tmp_path)):
        command_bench.run_once(tmp_path, ["no-such-config.yaml"], tmp_path / "out")

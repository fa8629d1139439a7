"""heap_bench: its jobs plan the units it divides by; the marginal cost is the growth of the
medians over the growth of the units; the sides alternate per size; bad input exits 2."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from experiments.benchmarks import heap_bench
from experiments.benchmarks.heap_bench import Workload, config, marginal
from experiments.config.parse import load


@pytest.mark.parametrize("w", [Workload("allgather", 4, (1, 3), 1 << 20, "transfer"),
                               Workload("alltoall", 3, (1, 3), 1 << 20, "connection")])
def test_the_configs_plan_the_units_they_are_divided_by(tmp_path, w):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(config(w, 3)))
    (plan,) = load(cfg).plans()
    got = len(plan.transfers) if w.unit == "transfer" else len(plan.connections)
    assert got == w.units(3) == 3 * w.ranks * (w.ranks - 1)
    hosts = [h for g in plan.spec.groups for h in g]
    assert len(set(hosts)) == len(hosts)          # no NIC in two groups


def test_too_many_groups_for_the_fabric_are_refused():
    with pytest.raises(ValueError, match="need more than 4,096 NICs"):
        config(Workload("allgather", 64, (1, 2), 1, "transfer"), 65)


def test_marginal_is_the_growth_of_the_medians_per_unit():
    w = Workload("allgather", 4, (1, 3), 1, "transfer")        # 12 -> 36 transfers
    small = [{"held_bytes": b} for b in (1_000, 1_200, 900_000)]
    large = [{"held_bytes": b} for b in (3_600, 3_400, 0)]
    assert marginal(w, small, large, "held_bytes") == pytest.approx((3_400 - 1_200) / 24)


def test_sides_alternate_per_size_after_an_untimed_run_each(monkeypatch, tmp_path, capsys):
    (tmp_path / "experiments").mkdir()
    monkeypatch.setitem(heap_bench.WORKLOADS, "rings",
                        Workload("allgather", 4, (1, 3), 1, "transfer"))
    seen: list[tuple[Path, str]] = []

    def measure(checkout, cfg):
        seen.append((checkout, cfg.name))
        groups = int(cfg.stem.rsplit("-", 1)[1]) if "rings" in cfg.name else 0
        base = 1_000 if checkout == tmp_path else 500
        return {"held_bytes": base * groups, "peak_bytes": 2 * base * groups, "cpu_s": groups}

    monkeypatch.setattr(heap_bench, "measure", measure)
    assert heap_bench.main(["--workload", "rings", "--repeats", "2",
                            "--baseline", str(tmp_path)]) == 0
    here = heap_bench.HERE
    assert seen == [(tmp_path, "warm.yaml"), (here, "warm.yaml")] + \
        [(tmp_path, "rings-1.yaml"), (here, "rings-1.yaml")] * 2 + \
        [(tmp_path, "rings-3.yaml"), (here, "rings-3.yaml")] * 2
    out = capsys.readouterr().out
    # 2,000 B more held over 24 transfers more: 83 B per transfer (baseline), 42 (this)
    assert "baseline       held     83 / peak    167 B per transfer" in out
    assert "this checkout  held     42 / peak     83 B per transfer" in out
    assert "CPU at 36 transfers 3.00 s (3.00-3.00)" in out


def test_bad_repeats_and_baseline_are_refused_with_exit_2(tmp_path):
    for argv in (["--repeats", "0"], ["--baseline", str(tmp_path / "nowhere")]):
        with pytest.raises(SystemExit) as e:
            heap_bench.main(argv)
        assert e.value.code == 2


def test_a_failed_measurement_raises_naming_its_checkout(tmp_path):
    with pytest.raises(RuntimeError, match=str(tmp_path)):
        heap_bench.measure(tmp_path, tmp_path / "no-such-config.yaml")



def test_a_measurement_of_a_tiny_job_holds_less_than_its_peak(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(config(Workload("alltoall", 3, (1, 2), 1 << 20, "c"), 2)))
    r = heap_bench.measure(heap_bench.HERE, cfg)
    assert 0 < r["held_bytes"] <= r["peak_bytes"] and r["cpu_s"] > 0

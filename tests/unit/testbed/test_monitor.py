"""testbed/monitor.py's pure parts: /proc parsing, the saturation rule, the summary and the
advice a flagged run prints."""
from collections import namedtuple

import pytest

from testbed.monitor import (Sample, _core_busy, advice, parse_schedstat, parse_softnet_drops,
                             parse_task_stat, softirq_pcts, summarize)

Times = namedtuple("Times", "user nice system idle iowait irq softirq steal guest guest_nice")


def sample(fwd=50.0, wait=0.0, cores=(50.0, 50.0), nice=0.0, vs_wait=None):
    return Sample(0.0, cores, nice, fwd, fwd, wait, wait if vs_wait is None else vs_wait)


def test_task_stat_comm_with_spaces_and_parentheses():
    line = "123 (pmd-c01/id:9 (x)) R 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0"
    assert parse_task_stat(line) == ("pmd-c01/id:9 (x)", 300.0)


def test_schedstat():
    assert parse_schedstat("34046642992 16927135692 54075\n") == (34046642992.0, 16927135692.0)


def test_niced_time_is_not_busy():
    a = Times(0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    b = Times(user=10, nice=50, system=10, idle=30, iowait=0, irq=0, softirq=0, steal=0,
              guest=0, guest_nice=0)
    busy, nice = _core_busy([a, a], [b, b])
    assert busy == [pytest.approx(20.0)] * 2 and nice == pytest.approx(50.0)


@pytest.mark.parametrize("s, saturated", [
    (sample(fwd=96), True),                        # the forwarding thread itself
    (sample(fwd=70, wait=30), True),               # wanted the CPU all the time: starved
    (sample(fwd=60, cores=(99.0, 99.0)), False),   # full cores, but the emulator kept up
    (sample(fwd=60, cores=(99.0, 99.0), vs_wait=15), True),   # full and waiting
    (sample(fwd=60, cores=(50.0, 50.0), nice=49.0), False),   # a niced job fills the rest
])
def test_saturation_rule(s, saturated):
    assert s.saturated is saturated


def test_summary_flags_a_full_thread_over_half_a_full_machine_over_five_percent():
    # the thread's demand full (running or waiting): up to half the samples pass, more flag
    half = summarize([sample(fwd=99)] * 5 + [sample(fwd=40, wait=60)] * 5 + [sample()] * 10,
                     0.25, 5.0)
    assert half["ok"] and half["forwarding_full_s"] == 2.5 and half["cause"] is None
    bad = summarize([sample(fwd=99)] * 11 + [sample()] * 9, 0.25, 5.0)
    assert not bad["ok"] and bad["cause"] == "forwarding_thread"
    # the machine full and ovs-vswitchd waiting for it: one sample in 20 passes, two flag
    full = dict(fwd=40, wait=60, cores=(99.0, 99.0))
    one = summarize([sample(**full)] + [sample()] * 19, 0.25, 5.0)
    assert one["ok"] and one["cores_full_s"] == 0.25 and one["saturated_s"] == 0.25
    starved = summarize([sample(**full)] * 2 + [sample()] * 18, 0.25, 5.0)
    assert not starved["ok"] and starved["cause"] == "starved"
    # both over: the full machine is named (it is what kept the thread waiting)
    both = summarize([sample(**full)] * 11 + [sample()] * 9, 0.25, 5.0)
    assert not both["ok"] and both["cause"] == "starved"
    assert summarize([], 0.25, 0.0)["ok"]


def test_the_old_false_alarm_is_not_flagged():
    """The quickstart beside another user's niced job: forwarding thread <= 62%, cores 99%."""
    samples = [sample(fwd=40 + i % 23, cores=(99.0, 100.0), nice=48.0, vs_wait=2.0)
               for i in range(60)]
    assert summarize(samples, 0.25, 15.0)["ok"]


def test_advice_for_a_saturated_thread_scales_rate_mtu_and_hosts():
    s = summarize([sample(fwd=100)] * 20, 0.25, 5.0)
    lines = advice(s, host_traffic_mbps=1600, mtu_bytes=32000, hosts=16)
    text = "\n".join(lines)
    assert "1.25x" in text                         # 100% -> 80%
    assert "<= 1280 Mbit/s" in text
    assert "from 32000 to 40000" in text
    assert "at most 12 of 16" in text
    assert advice(summarize([sample()] * 20, 0.25, 5.0), 80, 9000, 16) == []


def test_advice_at_the_largest_mtu_does_not_suggest_a_larger_one():
    s = summarize([sample(fwd=100)] * 20, 0.25, 5.0)
    assert "mtu_bytes" not in "\n".join(advice(s, 1600, 64000, 16))


def test_advice_for_a_starved_emulator_names_the_load():
    s = summarize([sample(fwd=40, wait=60, cores=(99.0, 99.0))] * 20, 0.25, 5.0)
    text = "\n".join(advice(s, 80, 9000, 16, load_avg_1min=3.5, cpus=2))
    assert "load average 3.50 on 2 cores" in text and "waited for a CPU 60%" in text


def test_strict_finds_flagged_routings_in_one_or_repeated_runs(tmp_path):
    import json

    from experiments.runner import flagged_runs
    doc = {"runs": [{"routing": "ecmp", "fidelity": {"ok": True}},
                    {"routing": "ilp", "fidelity": {"ok": False}}]}
    (tmp_path / "results.json").write_text(json.dumps(doc))
    assert flagged_runs(tmp_path) == [f"{tmp_path.name}/ilp"]
    reps = tmp_path / "reps"
    for k, ok in ((1, True), (2, False)):
        (reps / f"rep-{k}").mkdir(parents=True)
        doc["runs"][1]["fidelity"]["ok"] = ok
        (reps / f"rep-{k}" / "results.json").write_text(json.dumps(doc))
    assert flagged_runs(reps) == ["rep-2/ilp"]


# -- the kernel datapath: softirq instead of a forwarding thread -------------------------------
def test_softirq_share_per_core():
    a = Times(0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    b = Times(user=10, nice=0, system=10, idle=40, iowait=0, irq=0, softirq=40, steal=0,
              guest=0, guest_nice=0)
    c = Times(user=0, nice=0, system=0, idle=100, iowait=0, irq=0, softirq=0, steal=0,
              guest=0, guest_nice=0)
    assert softirq_pcts([a, a, a], [b, c, a]) == [pytest.approx(40.0), 0.0, 0.0]


def test_softnet_drops_sum_the_second_column_in_hex():
    text = ("0000a1b2 0000000f 00000003 00000000 00000000 00000000 00000000 00000000 "
            "00000000 00000000 00000000 00000000 00000000\n"
            "00000010 00000100 00000000 00000000 00000000 00000000 00000000 00000000 "
            "00000000 00000000 00000000 00000000 00000001\n")
    assert parse_softnet_drops(text) == 15 + 256
    assert parse_softnet_drops("") == 0


def test_a_kernel_datapath_summary_names_softirq_and_sees_no_queues():
    ok = summarize([sample(fwd=30)] * 20, 0.25, 5.0, port_type="kernel")
    assert ok["ok"] and ok["forwarding_by"] == "softirq"
    assert ok["vswitchd_rx_queued_max_bytes"] is None and ok["vswitchd_rx_wait_ms"] is None
    full = summarize([sample(fwd=99)] * 20, 0.25, 5.0, port_type="kernel")
    assert not full["ok"] and full["cause"] == "softirq"
    text = "\n".join(advice(full, 1600, 9000, 16))
    assert "softirq) on its busiest core was at 99%" in text and "forwarding thread" not in text
    dropped = summarize([sample(fwd=30)] * 20, 0.25, 5.0, rx_drops=7, port_type="kernel")
    assert dropped["cause"] == "dropped"
    assert "input backlogs dropped 7 packets" in "\n".join(advice(dropped, 80, 9000, 16))
    user = summarize([sample(fwd=99)] * 20, 0.25, 5.0)
    assert user["forwarding_by"] == "vswitchd_thread" and user["cause"] == "forwarding_thread"


def test_a_kernel_datapath_monitor_samples_this_machines_softirq():
    """The kernel mode's readers on this machine's own /proc (no fabric needed)."""
    import time

    from testbed.monitor import CpuMonitor
    with CpuMonitor(interval_s=0.1, datapath="kernel") as mon:
        time.sleep(0.35)
    s = mon.summary()
    assert s["forwarding_by"] == "softirq" and s["samples"] >= 2
    assert 0.0 <= s["forwarding_max_pct"] <= 100.0 and s["vswitchd_rx_drops"] >= 0

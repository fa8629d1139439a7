"""The run registry identifies processes by PID and start time, never by name, and reserves a
run's names under a lock."""
import multiprocessing
import os
import subprocess
import sys
import time

import psutil
import pytest

from testbed import registry
from testbed.registry import RunClash, RunRecord, end_processes, identity, reserve


@pytest.fixture
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "STATE_DIR", tmp_path)
    monkeypatch.setattr(registry, "bridge_tags", lambda: {})   # no OVS needed
    return tmp_path


def test_record_round_trips_and_knows_its_owner(state_dir):
    rec = RunRecord("r1", bridges=["leaf1"], interfaces=["leaf1-eth1"])
    rec.claim()
    rec.save()
    back = RunRecord.load(state_dir / "r1.json")
    assert back.bridges == ["leaf1"] and back.owner["pid"] == os.getpid()
    assert back.owner_alive()
    back.owner = {**back.owner, "started": back.owner["started"] - 3600}   # PID reused
    assert not back.owner_alive()


def _sleeper(pre_exec_s: float = 0.0) -> subprocess.Popen:
    """A child that stays `pre_exec_s` between fork and exec (its cmdline is still ours)."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                            preexec_fn=(lambda: time.sleep(pre_exec_s)) if pre_exec_s else None)


def test_end_processes_spares_a_reused_pid_and_an_unknown_one():
    p = _sleeper()
    try:
        ident = identity(p.pid)
        assert end_processes([{**ident, "started": ident["started"] - 10}]) == 0   # reused
        assert end_processes([{"pid": p.pid, "cmdline": []}]) == 0      # unidentified
        assert p.poll() is None
        assert end_processes([ident]) == 1
        assert p.wait(timeout=5) is not None
    finally:
        if p.poll() is None:
            p.kill()


def test_a_process_recorded_before_its_exec_is_still_ended(state_dir):
    """The race an outside pass hit: right after the fork the child's command line is the
    parent's (or empty), so an identity by command line missed it; by start time it holds."""
    p = _sleeper(pre_exec_s=0.5)
    try:
        rec = RunRecord("r2")
        rec.add_pid(p.pid, ["python", "-c", "..."])     # recorded before the exec
        time.sleep(1.0)                                  # now it runs the sleeper
        assert "time.sleep(30)" in " ".join(psutil.Process(p.pid).cmdline())
        assert end_processes(rec.pids) == 1
        assert p.wait(timeout=5) is not None
    finally:
        if p.poll() is None:
            p.kill()


def test_processes_are_ended_together_not_one_grace_period_each():
    """Shells ignoring SIGTERM cost one grace period in all (was 2 s each: 24 shells, 48 s)."""
    ignore = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    procs = [subprocess.Popen([sys.executable, "-c", ignore]) for _ in range(6)]
    try:
        time.sleep(0.5)   # the handlers are in place
        entries = [identity(p.pid) for p in procs]
        t0 = time.monotonic()
        assert end_processes(entries, grace_s=1.0) == 6
        took = time.monotonic() - t0
        assert all(p.wait(timeout=5) is not None for p in procs)
        assert took < 6 * 1.0   # one shared grace period, not six
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


def _reserve_in_child(state_dir: str, run_id: str, barrier, out) -> None:
    registry.STATE_DIR = type(registry.STATE_DIR)(state_dir)
    registry.bridge_tags = lambda: {}
    barrier.wait()
    try:
        reserve(RunRecord(run_id, bridges=["leaf1", "spine1"]), {"leaf1", "spine1"})
        out.put((run_id, "ok"))
        time.sleep(2.0)   # stays alive: the other one must see a live owner
    except RunClash as e:
        out.put((run_id, str(e)))


def test_two_runs_reserving_at_the_same_instant_one_refuses_naming_the_other(state_dir):
    ctx = multiprocessing.get_context("fork")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    kids = [ctx.Process(target=_reserve_in_child, args=(str(state_dir), f"run{i}", barrier, out))
            for i in range(2)]
    for k in kids:
        k.start()
    got = dict(out.get(timeout=30) for _ in kids)
    for k in kids:
        k.join(timeout=30)
    assert sorted(got.values()).count("ok") == 1, got
    loser = next(r for r, m in got.items() if m != "ok")
    winner = next(r for r, m in got.items() if m == "ok")
    assert f"run {winner} (pid" in got[loser] and "is using leaf1" in got[loser]
    assert "\n" not in got[loser]


def test_a_crashed_runs_record_is_named_as_crashed(state_dir):
    dead = RunRecord("old", owner={"pid": 1, "started": 0.0, "cmdline": ["x"]},
                     bridges=["leaf1"])
    dead.save()
    with pytest.raises(RunClash, match="crashed and left leaf1.*clean"):
        reserve(RunRecord("new", bridges=["leaf1"]), {"leaf1"})
    assert not (state_dir / "new.json").exists()

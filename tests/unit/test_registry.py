"""The run registry identifies processes by PID and command line, never by name."""
import os
import subprocess
import sys

import psutil

from testbed import registry
from testbed.registry import RunRecord, end_process


def test_record_round_trips_and_knows_its_owner(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "STATE_DIR", tmp_path)
    rec = RunRecord("r1", bridges=["leaf1"], interfaces=["leaf1-eth1"])
    rec.claim()
    rec.save()
    back = RunRecord.load(tmp_path / "r1.json")
    assert back.bridges == ["leaf1"] and back.owner["pid"] == os.getpid()
    assert back.owner_alive()
    back.owner = {"pid": os.getpid(), "cmdline": ["not", "this", "program"]}
    assert not back.owner_alive()


def test_end_process_kills_only_the_recorded_command():
    cmd = [sys.executable, "-c", "import time; time.sleep(30)"]
    p = subprocess.Popen(cmd)
    try:
        assert not end_process(p.pid, ["some", "other", "command"])   # PID reused? spare it
        assert not end_process(p.pid, [])                              # unidentified: spare
        assert psutil.pid_exists(p.pid) and p.poll() is None
        assert end_process(p.pid, cmd[-2:])                            # tail of its cmdline
        assert p.wait(timeout=5) is not None
    finally:
        if p.poll() is None:
            p.kill()

"""ovs-vswitchd's malloc settings (testbed/ovs.py): read from the process that the pidfile
names, as glibc leaves them in its environment. Stand-in processes, no Open vSwitch."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed import ovs


@pytest.fixture
def pidfile_of(tmp_path, monkeypatch):
    """Start `sleep` with env `extra`, name it in OVS_RUNDIR's pidfile; stopped by its PID."""
    procs = []
    monkeypatch.setenv("OVS_RUNDIR", str(tmp_path))

    def start(extra: dict[str, str]) -> int:
        env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"} | extra
        p = subprocess.Popen(["sleep", "60"], env=env | {"MLFABRIC_TEST_EXECED": "1"})
        procs.append(p)
        _wait_for_exec(p.pid)
        (tmp_path / "ovs-vswitchd.pid").write_text(f"{p.pid}\n")
        return p.pid
    yield start
    for p in procs:
        p.kill()
        p.wait()


def _wait_for_exec(pid: int, timeout_s: float = 10.0) -> None:
    """Popen returns once the child's close-on-exec pipe closes, a moment before the kernel
    sets up the new image's environment: /proc/PID/environ read then was empty, and the
    tuned case failed in CI on a loaded machine. Wait until the environment shows."""
    deadline = time.monotonic() + timeout_s
    while b"MLFABRIC_TEST_EXECED=1" not in Path(f"/proc/{pid}/environ").read_bytes():
        assert time.monotonic() < deadline, "the stand-in process never started"
        time.sleep(0.001)


def test_tuned_when_started_with_the_settings(pidfile_of):
    pidfile_of({"GLIBC_TUNABLES": ovs.VSWITCHD_GLIBC_TUNABLES})
    assert ovs.vswitchd_malloc_tuned() is True


def test_not_tuned_without_them_or_with_others(pidfile_of):
    pidfile_of({})
    assert ovs.vswitchd_malloc_tuned() is False
    pidfile_of({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=131072"})
    assert ovs.vswitchd_malloc_tuned() is False


def test_unknown_without_a_running_process(tmp_path, monkeypatch):
    monkeypatch.setenv("OVS_RUNDIR", str(tmp_path))
    assert ovs.vswitchd_malloc_tuned() is None            # no pidfile
    (tmp_path / "ovs-vswitchd.pid").write_text("not a pid\n")
    assert ovs.vswitchd_malloc_tuned() is None
    dead = subprocess.Popen(["true"])
    dead.wait()
    (tmp_path / "ovs-vswitchd.pid").write_text(f"{dead.pid}\n")
    assert ovs.vswitchd_malloc_tuned() is None


def test_glibc_accepts_every_setting():
    """ld.so lists what it parsed: each of the three settings took (a typo would not)."""
    ldso = "/lib64/ld-linux-x86-64.so.2"
    if not os.path.exists(ldso):
        pytest.skip("no x86-64 glibc loader here")
    out = subprocess.run([ldso, "--list-tunables"], capture_output=True, text=True,
                         env={"GLIBC_TUNABLES": ovs.VSWITCHD_GLIBC_TUNABLES}).stdout
    got = {line.split(":")[0]: int(line.split(":")[1].split()[0], 16)
           for line in out.splitlines() if line.startswith("glibc.malloc.")}
    for item in ovs.VSWITCHD_GLIBC_TUNABLES.split(":"):
        name, value = item.split("=")
        assert got[name] == int(value), name


def test_bootstrap_helpers_exit_codes(pidfile_of):
    run = lambda *a: subprocess.run([sys.executable, "-m", "testbed.ovs", *a],  # noqa: E731
                                    capture_output=True, text=True)
    assert run("tunables").stdout.strip() == ovs.VSWITCHD_GLIBC_TUNABLES
    pidfile_of({})
    assert run("malloc-tuned").returncode == 1
    pidfile_of({"GLIBC_TUNABLES": ovs.VSWITCHD_GLIBC_TUNABLES})
    assert run("malloc-tuned").returncode == 0
    assert run("frobnicate").returncode == 2

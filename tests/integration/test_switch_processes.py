"""emulation.switch_processes: 2 on the real fabric: the same rules per switch, the same
paths (path verification on every flow) and CCTs within 5% of the one-process run; and
nothing left (bridges, veths, the run's ovs-vswitchd and ovsdb-server, their namespace and
run directory) after a success, an exception inside the fabric, SIGINT, and SIGKILL + clean.
Each test well under 60 s on an idle 2-core machine."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from experiments.config import parse
from experiments.runner import run_experiment

from .helpers import NOTHING, ROOT, leftovers, run_netns, run_ovs_processes


def quick_like(processes: int, iterations: int = 2, size_bytes: int = 600_000) -> dict:
    """The quickstart's shape, smaller: 4 spines, 4 leaves, 2 hosts per leaf, two 4-rank rings
    one rank per leaf (each leaf sends two flows to the next: ECMP may share an uplink, the
    ILP gives each its own spine)."""
    return {
        "name": f"procs{processes}", "seed": 3,
        "fabric": {"spines": 4, "leaves": 4, "hosts_per_leaf": 2, "host_link_mbps": 10,
                   "spine_link_mbps": 10},
        "jobs": [{"name": f"ring-{k}", "collective": "allreduce",
                  "hosts": [f"h{k + 2 * i}" for i in range(4)], "size_bytes": size_bytes,
                  "iterations": iterations} for k in (1, 2)],
        "routing": ["ecmp", "ilp"],
        "emulation": {"switch_processes": processes},
    }


def bundles(run_dir: Path) -> dict[str, str]:
    """Each switch's rules as installed before the traffic (the epochs' later updates follow
    the order in which flows finish, which timing decides)."""
    return {p.name: p.read_text() for p in sorted((run_dir / "rules").glob("*.bundle"))
            if not p.name.startswith("epoch")}


def test_two_processes_route_and_time_as_one(tmp_path):
    assert leftovers() == NOTHING, "a previous run left state behind"
    res = {}
    for n in (1, 2):
        res[n] = run_experiment(parse(quick_like(n)), tmp_path / str(n), log=lambda s: None)
        assert leftovers() == NOTHING, f"switch_processes {n} left state behind"
    env = json.loads((tmp_path / "2" / "environment.json").read_text())
    assert env["switch_processes"] == 2
    for one, two in zip(res[1]["runs"], res[2]["runs"]):
        routing = one["routing"]
        assert bundles(tmp_path / "1" / routing) == bundles(tmp_path / "2" / routing), routing
        assert ([p["observed_path"] for p in one["paths"]]
                == [p["observed_path"] for p in two["paths"]]), routing
        for p in two["paths"]:      # path verification: the flow's bytes on its one spine
            total = sum(p["switch_bytes"].values())
            assert max(p["switch_bytes"].values()) >= 0.99 * total
        for job in two["jobs"]:
            assert job["bytes_verified"] is True
        a, b = one["cct_mean_s"], two["cct_mean_s"]
        assert abs(b / a - 1) <= 0.05, f"{routing}: mean CCT {a:.3f} s (1) vs {b:.3f} s (2)"


def test_an_exception_inside_a_two_process_fabric_leaves_nothing():
    from testbed.fabric import FabricSpec, build_fabric
    from testbed.net import EmulatedFabric, EmulationSettings

    class Boom(Exception):
        pass

    fabric = build_fabric(FabricSpec(2, 2, 1, 10, 10))
    with pytest.raises(Boom):
        with EmulatedFabric(fabric, "itest-procs", EmulationSettings(switch_processes=2)) as emu:
            assert run_netns() == ["mlfitest-procsp1"]
            assert len(run_ovs_processes()) == 2        # its ovsdb-server and ovs-vswitchd
            assert emu.netns_of("leaf2") == "mlfitest-procsp1" and emu.netns_of("leaf1") is None
            raise Boom()
    assert leftovers() == NOTHING


def _start(tmp_path: Path, cfg: dict) -> subprocess.Popen:
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    return subprocess.Popen([sys.executable, "-m", "experiments", "run",
                             str(tmp_path / "cfg.yaml"), "--out", str(tmp_path / "out")],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _children_cmdlines(pid: int) -> list[list[str]]:
    """The command lines of `pid`'s descendants now; one that ends meanwhile is skipped (a
    zombie's cmdline raised ZombieProcess under load)."""
    found = []
    for kid in psutil.Process(pid).children(recursive=True):
        try:
            found.append(kid.cmdline())
        except psutil.Error:
            pass
    return found


def _wait_for_agents(proc: subprocess.Popen, deadline_s: float = 60.0) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < deadline_s:
        if proc.poll() is not None:
            pytest.fail(f"run ended early: {proc.stderr.read()}")
        if any("traffic.agent" in " ".join(cmd) for cmd in _children_cmdlines(proc.pid)):
            time.sleep(1.0)
            return
        time.sleep(0.2)
    pytest.fail("agents never started")


@pytest.fixture
def started(tmp_path):
    procs: list[subprocess.Popen] = []

    def start(cfg: dict) -> subprocess.Popen:
        procs.append(_start(tmp_path, cfg))
        return procs[-1]

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=30)
    if leftovers() != NOTHING:
        subprocess.run([sys.executable, "-m", "experiments", "clean"], cwd=ROOT, timeout=120)


def _sized(cfg: dict) -> dict:
    cfg = {**cfg, "routing": ["ecmp"]}
    cfg["fabric"] = {**cfg["fabric"], "spines": 2, "leaves": 2, "hosts_per_leaf": 1}
    cfg["jobs"] = [{"name": "ring", "collective": "allreduce", "hosts": ["h1", "h2"],
                    "size_bytes": 2_000_000, "iterations": 50}]
    return cfg


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_mid_run_leaves_nothing(started, sig, code):
    proc = started(_sized(quick_like(2)))
    _wait_for_agents(proc)
    assert run_netns() and run_ovs_processes(), "the second process should run now"
    os.kill(proc.pid, sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert leftovers() == NOTHING


def test_clean_removes_what_a_killed_two_process_run_left(started):
    proc = started(_sized(quick_like(2)))
    _wait_for_agents(proc)
    os.kill(proc.pid, signal.SIGKILL)          # no teardown can run
    proc.communicate(timeout=30)
    left = leftovers()
    assert left["netns"] and left["ovs_processes"] and left["records"]
    out = subprocess.run([sys.executable, "-m", "experiments", "clean"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert leftovers() == NOTHING

"""Program jobs on the real emulator: each rank's name and rendezvous, JAX over gloo under
ECMP and under a plan the controller learned from the switches, PyTorch DDP where torch is
installed, and the faults (a rank that fails, one that hangs, Ctrl-C) leaving nothing."""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import uuid

import psutil
import pytest

from experiments.config import parse
from experiments.runner import run_experiment
from traffic.driver import TrafficError

from .helpers import NOTHING, ROOT, leftovers
from .test_faults import CODES, runs  # noqa: F401  (the fixture)

FABRIC = {"spines": 2, "leaves": 4, "hosts_per_leaf": 2, "host_link_mbps": 20,
          "spine_link_mbps": 20}
#: one rank: its hostname, what that resolves to, and its rendezvous, as one step record
WHOAMI = ("import json, os, socket; h = socket.gethostname(); print(json.dumps({'mlfabric': "
          "'step', 'step': 0, 'time_s': 0.0, 'host': h, 'ip': socket.gethostbyname(h), "
          "**{k: os.environ[k] for k in ('RANK', 'WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT',"
          " 'GLOO_SOCKET_IFNAME', 'JAX_COORDINATOR_ADDRESS')}}))")


def _run(tmp_path, jobs: list[dict], **top) -> dict:
    doc = {"name": "itest-programs", "fabric": FABRIC, "jobs": jobs, "routing": ["ecmp"],
           **top}
    return run_experiment(parse(doc), tmp_path, log=lambda s: None)


def test_each_rank_has_its_own_name_resolving_to_its_fabric_address(tmp_path):
    res = _run(tmp_path, [{"name": "who", "program": [sys.executable, "-c", WHOAMI],
                           "hosts": ["h3", "h1", "h8"], "timeout_s": 60}])
    exp = parse({"name": "x", "fabric": FABRIC, "routing": ["ecmp"],
                 "jobs": [{"name": "a", "collective": "flows", "groups": [["h1", "h3"]],
                           "size_bytes": 1}]})
    seen = []
    for r in range(3):
        out = (tmp_path / "ecmp" / "logs" / f"who-rank{r}.out").read_text().splitlines()
        seen.append(json.loads(out[-1]))
    assert [s["host"] for s in seen] == ["h3", "h1", "h8"]
    assert all(s["ip"] == exp.fabric.ip_of(s["host"]) for s in seen)
    assert [s["RANK"] for s in seen] == ["0", "1", "2"]
    assert {s["MASTER_ADDR"] for s in seen} == {exp.fabric.ip_of("h3")}
    assert {s["GLOO_SOCKET_IFNAME"] for s in seen} == {"h3-eth0", "h1-eth0", "h8-eth0"}
    job, = res["runs"][0]["jobs"]
    assert job["exit_codes"] == [0, 0, 0] and job["timed_by"] == "steps"
    assert leftovers() == NOTHING


def _jax(name: str, hosts: list[str], iters: int = 8) -> dict:
    return {"name": name, "hosts": hosts, "timeout_s": 300,
            "program": ["python", "experiments/programs/jax_allreduce.py", "--sizes", "1M",
                        "--iters", iters],
            "env": {"OMP_NUM_THREADS": 1, "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false"},
            "traffic": {"collective": "allreduce", "size_bytes": 1 << 20,
                        "hosts": list(reversed(hosts))}}


def test_jax_allreduce_under_ecmp_and_under_a_learned_plan(tmp_path):
    """Two 4-rank JAX rings, one rank per leaf. Under ECMP each step is within 50% of the
    model of the spines the hash chose; with demand: measured the controller learns exactly
    the rings' 8 pairs (gloo's r -> r-1) at 2(n-1)/n x 1 MiB per step each, places them, and
    the steps after the plan are within 50% of the model's. 50%: eight JAX ranks beside two
    busy loops on 2 cores ran the planned steps +17% slow, and +31% at load 3-4, while a
    ring meeting the other on a spine the model does not know of runs about 2x (+100%).
    Quiet-machine figures: program_bench."""
    jobs = [_jax("ar1", ["h1", "h3", "h5", "h7"]), _jax("ar2", ["h2", "h4", "h6", "h8"])]
    hashed = _run(tmp_path / "ecmp", jobs)["runs"][0]
    for j in hashed["jobs"]:
        assert j["traffic"] == "declared" and len(j["steps"]) == 8
        assert abs(j["prediction_error_fraction"]) < 0.5, j["prediction_error_fraction"]
    learned = _run(tmp_path / "ilp", jobs, routing=["ilp"], demand="measured",
                   learn_steps=2)["runs"][0]
    want = {("h3", "h1"), ("h5", "h3"), ("h7", "h5"), ("h1", "h7"),
            ("h4", "h2"), ("h6", "h4"), ("h8", "h6"), ("h2", "h8")}
    got = {(p["src"], p["dst"]) for j in learned["jobs"] for p in j["learned_bytes_per_step"]}
    assert got == want
    per_step = 2 * 3 / 4 * (1 << 20)
    for j in learned["jobs"]:
        assert j["traffic"] == "learned" and j["planned_at_s"] is not None
        for p in j["learned_bytes_per_step"]:
            assert abs(p["bytes"] / per_step - 1) < 0.1, (j["name"], p)
        assert abs(j["prediction_error_fraction"]) < 0.5, j["prediction_error_fraction"]
    assert any(e["reason"].startswith("learned") for e in learned["epochs"])
    assert leftovers() == NOTHING


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="PyTorch not installed")
def test_pytorch_ddp_trains(tmp_path):
    res = _run(tmp_path, [{"name": "ddp", "hosts": ["h1", "h3", "h5", "h7"], "timeout_s": 300,
                           "program": ["python", "experiments/programs/torch_ddp.py",
                                       "--steps", 6],
                           "env": {"OMP_NUM_THREADS": 1}}])
    job, = res["runs"][0]["jobs"]
    losses = [s for s in (tmp_path / "ecmp" / "logs" / "ddp-rank0.out").read_text().splitlines()
              if s.startswith("{")]
    assert job["exit_codes"] == [0] * 4 and len(job["steps"]) == 6
    assert json.loads(losses[-1])["loss"] < json.loads(losses[0])["loss"]
    assert leftovers() == NOTHING


def test_a_rank_that_fails_ends_the_run_and_its_peers(tmp_path):
    code = "import os, sys, time; r = int(os.environ['RANK']); time.sleep(0.5 if r else 60); sys.exit(3)"
    with pytest.raises(TrafficError, match=r"jobs\.bad: rank 1 \(h3\) exited with 3"):
        _run(tmp_path, [{"name": "bad", "program": [sys.executable, "-c", code],
                         "hosts": ["h1", "h3"], "timeout_s": 60}])
    assert leftovers() == NOTHING


def test_a_rank_past_its_timeout_is_ended(tmp_path):
    code = "import time; time.sleep(600)"
    with pytest.raises(TrafficError, match=r"jobs\.slow: rank 0 \(h1\) still runs after "
                                           r"timeout_s 2 s"):
        _run(tmp_path, [{"name": "slow", "program": [sys.executable, "-c", code],
                         "hosts": ["h1", "h3"], "timeout_s": 2}])
    assert leftovers() == NOTHING


def _marked(tag: str) -> list[psutil.Process]:
    """Processes whose argument list holds `tag` (read only: nothing is ended by name)."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        if tag in (p.info["cmdline"] or []):
            out.append(p)
    return out


def _sleepers(tag: str) -> str:
    """Python that starts two `sleep TAG` children, one in the rank's process group and
    one in a session of its own, both holding the rank's output."""
    return (f"import subprocess; subprocess.Popen(['sleep', '{tag}']); "
            f"subprocess.Popen(['sleep', '{tag}'], start_new_session=True); "
            "print('started', flush=True)")


def test_a_rank_that_forks_is_ended_with_its_children(tmp_path):
    """The rank forks a sleeper and hangs: the timeout ends the rank's PID namespace."""
    tag = f"{600 + uuid.uuid4().int % 10**6 / 10**6:.6f}"
    code = f"import time; {_sleepers(tag)}; time.sleep(600)"
    with pytest.raises(TrafficError, match="still runs after"):
        _run(tmp_path, [{"name": "forks", "program": [sys.executable, "-c", code],
                         "hosts": ["h1"], "timeout_s": 3}])
    assert (tmp_path / "ecmp" / "logs" / "forks-rank0.out").read_text() == "started\n"
    assert _marked(tag) == []
    assert leftovers() == NOTHING


def test_a_rank_is_done_when_it_exits_and_its_children_end_with_it(tmp_path):
    """Each rank leaves two sleepers behind (one in its group, one in its own session, both
    holding its output) and exits 0: the job finishes, well before its timeout, and no
    sleeper survives the run."""
    tag = f"{301 + uuid.uuid4().int % 10**6 / 10**6:.6f}"
    res = _run(tmp_path, [{"name": "bg", "program": [sys.executable, "-c", _sleepers(tag)],
                           "hosts": ["h1", "h3"], "timeout_s": 120}])
    job, = res["runs"][0]["jobs"]
    assert job["exit_codes"] == [0, 0]
    assert job["wall_s"] < 60, job["wall_s"]
    assert _marked(tag) == []
    assert leftovers() == NOTHING


def test_an_overlong_output_line_is_copied_and_steps_still_read(tmp_path):
    """A rank writes 32 MiB without a newline, then a step record: the job finishes, the
    .out file has every byte, the step after the long line is read."""
    code = ("import json, sys; sys.stdout.buffer.write(b'x' * (32 << 20) + b'\\n'); "
            "print(json.dumps({'mlfabric': 'step', 'step': 0, 'time_s': 0.25}), flush=True)")
    res = _run(tmp_path, [{"name": "long", "program": [sys.executable, "-c", code],
                           "hosts": ["h1"], "timeout_s": 120}])
    job, = res["runs"][0]["jobs"]
    assert job["exit_codes"] == [0] and len(job["steps"]) == 1
    assert (tmp_path / "ecmp" / "logs" / "long-rank0.out").stat().st_size > 32 << 20
    assert leftovers() == NOTHING


def test_ctrl_c_while_programs_run_leaves_nothing(runs):  # noqa: F811
    code = "import time; print('up', flush=True); time.sleep(600)"
    run = runs({"name": "itest-int", "fabric": FABRIC, "routing": ["ecmp"],
                "jobs": [{"name": "idle", "program": [sys.executable, "-c", code],
                          "hosts": ["h1", "h3", "h5"], "timeout_s": 300}]})
    assert run.wait_for_line("rules on"), run.lines
    os.killpg(run.proc.pid, signal.SIGINT)
    code_, err, waited = run.end(60)
    assert code_ == CODES[signal.SIGINT], err
    assert waited < 30
    assert leftovers() == NOTHING
    assert subprocess.run([sys.executable, "-m", "experiments", "clean"], cwd=ROOT,
                          capture_output=True).returncode == 0


def test_the_controller_learns_what_our_agents_declared(tmp_path):
    """Our agents' two 2-rank rings under demand: measured: the pairs learned carry the bytes
    their DAG declares (a 2-rank all-reduce of S sends S each way per iteration) within 5%,
    and they are placed (the first plan after both rings learned once)."""
    from .helpers import small_config
    doc = {**small_config(["ilp"], iterations=6, size_bytes=600_000), "demand": "measured",
           "learn_steps": 2}
    run, = run_experiment(parse(doc), tmp_path, log=lambda s: None)["runs"]
    for j in run["jobs"]:
        assert j["planned_at_s"] is not None
        assert len(j["learned_bytes_per_step"]) == 2
        for p in j["learned_bytes_per_step"]:
            assert abs(p["bytes"] / p["declared_bytes"] - 1) < 0.05, (j["name"], p)
    assert run["learned"]["windows"]
    assert leftovers() == NOTHING

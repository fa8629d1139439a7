"""Program jobs, pure parts: step records, rank environments, the config, the learner's
estimates on recorded counter series, and host pair rules."""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.config import ConfigError, parse
from experiments.learner import (ELEPHANT_FRACTION, PAIR_CONN_BASE, DemandLearner, delivered_at,
                                 candidate_pairs, learned_job)
from routing.rules import PAIR_PRIORITY, rules_for
from testbed.fabric import FabricSpec, build_fabric
from testbed.openflow import FlowRule
from testbed.rankns import exit_code, hosts_file_text
from testbed.rankns import main as rankns_main
from traffic.program_driver import LineReader, rank_command
from traffic.collectives import Collective, plan_jobs
from traffic.programs import ProgramSpec, StepLog, job_steps, rank_env

ROOT = Path(__file__).resolve().parents[3]
FABRIC = {"spines": 2, "leaves": 4, "hosts_per_leaf": 2, "host_link_mbps": 20,
          "spine_link_mbps": 20}


def _doc(**job) -> dict:
    prog = {"name": "p", "program": [sys.executable, "-c", "pass"], "hosts": ["h1", "h3"],
            **job}
    return {"name": "t", "fabric": FABRIC, "jobs": [prog], "routing": ["ecmp", "greedy"]}


# -- step records -------------------------------------------------------------------------------
def test_step_records_are_read_and_bad_ones_counted():
    log = StepLog()
    lines = ['{"mlfabric": "step", "step": 0, "time_s": 1.5}',
             'loss 0.3 at step 1',                                   # the program's own
             '{"other": 1}',                                         # not ours: ignored
             '{"mlfabric": "step", "step": -1, "time_s": 1.0}',      # bad: negative step
             '{"mlfabric": "step", "step": 2, "time_s": "fast"}',    # bad: no number
             '{"mlfabric": "step", "step": true, "time_s": 1.0}',    # bad: a bool
             '{"mlfabric": "step", "step": 1, "time_s": 1.25, "loss": 0.3}',
             '{"mlfabric": "step", "step": 3']                       # cut: not JSON, ignored
    got = [log.feed(line, arrived=10.0 + i) for i, line in enumerate(lines)]
    assert got == [0, None, None, None, None, None, 1, None]
    assert log.bad == 3
    assert log.steps == {0: (1.5, 10.0), 1: (1.25, 16.0)}


def test_a_jobs_step_time_is_its_slowest_ranks():
    a, b = StepLog(), StepLog()
    a.feed('{"mlfabric": "step", "step": 0, "time_s": 1.0}', 5.0)
    b.feed('{"mlfabric": "step", "step": 0, "time_s": 1.2}', 5.1)
    a.feed('{"mlfabric": "step", "step": 1, "time_s": 0.9}', 6.0)
    assert job_steps([a, b]) == [{"step": 0, "time_s": 1.2, "ranks": 2, "at_s": 5.1},
                                 {"step": 1, "time_s": 0.9, "ranks": 1, "at_s": 6.0}]


# -- ranks' environment and names ---------------------------------------------------------------
def test_each_rank_gets_the_rendezvous_and_its_own_name():
    spec = ProgramSpec("p", ("python", "x.py"), ("h5", "h1", "h9"))
    ips = {"h1": "10.0.1.1", "h5": "10.0.2.1", "h9": "10.0.3.1"}
    env = rank_env(spec, 2, 1, ips, "h1-eth0")
    assert env["RANK"] == "1" and env["WORLD_SIZE"] == "3" and env["LOCAL_RANK"] == "0"
    assert env["MASTER_ADDR"] == "10.0.2.1"                    # rank 0's host, h5
    assert env["MASTER_PORT"] == "29502"                       # the third program job
    assert env["JAX_COORDINATOR_ADDRESS"] == "10.0.2.1:29502"
    assert env["JAX_PROCESS_ID"] == "1" and env["GLOO_SOCKET_IFNAME"] == "h1-eth0"
    text = hosts_file_text(ips)
    assert "127.0.0.1 localhost" in text and "10.0.1.1 h1" in text.splitlines()


# -- the config ---------------------------------------------------------------------------------
def test_a_program_job_loads_and_its_resolved_form_loads_again():
    exp = parse(_doc(env={"A": 1}, traffic={"collective": "allreduce", "size_bytes": 1000,
                                            "hosts": ["h3", "h1"]}))
    (p,) = exp.programs
    assert p.argv == (sys.executable, "-c", "pass") and p.env == (("A", "1"),)
    (model,) = exp.jobs
    assert model.host_pairs and model.groups == [["h3", "h1"]]
    plan = plan_jobs(exp.jobs)[0]
    assert all(c.host_pair for c in plan.connections)         # routed per host pair
    resolved = exp.resolved()
    assert parse(resolved).resolved() == resolved


def test_placed_ranks_take_free_hosts():
    exp = parse(_doc(hosts=None) | {"jobs": [{"name": "p", "program": [sys.executable],
                                              "ranks": 3, "placement": "packed"}]})
    assert exp.programs[0].hosts == ("h1", "h2", "h3")


@pytest.mark.parametrize("change, message", [
    ({"program": "python train.py"}, "jobs[0].program: expected a list"),
    ({"program": []}, "jobs[0].program: expected a list"),
    ({"program": ["no-such-program-here"]}, "is not an executable"),
    ({"env": {"1BAD": "x"}}, "jobs[0].env: '1BAD' is not a variable name"),
    ({"env": {"A": [1]}}, "jobs[0].env.A: expected a string"),
    ({"env": {"A": "a\0b"}}, "jobs[0].env.A: expected a string .* without a NUL byte"),
    ({"env": {"A": float("nan")}}, "jobs[0].env.A: expected a string"),
    ({"env": {"A": float("inf")}}, "jobs[0].env.A: expected a string"),
    ({"env": {"A": True}}, "jobs[0].env.A: expected a string"),
    ({"program": [sys.executable, "-c", "pass\0"]}, "jobs[0].program: .*no NUL byte"),
    ({"program": [sys.executable, float("nan")]}, "jobs[0].program: expected a list"),
    ({"program": ["python", "-c", "pass"], "env": {"PATH": "/nonexistent"}},
     "jobs[0].env.PATH: 'python' (the program) is not on '/nonexistent'; add its directory"),
    ({"cwd": "/no/such/folder"}, "jobs[0].cwd:"),
    ({"timeout_s": 0}, "jobs[0].timeout_s:"),
    ({"traffic": {"collective": "allreduce", "size_bytes": 10, "hosts": ["h1", "h5"]}},
     "host h5 runs no rank of this program"),
    ({"hosts": ["h1", "h3"], "ranks": 2}, "give hosts, or placement and ranks"),
])
def test_bad_program_jobs_are_one_line_errors(change, message):
    pattern = message.replace("[", r"\[").replace("]", r"\]").replace("(the", r"\(the") \
        .replace("program)", r"program\)")
    with pytest.raises(ConfigError, match=pattern) as e:
        parse(_doc(**change))
    assert "\n" not in str(e.value)


def test_a_program_found_on_the_jobs_own_path_is_taken():
    exe = Path(sys.executable)
    exp = parse(_doc(program=[exe.name, "-c", "pass"], env={"PATH": str(exe.parent)}))
    assert exp.programs[0].argv[0] == exe.name and dict(exp.programs[0].env)["PATH"] == \
        str(exe.parent)


# -- the rank's output and its init ------------------------------------------------------------
def test_lines_are_split_across_chunks_and_an_overlong_one_is_dropped_not_kept():
    reader = LineReader(limit=8)
    assert reader.feed(b"ab") == [] and reader.feed(b"c\nde") == [b"abc"]
    assert reader.feed(b"f\n\n") == [b"def", b""]
    for _ in range(1000):                       # 1000 x 5 bytes, no newline: never kept
        assert reader.feed(b"xxxxx") == []
        assert len(reader.part) <= 8
    assert reader.feed(b"x\n{}\n") == [None, b"{}"]
    assert reader.feed(b"12345678") == [] and reader.feed(b"\n") == [b"12345678"]
    assert reader.feed(b"{}") == [] and reader.end() == b"{}"      # the last, no newline
    assert reader.end() is None and reader.feed(b"x" * 9) == [] and reader.end() is None


def test_the_rank_init_reports_the_programs_exit_as_a_shell_does():
    assert exit_code(0) == 0 and exit_code(3 << 8) == 3
    assert exit_code(signal.SIGKILL) == 128 + signal.SIGKILL
    assert exit_code(signal.SIGTERM) == 128 + signal.SIGTERM


def test_the_rank_init_runs_the_program_with_its_environment_and_reaps_orphans(tmp_path):
    """rankns.supervise, run in a child process here: the program sees exactly the given
    environment, an orphan it leaves is reaped, and its exit code comes back."""
    code = ("import os, subprocess, sys; subprocess.Popen(['true']); "
            "print(os.environ['ONLY'], 'HOME' in os.environ); sys.exit(7)")
    script = ("import sys; from testbed.rankns import supervise; "
              f"sys.exit(supervise([sys.executable, '-c', {code!r}], {{'ONLY': 'yes'}}))")
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=60, cwd=ROOT)
    assert p.returncode == 7, p.stderr
    assert p.stdout.split() == ["yes", "False"]       # only what it was given


def test_the_rank_init_refuses_a_bad_command_line():
    assert rankns_main(["--hostname", "h1", "--", "true"]) == 2
    assert rankns_main(["--hostname", "h1", "--hosts", "f", "--env", "e"]) == 2


def test_a_rank_starts_in_pid_uts_and_mount_namespaces_with_its_env_file(tmp_path):
    spec = ProgramSpec(name="p", argv=("python", "x.py"), hosts=("h1",))
    cmd = rank_command(spec, "h1", tmp_path / "hosts", tmp_path / "env.json")
    cut = cmd.index("--")
    assert cmd[0] == "unshare" and {"--pid", "--fork", "--kill-child=SIGKILL", "--uts",
                                    "--mount"} <= set(cmd[:cut])
    assert cmd[-3:] == ["--", "python", "x.py"]
    assert cmd[cmd.index("--env") + 1] == str((tmp_path / "env.json").resolve())


def test_programs_run_in_configs_of_their_own():
    doc = _doc()
    doc["jobs"].append({"name": "r", "collective": "allreduce", "hosts": ["h2", "h4"],
                        "size_bytes": 1000})
    with pytest.raises(ConfigError, match="program jobs run in a config of their own"):
        parse(doc)


def test_demand_keys():
    exp = parse({**_doc(), "demand": "measured", "learn_steps": 5})
    assert exp.demand == ("measured", 5, None)
    assert parse(exp.resolved()).demand == exp.demand
    with pytest.raises(ConfigError, match="learn_s: give learn_steps or learn_s"):
        parse({**_doc(), "demand": "measured", "learn_steps": 5, "learn_s": 3})
    with pytest.raises(ConfigError, match="demand:"):
        parse({**_doc(), "demand": "guessed"})


# -- host pair rules ----------------------------------------------------------------------------
def test_a_host_pair_is_counted_at_its_destination_leaf_and_pinned_at_its_source():
    fabric = build_fabric(FabricSpec(2, 4, 2, 20, 20))
    pairs = candidate_pairs({"h1": "a", "h3": "a"})
    assert [(c.src, c.dst) for c in pairs] == [("h1", "h3"), ("h3", "h1")]
    match = f"ip,nw_src={fabric.ip_of('h1')},nw_dst={fabric.ip_of('h3')}"

    def pair_rules(rules, switch):
        return [(r.actions, r.cookie) for r in rules if isinstance(r, FlowRule)
                and r.switch == switch and r.priority == PAIR_PRIORITY and r.match == match]
    hashed = rules_for(fabric, pairs, "ecmp", {})
    cookie = 0x1000000 + pairs[0].conn_id
    assert pair_rules(hashed, "leaf2") == [(f"output:{fabric.port('leaf2', 'h3')}", cookie)]
    assert pair_rules(hashed, "leaf1") == []                   # the leaf's hash decides
    pinned = rules_for(fabric, pairs, "greedy", {pairs[0].conn_id: "spine2"})
    assert pair_rules(pinned, "leaf1") == [(f"output:{fabric.port('leaf1', 'spine2')}",
                                            cookie)]
    assert pair_rules(pinned, "leaf2") == pair_rules(hashed, "leaf2")


# -- the learner ----------------------------------------------------------------------------------
def test_a_learned_ring_is_a_ring_all_reduce_of_the_same_bytes_per_edge():
    ring = {("h7", "h5"): 3.0e6, ("h5", "h3"): 3.0e6, ("h3", "h1"): 3.0e6, ("h1", "h7"): 3.0e6}
    spec = learned_job("j", ring)
    assert spec.collective is Collective.ALLREDUCE and spec.host_pairs
    assert sorted(spec.groups[0]) == ["h1", "h3", "h5", "h7"]
    assert spec.size_bytes == 2_000_000                       # 3 MB = 2 (n-1)/n x S, n = 4
    plan = plan_jobs([spec])[0]
    per_edge = {}
    for t in plan.transfers:
        c = plan.connections[t.conn_id]
        per_edge[c.src, c.dst] = per_edge.get((c.src, c.dst), 0) + t.size_bytes
    assert per_edge == {pair: 3_000_000 for pair in ring}
    star = learned_job("s", {("h1", "h3"): 1e6, ("h1", "h5"): 3e6})
    assert star.collective is Collective.FLOWS and star.size_bytes == 2_000_000
    assert learned_job("n", {}) is None


class _Policy:
    def __init__(self):
        self.active, self.placed = set(), []

    def place_only(self, ids, reason):
        self.placed.append((sorted(ids), reason))
        return "decision"


class _Controller:
    """The controller's side the learner uses; counters scripted per step."""
    def __init__(self, fabric, pairs):
        self.fabric0, self.conns, self.policy = fabric, pairs, _Policy()
        self.entry, self.strategy = type("E", (), {"name": "greedy"}), "greedy"
        self.fabric_all = fabric
        self.epochs = []

    def record_epoch(self, t, reason, decision):
        self.epochs.append((t, reason))


def _scripted_learner(monkeypatch, c: _Controller, delivered, clock) -> DemandLearner:
    """A learner of job "a" (learn_steps 2) on `c`, whose counters `delivered(leaf)` gives
    and whose clock is `clock`; the job started at 0."""
    monkeypatch.setattr("experiments.learner.settle_flow_stats", lambda: None)
    monkeypatch.setattr("experiments.learner.switch_counts", lambda fabric: {})
    monkeypatch.setattr("experiments.learner.flow_bytes_by_cookie", delivered)
    exp = type("X", (), {"demand": ("measured", 2, None),
                         "fabric": type("F", (), {"spec": c.fabric0.spec})})
    learner = DemandLearner(c, exp, log=lambda s: None, clock=clock)
    learner.jobs_started(["a"], 0.0)
    return learner


def test_the_learner_keeps_the_pairs_that_send_a_tenth_of_their_link(monkeypatch):
    """Two hosts of one job, 20 Mbit/s links (a tenth: 0.25 MB/s), 1 s steps, counters read
    every 0.5 s: h1 -> h3 delivers 2.5 MB per step at an even 2.5 MB/s (demand), h3 -> h1
    40 kB/s (its acknowledgements: not). The first window runs from the end of step 0 (1 s;
    the start-up before it is not demand) to the end of step 2 (3 s): 2.5 MB/s x 1 s per
    step = 2.5 MB per step."""
    fabric = build_fabric(FabricSpec(2, 4, 2, 20, 20))
    pairs = candidate_pairs({"h1": "a", "h3": "a"})
    c = _Controller(fabric, pairs)
    now = [0.0]

    def delivered(leaf):            # counted where each pair arrives: h3's leaf2, h1's leaf1
        t = now[0]
        if leaf == "leaf2":
            return {0x1000000 + pairs[0].conn_id: int(7.5e6 + 2.5e6 * (t - 1.0))}
        return {0x1000000 + pairs[1].conn_id: int(40e3 * t)}
    learner = _scripted_learner(monkeypatch, c, delivered, lambda: now[0])
    for t in (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5):
        now[0] = t
        if t in (1.0, 2.0, 3.0):
            learner.step("a", int(t) - 1, t)
        learner.tick(t)
    assert c.policy.placed == [([pairs[0].conn_id], "learned")]
    assert learner.planned_at == {"a": pytest.approx(3.0, abs=0.5)}
    assert learner.matrix("a") == {("h1", "h3"): pytest.approx(2.5e6, rel=1e-6)}
    (w,) = learner.windows
    assert (w["from_s"], w["to_s"], w["steps"], w["readings"]) == (1.0, 3.0, 2, 5)
    assert [(p["src"], round(p["rate_mbps"], 3), p["demand"]) for p in w["pairs"]] == [
        ("h1", 20.0, True), ("h3", 0.32, False)]
    assert [p["bytes"] for p in w["pairs"]] == [pytest.approx(5e6), pytest.approx(80e3)]
    assert 0.32 < ELEPHANT_FRACTION * 20 < 20.0
    learner.job_finished("a", 5.0)               # its pairs go back to the hash
    assert c.policy.placed[-1] == ([], "finish a")
    assert pairs[0].conn_id >= PAIR_CONN_BASE


def test_an_agents_job_on_two_planes_is_read_idle_at_its_windows_ends(monkeypatch):
    """An agents' job on two planes: each 1 s iteration delivers 1 MB from h1 to h3 on each
    plane, then the driver's hooks run while the pair is idle, and every leaf dump takes
    0.3 s. Read at the ends of the steps that bound its windows, it learns 2 MB per step
    exactly; dated by the dumps alone it would read low (the counters stood still for the
    0.3-1.2 s of dumps after each step)."""
    fabric = build_fabric(FabricSpec(2, 4, 2, 20, 20, planes=2))
    pairs = candidate_pairs({"h1": "a", "h3": "a"})
    c = _Controller(fabric, pairs)
    now, done, cookie = [0.0], [0], 0x1000000 + pairs[0].conn_id

    def delivered(leaf):              # h1 -> h3 arrives at leaf2 (plane 1) and leaf6 (plane 2)
        now[0] += 0.3
        return {cookie: done[0] * 1_000_000} if leaf in ("leaf2", "leaf6") else {}
    learner = _scripted_learner(monkeypatch, c, delivered, lambda: now[0])
    for _ in range(5):
        now[0] += 1.0                  # an iteration: its bytes counted at its end
        done[0] += 1
        learner.iteration_done("a", type("R", (), {"end_s": now[0]}))
        learner.tick(now[0])
    assert [w["steps"] for w in learner.windows] == [2, 2]
    assert learner.matrix("a") == {("h1", "h3"): 2_000_000}
    assert [p["bytes_per_step"] for w in learner.windows for p in w["pairs"]] == [2e6, 2e6]


def test_what_a_pair_delivered_by_a_time_is_interpolated_between_readings():
    """Readings at 0, 0.5 and 1.5 s of 0, 1 and 4 MB: at 1.0 s, halfway from 1 to 4 MB =
    2.5 MB; before the first and after the last reading, the nearest one."""
    readings = [(0.0, {7: 0}), (0.5, {7: 1_000_000}), (1.5, {7: 4_000_000})]
    assert delivered_at(readings, 7, 1.0) == pytest.approx(2_500_000)
    assert delivered_at(readings, 7, 0.5) == pytest.approx(1_000_000)
    assert delivered_at(readings, 7, 9.0) == 4_000_000
    assert delivered_at(readings, 8, 1.0) == 0              # a pair never counted


def test_top_level_subflows_cannot_apply_to_a_programs_traffic():
    doc = _doc(traffic={"collective": "allreduce", "size_bytes": 1000})
    doc["subflows"] = 4
    with pytest.raises(ConfigError, match=r"^subflows: 4 cannot apply to jobs\[0\] \(p\).*"
                                          r"drop the top-level subflows$"):
        parse(doc)
    doc["subflows"] = 1
    assert parse(doc).jobs[0].subflows == 1


def test_predict_of_programs_without_traffic_refuses_before_making_its_folder(tmp_path,
                                                                               capsys):
    import yaml

    from experiments.__main__ import main
    config = tmp_path / "p.yaml"
    config.write_text(yaml.safe_dump(_doc()))
    out = tmp_path / "out"
    assert main(["predict", str(config), "--out", str(out)]) == 2
    assert not out.exists()
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "declare no traffic" in err[0]

"""`run`'s per-routing steps (experiments/routing_run.py: install, drive, measure, predict,
record, for agents and programs: experiments/job_kinds.py) without root: a scripted traffic
driver (and program driver), CPU monitor and switch counters stand in for the emulator, rules
are written as a dry run, and the results record every routing gets must be the one the code
gave before the steps were split (stored digests)."""
import dataclasses
import hashlib
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from ..digests import scrubbed

import experiments.controller as controller_mod
import experiments.measure as measure_mod
import experiments.job_kinds as job_kinds
import experiments.routing_run as routing_run
import experiments.runner as runner
from experiments.config import load
from routing import route
from testbed import installer
from traffic.collectives import plan_jobs, with_port_offset
from traffic.driver import IterationRecord, JobRecord
from traffic.predictor import ideal

CONFIGS = Path(__file__).resolve().parents[3] / "experiments" / "configs"


class _Driver:
    """Every job's iterations on a scripted clock: job i's transfers take 2 (i + 1) s each
    iteration after its compute_s; the controller's hooks and timers fire in time order."""

    def __init__(self, emu, plans, seed, tcp_cc, timeout_s, log_dir, watch=None):
        self.plans, self.t0 = plans, 0.0

    def start_agents(self):
        pass

    def connect(self):
        pass

    def stop_agents(self):
        pass

    def run_jobs(self, on_start, on_finish, timers, on_iteration):
        self.t0 = 1000.0
        records = {p.name: JobRecord(p.name, verified=True) for p in self.plans}
        hooks = []      # (t, order, call): starts, then timers, then finishes at equal times
        for i, p in enumerate(self.plans):
            d, t = 2.0 * (i + 1), p.spec.start_s
            hooks.append((t, 0, lambda t, p=p: on_start([p.name], t)))
            for k in range(p.spec.iterations):
                t0 = t + p.spec.compute_s
                rec = IterationRecord(k, self.t0 + t0, self.t0 + t0 + d, p.bytes_per_iteration(),
                                      [[x.tid, self.t0 + t0 + d / 4, self.t0 + t0 + d, x.size_bytes]
                                       for x in p.transfers], retrans_segments=k)
                records[p.name].iterations.append(rec)
                t = t0 + d
            hooks.append((t, 2, lambda t, p=p: on_finish(p.name, t)))
        hooks += [(at, 1, fn) for at, fn in timers]
        for t, _, fn in sorted(hooks, key=lambda h: (h[0], h[1])):
            fn(t)
        for p in self.plans:
            for it in records[p.name].iterations:
                on_iteration(p.name, it)
        return records


class _Monitor:
    def __init__(self, taps=(), others=()):
        self.taps = taps

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def summary(self):
        return {"ok": True, "forwarding_max_pct": 12.5}

    def write_csv(self, path):
        Path(path).write_text("t_s\n")


class _Counters:
    """Each reading adds 1,000 bytes per flow on every switch of its path now (the
    controller's for placed or fixed plans, the model's hash for ECMP)."""

    def __init__(self):
        self.controller, self.totals = None, {}

    def read(self, switch: str) -> dict[int, int]:
        c = self.controller
        pol = c.policy
        hashed = (route("ecmp", pol.fabric, pol.conns, seed=pol.seed).path_of
                  if pol.strategy == "ecmp" else {})
        for conn in pol.conns:
            path = hashed.get(conn.conn_id) if hashed else pol.assignment.get(conn.conn_id)
            if path and switch in path[1:-1]:
                key = (switch, conn.conn_id)
                self.totals[key] = self.totals.get(key, 0) + 1000
        return {0x1000000 + cid: n for (s, cid), n in self.totals.items() if s == switch}


class _Emu:
    taps: list[str] = []
    other_vswitchds: list[tuple[int, str]] = []     # switch_processes: 1

    def set_link(self, u, v, up):
        pass

    def cpu_monitor(self):
        return _Monitor(self.taps, self.other_vswitchds)


@pytest.fixture
def fake_fabric(monkeypatch):
    counters = _Counters()

    class Recorded(controller_mod.Controller):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            counters.controller, counters.totals = self, {}     # a new routing's run

    monkeypatch.setattr(routing_run, "Controller", Recorded)
    monkeypatch.setattr(job_kinds, "TrafficDriver", _Driver)
    monkeypatch.setattr(job_kinds, "ProgramDriver", _Programs)
    monkeypatch.setattr(routing_run, "settle_flow_stats", lambda: None)
    monkeypatch.setattr(measure_mod, "flow_bytes_by_cookie", counters.read)
    monkeypatch.setattr(controller_mod, "flow_bytes_by_cookie", counters.read)
    # rule writes and reroutes take no time: an event's end (after_events) is its at_s
    monkeypatch.setattr(controller_mod, "time", SimpleNamespace(perf_counter=lambda: 0.0))
    monkeypatch.setattr(controller_mod, "install",
                        lambda rules, out: installer.install(rules, out, dry_run=True))
    monkeypatch.setattr(controller_mod, "apply_lines",
                        lambda lines, out, label: installer.apply_lines(lines, out, label,
                                                                        dry_run=True))
    return counters


#: wall-clock figures (solves, rule writes) left out of the comparison
_TIMING = {"install_s", "solve_time_s", "time_s", "time_s_max", "time_s_mean", "reroute_s",
           "links_set_s", "predict_wall_s", "wall_s"}



#: keys records gained after the digests were written (fidelity's reordering counters, each
#: job's predicted iteration ends, the solve's solver)
_ADDED = {"tcp_out_of_order_packets", "tcp_reordering_seen", "predicted_iteration_end_s",
          "solver"}


def _scrub(o, added: frozenset = frozenset()):
    return scrubbed(o, _TIMING | _ADDED | added)


def emulated_records(config: Path, out: Path, logged: list[str]) -> list[dict]:
    """run_one_routing for every routing of `config`, as run_experiment and run_nonblocking
    call it (the reference on its one-switch twin), on the scripted fabric."""
    exp = load(config)
    plans = plan_jobs(exp.jobs)
    conns = [c for p in plans for c in p.connections]
    ideal_pred = ideal(exp.fabric, plans)
    runs = []
    for i, entry in enumerate(exp.routings):
        one, fabric = exp, exp.fabric
        if entry.reference:
            fabric = exp.fabric.nonblocking()
            one = dataclasses.replace(exp, fabric=fabric, events=[])
        rp = route(entry.routed_by, fabric, conns, seed=exp.seed)
        runs.append(runner.run_one_routing(
            one, _Emu(), entry, rp, with_port_offset(plans, i * len(conns)), ideal_pred, 0.9,
            60.0, out / entry.run_dir, logged.append, port_offset=i * len(conns)))
    return runs


def emulated_digest(config: Path, out: Path, added: frozenset = frozenset()) -> str:
    """sha256 of every routing's results record (wall-clock keys left out), the log lines
    (timings masked) and every file it wrote (rule bundles, commands, transfers.csv, ...)."""
    logged: list[str] = []
    runs = emulated_records(config, out, logged)
    h = hashlib.sha256(json.dumps(_scrub(runs, added), sort_keys=True).encode())
    for line in logged:
        h.update(" ".join(w for w in line.split() if not w[:1].isdigit()).encode())
    for f in sorted(p for p in out.rglob("*") if p.is_file()):    # paths in them masked
        h.update(str(f.relative_to(out)).encode()
                 + f.read_bytes().replace(str(out).encode(), b"OUT"))
    return h.hexdigest()


#: written by emulated_digest from the code before run_one_routing was split into steps
#: (b535447; the same at 12ab310, before the routing entries became records):
#: ecmp, placed and @host plans with a reference (hedera-k4 has nonblocking), and failover's
#: spine and link events (after_events, unfired events)
#: All three rewritten when the run's log began to say "emulator faithful" (not "ok") and
#: "N flows moved" (nothing when the controller moved none, not "flows moved None"): the
#: records and every file the same (their digest without the log lines equal before and after).
BEFORE = {
    "host-enforced": "bb1b3e41ec27f8ea9a9e09677913716ffe4dc1f31075dbc991f5080b6d585225",
    # rewritten when an agg's pin began to be held one update after its flow left (the
    # finishing job's epoch re-adds 14 fewer counting rules; every other key the same)
    "hedera-k4": "5cc083f125bcaf2f8769b5107d7d5cab7c96b0620ff415d365e754c85e514ecc",
    # rewritten when rule updates began with the switches above the leaves: the same records
    # and bundles, commands.txt lists spine2's and spine3's bundles before the leaves'
    "failover": "211fb9a568319b7964303134bce9bdf00a7530cc0c5cd4e3bcd460833dcafd6a",
}


@pytest.mark.parametrize("stem", sorted(BEFORE))
def test_every_routing_gets_the_record_it_got_before_the_steps(stem, fake_fabric, tmp_path):
    assert emulated_digest(CONFIGS / f"{stem}.yaml", tmp_path / stem) == BEFORE[stem]


def test_a_flow_off_its_given_paths_stops_the_run(fake_fabric, tmp_path, monkeypatch):
    real = fake_fabric.read

    def astray(switch):     # every flow's bytes also on every spine
        c = fake_fabric.controller
        return {**real(switch), **{0x1000000 + x.conn_id: 5000 for x in c.conns}}
    monkeypatch.setattr(measure_mod, "flow_bytes_by_cookie", astray)
    with pytest.raises(routing_run.PathMismatchError, match=r"\[ilp\] \d+ flows crossed"):
        emulated_records(CONFIGS / "quickstart.yaml", tmp_path, [])


class _Programs:
    """Every program job's steps on a scripted clock: job i's steps take 0.5 (i + 1) s each,
    6 steps, rank 0 reporting; the controller's hooks fire in time order."""

    def __init__(self, emu, programs, log_dir, hosts_file):
        self.programs = programs

    def run(self, on_start=None, on_finish=None, on_step=None, tick=None):
        from traffic.program_driver import ProgramRecord
        records = {}
        for i, p in enumerate(self.programs):
            on_start([p.name], p.start_s)
            d = 0.5 * (i + 1)
            steps = [{"step": k, "time_s": d, "ranks": p.ranks, "at_s": p.start_s + d * (k + 1)}
                     for k in range(6)]
            for s in steps:
                on_step(p.name, s["step"], s["at_s"])
            records[p.name] = ProgramRecord(p.name, p.start_s, p.start_s + 6 * d,
                                            [0] * p.ranks, steps, 0)
            on_finish(p.name, p.start_s + 6 * d)
        return records

    def stop(self):
        pass


def _program_config(tmp_path: Path) -> Path:
    """jax-rings whose fourth program declares no traffic (the model knows nothing of it)."""
    import yaml
    doc = yaml.safe_load((CONFIGS / "jax-rings.yaml").read_text())
    del doc["jobs"][3]["traffic"]
    doc["routing"] = ["ecmp", "ilp", "greedy"]
    path = tmp_path / "programs.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


#: emulated_digest of _program_config, from the code before agents and programs shared one
#: run path (the program records as program_run.py assembled them)
PROGRAMS_BEFORE = "c12ad1e1751aa9e623b4d76e9b07e8bcd86d73d0d42d3193042771fd7530f5fc"


def test_program_jobs_get_the_record_they_got_before_one_run_path(fake_fabric, tmp_path):
    config = _program_config(tmp_path)
    runs = emulated_records(config, tmp_path / "probe", [])
    assert all(r["throughput_mbps"] is None for r in runs)   # programs count no bytes
    assert [j["efficiency"] is None for j in runs[0]["jobs"]] == [False] * 3 + [True]
    # the one key run_result adds to a program's record: the throughput it cannot know
    assert emulated_digest(config, tmp_path / "out", frozenset({"throughput_mbps"})) \
        == PROGRAMS_BEFORE

"""floodns inputs: the traffic-pair parser, `jobs_from` and `semantics` in configs, replayed
routes from a floodns flow log (on the vendored MIT fixtures under tests/fixtures/floodns)."""
from __future__ import annotations

from pathlib import Path

import pytest

from experiments.__main__ import main as cli
from experiments.config import ConfigError, load, parse
from experiments.routes import ControllerRoutes
from routing.replay import ReplayError, read_flow_log, route_replay, server_of
from traffic.collectives import plan_jobs
from traffic.floodns import (PAPER_TOPOLOGY, FloodnsError, job_specs, read_job_file,
                             read_traffic_dir)
from traffic.predictor import Semantics, predict

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "floodns"
ONE = FIX / "concurrent_jobs_1" / "ring_size_2"
TWO = FIX / "concurrent_jobs_2" / "ring_size_4"
LOG = FIX / "logs" / "1job-d2-ecmp" / "flow_info.csv"
HEADER = "#src dst src_tor dst_tor start_time flow_size compute_time stage_index\n"


def test_one_job_maps_servers_rings_sizes_and_times():
    (spec,) = job_specs(ONE)
    assert spec.name == "job_0-BLOOM" and spec.iterations == 11
    assert len(spec.groups) == 48 and all(len(g) == 2 for g in spec.groups)
    assert spec.groups[0] == ["h449", "h161"]          # servers 544 and 256 (ToRs 14 and 5)
    assert spec.size_bytes == 2 * 7_333_333_334        # our chunk = size / ring = their flow
    assert spec.start_s == 10.978710563 and spec.compute_s == 1.238769231


def test_rings_follow_the_cycle_of_their_edges():
    jobs = read_traffic_dir(TWO)
    assert [j.name for j in jobs] == ["job_0-BLOOM", "job_1-LLaMA2_70B"]
    ring = jobs[0].rings[0]
    assert ring == [544, 256, 2080, 1792] and len(jobs[1].rings) == 128
    lines = [ln.split() for ln in (TWO / "job_0-BLOOM.txt").read_text().splitlines()[1:]]
    edges = {(int(a), int(b)) for a, b, *_ in lines if _[-1] == "0"}
    assert edges == {(ring[i], ring[(i + 1) % 4]) for i in range(4)}


def test_failed_cores_are_the_highest_spines():
    assert PAPER_TOPOLOGY.failed_spines(4) == ["spine29", "spine30", "spine31", "spine32"]
    assert PAPER_TOPOLOGY.failed_spines(0) == []
    sec = PAPER_TOPOLOGY.fabric_section(1)
    assert (sec["leaves"], sec["spines"], sec["hosts_per_leaf"]) == (64, 32, 32)
    assert sec["host_link_mbps"] == sec["spine_link_mbps"] == 100_000.0
    assert server_of("h1") == 96 and server_of("h2048") == 2143


def write_job(tmp_path: Path, body: str, name: str = "job_0-TEST.txt") -> Path:
    p = tmp_path / name
    p.write_text(HEADER + body)
    return p


GOOD = "96 128 0 1 0 1000 5 0\n128 96 1 0 0 1000 5 0\n"


@pytest.mark.parametrize("body, needle", [
    ("96 128 0 1 0 1000 5\n", ":2: expected 8 columns"),
    ("96 x 0 1 0 1000 5 0\n", ":2: every column must be an integer"),
    ("96 128 0 2 0 1000 5 0\n128 96 1 0 0 1000 5 0\n", ":2: server 128 sits on ToR 1"),
    ("96 128 0 1 0 1000 5 0\n", "not closed"),
    ("96 128 0 1 0 1000 5 0\n96 160 0 2 0 1000 5 0\n", ":3: server 96 sends twice"),
    ("96 128 0 1 0 1000 5 0\n128 96 1 0 7 1000 5 0\n", ":3: start_time, flow_size"),
    ("96 96 0 0 0 1000 5 0\n", "to itself"),
    ("96 9999 0 1 0 1000 5 0\n", "is not a server (96..2143)"),
    ("96 128 0 1 0 0 5 0\n", "flow_size must be from 1"),
    ("", "no ring edges"),
    ("96 97 0 0 0 1000 5 0\n97 96 0 0 0 1000 5 0\n", "one ToR"),
])
def test_bad_job_files_name_file_and_line(tmp_path, body, needle):
    p = write_job(tmp_path, body)
    with pytest.raises(FloodnsError) as e:
        read_job_file(p)
    assert str(p) in str(e.value) and needle in str(e.value) and "\n" not in str(e.value)


def test_bad_folders(tmp_path):
    with pytest.raises(FloodnsError, match="no such floodns traffic folder"):
        read_traffic_dir(tmp_path / "missing")
    with pytest.raises(FloodnsError, match="no job_"):
        read_traffic_dir(tmp_path)
    write_job(tmp_path, GOOD)
    write_job(tmp_path, GOOD, "job_1-TEST.txt")
    with pytest.raises(FloodnsError, match="server 96 is also used by job_0-TEST"):
        read_traffic_dir(tmp_path)
    (tmp_path / "job_x.txt").write_text(GOOD)
    with pytest.raises(FloodnsError, match="not a floodns job file name"):
        read_job_file(tmp_path / "job_x.txt")


# -- configs ----------------------------------------------------------------------------------
def test_jobs_from_gives_the_floodns_fabric_and_jobs():
    exp = parse({"name": "f", "routing": ["ecmp"],
                 "jobs_from": {"floodns": str(TWO), "failed_cores": 4, "iterations": 3},
                 "semantics": "floodns"})
    assert len(exp.fabric.leaves) == 64 and len(exp.fabric.switch_paths("leaf1", "leaf2")) == 28
    assert exp.fabric.spec.failed_spines == ("spine29", "spine30", "spine31", "spine32")
    assert [j.iterations for j in exp.jobs] == [3, 3]
    assert exp.semantics == Semantics.floodns()
    again = parse(exp.resolved())               # the saved config loads to the same jobs
    assert again.jobs == exp.jobs and again.semantics == exp.semantics


def test_shipped_floodns_configs_load_relative_to_their_folder():
    root = Path(__file__).resolve().parents[3] / "experiments" / "configs"
    exp = load(root / "floodns-1job-d2.yaml")
    assert exp.routing[0] == "replay" and exp.replay_log.is_file()
    assert load(root / "floodns-2jobs-d4.yaml").fabric.spec.failed_spines[-1] == "spine32"


@pytest.mark.parametrize("doc, needle", [
    ({"jobs_from": {"floodns": "/nonexistent"}}, "jobs_from.floodns: /nonexistent: no such"),
    ({"jobs_from": {"floodns": str(ONE)}, "jobs": []}, "either jobs or jobs_from"),
    ({"jobs_from": {"floodns": str(ONE), "failed_cores": 1},
      "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 2, "host_link_mbps": 10,
                 "spine_link_mbps": 10}}, "jobs_from.failed_cores: only without a fabric"),
    ({"jobs_from": {"floodns": str(ONE)},
      "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 2, "host_link_mbps": 10,
                 "spine_link_mbps": 10}}, "uses host h449, which this fabric does not have"),
    ({"jobs_from": {"floodns": str(ONE), "failed_cores": 32}}, "failed_cores: must be from"),
    ({"jobs_from": {"floodns": str(ONE), "oops": 1}}, "jobs_from.oops: unknown key"),
    ({"jobs_from": {"floodns": str(ONE)}, "semantics": "nccl"}, "semantics: floodns, or"),
    ({"jobs_from": {"floodns": str(ONE)}, "semantics": {"ring_sync": "ring"}},
     "semantics.ring_sync: unknown 'ring'"),
    ({"jobs_from": {"floodns": str(ONE)}, "routing": ["replay"]}, "replay needs replay_log"),
    ({"jobs_from": {"floodns": str(ONE)}, "replay_log": str(LOG)}, "replay_log: only with"),
])
def test_bad_floodns_configs(doc, needle):
    with pytest.raises(ConfigError) as e:
        parse({"name": "f", "routing": ["ecmp"], **doc})
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_cli_exit_2_names_the_file_and_line(tmp_path, capsys):
    d = tmp_path / "traffic"
    d.mkdir()
    write_job(d, "96 128 0 1 0 1000 5\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"name: c\nrouting: [ecmp]\njobs_from: {{floodns: {d}}}\n")
    assert cli(["predict", str(cfg), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert "job_0-TEST.txt:2: expected 8 columns" in err and len(err.splitlines()) == 1


# -- replay -----------------------------------------------------------------------------------
def test_replay_reproduces_floodns_ecmp_on_the_one_job_case():
    """floodns (built from the authors' sources) printed 4.693333336 s for this case."""
    exp = parse({"name": "f", "routing": ["replay"], "replay_log": str(LOG),
                 "jobs_from": {"floodns": str(ONE)}, "semantics": "floodns"})
    plans = plan_jobs(exp.jobs)
    conns = [c for p in plans for c in p.connections]
    log = read_flow_log(LOG)
    assert log.changed_pairs == 0 and len(log.first) == 96
    plan = route_replay(exp.fabric, conns, log)
    assert plan.path_of[conns[0].conn_id] == ("leaf15", "spine5", "leaf6")  # 544-14-68-5-256
    router = ControllerRoutes("replay", exp.fabric, conns, exp.seed, static=plan.path_of)
    pred = predict(exp.fabric, plans, None, router=router, semantics=exp.semantics)
    mean = pred.jobs["job_0-BLOOM"].mean_cct_s
    assert abs(mean - 4.693333336) / 4.693333336 < 1e-6
    assert len(pred.jobs["job_0-BLOOM"].cct_s) == 11


def test_replay_refuses_paths_it_cannot_use(tmp_path):
    exp = parse({"name": "f", "routing": ["ecmp"], "jobs_from": {"floodns": str(ONE),
                                                                   "failed_cores": 28}})
    conns = [c for p in plan_jobs(exp.jobs) for c in p.connections]
    with pytest.raises(ReplayError, match="is not a live path"):
        route_replay(exp.fabric, conns, read_flow_log(LOG))   # spine5 is failed now
    short = tmp_path / "flow_info.csv"
    short.write_text(LOG.read_text().splitlines()[1] + "\n")
    with pytest.raises(ReplayError, match=r"h449->h161 \(servers 544->256\) is not in"):
        route_replay(exp.fabric, conns, read_flow_log(short))


@pytest.mark.parametrize("line, needle", [
    ("0,544,256\n", ":1: expected flow_id"),
    ("0,544,256,544-[1]->14-[2]->x-[3]->5-[4]->256,1,2,3,4,5,\n", ":1: src, dst, start"),
    ("0,544,256,545-[1]->14-[2]->68-[3]->5-[4]->256,1,2,3,4,5,\n", ":1: the path must run"),
    ("", "no flows"),
])
def test_bad_flow_logs(tmp_path, line, needle):
    p = tmp_path / "flow_info.csv"
    p.write_text(line)
    with pytest.raises(ReplayError) as e:
        read_flow_log(p)
    assert needle in str(e.value) and str(p) in str(e.value)


def test_a_flow_log_that_is_not_utf8_cannot_be_read(tmp_path):
    p = tmp_path / "flow_info.csv"
    p.write_bytes(LOG.read_bytes() + b"\xff,544,256,544-[1]->14-[2]->68-[3]->5-[4]->256,7,8,\n")
    with pytest.raises(ReplayError, match=r"cannot be read \(UnicodeDecodeError\)"):
        read_flow_log(p)


def _line_by_line(path, monkeypatch) -> object:
    from routing import replay
    monkeypatch.setattr(replay, "_read_well_formed", lambda log, data: False)
    try:
        return read_flow_log(path)
    finally:
        monkeypatch.undo()


@pytest.mark.parametrize("edit", ["as logged", "no last newline", "blank line", "crlf",
                                  "leading zeros", "intra-tor path", "six nodes",
                                  "bad line 40", "moved earlier", "moved later",
                                  "non-ascii id"])
def test_the_whole_file_reader_gives_what_line_by_line_gives(tmp_path, monkeypatch, edit):
    """read_flow_log reads a well-formed log at once (routing/replay.py, _read_well_formed);
    any file: the same flows in the same order, lines and errors as line by line."""
    from routing import replay
    lines = LOG.read_text().splitlines()
    if edit == "no last newline":
        text = "\n".join(lines)
    elif edit == "blank line":
        text = "\n".join(lines[:5] + ["  "] + lines[5:]) + "\n\n"
    elif edit == "crlf":
        text = "\r\n".join(lines) + "\r\n"
    elif edit == "leading zeros":
        text = "\n".join(lines + ["9,0544,256,544-[1]->14-[2]->68-[3]->5-[4]->0256,7,8,"]) + "\n"
    elif edit == "intra-tor path":
        text = "\n".join(lines + ["9,544,545,544-[1]->14-[2]->545,7,8"]) + "\n"
    elif edit == "six nodes":
        text = "\n".join(lines + ["9,544,256,544-[1]->14-[2]->68-[3]->5-[4]->6-[5]->256,7,8,"])
    elif edit in ("moved earlier", "moved later"):   # 544->256 logged via core 67 too
        start = 5 if edit == "moved earlier" else 99_000_000_000
        text = "\n".join(lines + [f"9,544,256,544-[1]->14-[2]->67-[3]->5-[4]->256,{start},8,",
                                   "10,0544,256,544-[1]->14-[2]->68-[3]->5-[4]->256,6,8,"])
    elif edit == "non-ascii id":          # UTF-8, not ASCII: read line by line
        text = "\n".join(lines + ["flöw,544,256,544-[1]->14-[2]->68-[3]->5-[4]->256,7,8,"])
    elif edit == "bad line 40":
        text = "\n".join(lines[:39] + ["9,544,256,544-[1]->14,7,8,"] + lines[39:]) + "\n"
    else:
        text = "\n".join(lines) + "\n"
    p = tmp_path / "flow_info.csv"
    p.write_bytes(text.encode())
    calls = []
    real = replay._read_well_formed
    monkeypatch.setattr(replay, "_read_well_formed",
                        lambda log, data: calls.append(real(log, data)) or calls[-1])
    try:
        fast = read_flow_log(p)
    except ReplayError as e:
        with pytest.raises(ReplayError) as slow:
            _line_by_line(p, monkeypatch)
        assert str(e) == str(slow.value) and ":40:" in str(e)
        return
    slow = _line_by_line(p, monkeypatch)
    assert fast.first == slow.first and fast.paths == slow.paths and fast.lines == slow.lines
    assert calls == [edit in ("as logged", "no last newline", "crlf", "leading zeros",
                              "intra-tor path", "moved earlier", "moved later")]
    first = {"moved earlier": (14, 67, 5), "moved later": (14, 68, 5),
             "six nodes": (14, 68, 5, 6)}.get(edit)
    if first:     # the earliest flow's path; another one took another
        assert fast.first_path(544, 256) == first and fast.changed_pairs == 1
    else:
        assert fast.first_path(544, 256) == (14, 68, 5) and fast.changed_pairs == 0
    assert len(fast.first) == 96 + (edit == "intra-tor path")

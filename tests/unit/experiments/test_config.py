"""The experiment YAML: defaults, and one-line errors that name the key (exit code 2)."""
import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from experiments.config import ConfigError, load, parse

ROOT = Path(__file__).resolve().parents[3]
QUICKSTART = ROOT / "experiments" / "configs" / "quickstart.yaml"

BASE = {
    "name": "t", "seed": 1,
    "fabric": {"spines": 4, "leaves": 4, "hosts_per_leaf": 4, "host_link_mbps": 10,
               "spine_link_mbps": 10},
    "jobs": [{"name": "ring-a", "collective": "allreduce", "hosts": ["h1", "h5", "h9", "h13"],
              "size_bytes": 4000000, "iterations": 3}],
    "routing": ["ecmp", "ilp"],
}


def with_(path: str, value):
    doc = copy.deepcopy(BASE)
    node = doc
    keys = path.split(".")
    for k in keys[:-1]:
        node = node[int(k)] if isinstance(node, list) else node[k]
    if value is KeyError:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return doc


def test_quickstart_parses_and_resolves_defaults():
    exp = load(QUICKSTART)
    assert exp.routing == ["ecmp", "ilp"]
    assert len(exp.jobs) == 4 and all(len(j.hosts) == 4 for j in exp.jobs)
    assert exp.emulation.mtu_bytes == 9000 and exp.emulation.mtu_auto
    r = exp.resolved()
    assert r["emulation"]["tcp_cc"] == "cubic" and r["emulation"]["mtu_bytes"] == "auto"
    assert "mtu_auto" not in r["emulation"] and r["emulation"]["link_scheduler"] == "fair"
    assert r["emulation"]["window_frames"] == 16
    assert r["jobs"][0]["compute_s"] == 0.0


@pytest.mark.parametrize("path, value, key", [
    ("colour", "red", "config.colour"),
    ("fabric.spinez", 4, "fabric.spinez"),
    ("fabric.spines", "four", "fabric.spines"),
    ("fabric.spines", 0, "fabric.spines"),
    ("fabric.host_link_mbps", -5, "fabric.host_link_mbps"),
    ("fabric.leaves", KeyError, "fabric.leaves"),
    ("jobs.0.hosts", ["h1", "h99"], "jobs[0].hosts"),
    ("jobs.0.hosts", ["h1", "h5", "h1"], "jobs[0].hosts"),
    ("jobs.0.size_bytes", 0, "jobs[0].size_bytes"),
    ("jobs.0.size_bytes", 1.5, "jobs[0].size_bytes"),
    ("jobs.0.iterations", True, "jobs[0].iterations"),
    ("jobs.0.collective", "broadcast", "jobs[0].collective"),
    ("jobs.0.rank", 3, "jobs[0].rank"),
    ("routing", ["ecmp", "magic"], "routing"),
    ("routing", [], "routing"),
    ("emulation", {"tcp_cc": "dctcp"}, "emulation.tcp_cc"),
    ("emulation", {"link_scheduler": "sfq"}, "emulation.link_scheduler"),
    ("emulation", {"mtu_bytes": 65000}, "emulation.mtu_bytes"),
    ("emulation", {"mtu_bytes": "big"}, "emulation.mtu_bytes"),
])
def test_bad_input_names_the_key(path, value, key):
    with pytest.raises(ConfigError) as e:
        parse(with_(path, value))
    assert str(e.value).startswith(key), str(e.value)
    assert "\n" not in str(e.value)


def test_a_host_in_two_jobs_is_refused():
    doc = copy.deepcopy(BASE)
    doc["jobs"].append({"name": "ring-b", "collective": "allreduce", "hosts": ["h2", "h5"],
                        "size_bytes": 100})
    with pytest.raises(ConfigError, match="jobs\\[1\\].hosts: host 'h5' is listed twice"):
        parse(doc)


def test_cli_exits_2_with_one_line_and_builds_nothing(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(with_("jobs.0.hosts", ["h1", "h99"])))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "experiments", "run", str(bad), "--out",
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "jobs[0].hosts" in lines[0] and "h99" in lines[0]
    assert not out.exists()


def test_cli_predict_writes_the_results_schema(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "experiments", "predict", str(QUICKSTART),
                           "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    import json
    res = json.loads((tmp_path / "results.json").read_text())
    assert [r["routing"] for r in res["runs"]] == ["ecmp", "ilp"]
    for r in res["runs"]:
        assert r["mode"] == "predicted"
        assert len(r["cct_s"]) == 3
        assert r["efficiency"] == pytest.approx(r["ideal_cct_s"] / r["cct_mean_s"])
        assert {"time_s", "status", "gap", "lower_bound_link_flows"} <= set(r["solve"])
    ilp = res["runs"][1]
    assert ilp["max_link_flows"] == 1 and ilp["efficiency"] == pytest.approx(1.0, rel=1e-3)
    assert (tmp_path / "config.yaml").exists()


def test_events_and_host_enforcement_are_parsed():
    doc = copy.deepcopy(BASE)
    doc["routing"] = ["ecmp", "ilp"]
    doc["events"] = [{"at_s": 3.0, "fail_link": ["leaf1", "spine3"]},
                     {"at_s": 1.0, "fail_spine": "spine2"}]
    exp = parse(doc)
    assert [(e.at_s, e.kind, e.target) for e in exp.events] == [
        (1.0, "fail_spine", ("spine2",)), (3.0, "fail_link", ("leaf1", "spine3"))]
    doc2 = copy.deepcopy(BASE)
    doc2["routing"] = ["ilp", "ilp@host"]
    assert parse(doc2).routing == ["ilp", "ilp@host"]


@pytest.mark.parametrize("routing, events, key", [
    (["ecmp@host"], None, "routing"),
    (["ilp@hosts"], None, "routing"),
    (["ilp@host"], [{"at_s": 1.0, "fail_spine": "spine1"}], "events"),
    (["ilp"], [{"at_s": 1.0, "fail_spine": "spine9"}], "events[0].fail_spine"),
    (["ilp"], [{"at_s": 1.0, "fail_link": ["spine1", "leaf1"]}], "events[0].fail_link"),
    (["ilp"], [{"at_s": 1.0}], "events[0]"),
    (["ilp"], [{"at_s": -1, "fail_spine": "spine1"}], "events[0].at_s"),
    (["ilp"], [{"at_s": 1, "fail_spine": "spine1", "restore_spine": "spine1"}], "events[0]"),
])
def test_bad_events_and_routing_entries_name_the_key(routing, events, key):
    doc = copy.deepcopy(BASE)
    doc["routing"] = routing
    if events is not None:
        doc["events"] = events
    with pytest.raises(ConfigError) as e:
        parse(doc)
    assert str(e.value).startswith(key), str(e.value)


def test_cli_predict_writes_link_utilization_over_time(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "experiments", "predict", str(QUICKSTART),
                           "--out", str(tmp_path), "--util-bin-s", "1.0"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    import csv
    rows = list(csv.DictReader((tmp_path / "ilp" / "links_over_time.csv").open()))
    # ILP gives every ring flow its own links: each used link runs at the full rate while the
    # all-reduce is on, so the first bin of every used leaf->spine link is at 100%
    first = [r for r in rows if r["bin_start_s"] == "0.000000" and r["src"].startswith("leaf")
             and r["dst"].startswith("spine")]
    assert first and all(float(r["mean_utilization"]) == pytest.approx(1.0) for r in first)
    bad = subprocess.run([sys.executable, "-m", "experiments", "predict", str(QUICKSTART),
                          "--out", str(tmp_path / "x"), "--util-bin-s", "0"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--util-bin-s" in bad.stderr


def test_links_faster_than_the_emulator_shapes_are_refused_before_building():
    from experiments.runner import check_emulable
    paper = load(ROOT / "experiments" / "configs" / "paper-1job-d2.yaml")
    with pytest.raises(ConfigError, match="fabric.host_link_mbps"):
        check_emulable(paper)
    check_emulable(load(QUICKSTART))   # 5 Mbit/s: fine


def test_too_many_routings_for_distinct_source_ports_are_refused():
    doc = copy.deepcopy(BASE)
    doc["jobs"] = [{"name": "a2a", "collective": "alltoall",
                    "hosts": [f"h{i}" for i in range(1, 17)], "size_bytes": 10 ** 6}]
    doc["fabric"]["hosts_per_leaf"] = 64           # 240 connections per run
    doc["jobs"][0]["hosts"] = [f"h{i}" for i in range(1, 161)]   # 160 ranks: 25,440 conns
    doc["routing"] = ["ecmp", "ilp"]
    exp = parse(doc)                               # `predict` takes it (no source ports)
    from experiments.runner import check_emulable
    with pytest.raises(ConfigError, match="^routing: 2 routings"):
        check_emulable(exp)                        # `run` (and validate's verdict) refuse


def test_auto_mtu_follows_the_slowest_link_and_an_explicit_one_wins():
    fast = with_("fabric.host_link_mbps", 60)
    fast["fabric"]["spine_link_mbps"] = 60
    assert parse(fast).emulation.mtu_bytes == 64000
    fast["fabric"]["spine_link_mbps"] = 20                  # the slowest link decides
    assert parse(fast).emulation.mtu_bytes == 25000
    fast["emulation"] = {"mtu_bytes": 1500, "link_scheduler": "fifo"}
    e = parse(fast).emulation
    assert (e.mtu_bytes, e.mtu_auto, e.link_scheduler) == (1500, False, "fifo")
    assert e.window_frames == 0                              # auto: no bound in one FIFO
    assert parse(with_("emulation", {})).emulation.window_frames == 16   # auto, fair
    fast["emulation"]["window_frames"] = 2
    with pytest.raises(ConfigError, match="^emulation.window_frames"):
        parse(fast)


def test_switch_burst_defaults_to_four_frames_and_fits_its_queue():
    assert parse(with_("emulation", {})).emulation.switch_burst_frames == 4
    assert parse(with_("emulation", {"queue_packets": 2})).emulation.switch_burst_frames == 2
    assert parse(with_("emulation", {"switch_burst_frames": 1})).emulation.resolved()[
        "switch_burst_frames"] == 1
    for bad in ({"switch_burst_frames": 0}, {"switch_burst_frames": 17},
                {"switch_burst_frames": 8, "queue_packets": 6},
                {"switch_burst_frames": "4"}):
        with pytest.raises(ConfigError, match="^emulation.switch_burst_frames: .* got"):
            parse(with_("emulation", bad))


def test_the_documented_yaml_example_parses():
    from pathlib import Path
    text = (Path(__file__).resolve().parents[3] / "docs" / "configuration.md").read_text()
    block = text[text.index("## An example"):].split("```yaml\n", 1)[1].split("```")[0]
    exp = parse(yaml.safe_load(block))
    assert exp.routing and exp.events and exp.emulation.link_scheduler == "fair"


@pytest.mark.parametrize("doc, where", [
    ({**BASE, 1: "x"}, "config: key 1"),
    ({**BASE, None: "x"}, "config: key None"),
    ({**BASE, "fabric": {**BASE["fabric"], (1, 2): 3}}, "fabric: key (1, 2)"),
    ({**BASE, "jobs": [{**BASE["jobs"][0], 2.5: 1}]}, "jobs[0]: key 2.5"),
    ({**BASE, "emulation": {False: 1}}, "emulation: key False"),
    ({**BASE, "events": [{"at_s": 1.0, 7: "spine1"}]}, "events[0]: key 7"),
])
def test_non_string_keys_anywhere_are_one_line_config_errors(doc, where):
    with pytest.raises(ConfigError) as e:
        parse(doc)
    assert str(e.value).startswith(where) and "\n" not in str(e.value)


def test_a_shared_reference_bomb_is_quoted_by_a_short_prefix_at_once():
    import time
    bomb: list = ["lol"] * 9
    for _ in range(30):                       # 9^30 leaves if expanded
        bomb = [bomb] * 9
    t0 = time.perf_counter()
    for path in ("name", "jobs.0.hosts", "routing", "fabric.failed_spines"):
        with pytest.raises(ConfigError) as e:
            parse(with_(path, bomb))
        assert len(str(e.value)) < 300, str(e.value)
    assert time.perf_counter() - t0 < 2.0


def test_quote_is_short_and_one_line():
    from experiments.config import QUOTE_CHARS, quote
    assert "..." in quote("a" * 10 ** 6) and len(quote("a" * 10 ** 6)) <= QUOTE_CHARS
    assert "\n" not in quote("x\ny") and quote(2 ** 70) == repr(2 ** 70)
    assert len(quote({i: list(range(1000)) for i in range(1000)})) <= QUOTE_CHARS


def test_absent_or_null_sections_are_defaults_and_anything_else_is_refused():
    assert parse(with_("emulation", None)).emulation.window_frames == 16
    assert parse(with_("events", None)).events == []
    assert parse(with_("events", [])).events == []
    assert parse(with_("fabric.failed_spines", None)).fabric.spec.failed_spines == ()
    for path, value in (("emulation", []), ("emulation", False), ("emulation", ""),
                        ("events", {}), ("events", False), ("fabric.failed_spines", {}),
                        ("fabric.failed_links", False), ("fabric", [])):
        with pytest.raises(ConfigError) as e:
            parse(with_(path, value))
        assert str(e.value).startswith(path), str(e.value)


def test_explicit_jobs_take_groups_of_hosts():
    doc = with_("jobs.0.hosts", KeyError)
    doc["jobs"][0]["groups"] = [["h1", "h5"], ["h2", "h6"]]
    assert parse(doc).jobs[0].groups == [["h1", "h5"], ["h2", "h6"]]
    doc["jobs"][0]["hosts"] = ["h3", "h7"]
    with pytest.raises(ConfigError, match=r"^jobs\[0\]: give either hosts"):
        parse(doc)


def test_an_event_after_every_job_has_ended_or_timed_out_is_refused():
    from experiments.config import events_horizon_s
    exp = parse(BASE)
    # 4 MB ring of 4 at 10 Mbit/s: ideal 4.8 s per iteration, 3 iterations; timeout 126 s
    horizon = events_horizon_s(exp.jobs, exp.fabric, exp.emulation)
    assert horizon == pytest.approx(3 * (20 * 4.8 + 30))
    ok = with_("events", [{"at_s": horizon, "fail_spine": "spine1"}])
    assert parse(ok).events[0].at_s == horizon
    late = with_("events", [{"at_s": horizon + 1, "fail_spine": "spine1"}])
    with pytest.raises(ConfigError, match=r"^events\[0\]\.at_s: .* could never fire"):
        parse(late)
    late["emulation"] = {"iteration_timeout_s": 200.0}      # a longer timeout: fires
    assert parse(late).events


def test_yaml_errors_keep_line_and_column(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("name: t\nfabric:\n  spines: 2\n  spines: 3\n")
    with pytest.raises(ConfigError, match=r"c\.yaml:4:3: key spines is given twice .*line 3"):
        load(p)
    p.write_text("name: t\nfabric: [1, 2\n")
    with pytest.raises(ConfigError, match=r"c\.yaml:3:1: not valid YAML: "):
        load(p)


def test_the_documented_limits_table_matches_the_code():
    import experiments.config as c
    from experiments.__main__ import MAX_CALIBRATE_S
    from experiments.outdir import MIN_FREE_BYTES
    text = (ROOT / "docs" / "configuration.md").read_text()
    section = text[text.index("## Bad input and limits"):]
    for expected in (f"{c.MAX_CONFIG_BYTES:,} bytes, nesting {c.MAX_DEPTH} levels",
                     "0 .. 2^32-1", f"1 .. {c.MAX_SPINES}", f"1 .. {c.MAX_LEAVES} each",
                     f"{c.MIN_RATE_MBPS:g} .. {c.MAX_RATE_MBPS:,.0f}",
                     f"1 .. 2^{c.MAX_SIZE_BYTES.bit_length() - 1}",
                     f"1 .. {c.MAX_ITERATIONS:,}", f"0 .. {c.MAX_SECONDS:,.0f} s",
                     f"<= {c.MAX_DURATION_S:,.0f} s", f"2 .. {c.MAX_DP:,}",
                     f"> 0 .. {c.MAX_SCALE_BYTES:,.0f}", f"576 .. {c.MAX_MTU_BYTES:,}",
                     f"2 .. {c.MAX_QUEUE_PACKETS:,}", f"<= {c.MAX_JOBS:,} jobs",
                     f"<= {c.MAX_EVENTS} events", f"<= {c.SOURCE_PORT_SPAN // 2:,}",
                     f"transfers per iteration x {c.BYTES_HELD_PER_TRANSFER} B + those of "
                     f"the jobs that may be in flight at once x "
                     f"{c.BYTES_PER_TRANSFER - c.BYTES_HELD_PER_TRANSFER} B + connections x "
                     f"{c.BYTES_PER_CONNECTION:,} B <= {c.MAX_PREDICT_BYTES >> 30} GiB; "
                     f"<= {c.MAX_TRANSFER_RUNS:,}",
                     f"S >= {c.MIN_UTIL_BIN_S:g} and bins x links <= {c.MAX_UTIL_CELLS:,}",
                     f"whole seconds 1 .. {MAX_CALIBRATE_S}",
                     f"less than {MIN_FREE_BYTES // 2 ** 20} MB free",
                     f"by at most {c.QUOTE_CHARS} characters",
                     f"<= {c.MAX_PATH_LINK_IDS // 10**6} M link ids"):
        assert expected in section, expected


def test_capture_takes_a_switch_port_and_reloads():
    """emulation.capture: [switch, neighbour] on a three-tier fabric; the resolved config
    writes it as a list that loads again to the same tuple."""
    from experiments.config import parse
    doc = {"name": "cap", "fabric": {"topology": "fat-tree", "k": 4, "host_link_mbps": 10,
                      "fabric_link_mbps": 10},
           "jobs": [{"name": "a", "collective": "allreduce", "hosts": ["h1", "h5"],
                     "size_bytes": 1000}],
           "routing": ["ecmp"], "emulation": {"capture": ["agg1", "core1"]}}
    exp = parse(doc)
    assert exp.emulation.capture == ("agg1", "core1")
    again = parse({**doc, "emulation": exp.emulation.resolved()})
    assert again.emulation.capture == ("agg1", "core1")
    assert parse({**doc, "emulation": {"capture": True}}).emulation.capture is True


def test_the_jobs_are_planned_once_and_again_only_for_other_jobs():
    import dataclasses

    from traffic.collectives import plan_jobs
    exp = load(QUICKSTART)
    plans = exp.plans()
    assert exp.plans() is plans                          # parse's plans, kept
    assert [(p.name, p.connections, p.transfers) for p in plans] == \
        [(p.name, p.connections, p.transfers) for p in plan_jobs(exp.jobs)]
    fewer = dataclasses.replace(exp, jobs=exp.jobs[:1])
    assert [p.name for p in fewer.plans()] == [exp.jobs[0].name]
    assert exp.plans() is plans


def test_a_new_workload_format_is_one_format_registered_in_one_line(monkeypatch, tmp_path):
    """experiments/config/importers: a Format (its keys, bounds and reader) registered in
    FORMATS is a jobs_from key with its bounds checked, its jobs parsed and its paths
    resolved, with nothing else changed but the key list that follows the registry."""
    from experiments.config import imports, importers
    from traffic.collectives import Collective, JobSpec

    class Pairs(importers.Format):
        name, shape = "pairs", "FILE"
        params = (importers.Param("size_bytes", "int", 1, 10_000, 1_000),)

        def read(self, src, doc, base_dir):
            path, size = self.value(src, "pairs", base_dir), self.value(src, "size_bytes", None)
            lines = path.read_text().split()
            return None, lambda fabric: ([JobSpec(f"p{i}", Collective.FLOWS, [line.split(",")],
                                                  size) for i, line in enumerate(lines)], None)
    monkeypatch.setitem(importers.FORMATS, "pairs", Pairs())
    monkeypatch.setattr(imports, "JOBS_FROM_KEYS", imports.JOBS_FROM_KEYS | Pairs().keys)
    (tmp_path / "p.txt").write_text("h1,h5\nh2,h6\n")
    doc = {"name": "p", "routing": ["ecmp"], "jobs_from": {"pairs": "p.txt", "size_bytes": 64},
           "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 4, "host_link_mbps": 10,
                      "spine_link_mbps": 10}}
    exp = parse(doc, base_dir=tmp_path)
    assert [(j.name, j.groups, j.size_bytes) for j in exp.jobs] == [
        ("p0", [["h1", "h5"]], 64), ("p1", [["h2", "h6"]], 64)]
    assert exp.resolved()["jobs_from"] == {"pairs": str((tmp_path / "p.txt").resolve()),
                                           "size_bytes": 64}
    doc["jobs_from"]["size_bytes"] = 0
    with pytest.raises(ConfigError, match=r"^jobs_from.size_bytes: must be from 1 to 10,000"):
        parse(doc, base_dir=tmp_path)

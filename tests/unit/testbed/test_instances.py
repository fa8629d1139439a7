"""emulation.switch_processes, pure parts: where each switch runs (testbed/instances.py's
placement, as split.py places machines), where its OVS commands go, the config's bounds and
one-line errors, and the run record's new fields. No OVS, no root."""
from pathlib import Path

import pytest

from experiments.config import ConfigError, parse
from testbed import instances
from testbed.fabric import build_fabric
from testbed.instances import OvsInstance, placement
from testbed.registry import RunRecord
from testbed.topologies import fat_tree_spec

QUICK = {"name": "q", "fabric": {"spines": 4, "leaves": 4, "hosts_per_leaf": 1,
                                 "host_link_mbps": 10, "spine_link_mbps": 10},
         "jobs": [{"name": "r", "collective": "allreduce", "hosts": ["h1", "h2", "h3", "h4"],
                   "size_bytes": 1000000, "iterations": 1}],
         "routing": ["ecmp"]}


def with_emulation(**em) -> dict:
    return {**QUICK, "emulation": em}


def test_one_process_keeps_every_switch_home():
    exp = parse(QUICK)
    assert exp.emulation.switch_processes == 1
    assert set(placement(exp.fabric, 1).values()) == {0}
    assert "switch_processes" not in exp.emulation.resolved()   # old configs unchanged


def test_two_processes_split_leaves_and_spines_evenly():
    f = parse(with_emulation(switch_processes=2)).fabric
    where = placement(f, 2)
    assert [where[f"leaf{i}"] for i in (1, 2, 3, 4)] == [0, 0, 1, 1]
    assert sorted(where[f"spine{i}"] for i in (1, 2, 3, 4)) == [0, 0, 1, 1]


def test_a_one_switch_fabric_gets_one_process():
    exp = parse(with_emulation(switch_processes=2))
    twin = exp.fabric.nonblocking()        # the `nonblocking` reference's fabric
    assert instances.process_count(twin, 2) == 1
    assert set(placement(twin, 1).values()) == {0}
    assert instances.process_count(exp.fabric, 2) == 2
    assert instances.process_count(exp.fabric, 4) == 4


def test_fat_tree_pods_stay_whole():
    f = build_fabric(fat_tree_spec(4, 10, 10))
    where = placement(f, 4)
    for pod in f.leaf_groups:
        procs = {where[leaf] for leaf in pod} | {where[a] for leaf in pod
                                                for a in f.uplinks(leaf)}
        assert len(procs) == 1
    counts = [sum(1 for k in where.values() if k == p) for p in range(4)]
    assert max(counts) - min(counts) <= 1


@pytest.mark.parametrize("em, field", [
    ({"switch_processes": 5}, "emulation.switch_processes"),
    ({"switch_processes": 0}, "emulation.switch_processes"),
    ({"switch_processes": "2"}, "emulation.switch_processes"),
    ({"switch_processes": 2, "port_type": "tap"}, "emulation.switch_processes"),
    ({"switch_processes": 2, "capture": True}, "emulation.capture"),
])
def test_bad_switch_processes_is_one_line(em, field):
    with pytest.raises(ConfigError) as e:
        parse(with_emulation(**em))
    assert str(e.value).startswith(field) and "\n" not in str(e.value)


def test_more_processes_than_leaves_is_refused():
    doc = {**QUICK, "fabric": {**QUICK["fabric"], "leaves": 2},
           "jobs": [{**QUICK["jobs"][0], "hosts": ["h1", "h2"]}],
           "emulation": {"switch_processes": 3}}
    with pytest.raises(ConfigError, match="2 leaves"):
        parse(doc)


def test_resolved_round_trips():
    exp = parse(with_emulation(switch_processes=3))
    assert exp.emulation.resolved()["switch_processes"] == 3
    assert parse({**QUICK, "emulation": exp.emulation.resolved()}).emulation.switch_processes == 3
    assert exp.emulation.settings().switch_processes == 3


def test_commands_go_to_the_switchs_process(tmp_path):
    inst = OvsInstance("123-456", 1, tmp_path)
    assert inst.netns == "mlf123-456p1"
    assert inst.vsctl() == ["ovs-vsctl", f"--db=unix:{tmp_path}/123-456.ovs1/db.sock"]
    try:
        instances.register({"leaf3": inst}, {1: 4242})
        assert instances.ofctl_target("leaf3") == f"unix:{tmp_path}/123-456.ovs1/leaf3.mgmt"
        assert instances.ofctl_target("leaf1") == "leaf1"
        assert instances.appctl_prefixes() == [
            ["ovs-appctl"], ["ovs-appctl", "-t", f"{tmp_path}/123-456.ovs1/vswitchd.ctl"]]
        assert instances.vswitchd_pids() == [4242]
    finally:
        instances.forget()
    assert instances.ofctl_target("leaf3") == "leaf3"
    assert instances.appctl_prefixes() == [["ovs-appctl"]]


def test_socket_paths_too_long_are_refused():
    inst = OvsInstance("123-456", 1, Path("/tmp/" + "d" * 100))
    with pytest.raises(Exception, match="too long for a unix socket path"):
        inst.check_paths(["leaf1"])


def test_record_keeps_namespaces_and_rundirs(tmp_path, monkeypatch):
    monkeypatch.setattr("testbed.registry.STATE_DIR", tmp_path)
    rec = RunRecord("r1", netns=["mlfr1p1"], ovs_rundirs=[str(tmp_path / "r1.ovs1")])
    rec.save()
    again = RunRecord.load(rec.path)
    assert again.netns == ["mlfr1p1"] and again.ovs_rundirs == [str(tmp_path / "r1.ovs1")]


@pytest.mark.parametrize("cores", [1, 2, 8])
def test_switch_processes_are_bounded_by_the_cores_this_process_may_use(monkeypatch, cores):
    """Two per core (4 on the 2-core machines measured), and never more than the leaves."""
    from experiments.config import limits
    monkeypatch.setattr(limits.os, "sched_getaffinity", lambda pid: set(range(cores)))
    doc = {**QUICK, "fabric": {**QUICK["fabric"], "leaves": 32, "spines": 2},
           "jobs": [{**QUICK["jobs"][0], "hosts": ["h1", "h9"]}]}
    top = 2 * cores
    assert parse({**doc, "emulation": {"switch_processes": top}}).emulation.switch_processes \
        == top
    with pytest.raises(ConfigError, match=rf"from 1 to {top} .*gives mlfabric {cores} core"):
        parse({**doc, "emulation": {"switch_processes": top + 1}})

"""testbed/remote.py and the config's `machines:`, pure parts: every argument quoted for the
far shell, the pre-flight's answers parsed and judged in one line each, bad machine entries
refused in one line naming the field."""
import shlex

import pytest

from experiments.config import ConfigError, parse
from testbed.remote import (MachineSpec, Facts, parse_preflight, preflight_cmds,
                            preflight_problems, remote_batch, remote_command, split_batch)

M = MachineSpec("m1", "192.168.77.2")
DOC = {"name": "q", "fabric": {"spines": 2, "leaves": 4, "hosts_per_leaf": 1,
                               "host_link_mbps": 10, "spine_link_mbps": 10},
       "jobs": [{"name": "r", "collective": "allreduce", "hosts": ["h1", "h2", "h3", "h4"],
                 "size_bytes": 1000000, "iterations": 1}],
       "routing": ["ecmp"]}
TWO = [{"name": "a", "address": "10.9.0.1"}, {"name": "b", "address": "10.9.0.2",
                                               "user": "root", "ovs_rundir": "/run/ovs-b"}]


def test_arguments_reach_the_far_side_as_given(tmp_path):
    evil = ["echo", "$(touch /tmp/x); rm -rf /", "a b", "--"]
    cmd = remote_command(M, tmp_path, evil)
    assert cmd[:2] == ["ssh", "-o"] and cmd[-2] == "--"
    assert shlex.split(cmd[-1]) == evil          # what the far shell splits it back into
    assert f"ControlPath={tmp_path}/m1.sock" in cmd and "ControlMaster=auto" in cmd
    assert cmd[cmd.index("-l") + 1: cmd.index("-l") + 3] == ["root", "192.168.77.2"]


def test_a_batch_splits_back_per_command(tmp_path):
    cmd = remote_batch(M, tmp_path, [["id", "-u"], ["false"], ["echo", "x"]])
    assert "@@mlfabric@@0" in cmd[-1]
    text = "@@mlfabric@@0\n0\n@@mlfabric@@rc0\n@@mlfabric@@1\n@@mlfabric@@rc1\n"
    assert split_batch(text, 3) == [("0\n", 0), ("", 1), ("", None)]


def _answers(uid="0", ver="ovs-vsctl (Open vSwitch) 3.1.0\nDB Schema 8.3.1", commit="a" * 40,
             ports="", clock="1000.05"):
    return [(uid, 0), (ver, 0), (commit, 0), (ports, 0), (clock, 0)]


def test_preflight_facts():
    f = parse_preflight(_answers(), 1000.0, 1000.0)
    assert f == Facts(0, "3.1.0", "a" * 40, True, pytest.approx(0.05))
    assert preflight_problems("m1", f, "3.1.0", "a" * 40) == []
    assert len(preflight_cmds("/work/main")) == 5


@pytest.mark.parametrize("answers, word", [
    (_answers(uid="1000"), "not root"),
    (_answers(ver="ovs-vsctl (Open vSwitch) 2.17.9"), "Open vSwitch 2.17.9"),
    (_answers(commit="b" * 40), "mlfabric bbbbbbbbbb"),
    (_answers(ports="UNCONN 0 0 0.0.0.0:4789 0.0.0.0:*"), "4789"),
    (_answers(clock="1002.0"), "clock +2.000 s"),
])
def test_each_preflight_problem_is_one_line(answers, word):
    probs = preflight_problems("m1", parse_preflight(answers, 1000.0, 1000.0), "3.1.0", "a" * 40)
    assert len(probs) == 1 and word in probs[0] and "\n" not in probs[0]
    assert probs[0].startswith("machines.m1:")


def test_machines_parse_and_round_trip():
    exp = parse({**DOC, "machines": TWO})
    assert [m.name for m in exp.machines] == ["a", "b"] and exp.machines[1].ovs_rundir
    assert parse(exp.resolved()).machines == exp.machines
    assert parse(DOC).machines == () and "machines" not in parse(DOC).resolved()


@pytest.mark.parametrize("machines, field", [
    ([TWO[0]], "machines:"),
    (TWO * 3, "machines:"),
    ([TWO[0], {**TWO[1], "name": "a"}], "machines[1].name"),
    ([TWO[0], {**TWO[1], "address": "10.9.0.1"}], "machines[1].address"),
    ([TWO[0], {**TWO[1], "address": "-oProxyCommand=x"}], "machines[1].address"),
    ([TWO[0], {**TWO[1], "user": "root;id"}], "machines[1].user"),
    ([TWO[0], {**TWO[1], "ovs_rundir": "run/x"}], "machines[1].ovs_rundir"),
    ([TWO[0], {**TWO[1], "port": 22}], "machines[1]"),
    ([TWO[0], {"name": "b"}], "machines[1].address"),
])
def test_bad_machines_are_one_line(machines, field):
    with pytest.raises(ConfigError) as e:
        parse({**DOC, "machines": machines})
    assert str(e.value).startswith(field) and "\n" not in str(e.value)


def test_machines_and_switch_processes_are_one_or_the_other():
    with pytest.raises(ConfigError, match="^machines: not with"):
        parse({**DOC, "machines": TWO, "emulation": {"switch_processes": 2}})


def test_run_over_machines_refuses_what_it_cannot_split_before_building():
    from experiments.runner import check_emulable
    check_emulable(parse({**DOC, "machines": TWO}))        # collectives: accepted
    for extra, field in (({"routing": ["ecmp", "nonblocking"]}, "^routing: nonblocking"),
                         ({"emulation": {"capture": True}}, "^emulation.capture"),
                         ({"emulation": {"port_type": "tap"}}, "^emulation.port_type")):
        with pytest.raises(ConfigError, match=field):
            check_emulable(parse({**DOC, "machines": TWO, **extra}))


def test_preflight_command_says_each_unreachable_machine_in_one_line(tmp_path, monkeypatch,
                                                                    capsys):
    """Addresses from TEST-NET-1 (RFC 5737): nothing answers; ssh gives up in its
    ConnectTimeout. Exit 2, one line per machine, nothing built anywhere."""
    import yaml

    from experiments.__main__ import main
    from testbed import remote
    monkeypatch.setattr(remote, "local_facts", lambda checkout: ("3.1.0", "a" * 40))
    monkeypatch.setattr(remote, "SSH_CONNECT_TIMEOUT_S", 1)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({**DOC, "machines": [
        {"name": "a", "address": "192.0.2.1"}, {"name": "b", "address": "192.0.2.2"}]}))
    assert main(["preflight", str(cfg)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert [e.split(":")[1].strip() for e in err] == ["machines.a", "machines.b"]
    assert all("unreachable over ssh as root@192.0.2." in e or "no answer" in e for e in err)

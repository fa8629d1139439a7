"""The part server and its agent command fed what the coordinator never sends: every bad
line answered in one line, names checked against the part's record before any path is
built from them, nothing written."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from experiments import part
from testbed.instances import OvsInstance
from testbed.ovs import TestbedError as PartError

ROOT = Path(__file__).resolve().parents[3]
GARBAGE = ["not json", "[]", "null", "42", '{"op": "nothing"}', '{"op": "probe"}',
           '{"op": "bundles", "texts": {"../../etc/x": "y"}}', '{"op": "dump"}',
           '{"op": "build", "run_id": "../../../etc"}', '{"op": "build"}', "\x00\x01",
           '{"op": "monitor_stop"}']


def test_the_server_answers_every_garbage_line_in_one_line_and_exits_at_eof():
    p = subprocess.run([sys.executable, "-m", "experiments.part", "serve"], cwd=ROOT,
                       input="\n".join(GARBAGE) + "\n", capture_output=True, text=True,
                       timeout=120)
    answers = [json.loads(line) for line in p.stdout.splitlines()]
    assert p.returncode == 0, p.stderr
    assert len(answers) == len(GARBAGE)
    assert all(a["ok"] is False and "\n" not in a["error"] for a in answers)
    assert "Traceback" not in p.stderr


def test_a_part_with_nothing_built_refuses_switch_requests():
    with pytest.raises(PartError, match="nothing is built"):
        part.Part().handle({"op": "bundles", "texts": {"../x": "y"}})
    with pytest.raises(PartError, match="run_id is not a part's run id"):
        part.Part().handle({"op": "build", "run_id": "../../../../etc", "config": {}})


@pytest.mark.parametrize("run, host, message", [
    ("../../../../etc", "h1", "is not a part's run id"),
    ("1-2m0/../..", "h1", "is not a part's run id"),
    ("1-2m0", "../h1", "is not a host name"),
    ("1-2m0", "h1", "no part 1-2m0 runs on this machine"),
    ("3-4m1", "h9", "part 3-4m1 has no host h9"),
])
def test_agent_names_are_checked_against_the_record(tmp_path, monkeypatch, run, host,
                                                    message):
    monkeypatch.setattr(part, "STATE_DIR", tmp_path)
    rundir = OvsInstance("3-4m1", 1, tmp_path).rundir
    rundir.mkdir(parents=True)
    (rundir / part.HOSTS_FILE).write_text(json.dumps({"h1": 1234}))
    with pytest.raises(part.AgentInputError, match=message):
        part._agent_target(run, host)
    assert part._agent_target("3-4m1", "h1") == (rundir, 1234)


@pytest.mark.parametrize("line, message", [
    (b"", "no plan on stdin"),
    (b"garbage\n", "not JSON"),
    (b"[1, 2]\n", "no job_index"),
    (b'{"job_index": "0"}\n', "no job_index"),
    (b'{"job_index": true}\n', "no job_index"),
])
def test_a_bad_plan_line_is_one_error(line, message):
    data = iter([line[i:i + 1] for i in range(len(line))] + [b""])
    with pytest.raises(part.AgentInputError, match=message):
        part._plan_line(lambda: next(data))


def test_the_agent_command_answers_bad_input_in_one_line():
    p = subprocess.run([sys.executable, "-m", "experiments.part", "agent", "../../../../etc",
                        "h1"], cwd=ROOT, input="garbage\n", capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr

"""The fault corpus's shared parts: the base configs, the sandbox every case runs in, the
CLI call and what a refusal must look like (tests/unit/experiments/test_bad_*.py).

Every case must exit 2 with exactly one line on stderr that names the field, write nothing
(nothing in --out, nothing anywhere under the test's folder, which is also the working
directory), and no shell metacharacter may ever run anything. `run` is checked too: its
config and argument checks come before the root check. As a guard, building a fabric or
running a calibration fails the test, and the process looks unprivileged (so that a case that
wrongly passed every check would stop at the root check with a message naming no field).
"""
from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest
import yaml

from experiments.__main__ import main

ROOT = Path(__file__).resolve().parents[3]
CONFIGS = ROOT / "experiments" / "configs"
MARK = "PWNED-MARKER"            # the file every shell payload would create

BASE = {
    "name": "t", "seed": 1,
    "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 2, "host_link_mbps": 10,
               "spine_link_mbps": 10, "failed_spines": [], "failed_links": []},
    "jobs": [{"name": "ring", "collective": "allreduce", "hosts": ["h1", "h3"],
              "size_bytes": 100000, "iterations": 2, "compute_s": 0.0, "start_s": 0.0}],
    "routing": ["ecmp", "ilp"],
    "emulation": {"datapath": "auto", "port_type": "system", "tcp_cc": "cubic",
                  "mtu_bytes": "auto", "queue_packets": 100, "link_scheduler": "fair",
                  "window_frames": "auto", "switch_burst_frames": 4,
                  "iteration_timeout_s": 60, "capture": False},
    "events": [{"at_s": 0.01, "fail_spine": "spine2"}, {"at_s": 0.02, "restore_spine": "spine2"},
               {"at_s": 0.03, "fail_link": ["leaf1", "spine2"]}],
}
MODEL_BASE = {
    "name": "m", "seed": 1,
    "fabric": {"spines": 2, "leaves": 8, "hosts_per_leaf": 32, "host_link_mbps": 100,
               "spine_link_mbps": 100},
    "jobs": [{"name": "m", "model": "llama2-70b", "dp": 2, "placement": "random-tors",
              "iterations": 1, "compute_s": 0.1, "scale_bytes": 0.001, "start_s": 0.0}],
    "routing": ["ecmp"],
}


def with_(path: str, value, base=BASE) -> dict:
    """BASE with the value at a dotted path (list indices as numbers) replaced."""
    doc = copy.deepcopy(base)
    node = doc
    keys = path.split(".")
    for k in keys[:-1]:
        node = node[int(k)] if isinstance(node, list) else node[k]
    last = keys[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return doc


def dump(doc) -> str:
    return yaml.safe_dump(doc, sort_keys=False)


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """An empty working directory inside tmp_path, an unprivileged-looking process, and no
    fabric or calibration that could ever be built."""
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)

    def never(*a, **k):
        raise AssertionError("bad input reached the emulator")
    import experiments.calibrate
    import experiments.runner
    monkeypatch.setattr(experiments.runner, "run_experiment", never)
    monkeypatch.setattr(experiments.calibrate, "calibrate", never)
    return tmp_path


def tree(folder: Path) -> dict[str, bytes | None]:
    """Every path under `folder` with the bytes of each file."""
    out: dict[str, bytes | None] = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        out[rel] = p.read_bytes() if p.is_file() and not p.is_symlink() else None
    return out


def cli(capsys, argv: list[str]) -> tuple[int, list[str], str]:
    try:
        code = main(argv)
    except SystemExit as e:            # argparse usage errors
        code = e.code
    out, err = capsys.readouterr()
    return code, err.splitlines(), out


def assert_refused(code, lines, out, *, names: str):
    assert code == 2, (code, lines)
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: "), lines
    assert names in lines[0], lines[0]
    assert len(lines[0]) < 600, f"{len(lines[0])} chars: values must be quoted by a prefix"
    assert "Traceback" not in lines[0] and out == ""



QUICK = str(CONFIGS / "quickstart.yaml")
FIXTURES = ROOT / "tests" / "fixtures"
REPLAY_CFG = CONFIGS / "floodns-1job-d2.yaml"


def refused_early(sandbox, capsys, argv: list[str], names: str, out: Path | None = None):
    """argv exits 2 with one line naming `names`, writes nothing under the sandbox (so not
    --out either)."""
    capsys.readouterr()             # what fixtures printed
    before = tree(sandbox)
    code, lines, stdout = cli(capsys, argv)
    assert_refused(code, lines, stdout, names=names)
    assert tree(sandbox) == before
    assert out is None or not out.exists()


def _import_config(sandbox: Path, jobs_from: dict) -> Path:
    cfg = sandbox / "imp.yaml"
    cfg.write_text(dump({"name": "imp", "fabric": {"spines": 2, "leaves": 4,
                                                   "hosts_per_leaf": 1, "host_link_mbps": 10,
                                                   "spine_link_mbps": 10},
                         "jobs_from": jobs_from, "routing": ["ecmp"]}))
    return cfg


def read_cfg(path: Path) -> dict:
    return yaml.safe_load(Path(path).read_text())


@pytest.fixture
def predicted(tmp_path_factory) -> Path:
    """One real predicted run folder (the quickstart)."""
    out = tmp_path_factory.mktemp("pred") / "q"
    assert main(["predict", str(QUICK), "--out", str(out)]) == 0
    return out



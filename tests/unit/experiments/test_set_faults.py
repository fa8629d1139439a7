"""`--set` on every command that takes it, and config paths that are not files: bad input is
one line naming the key, exit 2, and nothing made on the machine (no --out folder)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from experiments.__main__ import main

ROOT = Path(__file__).resolve().parents[3]
QUICKSTART = ROOT / "experiments" / "configs" / "quickstart.yaml"
SWEEP = ROOT / "experiments" / "configs" / "sweeps" / "quickstart-rates.yaml"
BAD_SETS = [
    ("fabric.nospines=4", "unknown key 'nospines'"),
    ("fabric.spines", "--set"),
    ("fabric.spines=-3", "fabric.spines"),
    ("fabric.spines=1e400", "fabric.spines"),
    ("jobs[99].iterations=2", "jobs[99]"),
    ("routing=[spray@]", "routing"),
    ("seed=.nan", "seed"),
    ("name=a\x00b", "name"),
]


def _cli(capsys, argv: list[str]) -> tuple[int, list[str]]:
    try:
        code = main(argv)
    except SystemExit as e:            # argparse usage errors
        code = e.code
    return code, capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("command", ["run", "predict", "validate", "sweep"])
@pytest.mark.parametrize("change, names", BAD_SETS)
def test_a_bad_set_is_one_line_exit_2_and_makes_nothing(tmp_path, capsys, command, change,
                                                         names):
    out = tmp_path / "out"
    target = SWEEP if command == "sweep" else QUICKSTART
    argv = [command, str(target), "--set", change]
    if command != "validate":
        argv += ["--out", str(out)]
    code, err = _cli(capsys, argv)
    assert code == 2, (code, err)
    assert len(err) == 1 and names in err[0], err
    assert not out.exists()


@pytest.mark.parametrize("command", ["run", "predict", "validate", "sweep", "calibrate",
                                     "preflight"])
def test_a_config_path_that_is_no_file_is_named_as_such(tmp_path, capsys, command):
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    for path, says in [(fifo, "not a regular file"), (Path("/dev/zero"), "not a regular file"),
                       (tmp_path, "a folder"), (tmp_path / "none.yaml", "no such config file")]:
        argv = [command, str(path)]
        if command in ("run", "predict", "sweep"):
            argv += ["--out", str(tmp_path / "out")]
        code, err = _cli(capsys, argv)
        assert code == 2 and len(err) == 1 and says in err[0], (command, path, err)
        assert not (tmp_path / "out").exists()


def test_a_set_of_a_key_the_sweep_varies_is_refused(tmp_path, capsys):
    for change in ["routing=[ecmp]", "seed=4", "fabric.spine_link_mbps=20"]:
        code, err = _cli(capsys, ["sweep", str(SWEEP), "--set", change, "--out",
                                  str(tmp_path / "out")])
        assert code == 2 and len(err) == 1 and "sweeps this key" in err[0], err
    assert not (tmp_path / "out").exists()


def test_the_kernel_datapath_without_its_module_is_refused_before_anything(tmp_path, capsys,
                                                                           monkeypatch):
    import os as _os

    import testbed.ovs as ovs
    monkeypatch.setattr(ovs, "kernel_datapath_available", lambda: False)
    monkeypatch.setattr(_os, "geteuid", lambda: 0)        # run's root check passes
    out = tmp_path / "out"
    code, err = _cli(capsys, ["run", str(QUICKSTART), "--set", "emulation.datapath=kernel",
                              "--out", str(out)])
    assert code == 2 and len(err) == 1 and "emulation.datapath: kernel" in err[0], err
    assert not out.exists()

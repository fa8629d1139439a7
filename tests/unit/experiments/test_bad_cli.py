"""Fault corpus, arguments: --out, --util-bin-s and --duration-s, usage errors.
(what every case must show: bad_input.py)."""
from __future__ import annotations

import errno
import json
import os
import subprocess
from pathlib import Path

import pytest


from .bad_input import CONFIGS, QUICK, assert_refused, cli, tree


# -- --out ---------------------------------------------------------------------------------------


def _immutable(folder: Path) -> bool:
    return subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0


@pytest.mark.parametrize("command", ["predict", "run", "calibrate"])
@pytest.mark.parametrize("kind", ["empty", "blank", "file", "under-a-file", "proc", "proc-self",
                                  "sys", "dev", "root", "nul"])
def test_bad_out_exits_2_naming_out(sandbox, capsys, command, kind):
    f = sandbox / "afile"
    f.write_text("keep\n")
    out = {"empty": "", "blank": "  ", "file": str(f), "under-a-file": str(f / "sub"),
           "proc": "/proc/mlfabric-results", "proc-self": "/proc/self/fd",
           "sys": "/sys/kernel/x", "dev": "/dev/shm/mlfabric-x", "root": "/",
           "nul": str(sandbox / "a\0b")}[kind]
    before = tree(sandbox)
    code, lines, stdout = cli(capsys, [command, QUICK, "--out", out])
    assert_refused(code, lines, stdout, names="--out")
    assert tree(sandbox) == before and f.read_text() == "keep\n"
    assert not Path("/dev/shm/mlfabric-x").exists()


def _earlier_results(folder: Path) -> None:
    folder.mkdir()
    (folder / "results.json").write_text('{"runs": [{"routing": "ecmp"}]}\n')
    (folder / "greedy").mkdir()
    (folder / "greedy" / "fct.csv").write_text("old\n")
    (folder / "notes.txt").write_text("mine\n")


@pytest.mark.parametrize("command", ["predict", "run", "calibrate"])
def test_out_with_earlier_results_is_refused_without_force(sandbox, capsys, command):
    out = sandbox / "res"
    _earlier_results(out)
    before = tree(sandbox)
    code, lines, stdout = cli(capsys, [command, QUICK, "--out", str(out)])
    assert_refused(code, lines, stdout, names="--out")
    assert "--force" in lines[0] and "results.json" in lines[0]
    assert tree(sandbox) == before


def test_force_replaces_only_what_mlfabric_wrote(sandbox, capsys):
    out = sandbox / "res"
    _earlier_results(out)
    outside = sandbox / "outside"
    outside.mkdir()
    (outside / "precious").write_text("x\n")
    (out / "mmf").symlink_to(outside, target_is_directory=True)     # never followed
    code, lines, _ = cli(capsys, ["predict", QUICK, "--out", str(out), "--force"])
    assert code == 0, lines
    names = sorted(p.name for p in out.iterdir())
    assert names == ["config.yaml", "ecmp", "environment.json", "ilp", "notes.txt", "plots",
                     "report.html", "results.csv", "results.json"]
    assert [r["routing"] for r in json.loads((out / "results.json").read_text())["runs"]] \
        == ["ecmp", "ilp"]
    assert (out / "notes.txt").read_text() == "mine\n"
    assert (outside / "precious").read_text() == "x\n"


def test_relative_out_is_resolved_once_and_an_empty_folder_is_fine(sandbox, capsys):
    (sandbox / "cwd" / "empty").mkdir()
    code, lines, _ = cli(capsys, ["predict", QUICK, "--out", "empty/../res"])
    assert code == 0, lines
    assert (sandbox / "cwd" / "res" / "results.json").exists()
    code, lines, _ = cli(capsys, ["predict", QUICK, "--out", "empty"])
    assert code == 0, lines


@pytest.mark.skipif(os.geteuid() != 0, reason="chattr +i needs root")
def test_immutable_out_is_refused(sandbox, capsys):
    out = sandbox / "frozen"
    out.mkdir()
    if not _immutable(out):
        pytest.skip("this file system has no immutable flag")
    try:
        for target in (out, out / "sub"):
            code, lines, stdout = cli(capsys, ["predict", QUICK, "--out", str(target)])
            assert_refused(code, lines, stdout, names="--out")
            assert "not writable" in lines[0]
    finally:
        subprocess.run(["chattr", "-i", str(out)], check=True)
    assert list(out.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through permissions")
def test_unwritable_out_is_refused(sandbox, capsys):
    out = sandbox / "ro"
    out.mkdir(mode=0o500)
    try:
        code, lines, stdout = cli(capsys, ["predict", QUICK, "--out", str(out / "x")])
        assert_refused(code, lines, stdout, names="--out")
    finally:
        out.chmod(0o700)


def test_a_full_disk_names_the_file(sandbox, capsys, monkeypatch):
    import experiments.predict

    def full(path, doc):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(experiments.predict, "write_json", full)
    code, lines, _ = cli(capsys, ["predict", QUICK, "--out", str(sandbox / "res")])
    assert code == 1 and len(lines) == 1, lines
    assert "No space left on device" in lines[0] and "results.json" in lines[0]


def test_writing_names_the_file_and_keeps_other_errors():
    from experiments.outdir import name_the_folder, writing
    with pytest.raises(OSError) as e:
        with writing(Path("/x/fct.csv")):
            raise OSError(errno.ENOSPC, "No space left on device")
    assert e.value.filename == "/x/fct.csv" and e.value.errno == errno.ENOSPC
    err = OSError(errno.ENOSPC, "No space left on device")
    assert name_the_folder(err, Path("/r")).filename == "/r"
    other = PermissionError(errno.EACCES, "Permission denied", "/etc/x")
    assert name_the_folder(other, Path("/r")) is other


# -- --util-bin-s and --duration-s ----------------------------------------------------------------
@pytest.mark.parametrize("value", ["1e-9", "0", "-1", "inf", "-inf", "nan", "1e300", "abc",
                                   "0.0009", ""])
def test_bad_util_bin_s(sandbox, capsys, value):
    code, lines, out = cli(capsys, ["predict", QUICK, "--out", str(sandbox / "o"),
                                    "--util-bin-s", value])
    assert_refused(code, lines, out, names="--util-bin-s")
    assert not (sandbox / "o").exists()


def test_util_bins_are_bounded_by_the_longest_possible_prediction(sandbox, capsys):
    paper = str(CONFIGS / "paper-1job-d4.yaml")
    code, lines, out = cli(capsys, ["predict", paper, "--out", str(sandbox / "o"),
                                    "--util-bin-s", "0.01"])
    assert_refused(code, lines, out, names="--util-bin-s")
    assert "give at least" in lines[0] and not (sandbox / "o").exists()


def test_the_util_bin_bound_holds_for_every_routing_of_the_small_configs():
    from experiments.config import duration_upper_bound_s, load
    from experiments.routes import ControllerRoutes
    from routing import route
    from traffic.collectives import plan_jobs
    from traffic.predictor import ideal, predict
    for path in sorted(CONFIGS.glob("*.yaml")):
        exp = load(path)
        if len(exp.fabric.hosts) > 64:     # the paper-scale configs: minutes to predict
            continue
        plans = plan_jobs(exp.jobs)
        conns = [c for p in plans for c in p.connections]
        bound = duration_upper_bound_s(exp)
        for entry in exp.routings:
            if entry.reference:     # the host-link model
                assert ideal(exp.fabric, plans).makespan_s <= bound, (path.name, entry.name)
                continue
            rp = route(entry.strategy, exp.fabric, conns, seed=exp.seed)
            routes = ControllerRoutes(entry.strategy, exp.fabric, conns, exp.seed, exp.events,
                                      static=rp.path_of if entry.host_enforced else None)
            pred = predict(exp.fabric, plans, None, router=routes)
            assert pred.makespan_s <= bound, (path.name, entry.name)


@pytest.mark.parametrize("value", ["0", "0.5", "1.5", "601", "1e9", "nan", "inf", "-3"])
def test_bad_calibrate_duration(sandbox, capsys, value):
    code, lines, out = cli(capsys, ["calibrate", QUICK, "--out", str(sandbox / "o"),
                                    "--duration-s", value])
    assert_refused(code, lines, out, names="--duration-s")
    assert not (sandbox / "o").exists()


@pytest.mark.parametrize("argv", [["predict"], ["predict", QUICK, "--bogus"], ["fly"],
                                  ["predict", QUICK, "--util-bin-s"]])
def test_usage_errors_are_one_line(sandbox, capsys, argv):
    code, lines, out = cli(capsys, argv)
    assert_refused(code, lines, out, names="mlfabric")


def test_paper_scale_still_predicts_and_run_refuses_it_before_root(sandbox, capsys):
    from experiments.config import load
    exp = load(CONFIGS / "paper-5jobs-d4.yaml")
    assert len(exp.fabric.hosts) == 2048
    code, lines, out = cli(capsys, ["run", str(CONFIGS / "paper-5jobs-d4.yaml"), "--out",
                                    str(sandbox / "o")])
    assert_refused(code, lines, out, names="fabric.host_link_mbps")
    assert not (sandbox / "o").exists()

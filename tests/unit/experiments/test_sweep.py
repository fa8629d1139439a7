"""Sweeps: expansion and stable names, bad sweep files, and a small predicted sweep on a real
Dask LocalCluster: a failed point recorded while the others finish, resume after a kill."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import psutil
import pytest
import yaml

from experiments.config import ConfigError
from experiments.sweep import load_sweep, point_name, run_sweep

ROOT = Path(__file__).resolve().parents[3]
QUICK = ROOT / "experiments" / "configs" / "quickstart.yaml"
SHIPPED = sorted((ROOT / "experiments" / "configs" / "sweeps").glob("*.yaml"))


def write(folder: Path, doc: dict, name: str = "s.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "base.yaml").write_text(QUICK.read_text())
    path = folder / name
    path.write_text(yaml.safe_dump({"base": "base.yaml", **doc}, sort_keys=False))
    return path


def test_grid_points_seeds_and_repeats_expand_in_order(tmp_path):
    s = load_sweep(write(tmp_path, {
        "grid": {"fabric.spine_link_mbps": [5, 10], "routing": [["ecmp", "ilp"]]},
        "points": [{"fabric.spines": 2}], "seeds": [1, 2], "repeat": 2}))
    assert len(s.points) == (2 + 1) * 2 * 2 and s.mode == "predict"
    assert len({p.name for p in s.points}) == len(s.points)
    first = s.points[0]
    assert first.name == "spine_link_mbps-5_routing-ecmp+ilp_seed-1_rep-1"   # by dotted key
    assert first.doc["fabric"]["spine_link_mbps"] == 5 and first.doc["seed"] == 1
    assert [(p.seed, p.repetition) for p in s.points[:4]] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert s.points[-1].doc["fabric"]["spines"] == 2
    assert s.base == (tmp_path / "base.yaml").resolve()   # relative to the sweep file


def test_point_names_depend_on_values_only(tmp_path):
    a = load_sweep(write(tmp_path / "a", {"grid": {"fabric.spine_link_mbps": [5, 10],
                                                   "jobs[0].iterations": [2]}}))
    b = load_sweep(write(tmp_path / "b", {"grid": {"jobs[0].iterations": [2],
                                                   "fabric.spine_link_mbps": [10, 5, 2.5]}}))
    assert {p.name for p in a.points} < {p.name for p in b.points}
    assert point_name({"x.y": 1.0}, 3, 1) == point_name({"x.y": 1}, 3, 1) == "y-1_seed-3_rep-1"
    long = point_name({"fabric.failed_links": [["leaf1", "spine1"]] * 30}, 1, 1)
    assert len(long) <= 100 and long.endswith("_seed-1_rep-1")


def test_no_seeds_keeps_the_base_seed(tmp_path):
    s = load_sweep(write(tmp_path, {"repeat": 3}))
    assert [p.name for p in s.points] == [f"seed-1_rep-{r}" for r in (1, 2, 3)]
    assert all("seed" in p.doc for p in s.points)


@pytest.mark.parametrize("doc, names", [
    ({"grid": {"fabric.spinez": [1]}}, "grid.fabric.spinez"),
    ({"grid": {"fabric.spines": []}}, "grid.fabric.spines"),
    ({"grid": {"fabric.spines": 4}}, "grid.fabric.spines"),
    ({"gird": {}}, "gird"),
    ({"mode": "emulate"}, "mode"),
    ({"seeds": [1, 1]}, "seeds"),
    ({"seeds": [-1]}, "seeds"),
    ({"repeat": 0}, "repeat"),
    ({"repeat": 10_000}, "repeat"),
    ({"points": [{"jobs[7].iterations": 1}]}, "jobs[7]"),
    ({"points": [{"seed": 2}, {"seed": 2}]}, "the same point"),
    ({"set": {"fabric.spine_link": 3}}, "set.fabric.spine_link"),
    ({"grid": {"fabric.spines": list(range(1, 101)), "fabric.leaves": list(range(1, 101)),
               "seed": [1, 2]}}, "10,000"),
])
def test_bad_sweep_files_are_one_line_naming_the_key(tmp_path, doc, names):
    with pytest.raises(ConfigError) as e:
        load_sweep(write(tmp_path, doc))
    assert names in str(e.value) and "\n" not in str(e.value)


def test_a_missing_base_names_it(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("base: nowhere.yaml\n")
    with pytest.raises(ConfigError, match="nowhere.yaml: no such config file"):
        load_sweep(path)


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_sweeps_expand(path):
    s = load_sweep(path)
    assert s.points and s.base.is_file()


def _children() -> set[int]:
    """Worker processes (multiprocessing's spawned children; its resource tracker, shared by
    the whole interpreter, is not one)."""
    out = set()
    for p in psutil.Process().children(recursive=True):
        try:
            if "spawn_main" in " ".join(p.cmdline()):
                out.add(p.pid)
        except psutil.Error:
            pass
    return out


class Interrupt:
    """A progress display whose user presses Ctrl-C after the first finished point."""

    def point(self, name, status, wall_s, error=None):
        raise KeyboardInterrupt

    def close(self):
        pass


def test_dask_sweep_records_a_failed_point_and_resumes_after_a_kill(tmp_path):
    """3 points on a 2-worker LocalCluster, interrupted after the first finished point: the
    cluster is closed, one point is recorded. Started again (a half-written point folder left
    behind), it skips that point and runs the rest: 2 finish, 1 fails with its one-line
    error, and results.csv holds the finished ones."""
    before = _children()
    path = write(tmp_path, {"grid": {"fabric.spine_link_mbps": [5, 10, -1]},
                            "set": {"jobs[0].iterations": 2}})
    out = tmp_path / "out"
    lines: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        run_sweep(load_sweep(path), out, workers=2, progress=Interrupt(), log=lines.append)
    assert _children() <= before                    # the local cluster is gone
    recorded = [p for p in (out / "points").iterdir() if (p / "point.json").is_file()]
    assert len(recorded) == 1
    first = json.loads(recorded[0].joinpath("point.json").read_text())
    half = next(out / "points" / n for n in ("spine_link_mbps-5_seed-1_rep-1",
                                             "spine_link_mbps-10_seed-1_rep-1")
                if n != first["name"])
    half.mkdir(parents=True, exist_ok=True)
    (half / "stray.tmp").write_text("half written\n")

    summary = run_sweep(load_sweep(path), out, workers=2, log=lines.append)
    assert _children() <= before
    assert summary["points"] == 3 and summary["failed"] == 1
    assert summary["skipped"] == (1 if first["status"] == "ok" else 0)
    assert summary["skipped"] + summary["ran"] == 3
    assert not (half / "stray.tmp").exists() and (half / "point.json").is_file()
    status = {p["name"]: p for p in summary["point_status"]}
    bad = status["spine_link_mbps--1_seed-1_rep-1"]
    assert bad["status"] == "failed" and "fabric.spine_link_mbps" in bad["error"]
    assert "\n" not in bad["error"]
    assert (out / "points" / bad["name"] / "error.txt").is_file()
    table = pd.read_csv(out / "results.csv")
    assert sorted(set(table["fabric.spine_link_mbps"])) == [5, 10]
    # 2 points x 2 routings x (2 + 3 + 3 + 3 iterations)
    assert len(table) == 2 * 2 * 11 and set(table["routing"]) == {"ecmp", "ilp"}
    ok = out / "points" / "spine_link_mbps-5_seed-1_rep-1"
    assert {"results.json", "results.csv", "config.yaml", "environment.json", "point.json",
            "log.txt"} <= {p.name for p in ok.iterdir()}
    env = json.loads((ok / "environment.json").read_text())
    assert env["git"]["commit"] and "installed_packages" in env and env["started_at_utc"]
    assert json.loads((out / "sweep.json").read_text())["failed"] == 1


def test_a_changed_base_reruns_the_point(tmp_path):
    path = write(tmp_path, {"seeds": [3]})
    s1 = load_sweep(path)
    s2 = load_sweep(path, ["fabric.spine_link_mbps=2"])
    assert s1.points[0].name == s2.points[0].name
    assert (s1.points[0].fingerprint("predict", None)
            != s2.points[0].fingerprint("predict", None))


def test_scheduler_path_and_the_emulator_resource(tmp_path):
    """--scheduler: points run on an existing cluster (here an in-process one); a run-mode
    sweep is refused when no worker offers the emulator resource."""
    from dask.distributed import LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster:
        path = write(tmp_path, {"set": {"jobs[0].iterations": 1}})
        summary = run_sweep(load_sweep(path), tmp_path / "out", cluster.scheduler_address,
                            log=lambda _: None)
        assert (summary["ran"], summary["failed"], summary["scheduler"]) == (
            1, 0, cluster.scheduler_address)
        run = write(tmp_path / "r", {"mode": "run"})
        with pytest.raises(ConfigError, match="offers the emulator resource"):
            run_sweep(load_sweep(run), tmp_path / "out-run", cluster.scheduler_address,
                      log=lambda _: None)


def test_iteration_progress_lines_carry_job_iteration_cct_and_running_mean():
    from types import SimpleNamespace as NS
    from experiments.progress import iteration_progress
    lines: list[str] = []
    plans = [NS(name="ring-a", spec=NS(iterations=3)), NS(name="ring-b", spec=NS(iterations=2))]
    hook = iteration_progress("ecmp", plans, lines.append)
    for job, cct in (("ring-a", 4.0), ("ring-b", 1.0), ("ring-a", 5.0)):
        hook(job, NS(cct_s=cct))
    assert lines == ["[ecmp] ring-a iteration 1/3: CCT 4.000 s, running mean 4.000 s",
                     "[ecmp] ring-b iteration 1/2: CCT 1.000 s, running mean 1.000 s",
                     "[ecmp] ring-a iteration 2/3: CCT 5.000 s, running mean 4.500 s"]


def test_sweep_progress_is_plain_lines_off_a_terminal():
    import io
    from experiments.progress import SweepProgress
    stream = io.StringIO()
    bar = SweepProgress(4, skipped=1, stream=stream)
    bar.point("a", "ok", 0.5)
    bar.point("b", "failed", 0.25, "fabric.spines: must be from 1 to 256, got 0")
    bar.close()
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("[2/4] a ok in 0.50 s; 0 failed; ETA ")
    assert lines[1].startswith("[3/4] b failed in 0.25 s; 1 failed; ETA ")
    assert lines[1].endswith(": fabric.spines: must be from 1 to 256, got 0")


def test_sweep_progress_draws_a_bar_when_asked():
    import io
    from experiments.progress import SweepProgress
    stream = io.StringIO()
    bar = SweepProgress(2, stream=stream, bar=True)
    bar.point("a", "ok", 0.1)
    bar.point("b", "failed", 0.1, "boom")
    bar.close()
    text = stream.getvalue()
    assert "2/2" in text and "failed=1" in text and "failed b: boom" in text


def test_ctrl_c_to_a_predicted_sweep_is_one_line(tmp_path):
    """A terminal's Ctrl-C (SIGINT to the whole process group, the local cluster's workers
    included) while points run: exit 130, one `interrupted` line and the progress lines, no
    worker tracebacks (outside pass: 63 lines of `Process Dask Worker process`), and no
    process of the sweep left."""
    import signal
    import subprocess
    import sys
    import time
    path = write(tmp_path, {"grid": {"fabric.spine_link_mbps": [2.5, 5]},
                            "seeds": list(range(1, 31))})
    err_file = tmp_path / "err.txt"
    with open(err_file, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "experiments", "sweep", str(path),
                                 "--out", str(tmp_path / "out"), "--workers", "2"], cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    deadline = time.monotonic() + 120
    while "[3/" not in err_file.read_text() and time.monotonic() < deadline:
        assert proc.poll() is None, err_file.read_text()
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    code = proc.wait(timeout=60)
    lines = [ln for ln in err_file.read_text().splitlines()
             if ln.strip() and not ln.startswith("[")]
    assert code == 130 and len(lines) == 1 and lines[0].startswith("interrupted"), lines
    time.sleep(1)
    left = [p.pid for p in psutil.process_iter() if _in_session(p, proc.pid)]
    assert not left, left


def _in_session(p: psutil.Process, sid: int) -> bool:
    """`p` is alive (not a zombie, which only waits to be reaped) in session `sid`."""
    try:
        return os.getsid(p.pid) == sid and p.status() != psutil.STATUS_ZOMBIE
    except (OSError, psutil.Error):
        return False


def _dropped(base, new, where: str = "") -> list[str]:
    """Keys of `base`'s mappings that `new` no longer has (where a mapping replaced one)."""
    if not (isinstance(base, dict) and isinstance(new, dict)):
        return []
    return [f"{where}{k}" for k in base if k not in new] + [
        d for k in base if k in new for d in _dropped(base[k], new[k], f"{where}{k}.")]


@pytest.mark.parametrize("sweep", sorted((ROOT / "experiments/configs/sweeps").glob("*.yaml")),
                         ids=lambda p: p.stem)
def test_a_shipped_sweeps_set_keeps_every_key_of_its_base(sweep):
    # lb-floodns-2jobs-d4's `set: {jobs_from: {floodns: ...}}` once replaced the base's whole
    # jobs_from, and its points ran without the base's 4 failed cores
    doc = yaml.safe_load(sweep.read_text())
    base = yaml.safe_load((sweep.parent / doc["base"]).read_text())
    points = load_sweep(sweep).points
    lost = {d for p in points for d in _dropped(base, p.doc)}
    swept = {k.split(".")[0].split("[")[0]                 # a point may replace what it sweeps
             for c in [doc.get("grid") or {}, *(doc.get("points") or [])] for k in c}
    assert points and not {d for d in lost if d.split(".")[0] not in swept}, lost


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), 0.0001, 1e30, "1"])
def test_a_sweeps_util_bin_s_has_the_bounds_of_util_bin_s(tmp_path, value):
    # these passed validate ("every point valid") while --util-bin-s refused them
    with pytest.raises(ConfigError, match=r"util_bin_s: seconds from 0.001 to 604,800") as e:
        load_sweep(write(tmp_path, {"grid": {"seed": [1, 2]}, "util_bin_s": value}))
    assert "\n" not in str(e.value)
    assert load_sweep(write(tmp_path, {"grid": {"seed": [1, 2]}, "util_bin_s": 0.5})).util_bin_s \
        == 0.5

"""`predict`'s figure worker (experiments/figure_worker.py): started with the command, ended
by its PID on every exit path (bad input, a failure, a signal), and a failure of its own
reaches the user as one typed line while the results stay written."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from experiments import figure_worker, report
from experiments.__main__ import main

ROOT = Path(__file__).resolve().parents[3]
QUICKSTART = str(ROOT / "experiments" / "configs" / "quickstart.yaml")


def _alive(pid: int) -> bool:
    """Whether `pid` is a process (a worker ended by `stop` is reaped: it is none)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def started():
    """The workers a test's commands start (their PIDs)."""
    figure_worker.STARTED.clear()
    yield figure_worker.STARTED
    figure_worker.STARTED.clear()


def test_bad_input_ends_the_worker_and_exits_2_writing_nothing(tmp_path, capsys, started):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: t\nfabric: {spines: -1}\n")
    code = main(["predict", str(bad), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: "), err
    assert len(started) == 1 and not _alive(started[0])
    assert not (tmp_path / "out").exists()


def test_no_plots_starts_no_worker(tmp_path, started):
    assert main(["predict", QUICKSTART, "--set", "routing=[ecmp]", "--no-plots",
                 "--out", str(tmp_path / "p")]) == 0
    assert started == [] and not (tmp_path / "p" / "plots").exists()


def test_the_worker_draws_and_has_ended_when_the_command_returns(tmp_path, capsys, started):
    assert main(["predict", QUICKSTART, "--set", "routing=[ecmp]",
                 "--out", str(tmp_path / "p")]) == 0
    assert "figures: " in capsys.readouterr().out
    assert len(started) == 1 and not _alive(started[0])
    assert sorted(p.name for p in (tmp_path / "p" / "plots").iterdir()) == [
        "cct_cdf.png", "efficiency.png", "fct_cdf.png", "load_heatmap.png",
        "slowdown_cdf.png"]


def test_a_drawing_error_in_the_worker_is_one_typed_line_and_exit_1(tmp_path, capsys,
                                                                     monkeypatch, started):
    real = report.predicted_figure_data
    monkeypatch.setattr(report, "predicted_figure_data",
                        lambda folder: {**real(folder), "cct_series": [("x", "not numbers")]})
    code = main(["predict", QUICKSTART, "--set", "routing=[ecmp]",
                 "--out", str(tmp_path / "p")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1, err
    assert err[0].startswith("error: FigureError: drawing the figures: ValueError: "), err
    assert (tmp_path / "p" / "results.json").is_file()       # the results stay written
    assert not _alive(started[0])


def test_a_drawing_error_in_the_forked_process_is_reported_too(tmp_path, capsys,
                                                                monkeypatch, started):
    real = report.predicted_figure_data
    monkeypatch.setattr(report, "predicted_figure_data",
                        lambda folder: {**real(folder),
                                        "loads": {"x": {("leaf1", "spine1"): "busy"}}})
    code = main(["predict", QUICKSTART, "--set", "routing=[ecmp]",
                 "--out", str(tmp_path / "p")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1, err
    assert err[0].startswith("error: FigureError: drawing the figures: TypeError: "), err


def test_stop_ends_the_worker_and_the_process_it_forked(tmp_path, started):
    """Stopped while it draws (its data handed over, the heatmap's process forked), nothing
    of its process group is left."""
    import pickle
    import time
    worker = figure_worker.FigureWorker.start()
    data = {"title": "t", "cct_series": [("a", [1.0] * 100_000)], "ideals": [], "fct": {},
            "efficiency": [], "loads": {"a": {(f"leaf{i}", f"spine{j}"): 0.5
                                              for i in range(64) for j in range(64)}},
            "load_runs": 1, "utilization": [], "utilization_run": ""}
    worker.proc.stdin.write(pickle.dumps((str(tmp_path / "plots"), data)))
    worker.proc.stdin.close()
    time.sleep(1.0)
    worker.stop()
    assert worker.proc.returncode == -signal.SIGKILL or worker.proc.returncode == 0
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(worker.proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("a process of the worker's group outlived stop()")


def test_a_worker_killed_before_drawing_is_reported(tmp_path, capsys, monkeypatch, started):
    real = figure_worker.FigureWorker.draw

    def killed_first(self, plots, data):
        self.proc.kill()
        self.proc.wait()
        return real(self, plots, data)

    monkeypatch.setattr(figure_worker.FigureWorker, "draw", killed_first)
    code = main(["predict", QUICKSTART, "--set", "routing=[ecmp]",
                 "--out", str(tmp_path / "p")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and err == [
        f"error: FigureError: the figure worker ended (signal {int(signal.SIGKILL)}) before "
        "drawing the figures; the results are written: `mlfabric report` draws them"], err


def test_a_worker_that_cannot_write_reports_the_os_error_naming_the_folder(
        tmp_path, capsys, monkeypatch, started):
    real = report.predicted_figure_data

    def plots_is_a_file(folder):
        (folder / "plots").write_text("not a folder")
        return real(folder)

    monkeypatch.setattr(report, "predicted_figure_data", plots_is_a_file)
    code = main(["predict", QUICKSTART, "--set", "routing=[ecmp]",
                 "--out", str(tmp_path / "p")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and err[0].startswith("error: "), err
    assert "plots" in err[0] and "exists" in err[0].lower(), err


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_the_worker_draws_ends_both(sig, code, tmp_path):
    """The command is signalled as it hands the worker the data: it exits with the signal's
    code and its worker (in its own session: the terminal's Ctrl-C reaches only the command)
    has ended."""
    script = textwrap.dedent(f"""
        import os, signal, sys
        from experiments import figure_worker
        real = figure_worker.FigureWorker.draw
        def signalled(self, plots, data):
            os.kill(os.getpid(), {int(sig)})
            return real(self, plots, data)
        figure_worker.FigureWorker.draw = signalled
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from experiments.__main__ import main
        code = main(["predict", {QUICKSTART!r}, "--set", "routing=[ecmp]",
                     "--out", {str(tmp_path / "p")!r}])
        print("workers", *figure_worker.STARTED, flush=True)
        sys.exit(code)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert out.returncode == code, out.stderr
    pids = [int(p) for p in out.stdout.strip().splitlines()[-1].split()[1:]]
    assert len(pids) == 1 and not _alive(pids[0])
    assert (tmp_path / "p" / "results.json").is_file()      # the prediction had finished


_DRAW = textwrap.dedent("""
    import pickle, sys
    from pathlib import Path
    from experiments import figure_worker
    if sys.argv[3] == "skip":
        figure_worker.skip_set_docstrings()
    from matplotlib.lines import Line2D
    from experiments import answer_figures
    line = Line2D([0], [0])
    line.set(c="red", lw=3, label="x")          # aliases and properties, as before
    if (line.get_color(), line.get_linewidth(), line.get_label()) != ("red", 3, "x"):
        sys.exit("set() changed")
    data = pickle.loads(Path(sys.argv[1]).read_bytes())
    print(answer_figures.draw_figures(data, Path(sys.argv[2])))
    print(len(Line2D.set.__doc__ or ""))
""")


def test_the_worker_skips_only_set_docstrings_and_draws_the_same_bytes(tmp_path):
    """The worker's import without matplotlib's set() docstrings: set() works as before and
    every figure is the same file, byte for byte, as one drawn with them."""
    import ast
    import pickle
    assert main(["predict", QUICKSTART, "--set", "routing=[ecmp, greedy]", "--no-plots",
                 "--out", str(tmp_path / "p")]) == 0
    data = tmp_path / "data.pickle"
    data.write_bytes(pickle.dumps(report.predicted_figure_data(tmp_path / "p")))
    out = {}
    for how, flags in (("skip", []), ("full", []), ("skip", ["-OO"])):
        folder = tmp_path / (how + "".join(flags))
        done = subprocess.run([sys.executable, *flags, "-c", _DRAW, str(data), str(folder),
                               how], capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert done.returncode == 0, done.stderr
        out[folder.name] = done.stdout.split("\n")
    assert len(ast.literal_eval(out["full"][0])) >= 4, out
    assert out["skip"][0] == out["full"][0] == out["skip-OO"][0]
    assert int(out["skip"][1]) == 0 < int(out["full"][1])       # the docstring, skipped
    pngs = sorted(p.name for p in (tmp_path / "full").iterdir())
    for how in ("skip", "skip-OO"):    # -OO: the worker's bytecode without docstrings
        assert pngs == sorted(p.name for p in (tmp_path / how).iterdir())
        for name in pngs:
            assert (tmp_path / how / name).read_bytes() == (tmp_path / "full" / name
                                                            ).read_bytes(), (how, name)


def test_the_worker_runs_under_OO_only_with_current_optimized_bytecode(tmp_path,
                                                                        monkeypatch):
    """figure_worker.optimized: -OO when matplotlib's figure.py has bytecode without
    docstrings written for its current source; not when there is none or it is older."""
    import importlib.util
    import py_compile
    package = tmp_path / "matplotlib"
    package.mkdir()
    (package / "__init__.py").write_text("")
    figure = package / "figure.py"
    figure.write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "matplotlib", raising=False)   # found on the path
    assert importlib.util.find_spec("matplotlib").origin == str(package / "__init__.py")
    assert figure_worker.optimized() == []                       # none written
    py_compile.compile(str(figure), optimize=2, doraise=True)
    assert figure_worker.optimized() == ["-OO"]
    os.utime(figure, (1_000_000_000, 1_000_000_000))             # the source changed since
    assert figure_worker.optimized() == []
    py_compile.compile(str(figure), optimize=2, doraise=True)
    assert figure_worker.optimized() == ["-OO"]
    figure.write_text("X = 22\n")                               # same time, other size
    os.utime(figure, (1_000_000_000, 1_000_000_000))
    assert figure_worker.optimized() == []

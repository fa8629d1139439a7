"""Signals are held during a step that must not be cut, then acted on with their usual code."""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from testbed.signals import Terminated, deferred, raise_terminated


@pytest.fixture
def sigterm_raises():
    old = signal.signal(signal.SIGTERM, raise_terminated)
    yield
    signal.signal(signal.SIGTERM, old)


def test_a_signal_during_the_block_is_raised_after_it(sigterm_raises):
    done = []
    with pytest.raises(Terminated):
        with deferred() as got:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
            done.append("finished")        # not cut short
            assert got == [signal.SIGTERM]
    assert done == ["finished"]


def test_a_signal_delivered_to_another_thread_is_held_too(sigterm_raises):
    """The outside pass's cause: pthread_sigmask blocked the main thread only; the kernel gave
    the signal to a second thread and Python raised it in the main thread anyway."""
    steps = []
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        with pytest.raises(Terminated):
            with deferred():
                signal.pthread_kill(worker.ident, signal.SIGTERM)
                for i in range(5):
                    time.sleep(0.02)
                    steps.append(i)
        assert steps == [0, 1, 2, 3, 4]
    finally:
        stop.set()
        worker.join()


def test_a_process_interrupted_mid_block_exits_with_the_signals_code():
    # Ctrl-C's usual handler, whatever the parent left (a background shell ignores SIGINT)
    code = textwrap.dedent("""
        import os, signal, sys, time
        from testbed.signals import deferred
        signal.signal(signal.SIGINT, signal.default_int_handler)
        with deferred():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)
            print("teardown finished", flush=True)
    """)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=root, timeout=30)
    assert "teardown finished" in out.stdout
    assert "KeyboardInterrupt" in out.stderr and out.returncode == -signal.SIGINT


def test_without_signals_nothing_is_raised():
    with deferred() as got:
        pass
    assert got == []


@pytest.mark.parametrize("module, done", [("matplotlib", "matplotlib.ft2font"),
                                          ("matplotlib.backends._backend_agg",
                                           "matplotlib.backends._backend_agg")])
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_the_command_imports_ends_it_after_the_imports(sig, code, module, done):
    """CI, 2026-12-01: Ctrl-C while matplotlib initialised its C extension (ft2font) aborted
    the interpreter (exit -6); CI, 2026-12-02: one while the Agg backend's extension loaded at
    the run's first figure failed it (ImportError, exit 1). The backend is imported with the
    rest now; here the signal arrives as each module starts to import (in `report`, which
    imports matplotlib with its modules; `validate` no longer imports it)."""
    script = textwrap.dedent(f"""
        import atexit, os, signal, sys
        class SignalOnImport:
            def find_spec(self, name, path=None, target=None):
                if name == {module!r}:
                    sys.meta_path.remove(self)
                    os.kill(os.getpid(), {int(sig)})
                return None
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.meta_path.insert(0, SignalOnImport())
        atexit.register(lambda: print("done" if {done!r} in sys.modules else "cut",
                                      flush=True))
        from experiments.__main__ import main
        sys.exit(main(["report", "experiments/configs", "--out", "/nonexistent/r"]))
    """)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=root, timeout=60)
    assert out.returncode == code, out.stderr
    assert out.stdout.strip() == "done", out.stderr     # the import finished first


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_predict_imports_matplotlib_to_draw_ends_it_after_the_import(
        sig, code, tmp_path):
    """`predict` whose figure worker could not start imports matplotlib to draw its figures
    itself, after the prediction: that import holds signals too (experiments/__main__.py;
    the worker's own signals: tests/unit/experiments/test_figure_worker.py)."""
    script = textwrap.dedent(f"""
        import atexit, os, signal, sys
        from experiments import figure_worker
        figure_worker.FigureWorker.start = classmethod(lambda cls: None)
        class SignalOnImport:
            def find_spec(self, name, path=None, target=None):
                if name == "matplotlib":
                    sys.meta_path.remove(self)
                    os.kill(os.getpid(), {int(sig)})
                return None
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.meta_path.insert(0, SignalOnImport())
        atexit.register(lambda: print("done" if "matplotlib.ft2font" in sys.modules
                                      else "cut", flush=True))
        from experiments.__main__ import main
        sys.exit(main(["predict", "experiments/configs/quickstart.yaml", "--set",
                       "routing=[ecmp]", "--out", {str(tmp_path / "p")!r}]))
    """)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=root, timeout=300)
    assert out.returncode == code, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "done", out.stderr
    assert (tmp_path / "p" / "results.json").is_file()      # the prediction had finished

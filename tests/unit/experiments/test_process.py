"""The command's process ends (experiments/process.py) and `--version`."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_exit_now_runs_the_handlers_flushes_and_keeps_the_code():
    program = ("import atexit, sys\n"
               "from experiments.process import exit_now\n"
               "atexit.register(lambda: sys.stdout.write('handler'))\n"
               "sys.stdout.write('buffered ')\n"      # a pipe: block-buffered, not yet out
               "exit_now(3)\n")
    proc = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "buffered handler", "")


def test_exit_now_waits_for_a_thread_that_is_not_a_daemon():
    program = ("import threading, time\n"
               "from experiments.process import exit_now\n"
               "threading.Thread(target=lambda: (time.sleep(0.3), print('thread done'))).start()\n"
               "exit_now(0)\n")
    proc = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (0, "thread done\n")


def test_version_is_one_line_on_stdout():
    proc = subprocess.run([sys.executable, "-m", "experiments", "--version"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.startswith("mlfabric ") and "(commit " in proc.stdout
    assert len(proc.stdout.splitlines()) == 1


def _blas_env(before: str, env: dict) -> str:
    """OPENBLAS_NUM_THREADS after one_blas_thread() in a fresh interpreter that ran `before`."""
    program = (f"{before}\nimport os\nfrom experiments.process import one_blas_thread\n"
               "one_blas_thread()\nprint(os.environ.get('OPENBLAS_NUM_THREADS'))\n")
    proc = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_one_blas_thread_before_numpy_unless_the_caller_chose_or_numpy_is_loaded():
    import os
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    assert _blas_env("", env) == "1"
    assert _blas_env("", {**env, "OPENBLAS_NUM_THREADS": "4"}) == "4"
    assert _blas_env("import numpy", env) == "None"

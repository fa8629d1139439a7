"""`predict`'s figure worker: a second process, started before the command's own imports,
imports matplotlib and the drawing code (experiments/drawing.py: ~0.5 s of CPU) while the
command predicts, then draws the figures when handed their data (experiments/report.py's
predicted_figure_data). On two cores the import costs no wall time; the CPU is that of
drawing in the command's own process, plus a second interpreter's start (~0.03 s).

Protocol: the command writes one pickle, (plots folder, data), to the worker's stdin and
closes it; the worker answers one JSON line on its stdout, {"figures": [stems]} or {"error":
one line, "type": the exception's class, "errno", "filename"}, and exits. A worker whose
stdin closes without data (the command failed, was interrupted or killed) exits without
writing anything. The command ends it by the PID it started on every exit path (`stop`).
This module imports only the standard library at its top: the command imports it first.
"""
from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path

#: The longest the command waits for the worker's answer once it handed it the data (s):
#: drawing MAX_SERIES routings' figures of 10 M transfers takes well under a minute.
ANSWER_TIMEOUT_S = 600.0
#: The program the worker runs: this module's serve(), from this checkout.
_PROGRAM = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "from experiments.figure_worker import serve; serve()")
#: The worker's environment: this one, OpenBLAS on one thread (numpy's import otherwise
#: starts a thread per core, ~0.08 s of CPU; the worker does no linear algebra).
_ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
#: PIDs of the workers this process started (tests check that each has ended).
STARTED: list[int] = []


class FigureError(RuntimeError):
    """The figure worker could not draw the figures (the results are written)."""


class FigureWorker:
    """The worker process of one `predict` command."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc

    @classmethod
    def start(cls) -> "FigureWorker | None":
        """Start a worker (no shell, its own session: a Ctrl-C at the terminal reaches only
        the command, which ends it); None when it cannot be started (the command then
        draws in its own process)."""
        root = str(Path(__file__).resolve().parents[1])
        try:
            proc = subprocess.Popen([sys.executable, *optimized(), "-c", _PROGRAM, root],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    start_new_session=True, env=_ENV)
        except OSError:
            return None
        STARTED.append(proc.pid)
        return cls(proc)

    def draw(self, plots: Path, data: dict) -> list[str]:
        """Hand the worker the figures' data; their stems once drawn into `plots`.
        FigureError (or the OSError that stopped it, naming its file) when it could not."""
        payload = pickle.dumps((str(plots), data), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            out, _ = self.proc.communicate(payload, timeout=ANSWER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise FigureError(f"the figure worker drew nothing in {ANSWER_TIMEOUT_S:.0f} s; "
                              "run with --no-plots and draw them with `mlfabric report`") \
                from None
        except BrokenPipeError:       # it had ended: its exit status says why
            self.proc.wait()
            out = b""
        return _answer(out, self.proc.returncode)

    def stop(self) -> None:
        """End the worker if it still runs: SIGKILL to the process group of the PID started
        (its own session: the worker and the process it forks to draw), then reaped."""
        if self.proc.returncode is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:   # already gone (not yet reaped: wait() below)
                pass
            self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            if f is not None and not f.closed:
                f.close()


def _answer(out: bytes, returncode: int) -> list[str]:
    """The stems of the worker's answer, or the error it reports."""
    try:
        answer = json.loads(out.decode("utf-8").strip().splitlines()[-1])
    except (ValueError, IndexError, UnicodeDecodeError):
        how = (f"signal {-returncode}" if returncode < 0 else f"exit {returncode}")
        raise FigureError(f"the figure worker ended ({how}) before drawing the figures; "
                          "the results are written: `mlfabric report` draws them") from None
    if "figures" in answer:
        return [str(s) for s in answer["figures"]]
    if answer.get("type") == "OSError" or answer.get("errno") is not None:
        raise OSError(answer.get("errno") or 0, answer["error"], answer.get("filename"))
    raise FigureError(f"drawing the figures: {answer['type']}: {answer['error']}")


#: The order the figures are taken in, the longest first (the heatmap takes about as long
#: as three others together), so that the two processes end close together.
LONGEST_FIRST = ("load_heatmap", "link_distribution", "efficiency", "slowdown_cdf", "cct_cdf",
                 "fct_cdf", "link_utilization")


def _error(e: BaseException) -> dict:
    """An exception as the worker's one-line answer."""
    answer = {"error": " ".join(str(e).split())[:300] or type(e).__name__,
              "type": type(e).__name__}
    if isinstance(e, OSError):
        answer.update(errno=e.errno, filename=None if e.filename is None
                      else str(e.filename), error=e.strerror or str(e))
    return answer


def _take(answer_figures, data: dict, plots: Path, tickets: int, order: tuple) -> dict:
    """Draw the figures whose tickets (one byte each: an index into `order`) this process
    reads from the pipe `tickets` until it is empty; the answer."""
    drawn = []
    try:
        while ticket := os.read(tickets, 1):
            drawn += answer_figures.draw_figures(data, plots, names=(order[ticket[0]],))
    except BaseException as e:       # noqa: BLE001 (one line to the command)
        return _error(e)
    return {"figures": drawn}


def _draw(answer_figures, data: dict, plots: Path) -> dict:
    """Every figure; with two cores, this process and one forked from it (matplotlib
    already imported) take them one at a time, the longest first, from one pipe of
    tickets. The answer: the stems in FIGURES' order, or the first error."""
    order = tuple(n for n in LONGEST_FIRST if n in answer_figures.FIGURES)
    order += tuple(n for n in answer_figures.FIGURES if n not in order)
    tickets, write = os.pipe()
    os.write(write, bytes(range(len(order))))     # a few bytes: the pipe holds them all
    os.close(write)                               # read() returns b"" once all are taken
    pid = None
    if len(os.sched_getaffinity(0)) > 1:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:                 # the forked process: its figures, its answer, gone
            os.close(read)
            try:
                answer = _take(answer_figures, data, plots, tickets, order)
                os.write(write, json.dumps(answer).encode())
            finally:
                os._exit(0)
        os.close(write)
    answer = _take(answer_figures, data, plots, tickets, order)
    os.close(tickets)
    if pid is None:
        return _ordered(answer_figures, answer)
    with os.fdopen(read, "rb") as f:
        theirs = f.read()
    os.waitpid(pid, 0)
    try:
        forked = json.loads(theirs)
    except ValueError:
        forked = {"error": "the figure worker's second process ended without an answer",
                  "type": "FigureError"}
    if "figures" not in answer:
        return answer
    if "figures" not in forked:
        return forked
    return _ordered(answer_figures, {"figures": answer["figures"] + forked["figures"]})


def _ordered(answer_figures, answer: dict) -> dict:
    """The answer with its stems in FIGURES' order."""
    if "figures" in answer:
        answer["figures"] = [n for n in answer_figures.FIGURES if n in answer["figures"]]
    return answer


def optimized() -> list[str]:
    """["-OO"] when matplotlib's bytecode without docstrings is on disk for its current source
    (`make setup` writes it: write_optimized): the worker then imports in ~0.20 s instead of
    ~0.23 s, less to unmarshal (matplotlib.widgets alone: 15 ms). [] otherwise: under -OO
    without it, Python would compile every module the worker imports, on each run where it
    cannot write them."""
    from importlib.util import find_spec
    try:
        spec = find_spec("matplotlib")
    except (ImportError, ValueError):
        return []
    if spec is None or spec.origin is None:
        return []
    return ["-OO"] if _optimized_current(Path(spec.origin).with_name("figure.py")) else []


def _optimized_current(source: Path) -> bool:
    """Whether `source` has bytecode without docstrings written for its current time and size
    (PEP 552's header: magic, flags 0, mtime, size)."""
    from importlib.util import MAGIC_NUMBER, cache_from_source
    try:
        with open(cache_from_source(str(source), optimization=2), "rb") as f:
            head = f.read(16)
        st = source.stat()
    except OSError:
        return False
    stamp = [(int(n) & 0xFFFFFFFF).to_bytes(4, "little") for n in (st.st_mtime, st.st_size)]
    return head == MAGIC_NUMBER + bytes(4) + b"".join(stamp)


def write_optimized() -> int:
    """Write the bytecode without docstrings of every module the worker imports where it is
    missing or stale (in a fresh interpreter, at `make setup`: experiments/warm.py), whether
    or not Python writes bytecode here (PYTHONDONTWRITEBYTECODE). Returns how many."""
    import py_compile
    load()
    written = 0
    for module in list(sys.modules.values()):
        source = getattr(module, "__file__", None)
        if source and source.endswith(".py") and not _optimized_current(Path(source)):
            py_compile.compile(source, optimize=2, doraise=True,
                               invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
            written += 1
    return written


def load():
    """The worker's imports (matplotlib without its set() docstrings, the drawing code,
    Pillow's PNG plugins); answer_figures."""
    skip_set_docstrings()
    from experiments import answer_figures     # and drawing, matplotlib
    from PIL import Image
    Image.preinit()     # the plugins Pillow loads at its first PNG: once, for both processes
    return answer_figures


def skip_set_docstrings() -> None:
    """Make matplotlib skip the docstring it writes for the set() of each Artist class it
    defines (~100 classes; for help() only: ~0.1 s of the worker's ~0.45 s import). set()
    itself is unchanged: a class keeps matplotlib's flag, which its subclasses check. Called
    by the worker and by `report` before they import matplotlib: processes that draw and never
    call help(); with a matplotlib without the hook it does nothing."""
    from matplotlib import artist
    if hasattr(artist.Artist, "_update_set_signature_and_docstring"):
        artist.Artist._update_set_signature_and_docstring = classmethod(_flag_set)


def _flag_set(cls) -> None:
    cls.set._autogenerated_signature = True


def serve() -> None:
    """The worker's main: import the drawing code, wait for the data, draw it (on two cores
    when it has them), answer one JSON line. Nothing is written unless the data came."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the command ends it, not the terminal
    failed = None
    try:
        answer_figures = load()
    except BaseException as e:      # noqa: BLE001 (reported once the data comes)
        failed = e
    try:
        plots, data = pickle.load(sys.stdin.buffer)
    except (EOFError, pickle.UnpicklingError, OSError):
        os._exit(0)                  # the command ended without handing over data
    answer = (_error(failed) if failed is not None
              else _draw(answer_figures, data, Path(plots)))
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
    os._exit(0)

"""experiments/warm.py: the stamp that says whether the model's kernels were built for the
sources on disk (`make setup` builds them; `predict` says when it must)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from experiments import warm
from traffic import aot


def test_the_stamp_matches_only_the_sources_it_was_written_for(tmp_path, monkeypatch):
    monkeypatch.setattr(warm, "STAMP", tmp_path / "stamp.json")
    monkeypatch.setattr(aot, "built", lambda: tmp_path / "kernels.so")
    assert warm.needs_compile()                                    # no stamp
    warm.STAMP.write_text(json.dumps({"sources_sha256": warm.sources_digest()}))
    assert not warm.needs_compile()
    warm.STAMP.write_text(json.dumps({"sources_sha256": "0" * 64}))   # other sources
    assert warm.needs_compile()
    warm.STAMP.write_text("not json")
    assert warm.needs_compile()


def test_a_missing_ahead_of_time_module_is_built_unless_it_failed_here(tmp_path,
                                                                      monkeypatch):
    monkeypatch.setattr(warm, "STAMP", tmp_path / "stamp.json")
    monkeypatch.setattr(aot, "built", lambda: None)
    stamp = {"sources_sha256": warm.sources_digest()}
    warm.STAMP.write_text(json.dumps(stamp))
    assert warm.needs_compile()                                    # never built
    tried = {"key": aot.key(), "error": "gcc: not found"}
    warm.STAMP.write_text(json.dumps({**stamp, "ahead_of_time": tried}))
    assert not warm.needs_compile()                                # failed here: numba's
    tried["key"] = "0" * 16
    warm.STAMP.write_text(json.dumps({**stamp, "ahead_of_time": tried}))
    assert warm.needs_compile()                                    # other sources since


def test_the_digest_covers_every_kernel_module(tmp_path, monkeypatch):
    before = warm.sources_digest()
    for rel in warm.KERNEL_SOURCES:
        assert (warm.ROOT / rel).exists(), rel
        text = (warm.ROOT / rel).read_text()
        assert "njit" in text or "numba" in text, rel     # each holds a compiled kernel
    monkeypatch.setattr(warm, "KERNEL_SOURCES", warm.KERNEL_SOURCES[1:])
    assert warm.sources_digest() != before


def test_a_bad_argument_is_refused(capsys):
    assert warm.main(["warm", "--now"]) == 2
    assert "usage" in capsys.readouterr().err


@pytest.mark.parametrize("needed", [False, True])
def test_if_needed_builds_the_kernels_only_when_needed_and_the_worker_bytecode_always(
        monkeypatch, needed):
    calls = []
    monkeypatch.setattr(warm, "needs_compile", lambda: needed)
    monkeypatch.setattr(warm, "warm", lambda: calls.append("kernels"))
    monkeypatch.setattr(warm, "_worker_bytecode", lambda log: calls.append("bytecode"))
    assert warm.main(["warm", "--if-needed"]) == 0
    assert calls == (["kernels"] if needed else ["bytecode"])


def test_a_failed_ahead_of_time_build_is_said_and_kept_in_the_stamp(monkeypatch):
    def fail(folder=None):
        raise aot.BuildError("building mlfabric_kernels_x: RuntimeError: no compiler")
    monkeypatch.setattr(aot, "build", fail)
    said: list[str] = []
    record = warm._ahead_of_time(said.append)
    assert record == {"ahead_of_time": {"key": aot.key(), "error": "building "
                                        "mlfabric_kernels_x: RuntimeError: no compiler"}}
    assert len(said) == 1 and "not built ahead of time" in said[0] and "numba's" in said[0]


def test_setup_writes_the_figure_workers_optimized_bytecode(tmp_path, monkeypatch):
    """warm writes the bytecode the figure worker loads under -OO (here into a pycache
    prefix of its own); figure_worker.optimized then starts workers with -OO."""
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path / "pyc"))
    said = []
    warm._worker_bytecode(said.append)
    assert said == []
    assert list((tmp_path / "pyc").rglob("matplotlib/figure.*.opt-2.pyc"))
    ask = "from experiments.figure_worker import optimized; print(optimized())"
    for flags, answer in (([], "['-OO']"), (["-X", "pycache_prefix=" + str(tmp_path / "no")],
                                            "[]")):
        done = subprocess.run([sys.executable, *flags, "-c", ask], capture_output=True,
                              text=True, cwd=warm.ROOT, timeout=60)
        assert done.stdout.strip() == answer, done.stderr


@pytest.mark.parametrize("python", ["/bin/false", "/no/such/python"])
def test_a_worker_bytecode_that_cannot_be_written_is_said_in_one_line(monkeypatch, python):
    monkeypatch.setattr(sys, "executable", python)
    said = []
    warm._worker_bytecode(said.append)
    assert len(said) == 1 and "not written" in said[0], said

"""experiments/warm.py: the stamp that says whether the model's kernels were built for the
sources on disk (`make setup` builds them; `predict` says when it must)."""
from __future__ import annotations

import json

from experiments import warm


def test_the_stamp_matches_only_the_sources_it_was_written_for(tmp_path, monkeypatch):
    monkeypatch.setattr(warm, "STAMP", tmp_path / "stamp.json")
    assert warm.needs_compile()                                    # no stamp
    warm.STAMP.write_text(json.dumps({"sources_sha256": warm.sources_digest()}))
    assert not warm.needs_compile()
    warm.STAMP.write_text(json.dumps({"sources_sha256": "0" * 64}))   # other sources
    assert warm.needs_compile()
    warm.STAMP.write_text("not json")
    assert warm.needs_compile()


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

"""experiments/config/yamlio: block-style YAML read through libyaml's parser gives the
document the pure-Python loader gives; what libyaml would accept and PyYAML refuses still
gets PyYAML's error."""
from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.config import ConfigError, yaml_value
from experiments.config.yamlio import CParser, _fast, _Loader, _plain, config_text

SCALARS = (st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70)
           | st.floats(allow_nan=False) | st.text(alphabet="abcXYZ019 :-_.#'\"", max_size=8)
           | st.sampled_from(["yes", "on", "NO", "~", "1_000", "0o7", "2001-12-14", "1e3",
                              ".inf", "-.5", "0x1F", "null"]))
DOCS = st.recursive(SCALARS, lambda kids: st.lists(kids, max_size=4)
                    | st.dictionaries(st.text(alphabet="abc_xyz", min_size=1, max_size=5),
                                      kids, max_size=4), max_leaves=25)


def _python(text: str):
    loader = _Loader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


@pytest.mark.skipif(CParser is None, reason="PyYAML without libyaml")
@settings(max_examples=300, deadline=None)
@given(DOCS)
def test_block_style_same_document(doc):
    text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)
    done, fast = _fast(text)
    py = _python(text)
    assert not done or repr(fast) == repr(py)


def test_a_large_config_goes_fast():
    doc = {"name": "x", "jobs": [{"name": f"j{i}", "hosts": [f"h{k}" for k in range(64)]}
                                 for i in range(4)]}
    done, fast = _fast(yaml.safe_dump(doc, sort_keys=False))
    assert done == (CParser is not None) and (not done or fast == doc)


@pytest.mark.parametrize("text", ["key: |#x\n", "a: 1\n\tb: 2\n", "[b?1?key: ]\n",
                                  "a: &x 1\nb: *x\n"])
def test_what_libyaml_is_lenient_on_gets_python_errors(text):
    assert not _fast(text)[0]
    with pytest.raises(ConfigError):
        yaml_value(text, "cfg")


PLAIN = st.text(alphabet="abcXYZ019_.:/+ -", max_size=12)
WRITTEN = st.recursive(st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70)
                       | st.floats() | PLAIN
                       | st.sampled_from(["yes", "on", "NO", "1_000", "0o7", "2001-12-14",
                                          "1e3", ".inf", "-.5", "0x1F", "null", "", " a",
                                          "a ", "- a", "a: b", "-", ":", "1:2"]),
                       lambda kids: st.lists(kids, max_size=4)
                       | st.dictionaries(PLAIN, kids, max_size=4), max_leaves=30)


@pytest.mark.skipif(CParser is None, reason="PyYAML without libyaml")
@settings(max_examples=400, deadline=None)
@given(st.dictionaries(PLAIN, WRITTEN, max_size=5))
def test_config_text_as_safe_dump(doc):
    assert config_text(doc) == yaml.safe_dump(doc, sort_keys=False)


def test_config_text_falls_back_on_other_strings():
    doc = {"name": "a, b # c", "hosts": ["h1"] * 3, "note": "é" + "x" * 100}
    assert not _plain(doc) and config_text(doc) == yaml.safe_dump(doc, sort_keys=False)

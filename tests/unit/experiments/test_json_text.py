"""experiments/json_text.dumps gives json.dumps(doc, indent=2)'s text, character for
character, on any JSON-like document (and raises where it raises)."""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.json_text import dumps

SCALARS = (st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70)
           | st.floats(allow_nan=True, allow_infinity=True)
           | st.text(alphabet=st.characters(), max_size=8)
           | st.sampled_from(["a, b", "k: v", "\n", '"', "é", "1, 2"]))
KEYS = st.text(max_size=6) | st.sampled_from(["a, b", "x: 1", '"q"'])
DOCS = st.recursive(SCALARS, lambda kids: st.lists(kids, max_size=6)
                    | st.tuples(kids, kids)
                    | st.dictionaries(KEYS, kids, max_size=6)
                    | st.dictionaries(st.integers() | st.floats() | st.booleans() | st.none(),
                                      kids, max_size=3),
                    max_leaves=40)


@settings(max_examples=400, deadline=None)
@given(DOCS)
def test_same_text_as_json(doc):
    assert dumps(doc) == json.dumps(doc, indent=2)


def test_results_like_document():
    doc = {"runs": [{"cct_s": [0.1, 1e-05, 1e16, -0.0, math.inf], "conn_rate_mbps":
                     {str(c): c / 3 for c in range(1000)}, "jobs": [], "solve": {},
                     "layer2": [[0.5, 1, True, None], []], "name": "dp, 1: ok"}]}
    assert dumps(doc) == json.dumps(doc, indent=2)


def test_raises_as_json_does():
    for bad in ({"a": {1, 2}}, [object()], {"k": [1, object()]}):
        with pytest.raises(TypeError):
            json.dumps(bad, indent=2)
        with pytest.raises(TypeError):
            dumps(bad)


#: few distinct floats, long lists: the path that encodes each distinct float once
POOL = st.sampled_from([0.5, 1.0, 1 / 3, 1e16, 1e-05, -2.5, 0.0, -0.0, math.inf, -math.inf,
                        math.nan])


@settings(max_examples=200, deadline=None)
@given(st.lists(POOL, min_size=60, max_size=300), st.booleans())
def test_repeated_floats_same_text(values, as_map):
    doc = {str(i): v for i, v in enumerate(values)} if as_map else values
    assert dumps({"rates": doc}) == json.dumps({"rates": doc}, indent=2)

"""experiments/csv_text: the text csv.writer writes, and each value formatted as
fmt.format formats it, whether the values repeat or not."""
from __future__ import annotations

import csv
import io
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.csv_text import csv_text, formatted, labelled_rows

POOL = st.sampled_from([0.5, 1 / 3, 1e16, 1e-05, -2.5, 0.0, -0.0, math.inf, -math.inf,
                        math.nan, 0.016098263039999998])


@settings(max_examples=200, deadline=None)
@given(st.lists(POOL, max_size=300) | st.lists(st.floats(), max_size=100),
       st.sampled_from(["{:.9f}", "{:.6f}", "{:g}"]))
def test_formatted_as_format(values, fmt):
    x = np.array(values, dtype=np.float64)
    assert formatted(x, fmt) == [fmt.format(v) for v in x.tolist()]


def test_formatted_ints():
    x = np.array([3, 3, 0, 7] * 40, dtype=np.int64)
    assert formatted(x, "{:g}") == [f"{v:g}" for v in x.tolist()]


def test_csv_text_as_csv_writer():
    rows = [["job", "a, b", 'q"uote', "line\nbreak"], ["dp0", 1, 2.5, ""]] * 3
    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    assert csv_text(rows) == buf.getvalue()


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=6) | st.sampled_from(["dp0", "a,b", 'q"', "x\ny", " ", "{}", "{0}"]),
       st.lists(st.tuples(st.integers(-10 ** 20, 10 ** 20), st.floats(), POOL.map(str)),
                max_size=20))
def test_labelled_rows_as_csv_writer(label, rows):
    cols = [list(c) for c in zip(*rows)] if rows else [[], [], []]
    assert labelled_rows(label, *cols) == csv_text([label, *r] for r in rows)

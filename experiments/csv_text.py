"""CSV text built in memory and a column's numbers formatted once per distinct value: the
same bytes as csv.writer on the file and a format per value, faster on long files.

csv.writer calls its file's write() once per row, and a text file's write() costs about as
much as the row itself; fct.csv holds a row per transfer (65,536 on the 8,192-GPU servers
of docs/servers.md, "Cost at scale"), whose FCTs take few distinct values (a ring's hops
finish together). Pure standard library and numpy.
"""
from __future__ import annotations

import csv
import io
from typing import Iterable

import numpy as np


def csv_text(rows: Iterable) -> str:
    """The text csv.writer (its defaults: "\\r\\n" line ends, minimal quoting) writes for
    `rows`."""
    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    return buf.getvalue()


def formatted(x: np.ndarray, fmt: str) -> list[str]:
    """[fmt.format(v) for v in x] (x one-dimensional, of floats or ints), each distinct
    value formatted once when they are at most half of x; -0.0 and NaN keep their own
    text."""
    values = np.asarray(x).tolist()
    if len(values) < 64:
        return [fmt.format(v) for v in values]
    uniq = dict.fromkeys(values)
    if 2 * len(uniq) > len(values) or 0.0 in uniq:   # 0.0 and -0.0 are one key: both apart
        return [fmt.format(v) for v in values]
    text = {v: fmt.format(v) for v in uniq}
    return list(map(text.__getitem__, values))


def labelled_rows(label: str, *columns: list) -> str:
    """csv_text of the rows (label, columns[0][k], columns[1][k], ...): `label` quoted as
    csv.writer quotes it, every other field an int, a float or a number's text (which it
    never quotes); one str.format per row, ~2.5x csv.writer's time."""
    lead = csv_text([[label, ""]])[:-3]          # the label's field, as csv.writer writes it
    row = lead.replace("{", "{{").replace("}", "}}") + ",{}" * len(columns) + "\r\n"
    return "".join(map(row.format, *columns))

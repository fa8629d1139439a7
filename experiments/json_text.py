"""`json.dumps(doc, indent=2)`, the same text, faster on long flat lists and maps of numbers.

The standard library encodes an indented document in pure Python (its C encoder takes no
indent), about 1 s per 10^6 values; results.json holds a rate per connection (each job's
`conn_rate_mbps` and the fairness vector's layer 2). Here a list whose items are all numbers
(or true, false, null), or a map of string keys to such values, goes through the C encoder
in one call; everything else recurses, and a map with keys that are not strings falls back
to json.dumps itself. Pure code.
"""
from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii

INDENT = "  "
_FLAT = (int, float, bool, type(None))     # their text never holds ", "


def dumps(doc) -> str:
    """The text json.dumps(doc, indent=2) gives (ValueError / TypeError as it raises)."""
    return "".join(pieces(doc))


def pieces(doc) -> list[str]:
    """`dumps(doc)` in pieces, to write one after the other without joining them (a 4.5 MB
    results.json is not copied whole into one string, then into its bytes)."""
    out: list[str] = []
    _encode(doc, 0, out)
    return out


def _flat_items(values: list) -> list[str] | None:
    """Each value's JSON text when all are flat scalars (json's C encoder, one call; floats
    that repeat, as a ring's connection rates do, each encoded once)."""
    if not all(type(v) in _FLAT for v in values):
        return None
    if len(values) >= 64 and all(type(v) is float for v in values):
        uniq = dict.fromkeys(values)       # NaN objects stay apart; 0.0 and -0.0 do not:
        if 2 * len(uniq) <= len(values) and 0.0 not in uniq:           # those go as below
            text = dict(zip(uniq, json.dumps(list(uniq))[1:-1].split(", ")))
            return list(map(text.__getitem__, values))
    return json.dumps(values)[1:-1].split(", ")


def _encode(x, depth: int, out: list[str]) -> None:
    """Append x's indented text at nesting `depth` to out."""
    if isinstance(x, dict):
        if not x:
            out.append("{}")
        elif not all(type(k) is str for k in x):    # json's key rules: let it apply them
            out.append(json.dumps(x, indent=2).replace("\n", "\n" + INDENT * depth))
        else:
            _container(list(map(encode_basestring_ascii, x)), list(x.values()), depth, out)
    elif isinstance(x, (list, tuple)):
        if not x:
            out.append("[]")
        else:
            _container(None, list(x), depth, out)
    else:
        out.append(json.dumps(x))


def _container(keys: list[str] | None, values: list, depth: int, out: list[str]) -> None:
    """A list (keys None) or a map (keys: their JSON text) of `values`, one item a line."""
    inner = "\n" + INDENT * (depth + 1)
    open_, close = ("[", "]") if keys is None else ("{", "}")
    flat = _flat_items(values)
    if flat is not None:
        lines = flat if keys is None else list(map(": ".join, zip(keys, flat)))
        out.append(open_ + inner + ("," + inner).join(lines) + "\n" + INDENT * depth + close)
        return
    out.append(open_)
    for i, v in enumerate(values):
        out.append(("," if i else "") + inner + ("" if keys is None else keys[i] + ": "))
        _encode(v, depth + 1, out)
    out.append("\n" + INDENT * depth + close)

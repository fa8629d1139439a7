"""One look (colour, line style, marker) per routing, the same in every figure of `run`,
`predict`, `sweep` and `report`.

Routings take their looks in config order with ECMP first: the first routing of the order
gets the first look, and so on. The non-blocking reference always has its own grey look.
Pure (no matplotlib): the figures read the looks as matplotlib keyword arguments.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

#: Okabe and Ito's colour-blind-safe palette (blue first, for ECMP), then matplotlib's tab10
#: colours that it lacks; yellow (#F0E442) and black are left out (yellow fades on white,
#: black marks the ideal lines).
COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#8c564b",
          "#7f7f7f", "#bcbd22", "#9467bd")
LINESTYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")
#: The hashed routing every comparison is made against.
ECMP = "ecmp"
NONBLOCKING = "nonblocking"


@dataclass(frozen=True)
class Look:
    """How one routing is drawn: colour (hex), line style, marker."""
    color: str
    linestyle: str
    marker: str

    def line(self) -> dict:
        """matplotlib keyword arguments of a line (plot, step)."""
        return {"color": self.color, "ls": self.linestyle}

    def points(self) -> dict:
        """matplotlib keyword arguments of a line with markers."""
        return {"color": self.color, "ls": self.linestyle, "marker": self.marker}


REFERENCE = Look("#404040", ":", "*")


def routing_of(label: str) -> str:
    """'ecmp (emulated)' -> 'ecmp': a series label's routing."""
    return str(label).split(" (", 1)[0]


def order(names: Iterable[str]) -> list[str]:
    """The routings of `names` (series labels allowed) once each: ECMP first, the others in
    the order given (config order, when given in it)."""
    seen = list(dict.fromkeys(routing_of(n) for n in names))
    return sorted(seen, key=lambda n: n != ECMP)


def looks(names: Iterable[str]) -> dict[str, Look]:
    """routing -> its Look, for the routings of `names` in `order`."""
    out, i = {}, 0
    for name in order(names):
        if name == NONBLOCKING:
            out[name] = REFERENCE
            continue
        out[name] = Look(COLORS[i % len(COLORS)], LINESTYLES[i % len(LINESTYLES)],
                         MARKERS[i % len(MARKERS)])
        i += 1
    return out


def look_of(label: str, table: dict[str, Look]) -> Look:
    """The look of a series label (its routing's) from `looks`' table; a new one past it."""
    return table.get(routing_of(label)) or looks([*table, routing_of(label)])[
        routing_of(label)]


def number(v: Any) -> float | None:
    """A swept value as a number, or None when it is not one (booleans are not)."""
    if isinstance(v, bool):
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def config_key(row: dict, keys: list[str]) -> tuple:
    """The order of configurations: each key's value, numbers as numbers (2.5 < 5 < 10),
    before text."""
    return tuple((0, number(row.get(k)), "") if number(row.get(k)) is not None
                 else (1, 0.0, str(row.get(k))) for k in keys)


def config_label(row: dict, keys: list[str], short: bool = False) -> str:
    """'quickstart, fabric.spine_link_mbps=10': the experiment and its swept values (`short`:
    each key's last part, 'spine_link_mbps=10'); whole floats as integers."""
    parts = []
    for k in keys:
        v = row.get(k)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        parts.append(str(v) if k == "name" else f"{k.rsplit('.', 1)[-1] if short else k}={v}")
    return ", ".join(parts)

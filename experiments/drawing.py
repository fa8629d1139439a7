"""The figures of `report` and `predict`, drawn from data already read (numpy and matplotlib
only: the figure worker of `predict` imports this module and nothing else of mlfabric,
experiments/figure_worker.py; experiments/report.py reads the run folders).

Every figure is a matplotlib Figure on the Agg canvas (no pyplot: nothing to close, no global
state), written by `_save` at 110 dpi with its box grown to hold titles and outside legends.
"""
from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import numpy as np
# the figures without pyplot (Figure + the Agg canvas); whoever imports this module holds
# signals while it imports (a Ctrl-C in the backend's C extension's initialisation failed it:
# experiments/plots.py)
from matplotlib import image
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .look import config_key, config_label, look_of, looks

#: Series drawn in one CDF, bars in one efficiency figure, heatmap panels.
MAX_SERIES = 40
FORMATS = ("png", "svg")
#: Dots per inch of every figure (made at this resolution: no change of scale when saved).
DPI = 110
#: Canvas added on the right of a figure with its legend outside the axes (inches): room
#: for labels of ~45 characters at 8 points; a wider legend is saved by savefig's tight box.
LEGEND_IN = 3.5
#: Heatmap axes name every switch up to this many; past it, every k-th switch, at most
#: NAMED_PAST_MAX of them (a tick per switch, named or not, cost ~0.2 s of the 32 x 24
#: heatmap's 0.43 s; 16 named ~0.22 s, 8 named ~0.19 s).
MAX_TICKS = 16
NAMED_PAST_MAX = 8


#: Pillow's options of the PNGs: zlib's fastest level (Pillow's default is 6), the same
#: pixels in ~9% more bytes for ~8% less CPU a figure.
PNG_PIL = {"compress_level": 1}
#: The margin around what a PNG shows (savefig's pad_inches of bbox_inches="tight"), pixels.
PAD_PX = round(0.1 * DPI)
#: Where a title sits: on its axes' top edge (and its pad above it). Given, it skips
#: matplotlib's automatic placement, which lays out every y tick label once more per draw
#: to find an offset text ("1e-5") above the axes: none of the axes titled so has one (their
#: y axes span fixed ranges from 0, or name switches), so the title lands where it did.
TITLE_Y = 1.0
#: matplotlib's default subplot box (fractions of the figure), kept in inches when a figure
#: is widened for an outside legend.
LEFT, RIGHT = 0.125, 0.9


def _figure(figsize: tuple[float, float], layout: str | None = None,
            legend_in: float = 0.0) -> Figure:
    """A figure on the Agg canvas (no pyplot: nothing to close, no global state).
    `legend_in`: inches of canvas added on the right for a legend outside the axes, the
    axes staying where they are on a figure of `figsize`."""
    width, height = figsize
    fig = Figure(figsize=(width + legend_in, height), layout=layout, dpi=DPI)
    if legend_in:
        fig.subplots_adjust(left=LEFT * width / (width + legend_in),
                            right=RIGHT * width / (width + legend_in))
    FigureCanvasAgg(fig)
    return fig


def _grid(fig: Figure, rows: int, cols: int, *, left: float, right: float, top: float,
          bottom: float, wspace: float, hspace: float):
    """rows x cols axes on `fig` with margins and gaps fixed in inches (the figure's size
    is known): the layout constrained layout would find, without its extra draws of every
    label (~0.08 s of CPU for a 2 x 1 grid); _save_png crops what is left blank."""
    w, h = fig.get_size_inches()
    panel_w = (w - left - right - (cols - 1) * wspace) / cols
    panel_h = (h - top - bottom - (rows - 1) * hspace) / rows
    fig.subplots_adjust(left=left / w, right=1 - right / w, top=1 - top / h,
                        bottom=bottom / h, wspace=wspace / panel_w, hspace=hspace / panel_h)
    return fig.subplots(rows, cols, squeeze=False)


def _save(fig, out: Path, fmt: tuple[str, ...], stem: str) -> str:
    """Write each format (PNG, SVG), the box fitted to what the figure shows (titles and
    outside legends included) with a margin of PAD_PX."""
    for ext in fmt:
        if ext != "png" or not _save_png(fig, out / f"{stem}.png"):
            fig.savefig(out / f"{stem}.{ext}", dpi=DPI, bbox_inches="tight",
                        **({"pil_kwargs": PNG_PIL} if ext == "png" else {}))
    return stem


def _save_png(fig, path: Path) -> bool:
    """The PNG of one draw, cropped to its drawn pixels plus PAD_PX (bbox_inches="tight"
    lays the figure out and draws it twice: 0.05-0.12 s more per figure); False, nothing
    written, when a drawn pixel touches the canvas's edge (a title or legend wider than
    the canvas: savefig's tight box then grows the canvas)."""
    fig.canvas.draw()
    rgba = np.asarray(fig.canvas.buffer_rgba())
    pixels = rgba.view(np.uint32)[..., 0]         # a pixel's four bytes as one word
    drawn = pixels != pixels[0, 0]
    rows, cols = np.flatnonzero(drawn.any(axis=1)), np.flatnonzero(drawn.any(axis=0))
    if not rows.size or rows[0] == 0 or cols[0] == 0 or rows[-1] == len(drawn) - 1 \
            or cols[-1] == drawn.shape[1] - 1:
        return False
    top, bottom = rows[0] - PAD_PX, rows[-1] + 1 + PAD_PX
    left, right = cols[0] - PAD_PX, cols[-1] + 1 + PAD_PX
    if top < 0 or left < 0 or bottom > len(drawn) or right > drawn.shape[1]:
        # a margin past the canvas: its edge pixels repeated
        rgba = np.pad(rgba, ((PAD_PX, PAD_PX), (PAD_PX, PAD_PX), (0, 0)), mode="edge")
        top, bottom, left, right = (x + PAD_PX for x in (top, bottom, left, right))
    image.imsave(path, rgba[top:bottom, left:right], format="png", origin="upper", dpi=DPI,
                 pil_kwargs=PNG_PIL)
    return True


def _ecdf(ax, values, label: str, **kw) -> None:
    """The empirical CDF as steps, one per distinct value (the same line as one per value:
    equal values stack their steps)."""
    xs, counts = np.unique(np.asarray(values, dtype=float), return_counts=True)
    ys = np.cumsum(counts) / counts.sum()
    ax.step(np.concatenate(([xs[0]], xs)), np.concatenate(([0.0], ys)), where="post",
            label=label, **kw)


def _ideal_lines(ax, ideals: list[float]) -> None:
    for i, v in enumerate(sorted(set(round(x, 9) for x in ideals))[:8]):
        ax.axvline(v, color="grey", ls=":", lw=2.5, zorder=1,
                   label="ideal CCT (non-blocking fabric)" if i == 0 else None)


def _cdf_axes(ax, xlabel: str, ylabel: str, title: str) -> None:
    """Labels, limits (x from 0, y 0..1), title and legend of a CDF panel."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1.02)
    ax.set_xlim(left=0)
    ax.set_title(title, y=TITLE_Y)
    ax.legend(fontsize=8, loc="lower right")


def cct_cdf(series: list[tuple[str, list[float]]], ideals: list[float], out: Path,
            title: str, fmt: tuple[str, ...] = FORMATS, routings: list[str] | None = None
            ) -> str:
    """Per routing (label, every job iteration's CCT), the CDF; ideal CCTs as dashed lines.
    `routings`: the order the looks are dealt in (experiments/look.py)."""
    table = looks([*(routings or []), *(s for s, _ in series)])
    fig = _figure((6.5, 4.2))
    ax = fig.subplots()
    for label, values in series[:MAX_SERIES]:
        _ecdf(ax, values, f"{label} (n={len(values)})", lw=1.6,
              **look_of(label, table).line())
    _ideal_lines(ax, ideals)
    _cdf_axes(ax, "iteration CCT (s)", "fraction of iterations",
              f"{title}: CDF of iteration CCT per routing")
    return _save(fig, out, fmt, "cct_cdf")


def fct_cdf(by_routing: dict[str, Any], out: Path, title: str,
            fmt: tuple[str, ...] = FORMATS, routings: list[str] | None = None) -> str | None:
    """Per routing, the CDF of predicted transfer FCTs (s, fct.csv's mean over iterations)."""
    if not by_routing:
        return None
    table = looks([*(routings or []), *by_routing])
    fig = _figure((6.5, 4.2))
    ax = fig.subplots()
    for routing in [r for r in table if r in by_routing][:MAX_SERIES]:
        values = by_routing[routing]
        _ecdf(ax, values, f"{routing} (n={len(values)})", lw=1.6, **table[routing].line())
    _cdf_axes(ax, "predicted flow completion time, mean over iterations (s)",
              "fraction of transfers", f"{title}: CDF of predicted FCT per routing")
    return _save(fig, out, fmt, "fct_cdf")


def _wrapped(label: str, width: int = 22) -> str:
    """A tick label on lines of about `width` characters, broken after commas (no cut)."""
    lines, line = [], ""
    for part in label.split(", "):
        if line and len(line) + len(part) + 2 > width:
            lines.append(line + ",")
            line = part
        else:
            line = f"{line}, {part}" if line else part
    return "\n".join(lines + [line])


def efficiency_bars(eff: list[dict], keys: list[str], out: Path, title: str,
                    fmt: tuple[str, ...] = FORMATS, routings: list[str] | None = None
                    ) -> str:
    """Mean efficiency per routing (bars, in their looks' colours) and configuration
    (groups, in numeric order of their swept values), 95% CIs as whiskers. eff:
    efficiency_table's rows; keys: its configuration columns (`name` is left out of the
    labels when every row has the same)."""
    two_modes = len({r["mode"] for r in eff}) > 1
    shown = [k for k in keys if k != "name" or len({r.get("name") for r in eff}) > 1]
    cells: dict[tuple[str, str], dict] = {}
    for r in sorted(eff, key=lambda r: config_key(r, keys)):
        series = f"{r['routing']} ({r['mode']})" if two_modes else str(r["routing"])
        cells.setdefault((series, config_label(r, shown, short=True) or str(r.get("name"))), r)
    configs = list(dict.fromkeys(c for _, c in cells))[:MAX_SERIES]
    table = looks([*(routings or []), *(s for s, _ in cells)])
    series_names = sorted(dict.fromkeys(s for s, _ in cells),
                          key=lambda s: list(table).index(s.split(" (", 1)[0]))[:MAX_SERIES]
    width = 0.8 / len(series_names)
    fig = _figure((max(6.0, 1.0 + 0.9 * len(configs) * max(1, len(series_names)) / 2), 4.4),
                  legend_in=LEGEND_IN)
    ax = fig.subplots()
    nan = {"efficiency_mean": math.nan, "efficiency_ci95_low": math.nan,
           "efficiency_ci95_high": math.nan}
    for i, s in enumerate(series_names):
        g = [cells.get((s, c), nan) for c in configs]
        mean = [r["efficiency_mean"] for r in g]
        xs = [k + (i - (len(series_names) - 1) / 2) * width for k in range(len(configs))]
        err = [[r["efficiency_mean"] - r["efficiency_ci95_low"] for r in g],
               [r["efficiency_ci95_high"] - r["efficiency_mean"] for r in g]]
        bars = ax.bar(xs, mean, width, yerr=err, capsize=3, label=s,
                      color=look_of(s, table).color)
        if len(configs) * len(series_names) <= 24:      # the value on each bar
            ax.bar_label(bars, labels=[f"{m:.2f}" if m == m else "" for m in mean],
                         fontsize=7, label_type="center", color="white")
    ax.axhline(1.0, color="black", ls="--", lw=1, label="ideal (efficiency 1)")
    ax.set_xticks(range(len(configs)))
    ax.set_xticklabels([_wrapped(c) for c in configs], fontsize=7)
    ax.set_ylabel("efficiency (ideal CCT / mean CCT, 1 = ideal)")
    ax.set_ylim(0, 1.15)
    n = int(max(r["runs"] for r in eff))
    ax.set_title(f"{title}: efficiency per routing\n(mean, 95% CI over repeats and seeds; "
                 f"up to {n} runs each)", fontsize=9, y=TITLE_Y)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    return _save(fig, out, fmt, "efficiency")


#: (lower, upper) tiers of a heatmap, by switch name prefix.
TIERS = (("leaf", "spine"), ("leaf", "agg"), ("agg", "core"))


@functools.cache
def _tier(name: str) -> str:
    """'leaf12' -> 'leaf' (cached: a figure asks once per link end)."""
    return name.rstrip("0123456789")


def _index(name: str) -> int:
    digits = name[len(_tier(name)):]
    return int(digits) if digits else 0


def _panels(loads: dict[str, dict[tuple[str, str], float]]
            ) -> list[tuple[str, str, str, dict]]:
    """(routing, lower tier, upper tier, {(lower, upper): the busier direction's value})."""
    panels = []
    for routing, t in list(loads.items())[:MAX_SERIES]:
        for lower, upper in TIERS:
            cells: dict[tuple[str, str], float] = {}
            for (src, dst), value in t.items():
                a, b = sorted([src, dst], key=lambda n: (_tier(n) != lower, n))
                if _tier(a) == lower and _tier(b) == upper:
                    cells[(a, b)] = max(cells.get((a, b), 0.0), value)
            if cells:
                panels.append((routing, lower, upper, cells))
    return panels


def _named_ticks(names: list[str]) -> tuple[list[int], list[str]]:
    """(positions, labels) of a heatmap axis: every switch up to MAX_TICKS of them, else
    every k-th (at most NAMED_PAST_MAX ticks, the first switch named)."""
    step = 1 if len(names) <= MAX_TICKS else math.ceil(len(names) / NAMED_PAST_MAX)
    at = list(range(0, len(names), step))
    return at, [names[i] for i in at]


def heatmap(loads: dict[str, dict[tuple[str, str], float]], out: Path, fmt: tuple[str, ...],
            stem: str, title: str, label: str, vmax: float | None,
            routings: list[str] | None = None) -> str | None:
    """Per routing (rows of panels, in the looks' order) and tier pair (columns): lower x
    upper switch values."""
    panels = _panels({r: loads[r] for r in looks([*(routings or []), *loads]) if r in loads})
    if not panels:
        return None
    vmax = vmax or max(max(c.values()) for *_, c in panels) or 1.0
    tier_cols = list(dict.fromkeys((lo, up) for _, lo, up, _ in panels))
    routings = list(dict.fromkeys(p[0] for p in panels))
    fig = _figure((4.2 * len(tier_cols) + 1, 3.2 * len(routings) + 0.6), layout="constrained")
    axes = fig.subplots(len(routings), len(tier_cols), squeeze=False)
    image = None
    for routing, lower, upper, cells in panels:
        ax = axes[routings.index(routing), tier_cols.index((lower, upper))]
        lows = sorted({a for a, _ in cells}, key=_index)
        ups = sorted({b for _, b in cells}, key=_index)
        grid = [[cells.get((a, b), 0.0) for b in ups] for a in lows]
        image = ax.imshow(grid, vmin=0, vmax=vmax, cmap="viridis", aspect="auto")
        at, names = _named_ticks(ups)
        ax.set_xticks(at, names, rotation=90, fontsize=6)
        at, names = _named_ticks(lows)
        ax.set_yticks(at, names, fontsize=6)
        ax.set_xlabel(f"{upper} switch")
        ax.set_ylabel(f"{lower} switch")
        ax.set_title(f"{routing}: {lower} x {upper}", fontsize=9, y=TITLE_Y)
    for ax in axes.flat:
        if not ax.images:
            ax.axis("off")
    fig.colorbar(image, ax=axes.ravel().tolist(), label=label)
    fig.suptitle(title, fontsize=10)
    return _save(fig, out, fmt, stem)


def load_heatmap(loads: dict[str, dict[tuple[str, str], float]], counted: int, out: Path,
                 title: str, fmt: tuple[str, ...] = FORMATS,
                 routings: list[str] | None = None) -> str | None:
    """Predicted runs: each link's mean utilization (links.csv), busier direction, over
    `counted` run folders."""
    return heatmap(loads, out, fmt, "load_heatmap",
                   f"{title}: predicted link load, mean over {counted} run folder(s)",
                   "mean utilization of the busier direction\n(fraction of capacity)", 1.0,
                   routings)


#: A line pair of link_utilization: (routing, bin starts (s), mean utilization, bin starts,
#: the busiest link's utilization).
UtilizationLines = tuple[str, Any, Any, Any, Any]


def link_utilization(lines: list[UtilizationLines], run_name: str, out: Path, title: str,
                     fmt: tuple[str, ...] = FORMATS, routings: list[str] | None = None
                     ) -> str:
    """Per routing (in its look's colour): the mean (solid) and the busiest used link's
    utilization (dashed) per time bin."""
    table = looks([*(routings or []), *(x[0] for x in lines)])
    fig = _figure((7, 4), legend_in=LEGEND_IN)
    ax = fig.subplots()
    for name, mean_x, mean_y, max_x, max_y in sorted(
            lines, key=lambda x: list(table).index(x[0]))[:MAX_SERIES]:
        color = table[name].color
        ax.plot(mean_x, mean_y, lw=1.5, color=color, label=f"{name}: mean link")
        ax.plot(max_x, max_y, lw=1, ls="--", color=color, label=f"{name}: busiest link")
    ax.set_xlabel("time since the jobs started (s)")
    ax.set_ylabel("utilization (fraction of link capacity)")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"{title}: link utilization over time ({run_name})", fontsize=9,
                 y=TITLE_Y)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    return _save(fig, out, fmt, "link_utilization")

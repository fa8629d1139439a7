"""The figures that answer "which routing wins, and by how much": the slowdown CDF per job,
efficiency against each swept value, flows and load per link by tier, emulated against
predicted per job. Drawn with experiments/drawing.py's canvas and saved by its `_save`;
every series in its routing's look (experiments/look.py).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from . import drawing
from .look import Look, look_of, looks, number

FORMATS = drawing.FORMATS


def _table(names, routings: list[str] | None) -> dict[str, Look]:
    return looks([*(routings or []), *names])


def slowdown_cdf(series: list[tuple[str, list[float]]], out: Path, title: str,
                 fmt: tuple[str, ...] = FORMATS, routings: list[str] | None = None
                 ) -> str | None:
    """Per routing (label, every job iteration's CCT / that job's ideal CCT), the CDF; 1 is
    the ideal. Jobs of different ideals (and a sweep's points) compare on one axis."""
    series = [(label, v) for label, v in series if len(v)][:drawing.MAX_SERIES]
    if not series:
        return None
    table = _table([s for s, _ in series], routings)
    fig = drawing._figure((6.5, 4.2))
    ax = fig.subplots()
    for label, values in series:
        v = np.asarray(values, dtype=float)
        drawing._ecdf(ax, v, f"{label} (median {np.median(v):.2f}x, n={len(v)})", lw=1.8,
                      **look_of(label, table).line())
    ax.axvline(1.0, color="black", ls="--", lw=1, label="ideal (non-blocking fabric)")
    drawing._cdf_axes(ax, "slowdown: iteration CCT / the job's ideal CCT (1 = ideal)",
                      "fraction of job iterations", f"{title}: slowdown per job iteration")
    low = min(float(np.min(v)) for _, v in series)
    ax.set_xlim(left=0.9 * min(1.0, low))
    return drawing._save(fig, out, fmt, "slowdown_cdf")


def sort_values(values) -> list:
    """Distinct values in numeric order when all are numbers (10 after 2.5 and 5), else
    as text."""
    distinct = list(dict.fromkeys(v for v in values
                                  if not (isinstance(v, float) and math.isnan(v))))
    if distinct and all(number(v) is not None for v in distinct):
        return sorted(distinct, key=number)
    return sorted(distinct, key=str)


def efficiency_sweep(eff: list[dict], keys: list[str], out: Path, title: str,
                     fmt: tuple[str, ...] = FORMATS, routings: list[str] | None = None
                     ) -> str | None:
    """Per swept key (a panel each): mean efficiency against the key's values (numbers on a
    numeric axis, in order), one line per routing with its 95% interval as a band. Rows
    that share a value but differ in another key are averaged (the title says so)."""
    keys = [k for k in keys if k != "name" and len({str(r.get(k)) for r in eff}) > 1]
    if not keys or not eff:
        return None
    two_modes = len({r["mode"] for r in eff}) > 1
    labels = list(dict.fromkeys(f"{r['routing']} ({r['mode']})" if two_modes
                                else str(r["routing"]) for r in eff))[:drawing.MAX_SERIES]
    table = _table(labels, routings)
    fig = drawing._figure((5.2 * len(keys), 4.2), legend_in=drawing.LEGEND_IN)
    axes = fig.subplots(1, len(keys), squeeze=False)[0]
    for ax, key in zip(axes, keys):
        values = sort_values(r.get(key) for r in eff)
        numeric = all(number(v) is not None for v in values)
        xs = [number(v) if numeric else i for i, v in enumerate(values)]
        for label in labels:
            mean, low, high = _sweep_line(eff, key, values, label, two_modes)
            lk = look_of(label, table)
            ax.plot(xs, mean, lw=1.8, ms=6, label=label, **lk.points())
            ax.fill_between(xs, low, high, color=lk.color, alpha=0.15, lw=0)
        ax.axhline(1.0, color="black", ls="--", lw=1, label="ideal (efficiency 1)")
        if not numeric:
            ax.set_xticks(xs, [str(v) for v in values], rotation=20, fontsize=7, ha="right")
        ax.set_xlabel(key + ("" if len(keys) == 1 else " (mean over the other keys)"))
        ax.set_ylabel("efficiency (ideal CCT / mean CCT)")
        ax.set_ylim(0, 1.1)
    axes[0].set_title(f"{title}: efficiency against the swept value\n(mean and 95% interval "
                      "over repeats and seeds)", fontsize=9, loc="left")
    axes[-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    return drawing._save(fig, out, fmt, "efficiency_sweep")


def _sweep_line(eff: list[dict], key: str, values: list, label: str, two_modes: bool):
    """(means, lows, highs) of one routing's line at `values` of `key` (NaN where none)."""
    mean, low, high = [], [], []
    for v in values:
        rows = [r for r in eff if str(r.get(key)) == str(v) and
                (f"{r['routing']} ({r['mode']})" if two_modes else str(r["routing"])) == label]
        if not rows:
            mean.append(math.nan), low.append(math.nan), high.append(math.nan)
            continue
        mean.append(float(np.mean([r["efficiency_mean"] for r in rows])))
        low.append(float(np.mean([r["efficiency_ci95_low"] for r in rows])))
        high.append(float(np.mean([r["efficiency_ci95_high"] for r in rows])))
    return mean, low, high


#: Past this many switches on a tier's axis, the heatmap gives way to link_distribution.
HEATMAP_MAX_SWITCHES = 16


def wants_distribution(loads: dict[str, dict[tuple[str, str], float]]) -> bool:
    """True when a heatmap would have a tier with more than HEATMAP_MAX_SWITCHES switches
    (at paper scale its cells are too small to tell a hot link)."""
    names = {n for t in loads.values() for link in t for n in link}
    tiers: dict[str, int] = {}
    for n in names:
        tiers[drawing._tier(n)] = tiers.get(drawing._tier(n), 0) + 1
    return any(c > HEATMAP_MAX_SWITCHES for c in tiers.values())


#: The tiers of a link's two ends, either way round -> its tier pair's name ('leaf-agg').
_TIER_PAIRS = {ends: f"{lower}-{upper}" for lower, upper in drawing.TIERS
               for ends in ((lower, upper), (upper, lower))}


def _by_tier(values: dict[tuple[str, str], float]) -> dict[str, list[float]]:
    """'leaf-agg': every link's value between those tiers (both directions)."""
    out: dict[str, list[float]] = {}
    for (a, b), v in values.items():
        pair = _TIER_PAIRS.get((drawing._tier(a), drawing._tier(b)))
        if pair is not None:
            out.setdefault(pair, []).append(v)
    return out


def link_distribution(rows: list[tuple[str, str, dict[str, dict[tuple[str, str], float]]]],
                      out: Path, title: str, fmt: tuple[str, ...] = FORMATS,
                      routings: list[str] | None = None) -> str | None:
    """Per quantity (a row of panels: e.g. flows per link, mean utilization) and tier pair
    (a column each), the CDF over links of the value, one line per routing. `rows`: (what,
    axis label, {routing: {(src, dst): value}})."""
    rows = [(w, lab, d) for w, lab, d in rows if d]
    if not rows:
        return None
    names = [r for _, _, d in rows for r in d]
    table = _table(names, routings)
    known = [f"{lower}-{upper}" for lower, upper in drawing.TIERS]
    split = [{routing: _by_tier(v) for routing, v in d.items()} for _, _, d in rows]
    tiers = sorted({t for by_routing in split for v in by_routing.values() for t in v},
                   key=known.index)
    if not tiers:
        return None
    fig = drawing._figure((4.2 * len(tiers), 3.4 * len(rows) + 0.4))
    # inches: tick labels and the y label on the left, the two-line title and a panel's
    # title on top, a panel's x label and tick labels under it
    axes = drawing._grid(fig, len(rows), len(tiers), left=0.75, right=0.2, top=0.85,
                         bottom=0.55, wspace=0.85, hspace=0.85)
    for i, (what, label, data) in enumerate(rows):
        for j, tier in enumerate(tiers):
            ax = axes[i, j]
            for routing in [r for r in table if r in data][:drawing.MAX_SERIES]:
                v = split[i][routing].get(tier)
                if v:
                    drawing._ecdf(ax, v, f"{routing} (max {max(v):.3g})", lw=1.6,
                                  **table[routing].line())
            ax.set_xlabel(label, fontsize=8)
            ax.set_ylabel("fraction of used links", fontsize=8)
            ax.set_ylim(0, 1.02)
            ax.set_xlim(left=0)
            ax.set_title(f"{what}: {tier} links", fontsize=9, y=drawing.TITLE_Y)
            ax.legend(fontsize=7, loc="lower right")
    # on two lines: on one, a single tier's panel (4.2 in) is narrower than the title, and
    # the PNG falls back to savefig's tight box (three draws instead of one)
    fig.suptitle(f"{title}: per link, by tier\n(the right end of each line: the busiest link)",
                 fontsize=10)
    return drawing._save(fig, out, fmt, "link_distribution")


def emulated_vs_predicted(points: list[dict], out: Path, title: str,
                          fmt: tuple[str, ...] = FORMATS, routings: list[str] | None = None
                          ) -> str | None:
    """Per job and run: its emulated mean CCT (y) against the model's (x), with y = x; each
    routing in its look (marker and colour), runs the CPU monitor flagged circled in red
    with their cause in the legend. `points`: {routing, job, predicted_s, emulated_s,
    flag_reason (None when faithful)}."""
    points = [p for p in points if p.get("predicted_s") and p.get("emulated_s")]
    if not points:
        return None
    table = _table([p["routing"] for p in points], routings)
    fig = drawing._figure((5.5, 5), legend_in=drawing.LEGEND_IN)
    ax = fig.subplots()
    for routing in [r for r in table if any(p["routing"] == r for p in points)]:
        mine = [p for p in points if p["routing"] == routing]
        err = np.mean([p["emulated_s"] for p in mine]) / np.mean(
            [p["predicted_s"] for p in mine]) - 1
        lk = table[routing]
        ax.scatter([p["predicted_s"] for p in mine], [p["emulated_s"] for p in mine], s=40,
                   marker=lk.marker, facecolors="none", edgecolors=lk.color, linewidths=1.4,
                   label=f"{routing} ({err:+.1%}, {len(mine)} job runs)")
    for reason in sorted({p["flag_reason"] for p in points if p.get("flag_reason")}):
        bad = [p for p in points if p.get("flag_reason") == reason]
        ax.scatter([p["predicted_s"] for p in bad], [p["emulated_s"] for p in bad], s=150,
                   marker="o", facecolors="none", edgecolors="red", linewidths=1.2,
                   label=f"flagged: {reason}")
    hi = 1.08 * max(max(p["predicted_s"], p["emulated_s"]) for p in points)
    ax.plot([0, hi], [0, hi], color="grey", ls="--", lw=1, label="y = x")
    ax.set_xlim(0, hi)
    ax.set_ylim(0, hi)
    ax.set_xlabel("predicted mean CCT of the job (s)")
    ax.set_ylabel("emulated mean CCT of the job (s)")
    ax.set_title(f"{title}: emulated vs predicted, per job\n(legend: error of the means)",
                 fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    return drawing._save(fig, out, fmt, "emulated_vs_predicted")


#: `predict`'s figures, in the order it lists them (draw_figures): the answer first.
#: link_distribution replaces load_heatmap past HEATMAP_MAX_SWITCHES.
FIGURES = ("efficiency", "slowdown_cdf", "cct_cdf", "fct_cdf", "load_heatmap",
           "link_distribution", "link_utilization")


def draw_figure(name: str, data: dict, plots: Path, fmt: tuple[str, ...] = ("png",)
                ) -> str | None:
    """One of FIGURES from experiments/report.py's `predicted_figure_data` into `plots`;
    its stem, or None when the data has nothing to draw."""
    title, order = data["title"], data.get("routings")
    if name == "cct_cdf":
        return drawing.cct_cdf(data["cct_series"], data["ideals"], plots, title, fmt, order)
    if name == "slowdown_cdf":
        return slowdown_cdf(data.get("slowdowns", []), plots, title, fmt, order)
    if name == "fct_cdf":
        return drawing.fct_cdf(data["fct"], plots, title, fmt, order)
    if name == "efficiency":
        return drawing.efficiency_bars(data["efficiency"], ["name"], plots, title, fmt, order) \
            if data["efficiency"] else None
    big = wants_distribution(data["loads"])
    if name == "load_heatmap":
        return None if big else drawing.load_heatmap(data["loads"], data["load_runs"], plots, title,
                                             fmt, order)
    if name == "link_distribution":
        return link_distribution(
            [("flows per link", "flows on the link (the plan)", data.get("flows", {})),
             ("load per link", "mean utilization (fraction of capacity)", data["loads"])],
            plots, title, fmt, order) if big else None
    return drawing.link_utilization(data["utilization"], data["utilization_run"], plots, title,
                            fmt, order) if data["utilization"] else None


def draw_figures(data: dict, plots: Path, fmt: tuple[str, ...] = ("png",),
                 names: tuple[str, ...] = FIGURES) -> list[str]:
    """`predict`'s figures (`names` of FIGURES) from experiments/report.py's
    `predicted_figure_data` into `plots` (as each of `fmt`); returns their stems."""
    plots.mkdir(parents=True, exist_ok=True)
    return [s for s in (draw_figure(n, data, plots, fmt) for n in names) if s]

"""report.html: one self-contained page per run, sweep or report folder, that opens offline.

In the order a reader asks: the question and the configuration; the answer (which routing
wins per configuration and by how much, then the table: efficiency with its 95% interval,
speed-up over ECMP and over the best hashed scheme, flagged runs); the figures (PNGs inlined
as data: URIs, the answer first); fidelity (emulated runs: the model's error and the CPU
monitor's verdict); the environment (commit, command, versions). No script, no stylesheet or
image fetched: everything is in the one file.

Pure standard library (html, base64, json): plain HTML with inlined matplotlib PNGs needs no
library, and an interactive one would add hundreds of kB of JavaScript to every page.
"""
from __future__ import annotations

import base64
import html
import json
import math
from pathlib import Path
from typing import Any

from .look import config_key, config_label, number

#: Figures in the order the page shows them (any other PNG in plots/ follows).
ORDER = ("efficiency_sweep", "efficiency", "slowdown_cdf", "emulated_vs_predicted",
         "link_distribution", "load_heatmap", "flow_heatmap", "cct_cdf", "fct_cdf",
         "link_utilization", "timeline")
CAPTIONS = {
    "efficiency_sweep": "Efficiency (ideal CCT / mean CCT) against each swept value, one line "
                        "per routing, 95% interval as a band.",
    "efficiency": "Efficiency per routing and configuration (1 = the non-blocking ideal), "
                  "95% interval over repeats and seeds.",
    "slowdown_cdf": "Slowdown of every job iteration: its CCT / its job's ideal CCT.",
    "emulated_vs_predicted": "Per job: the emulated mean CCT against the model's; flagged "
                             "runs circled in red.",
    "link_distribution": "Flows and load per link, by tier: the right end of a line is the "
                         "busiest link.",
    "load_heatmap": "Predicted mean utilization of each link (busier direction).",
    "flow_heatmap": "Emulated flows on each link (the paths the switch counters saw).",
    "cct_cdf": "CDF of iteration CCT per routing (slowest job per iteration).",
    "fct_cdf": "CDF of predicted flow completion times.",
    "link_utilization": "Mean and busiest link utilization over time.",
    "timeline": "Iteration CCT of each job over time, one panel per routing.",
}
#: results.csv is linked as a data: URI up to this size (bytes); past it the page names it.
MAX_INLINE_CSV_BYTES = 2_000_000
#: Answer table rows shown; past them the page says how many more results.csv holds.
MAX_ROWS = 400
CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:1.2em auto;max-width:1100px;
padding:0 1em;color:#222}h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.15em;
border-bottom:1px solid #ccc;margin-top:1.6em}table{border-collapse:collapse;font-size:13px}
td,th{padding:2px 8px;border-bottom:1px solid #e4e4e4;text-align:right}
th{background:#f3f3f3}td.t,th.t{text-align:left}tr.best td{font-weight:600;
background:#eef6ee}.answer{font-size:1.1em;background:#f6f8fb;border-left:4px solid #0072B2;
padding:.5em .9em}.bad{color:#b00}figure{margin:1em 0}img{max-width:100%}
figcaption{font-size:12px;color:#555}.small{font-size:12px;color:#555}"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _num(x: Any, fmt: str) -> str:
    v = number(x)
    return "-" if v is None else format(v, fmt)


def _config_keys(rows: list[dict]) -> list[str]:
    """The keys that tell the rows' configurations apart (the experiment's name and any
    swept or --set key)."""
    skip = {"routing", "mode", "efficiency_mean", "efficiency_ci95_low",
            "efficiency_ci95_high", "runs", "speedup_over_ecmp_mean",
            "speedup_over_best_hashed_mean", "flagged_runs"}
    return [k for k in (rows[0] if rows else {}) if k not in skip]


def _groups(rows: list[dict]) -> list[tuple[str, list[dict]]]:
    """(configuration label, its rows best first), configurations in numeric order."""
    keys = _config_keys(rows)
    out: dict[str, list[dict]] = {}
    for r in sorted(rows, key=lambda r: config_key(r, keys)):
        out.setdefault(config_label(r, keys), []).append(r)
    return [(label, sorted(g, key=lambda r: -(number(r["efficiency_mean"]) or 0.0)))
            for label, g in out.items()]


def _contenders(g: list[dict]) -> list[dict]:
    return [r for r in g if r["routing"] != "nonblocking"] or g


def headline(rows: list[dict]) -> str:
    """The answer in a sentence or two: the best routing per configuration and its speed-up
    over ECMP."""
    groups = _groups(rows)
    if not groups:
        return "No results."
    if len(groups) == 1:
        best = _contenders(groups[0][1])[0]
        s = (f"<b>{_e(best['routing'])}</b> has the highest efficiency: "
             f"{_num(best['efficiency_mean'], '.3f')} (the lowest job's ideal / mean CCT; 1 "
             "is the non-blocking ideal)")
        up = number(best.get("speedup_over_ecmp_mean"))
        if up is not None and best["routing"] != "ecmp":
            s += f", <b>{up:.2f}x</b> faster than ECMP"
        hb = number(best.get("speedup_over_best_hashed_mean"))
        if hb is not None and hb != up and best["routing"] != "ecmp":
            s += f", {hb:.2f}x faster than the best hashed scheme"
        fastest = max(_contenders(groups[0][1]),
                      key=lambda r: number(r.get("speedup_over_ecmp_mean")) or 0.0)
        fup = number(fastest.get("speedup_over_ecmp_mean"))
        if fastest is not best and fup is not None and up is not None and fup > up:
            s += (f"; the shortest mean CCT (slowest job per iteration) is "
                  f"<b>{_e(fastest['routing'])}</b>'s, {fup:.2f}x faster than ECMP")
        return s + "."
    wins: dict[str, list[float]] = {}
    for _, g in groups:
        best = _contenders(g)[0]
        wins.setdefault(best["routing"], []).append(
            number(best.get("speedup_over_ecmp_mean")) or math.nan)
    parts = []
    for routing, ups in sorted(wins.items(), key=lambda kv: -len(kv[1])):
        ok = [u for u in ups if not math.isnan(u)]
        span = (f" (speed-up over ECMP {min(ok):.2f}x to {max(ok):.2f}x)"
                if ok and routing != "ecmp" else "")
        parts.append(f"<b>{_e(routing)}</b> in {len(ups)} of {len(groups)}{span}")
    return "Best routing per configuration: " + "; ".join(parts) + "."


def _over_best_differs(rows: list[dict]) -> bool:
    """Whether any row's speed-up over the best hashed scheme differs from that over ECMP
    (a hashed scheme besides ECMP did better): only then is the column shown."""
    return any(number(r.get("speedup_over_best_hashed_mean")) is not None and
               number(r.get("speedup_over_best_hashed_mean")) !=
               number(r.get("speedup_over_ecmp_mean")) for r in rows)


def answer_table(rows: list[dict]) -> str:
    """The answer table (id "answer"): per configuration its routings, best first; the best
    of each configuration's row marked. The speed-up over the best hashed scheme is shown
    when a hashed scheme other than ECMP did better than ECMP."""
    head = ["configuration", "routing", "mode", "efficiency", "95% interval",
            "vs ECMP", "vs best hashed", "runs", "flagged runs"]
    best_col = _over_best_differs(rows)
    if not best_col:
        head.remove("vs best hashed")
    out = ['<table id="answer"><tr>' + "".join(
        f'<th class="{"t" if i < 3 else ""}">{_e(h)}</th>' for i, h in enumerate(head))
        + "</tr>"]
    shown = 0
    for label, g in _groups(rows):
        best = _contenders(g)[0]
        for r in g:
            if shown >= MAX_ROWS:
                break
            shown += 1
            cells = [label, r["routing"], r["mode"], _num(r["efficiency_mean"], ".3f"),
                     f"{_num(r['efficiency_ci95_low'], '.3f')} to "
                     f"{_num(r['efficiency_ci95_high'], '.3f')}",
                     _speed(r.get("speedup_over_ecmp_mean")),
                     *([_speed(r.get("speedup_over_best_hashed_mean"))] if best_col else []),
                     _num(r["runs"], ".0f"), _num(r.get("flagged_runs", 0), ".0f")]
            out.append(f'<tr class="{"best" if r is best else ""}">' + "".join(
                f'<td class="{"t" if i < 3 else ""}">{_e(c)}</td>'
                for i, c in enumerate(cells)) + "</tr>")
    out.append("</table>")
    if len(rows) > shown:
        out.append(f'<p class="small">{len(rows) - shown} more rows in results.csv and '
                   "efficiency.csv.</p>")
    return "\n".join(out)


def _speed(x: Any) -> str:
    v = number(x)
    return "-" if v is None else f"{v:.2f}x"


def _figures(plots: Path) -> str:
    """Every PNG of `plots`, inlined, in ORDER."""
    if not plots.is_dir():
        return "<p>No figures were drawn.</p>"
    pngs = {p.stem: p for p in plots.glob("*.png")}
    stems = [s for s in ORDER if s in pngs] + sorted(s for s in pngs if s not in ORDER)
    out = []
    for s in stems:
        data = base64.b64encode(pngs[s].read_bytes()).decode("ascii")
        out.append(f'<figure id="fig-{_e(s)}"><img alt="{_e(s)}" '
                   f'src="data:image/png;base64,{data}"><figcaption>{_e(s)}: '
                   f"{_e(CAPTIONS.get(s, ''))}</figcaption></figure>")
    return "\n".join(out) or "<p>No figures were drawn.</p>"


def fidelity(docs: list[dict]) -> str:
    """A sentence and a table on the emulated runs: the model's error and the CPU
    monitor's verdict; a sentence when every run is predicted."""
    from .results import flag_reason
    emulated = [(d, r) for d in docs for r in d["runs"] if r["mode"] == "emulated"]
    if not emulated:
        return f"<p>{fidelity_line(docs)}</p>"
    bad = [(d, r) for d, r in emulated if flag_reason(r)]
    errs = [r["prediction_error_fraction"] for _, r in emulated
            if r.get("prediction_error_fraction") is not None]
    s = (f"<p class=\"{'bad' if bad else ''}\">The CPU monitor flagged {len(bad)} of "
         f"{len(emulated)} emulated runs" + (": their times may be the emulator's, not the "
                                             "fabric's" if bad else " (all faithful)"))
    if errs:
        s += f"; the model's error was {min(errs):+.1%} to {max(errs):+.1%}"
    rows = ['<table id="fidelity"><tr><th class="t">experiment</th><th class="t">routing'
            '</th><th>repetition</th><th>predicted error</th><th class="t">emulator</th></tr>']
    for d, r in emulated[:MAX_ROWS]:
        err = r.get("prediction_error_fraction")
        reason = flag_reason(r)
        rows.append(f"<tr><td class=\"t\">{_e(d['name'])}</td><td class=\"t\">"
                    f"{_e(r['routing'])}</td><td>{_e(d.get('repetition', 1))}</td><td>"
                    f"{'-' if err is None else f'{err:+.1%}'}</td><td class=\"t"
                    f"{' bad' if reason else ''}\">"
                    f"{_e('flagged: ' + reason) if reason else 'faithful'}</td></tr>")
    return s + ".</p>\n" + "\n".join(rows) + "</table>"


def fidelity_line(docs: list[dict]) -> str:
    """Whether the emulator was faithful, in one sentence (the answer box's second line)."""
    from .results import flag_reason
    emulated = [r for d in docs for r in d["runs"] if r["mode"] == "emulated"]
    if not emulated:
        return ("Predicted by the flow-level model: no emulated run, so no emulator fidelity "
                "to judge.")
    bad = [r for r in emulated if flag_reason(r)]
    errs = [r["prediction_error_fraction"] for r in emulated
            if r.get("prediction_error_fraction") is not None]
    span = f"; the model's error {min(errs):+.1%} to {max(errs):+.1%}" if errs else ""
    if not bad:
        return f"Emulator faithful in all {len(emulated)} emulated runs{span}."
    reasons = sorted({str(flag_reason(r)) for r in bad})
    return (f'<span class="bad">Emulator flagged in {len(bad)} of {len(emulated)} emulated '
            f"runs ({_e(', '.join(reasons))}): their times may be the emulator's</span>{span}.")


def _bytes(n: Any) -> str:
    v = number(n)
    if v is None:
        return "-"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if v >= size:
            return f"{v / size:.1f} {unit}"
    return f"{v:.0f} B"


def _hosts(job: dict) -> int:
    """A job's hosts: its `hosts` list, or the hosts of its `groups`."""
    if job.get("hosts"):
        return len(job["hosts"])
    return len({h for g in job.get("groups") or [] for h in (g or [])})


def _configuration(folder: Path, runs: list[Path], docs: list[dict]) -> str:
    """The question's setting: fabric, jobs and routings of the first run's config.yaml."""
    import yaml
    path = next((r / "config.yaml" for r in runs if (r / "config.yaml").is_file()), None)
    routings = list(dict.fromkeys(r["routing"] for d in docs for r in d["runs"]))
    lines = [f"<li>routings compared: {_e(', '.join(routings))}</li>"]
    if path is not None:
        try:
            # libyaml's loader when built (the same document; 17,000 nodes of a 40-job
            # config took 0.5 s in the Python one)
            cfg = yaml.load(path.read_text(),
                            Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
        except (OSError, yaml.YAMLError):
            cfg = {}
        fabric = cfg.get("fabric") or {}
        first = " (the first run folder's; swept keys differ)" if len(runs) > 1 else ""
        lines.append(f"<li>fabric{first}: " + _e(", ".join(f"{k} {v}" for k, v in fabric.items()
                                                   if v not in ([], None))) + "</li>")
        jobs = cfg.get("jobs") or []
        lines.append(f"<li>{len(jobs)} job{'s' * (len(jobs) != 1)}{first}: " + _e("; ".join(
            f"{j.get('name')} ({j.get('collective', 'program')}, "
            f"{_hosts(j)} hosts, {_bytes(j.get('size_bytes'))}, "
            f"{j.get('iterations', '-')} iterations)" for j in jobs[:12]))
            + (" ..." if len(jobs) > 12 else "") + "</li>")
    sweep = folder / "sweep.json"
    if sweep.is_file():
        try:
            n = len(json.loads(sweep.read_text()).get("point_status", []))
            lines.append(f"<li>a sweep of {n} points</li>")
        except (OSError, ValueError):
            pass
    lines.append(f"<li>{len(runs)} run folder{'s' * (len(runs) != 1)}, "
                 f"{sum(len(d['runs']) for d in docs)} routing runs</li>")
    return "<ul>" + "\n".join(lines) + "</ul>"


def _environment(runs: list[Path]) -> str:
    """Commit, command line, times and versions of the first run's environment.json."""
    for r in runs:
        try:
            env = json.loads((r / "environment.json").read_text())
            break
        except (OSError, ValueError):
            continue
    else:
        return "<p>No environment.json.</p>"
    git = env.get("git") or {}
    items = [("commit", f"{git.get('commit')}" + (" (uncommitted changes)"
                                                 if git.get("dirty") else "")),
             ("command", " ".join(env.get("command_line") or [])),
             ("started (UTC)", env.get("started_at_utc")), ("wall", env.get("wall_s")),
             ("load average before (1, 5, 15 min)", env.get("load_average_before_1_5_15_min")),
             ("python", env.get("python")), ("kernel", env.get("kernel")),
             ("Open vSwitch", env.get("open_vswitch")),
             ("packages", ", ".join(f"{k} {v}" for k, v in (env.get("installed_packages")
                                                            or {}).items()
                                    if k.lower() in ("numpy", "pandas", "matplotlib",
                                                     "networkx", "pulp", "mininet")))]
    return "<table id=\"environment\">" + "".join(
        f"<tr><th class=\"t\">{_e(k)}</th><td class=\"t\">{_e(v)}</td></tr>"
        for k, v in items if v not in (None, "", [])) + "</table>"


def _csv_link(csv: Path) -> str:
    if not csv.is_file():
        return ""
    size = csv.stat().st_size
    if size > MAX_INLINE_CSV_BYTES:
        return f"<p class=\"small\">Every row: {_e(csv)} ({size:,} bytes).</p>"
    data = base64.b64encode(csv.read_bytes()).decode("ascii")
    return (f'<p class="small">Every row: <a download="results.csv" href="data:text/csv;'
            f'base64,{data}">results.csv</a> ({size:,} bytes, in this page).</p>')


def page(folder: Path, rows: list[dict], runs: list[Path], plots: Path,
         docs: list[dict] | None = None) -> str:
    """The page's HTML for the results in `runs` (answer rows: efficiency_table's; `docs`:
    their results.json, read here when None)."""
    docs = _results(runs) if docs is None else docs
    names = sorted({str(d["name"]) for d in docs})
    title = names[0] if len(names) == 1 else f"{len(names)} experiments"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>mlfabric: {_e(title)}</title><style>{CSS}</style></head><body>
<h1>mlfabric: {_e(title)}</h1>
<p>The question: which routing gives these jobs the shortest collective completion times
(CCT), and by how much? Efficiency = the ideal CCT on a non-blocking fabric / the mean CCT
(the lowest job's; 1 is the ideal); vs ECMP = ECMP's mean CCT / the routing's (above 1:
faster).</p>
{_configuration(folder, runs, docs)}
<h2 id="answer-heading">The answer</h2>
<p class="answer">{headline(rows)}<br>{fidelity_line(docs)}</p>
{answer_table(rows)}
{_csv_link(folder / "results.csv")}
<h2>Figures</h2>
{_figures(plots)}
<h2>Fidelity</h2>
{fidelity(docs)}
<h2>Environment</h2>
{_environment(runs)}
<p class="small">Written by mlfabric from {_e(folder)}; one file, nothing fetched.</p>
</body></html>
"""


def write(folder: Path, rows: list[dict], runs: list[Path], plots: Path,
          docs: list[dict] | None = None) -> Path:
    """Write folder/report.html; its path."""
    from .outdir import writing
    path = folder / "report.html"
    with writing(path):
        path.write_text(page(folder, rows, runs, plots, docs), encoding="utf-8")
    return path


def _results(runs: list[Path]) -> list[dict]:
    """Each run folder's results.json."""
    return [json.loads((r / "results.json").read_text()) for r in runs]


def write_html(folder: Path, rows: list[dict] | None = None,
               runs: list[Path] | None = None, plots: Path | None = None) -> Path:
    """folder/report.html (experiments/html_report.py) over `runs` (default: the run
    folders in `folder`) with the answer `rows` (default: answer_rows of their results)."""
    from .report import answer_rows, find_runs     # pandas: only when no rows are given
    runs = runs if runs is not None else find_runs([folder])
    docs = _results(runs)             # read once (a connection's rate each: MB at scale)
    if rows is None:
        rows = answer_rows(docs)
    return write(folder, rows, runs, plots or folder / "plots", docs)

"""`report DIR... --out REPORT`: merge run and sweep folders into one table and draw figures.

A DIR is a run folder (results.json), a `--repeat` folder (rep-N/), a sweep folder
(points/<name>/), or any folder holding such folders. REPORT gets:

- results.csv: every run's tidy rows (experiments/tidy.py) plus `run_dir`;
- efficiency.csv: per routing and configuration, the mean efficiency over repeats and seeds
  with its 95% confidence interval (Student's t), and n;
- plots/*.png and *.svg: CDF of iteration CCT per routing (ideal CCT as a line); CDF of
  predicted FCTs; efficiency per routing with 95% CIs; emulated against predicted CCT with
  y = x (when emulated runs are present); a lower x upper tier load heatmap per routing
  (predicted utilization; emulated runs: flows per link on the observed paths); link
  utilization over time (when a prediction wrote links_over_time.csv).

Efficiency of one run and routing is the results.json definition: the lowest over jobs of the
job's ideal CCT / its mean iteration CCT.
"""
from __future__ import annotations

import csv
import functools
import json
import math
import statistics
from pathlib import Path
from typing import Callable, Iterable

from traffic import files

from .config import ConfigError, quote
from .results import SCHEMA_VERSION
from .tidy import BASE_COLUMNS, REQUIRED_COLUMNS, RUN_COLUMNS, run_columns, rows


class _Pandas:
    """pandas, imported at its first use: `predict` draws its figures without it (~0.3 s of
    CPU, draw_predicted); `report` and the merge of --repeat folders use it."""

    def __getattr__(self, name: str):
        import pandas
        return getattr(pandas, name)


pd = _Pandas()

#: Two-sided 95% Student t quantiles by degrees of freedom; past 30, 1.96 + 2.4 / df is
#: within 0.002 of the exact value.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
#: Folders searched below each DIR for run folders; more are refused.
MAX_RUNS = 100_000
#: Largest CSV of a results folder the report reads: fct.csv, one ~80-byte row per transfer,
#: is ~0.8 GB at its 10 M transfers at most (past them `predict` writes fct_jobs.csv, a row
#: per job: experiments/predict.py MAX_FCT_ROWS).
MAX_RESULT_CSV_BYTES = 2 * 1024 ** 3
#: Series drawn in one CDF, bars in one efficiency figure, heatmap panels
#: (experiments/drawing.py, which imports matplotlib, has the same).
MAX_SERIES = 40
FORMATS = ("png", "svg")


def t975(df: int) -> float:
    return T975[df - 1] if df <= len(T975) else 1.96 + 2.4 / df


def ci95(values: list[float]) -> tuple[float, float, float]:
    """(mean, low, high): the mean and its 95% t interval (no width for one value)."""
    m = statistics.fmean(values)
    if len(values) < 2:
        return m, m, m
    half = t975(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return m, m - half, m + half


# -- finding and reading runs ----------------------------------------------------------------
def find_runs(dirs: Iterable[Path]) -> list[Path]:
    """Every run folder (one holding results.json) in or below `dirs`, each once, sorted;
    ConfigError naming a DIR that is missing or holds none."""
    found: dict[Path, None] = {}
    for d in dirs:
        if not d.is_dir():
            raise ConfigError(f"report: {quote(str(d))} is not a folder; give run or sweep "
                              "folders")
        here = _sweep_points(d)
        if here is None:
            here = sorted(p.parent.resolve() for p in d.rglob("results.json"))
        if not here:
            raise ConfigError(f"report: {quote(str(d))} holds no run folder (results.json); "
                              "give run or sweep folders")
        for p in here:
            if (p / "point.json").is_file() and not _point_ok(p):
                continue
            found[p] = None
            if len(found) > MAX_RUNS:
                raise ConfigError(f"report: more than {MAX_RUNS:,} run folders")
    return sorted(found)


def _sweep_points(d: Path) -> list[Path] | None:
    """A sweep folder's finished points as its sweep.json lists them (points of an earlier
    sweep in the same folder are not part of it); None when `d` is not a sweep folder."""
    try:
        status = json.loads((d / "sweep.json").read_text())["point_status"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return [(d / "points" / p["name"]).resolve() for p in status
            if isinstance(p, dict) and p.get("status") == "ok"
            and (d / "points" / str(p.get("name")) / "results.json").is_file()]


def _point_ok(folder: Path) -> bool:
    try:
        return json.loads((folder / "point.json").read_text()).get("status") == "ok"
    except (OSError, ValueError):
        return False


#: results.json's schema (experiments/schemas), which `report` checks every document against.
RESULTS_SCHEMA = Path(__file__).parent / "schemas" / "results.schema.json"


@functools.cache
def _results_validator():
    import jsonschema
    return jsonschema.Draft202012Validator(json.loads(RESULTS_SCHEMA.read_text()))


def read_results(folder: Path) -> dict:
    """A run folder's results.json, checked: JSON, this version of the schema, every listed
    key of its type; ConfigError naming the file and the first problem otherwise."""
    path = folder / "results.json"
    try:
        doc = json.loads(files.read_text(path))
    except files.InputFileError as e:
        raise ConfigError(f"report: {e}") from None
    except json.JSONDecodeError as e:
        raise ConfigError(f"report: {_shown(path)}: not JSON (line {e.lineno}, column "
                          f"{e.colno}: {e.msg}); re-run the command that wrote it") from None
    except (ValueError, RecursionError) as e:
        raise ConfigError(f"report: {_shown(path)}: not JSON ({type(e).__name__})") from None
    version = doc.get("schema_version") if isinstance(doc, dict) else None
    if isinstance(doc, dict) and isinstance(version, int) and version != SCHEMA_VERSION:
        raise ConfigError(f"report: {_shown(path)}: schema_version {quote(version)}; this "
                          f"mlfabric reads version {SCHEMA_VERSION}: re-run the command that "
                          "wrote it")
    error = next(iter(sorted(_results_validator().iter_errors(doc),
                             key=lambda e: list(map(str, e.absolute_path)))), None)
    if error is not None:
        where = "/".join(map(str, error.absolute_path)) or "the document"
        raise ConfigError(f"report: {_shown(path)}: {where}: {_one_line(error.message)} "
                          "(not an mlfabric results.json of this version)")
    return doc


def _read_csv(path: Path, **kw) -> pd.DataFrame:
    """A CSV mlfabric wrote, streamed by pandas (fct.csv has a row per transfer: ~0.8 GB at
    its 10 M transfers at most); ConfigError naming it when it is not one (empty,
    garbage, not a regular file, over MAX_RESULT_CSV_BYTES)."""
    try:
        files.check_file(path, MAX_RESULT_CSV_BYTES)
        return pd.read_csv(path, encoding="utf-8", **kw)
    except files.InputFileError as e:
        raise ConfigError(f"report: {e}") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as e:
        raise ConfigError(f"report: {_shown(path)}: not a results table "
                          f"({_one_line(e)}); re-run the command that wrote it") from None


def run_table(folder: Path) -> pd.DataFrame:
    """A run folder's tidy rows: its results.csv (with the base columns), or rows built from
    its results.json (checked by `read_results`)."""
    doc = read_results(folder)
    csv = folder / "results.csv"
    if csv.is_file():
        t = _read_csv(csv)
        missing = [c for c in REQUIRED_COLUMNS if c not in t.columns]
        if missing:
            raise ConfigError(f"report: {_shown(csv)}: no column {missing[0]!r} (not a "
                              "results table of mlfabric); re-run the command that wrote it")
        if any(c not in t.columns for c in RUN_COLUMNS):     # written before they were
            per_run = run_columns(doc)
            for c in RUN_COLUMNS:
                t[c] = [per_run.get((r, m), {}).get(c) for r, m in zip(t["routing"], t["mode"])]
    else:
        t = pd.DataFrame(rows(doc), columns=BASE_COLUMNS)
    t["run_dir"] = str(folder)
    return t


def _shown(p: Path) -> str:
    s = str(p)
    return s if len(s) <= 160 and s.isprintable() else quote(s)


def _one_line(e, limit: int = 160) -> str:
    s = " ".join(str(e).split())
    return s if len(s) <= limit else s[:limit - 3] + "..."


def merge_csvs(paths: list[Path], out: Path) -> Path:
    """Concatenate tidy CSVs (columns united, base columns first) into `out`."""
    table = _ordered(pd.concat([pd.read_csv(p) for p in paths], ignore_index=True))
    table.to_csv(out, index=False, float_format="%.9g")
    return out


def _ordered(t: pd.DataFrame) -> pd.DataFrame:
    first = [c for c in BASE_COLUMNS if c in t.columns]
    return t[first + [c for c in t.columns if c not in first]]


def swept_columns(t: pd.DataFrame) -> list[str]:
    """Columns that tell configurations apart: swept / --set keys (not seed or repetition)."""
    return [c for c in t.columns if c not in BASE_COLUMNS and c != "run_dir"
            and t[c].nunique(dropna=False) > 1]


def efficiency_table(t: pd.DataFrame) -> pd.DataFrame:
    """Per (configuration, routing, mode): mean efficiency over runs, 95% CI, n."""
    keys = ["name", *swept_columns(t)]
    per_job = t.groupby(["run_dir", "routing", "mode", "job"], dropna=False).agg(
        cct=("cct_s", "mean"), ideal=("ideal_cct_s", "first"))
    per_job["eff"] = per_job["ideal"] / per_job["cct"]
    per_run = per_job.groupby(["run_dir", "routing", "mode"]).eff.min().reset_index()
    conf = t.drop_duplicates("run_dir").set_index("run_dir")[keys]
    per_run = per_run.join(conf, on="run_dir")
    extra = [c for c in ("speedup_over_ecmp", "speedup_over_best_hashed", "flagged")
             if c in t.columns]
    if extra:
        per_run = per_run.join(t.drop_duplicates(["run_dir", "routing", "mode"]).set_index(
            ["run_dir", "routing", "mode"])[extra], on=["run_dir", "routing", "mode"])
    out = []
    for key, g in per_run.groupby([*keys, "routing", "mode"], dropna=False, sort=False):
        m, lo, hi = ci95(list(g.eff))
        row = {**dict(zip([*keys, "routing", "mode"], key)), "efficiency_mean": m,
               "efficiency_ci95_low": lo, "efficiency_ci95_high": hi, "runs": len(g)}
        for c in ("speedup_over_ecmp", "speedup_over_best_hashed"):
            v = [float(x) for x in g[c] if x == x and x is not None] if c in g else []
            row[f"{c}_mean"] = statistics.fmean(v) if v else math.nan
        row["flagged_runs"] = int(sum(bool(x) and x == x for x in g["flagged"])) \
            if "flagged" in g else 0
        out.append(row)
    return pd.DataFrame(out)


# -- figures (drawn by experiments/drawing.py, imported at their first use) -------------------
def _save(fig, out: Path, fmt: tuple[str, ...], stem: str) -> str:
    from .drawing import _save
    return _save(fig, out, fmt, stem)


#: A CSV reader for the figures: (path, [(column, type)]) -> one list per column.
Reader = Callable[[Path, list[tuple[str, type]]], list[list]]


def _pandas_columns(path: Path, columns: list[tuple[str, type]]) -> list[list]:
    """The columns of a results CSV, read by pandas (`report`: fct.csv may be 0.8 GB)."""
    t = _read_csv(path, usecols=[c for c, _ in columns])
    return [[kind(v) for v in t[c].tolist()] for c, kind in columns]


def _csv_columns(path: Path, columns: list[tuple[str, type]]) -> list[list]:
    """The columns of a results CSV, read by the csv module (`predict`'s own files);
    ConfigError naming it when it is not one."""
    try:
        files.check_file(path, MAX_RESULT_CSV_BYTES)
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader)
            at = [header.index(c) for c, _ in columns]
            out: list[list] = [[] for _ in columns]
            for row in reader:
                for values, i, (_, kind) in zip(out, at, columns):
                    values.append(kind(row[i]))
            return out
    except files.InputFileError as e:
        raise ConfigError(f"report: {e}") from None
    except (StopIteration, ValueError, IndexError, UnicodeDecodeError, csv.Error) as e:
        raise ConfigError(f"report: {_shown(path)}: not a results table "
                          f"({_one_line(e) or type(e).__name__}); re-run the command that "
                          "wrote it") from None


def _series(t: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(label, rows) per routing and mode, in first-seen order."""
    two_modes = t["mode"].nunique() > 1
    out = []
    for (routing, mode), g in t.groupby(["routing", "mode"], sort=False):
        out.append((f"{routing} ({mode})" if two_modes else str(routing), g))
    return out[:MAX_SERIES]


def fct_values(runs: list[Path], read: Reader = _pandas_columns) -> dict[str, list[float]]:
    """Per routing, every predicted transfer's FCT (s, fct.csv: mean over iterations)."""
    by_routing: dict[str, list[float]] = {}
    for run in runs:
        for path in sorted(run.glob("*/fct.csv")):
            by_routing.setdefault(path.parent.name.replace("-at-", "@"), []).extend(
                read(path, [("fct_mean_s", float)])[0])
    return by_routing


#: efficiency_table's columns that are not the configuration's keys
EFFICIENCY_COLUMNS = ("routing", "mode", "efficiency_mean", "efficiency_ci95_low",
                      "efficiency_ci95_high", "runs", "speedup_over_ecmp_mean",
                      "speedup_over_best_hashed_mean", "flagged_runs")


def job_points(runs: list[Path]) -> list[dict]:
    """Per emulated run and job: its mean CCT against the model's of the same routing, and
    why the CPU monitor flagged the run (None when it did not): answer_figures'
    emulated_vs_predicted points."""
    from .results import flag_reason
    points = []
    for run in runs:
        for r in read_results(run)["runs"]:
            if r.get("mode") != "emulated":
                continue
            for j in r["jobs"]:
                pred = j.get("predicted_cct_s") or []
                if pred and j.get("cct_s"):
                    points.append({"routing": r["routing"], "job": j["name"],
                                   "predicted_s": statistics.fmean(pred),
                                   "emulated_s": statistics.fmean(j["cct_s"]),
                                   "flag_reason": flag_reason(r)})
    return points


def slowdowns(t: pd.DataFrame) -> list[tuple[str, list[float]]]:
    """Per routing (and mode): every job iteration's CCT / its job's ideal CCT."""
    out = []
    for label, g in _series(t):
        ok = g["ideal_cct_s"].notna() & (g["ideal_cct_s"] > 0)
        out.append((label, (g["cct_s"][ok] / g["ideal_cct_s"][ok]).tolist()))
    return out


def _link_keys(src: list[str], dst: list[str], seen: dict | None) -> list[tuple[str, str]]:
    """(src, dst) of each row: one object per link and per switch name in every table read
    with the same `seen` (the figure worker's pickle then writes each once)."""
    seen = {} if seen is None else seen
    return [seen.setdefault((a, b), (seen.setdefault(a, a), seen.setdefault(b, b)))
            for a, b in zip(src, dst)]


def link_flows(runs: list[Path], read: Reader = _pandas_columns, seen: dict | None = None
               ) -> dict[str, dict[tuple[str, str], float]]:
    """Per routing: each directed link's flows in the plan computed before the run (links.csv's
    `flows`, mean over the runs; predicted runs whose table has the column and a plan)."""
    parts: dict[str, list[dict]] = {}
    for run in runs:
        for path in sorted(run.glob("*/links.csv")):
            with path.open(encoding="utf-8") as f:
                if "flows" not in f.readline().strip().split(","):
                    continue
            src, dst, flows = read(path, [("src", str), ("dst", str), ("flows", str)])
            got = {key: float(n) for key, n in zip(_link_keys(src, dst, seen), flows)
                   if n not in ("", "nan")}
            if got:
                parts.setdefault(path.parent.name.replace("-at-", "@"), []).append(got)
    out = {}
    for routing, ps in parts.items():
        keys = set().union(*ps)
        out[routing] = {k: sum(p.get(k, 0.0) for p in ps) / len(ps) for k in keys}
    return out


def link_loads(runs: list[Path], read: Reader = _pandas_columns, seen: dict | None = None
               ) -> dict[str, dict[tuple[str, str], float]]:
    """Per routing: each directed link's mean utilization over the predicted runs' links.csv."""
    parts: dict[str, list[list[list]]] = {}
    for run in runs:
        for path in sorted(run.glob("*/links.csv")):
            parts.setdefault(path.parent.name.replace("-at-", "@"), []).append(
                read(path, [("src", str), ("dst", str), ("mean_utilization", float)]))
    out = {}
    for routing, ps in parts.items():
        total: dict[tuple[str, str], float] = {}
        for src, dst, util in ps:
            for key, u in zip(_link_keys(src, dst, seen), util):
                total[key] = total.get(key, 0.0) + u
        out[routing] = {key: u / len(ps) for key, u in total.items()}
    return out


def load_runs(runs: list[Path]) -> int:
    """The run folders holding a links.csv (the load heatmap's mean is over them)."""
    return sum(1 for r in runs if any(r.glob("*/links.csv")))


def emulated_flows(runs: list[Path]) -> dict[str, dict[tuple[str, str], float]]:
    """Per emulated routing: each link's mean number of flows over the runs (results.json
    `link_flows`: the paths the switch counters saw), as link_loads gives loads."""
    parts: dict[str, list[pd.DataFrame]] = {}
    for run in runs:
        if any(run.glob("*/links.csv")):
            continue
        doc = read_results(run)
        for r in doc["runs"]:
            if r.get("mode") == "emulated" and r.get("link_flows"):
                parts.setdefault(r["routing"], []).append(pd.DataFrame(
                    [{"src": x["link"][0], "dst": x["link"][1],
                      "mean_utilization": x["flows"]} for x in r["link_flows"]]))
    return {k: pd.concat(v).groupby(["src", "dst"]).mean_utilization.sum().div(len(v))
            .to_dict() for k, v in parts.items()}


def flow_heatmap(runs: list[Path], out: Path, title: str,
                 fmt: tuple[str, ...] = FORMATS, routings: list[str] | None = None
                 ) -> str | None:
    """Emulated runs: flows per link on the paths the switch counters saw."""
    flows = emulated_flows(runs)
    if not flows:
        return None
    from .drawing import heatmap
    return heatmap(flows, out, fmt, "flow_heatmap",
                   f"{title}: emulated flows per link (observed paths), mean over runs",
                   "flows on the link (mean over runs)", None, routings)


def utilization_lines(runs: list[Path]) -> tuple[list[tuple], str]:
    """Per routing of the first run folder holding links_over_time.csv (by pandas): (name,
    bin starts, mean utilization, bin starts, the busiest link's), and that folder's name;
    ([], "") when none holds one."""
    for run in runs:
        csvs = sorted(run.glob("*/links_over_time.csv"))
        if csvs:
            break
    else:
        return [], ""
    lines = []
    for path in csvs[:MAX_SERIES]:
        t = _read_csv(path, usecols=["bin_start_s", "mean_utilization"])
        g = t.groupby("bin_start_s").mean_utilization
        mean, top = g.mean(), g.max()
        lines.append((path.parent.name.replace("-at-", "@"), mean.index.to_numpy(),
                      mean.to_numpy(), top.index.to_numpy(), top.to_numpy()))
    return lines, run.name


def routing_order(t: pd.DataFrame) -> list[str]:
    """The routings in the looks' order (experiments/look.py): ECMP first, then as the runs
    list them (config order)."""
    from .look import order
    return order(t["routing"].astype(str).tolist())


def draw_report(dirs: list[Path], plots: Path, table: pd.DataFrame | None = None,
                runs: list[Path] | None = None,
                fmt: tuple[str, ...] = FORMATS) -> list[str]:
    """Draw every figure the data allows into `plots` (as each of `fmt`), the answer first;
    returns their stems."""
    from . import answer_figures as af
    from . import drawing
    runs = runs if runs is not None else find_runs(dirs)
    if table is None:
        table = _ordered(pd.concat([run_table(r) for r in runs], ignore_index=True))
    plots.mkdir(parents=True, exist_ok=True)
    names = sorted(set(table["name"].astype(str)))
    title = names[0] if len(names) == 1 else f"{len(names)} experiments"
    order = routing_order(table)
    eff = efficiency_table(table)
    keys = [c for c in eff.columns if c not in EFFICIENCY_COLUMNS]
    swept = [k for k in keys if k != "name"]
    lines, lines_run = utilization_lines(runs)
    loads, flows = link_loads(runs), {**link_flows(runs), **emulated_flows(runs)}
    big = af.wants_distribution({**loads, **flows})
    figures = [af.efficiency_sweep(eff.to_dict("records"), keys, plots, title, fmt, order)
               if swept else None,
               drawing.efficiency_bars(eff.to_dict("records"), keys, plots, title, fmt, order),
               af.slowdown_cdf(slowdowns(table), plots, title, fmt, order),
               None if swept else drawing.cct_cdf(
                   [(label, g["cct_s"].tolist()) for label, g in _series(table)],
                   table["ideal_cct_s"].dropna().tolist(), plots, title, fmt, order),
               drawing.fct_cdf(fct_values(runs), plots, title, fmt, order),
               af.emulated_vs_predicted(job_points(runs), plots, title, fmt, order),
               af.link_distribution(
                   [("flows per link", "flows on the link", flows),
                    ("load per link", "mean utilization (fraction of capacity)", loads)],
                   plots, title, fmt, order) if big else None,
               None if big else drawing.load_heatmap(loads, load_runs(runs), plots, title,
                                                     fmt, order),
               None if big else flow_heatmap(runs, plots, title, fmt, order),
               drawing.link_utilization(lines, lines_run, plots, title, fmt, order) if lines
               else None,
               _timeline(runs, plots, fmt)]
    return [f for f in figures if f]


def _timeline(runs: list[Path], plots: Path, fmt: tuple[str, ...]) -> str | None:
    """The first emulated run folder's iteration CCT over time (experiments/plots.py)."""
    from .plots import timeline
    for run in runs:
        doc = read_results(run)
        if any(r["mode"] == "emulated" and any(j.get("iteration_end_s") for j in r["jobs"])
               for r in doc["runs"]):
            for ext in fmt:
                timeline(doc, plots / f"timeline.{ext}")
            return "timeline"
    return None


def predicted_figure_data(folder: Path) -> dict:
    """The data of draw_report's figures of the folder `predict` just wrote (a run folder,
    or its rep-N folders), read with the json and csv modules (no pandas, ~0.3 s of CPU,
    except for the utilization over time of --util-bin-s) and no matplotlib: the argument
    of answer_figures.draw_figures, which a figure worker draws (experiments/figure_worker.py)."""
    from .look import order
    runs = find_runs([folder])
    docs = [json.loads(files.read_text(r / "results.json")) for r in runs]
    series: dict[str, list[float]] = {}
    slow: dict[str, list[float]] = {}
    ideals: list[float] = []
    two_modes = len({r["mode"] for d in docs for r in d["runs"]}) > 1
    for run, doc in zip(runs, docs):
        for row in rows(doc):
            label = f"{row['routing']} ({row['mode']})" if two_modes else str(row["routing"])
            series.setdefault(label, []).append(row["cct_s"])
            if row["ideal_cct_s"] is not None and not math.isnan(row["ideal_cct_s"]):
                ideals.append(row["ideal_cct_s"])
                if row["ideal_cct_s"] > 0:
                    slow.setdefault(label, []).append(row["cct_s"] / row["ideal_cct_s"])
    eff = answer_rows(docs)
    names = sorted({str(d["name"]) for d in docs})
    lines, lines_run = utilization_lines(runs)
    seen: dict = {}                   # _link_keys's, shared by the two tables
    return {"title": names[0] if len(names) == 1 else f"{len(names)} experiments",
            "routings": order(r["routing"] for d in docs for r in d["runs"]),
            "slowdowns": list(slow.items())[:MAX_SERIES], "ideals": ideals,
            "cct_series": list(series.items())[:MAX_SERIES], "efficiency": eff,
            "fct": fct_values(runs, _csv_columns), "flows": link_flows(runs, _csv_columns, seen),
            "loads": link_loads(runs, _csv_columns, seen), "load_runs": load_runs(runs),
            "utilization": lines, "utilization_run": lines_run}


def answer_rows(docs: list[dict]) -> list[dict]:
    """efficiency_table's rows from results.json documents of one configuration (a run
    folder or its rep-N folders), without pandas: per (name, routing, mode) the efficiency
    of each run (the lowest job's ideal / mean CCT) with its 95% interval, the mean
    speed-ups over ECMP and the best hashed scheme, and the flagged runs."""
    from .results import flag_reason, speedups
    per: dict[tuple, dict[str, list]] = {}
    for doc in docs:
        fast = speedups(doc)
        for r in doc["runs"]:
            jobs = [(j["ideal_cct_s"], statistics.fmean(j["cct_s"])) for j in r["jobs"]
                    if j.get("cct_s") and j.get("ideal_cct_s") is not None]
            cell = per.setdefault((doc["name"], r["routing"], r["mode"]),
                                  {"eff": [], "ecmp": [], "hashed": [], "flagged": 0})
            if jobs:
                cell["eff"].append(min(ideal / mean for ideal, mean in jobs))
            up = fast[(r["routing"], r["mode"])]
            if up["speedup_over_ecmp"] is not None:
                cell["ecmp"].append(up["speedup_over_ecmp"])
            if up["speedup_over_best_hashed"] is not None:
                cell["hashed"].append(up["speedup_over_best_hashed"])
            cell["flagged"] += flag_reason(r) is not None
    out = []
    for (name, routing, mode), c in per.items():
        m, lo, hi = ci95(c["eff"]) if c["eff"] else (math.nan,) * 3
        out.append({"name": name, "routing": routing, "mode": mode, "efficiency_mean": m,
                    "efficiency_ci95_low": lo, "efficiency_ci95_high": hi,
                    "runs": len(c["eff"]),
                    "speedup_over_ecmp_mean": statistics.fmean(c["ecmp"]) if c["ecmp"]
                    else math.nan,
                    "speedup_over_best_hashed_mean": statistics.fmean(c["hashed"])
                    if c["hashed"] else math.nan, "flagged_runs": c["flagged"]})
    return out


def draw_predicted(folder: Path, plots: Path, fmt: tuple[str, ...] = ("png",)) -> list[str]:
    """draw_report's figures of the folder `predict` just wrote, drawn in this process
    (predicted_figure_data, then answer_figures.draw_figures). Returns the figures' stems."""
    from .answer_figures import draw_figures
    return draw_figures(predicted_figure_data(folder), plots, fmt)


def read_report(dirs: list[Path]) -> tuple[list[Path], pd.DataFrame]:
    """Every run folder under `dirs` and their tidy rows, each file checked (ConfigError
    naming the file); nothing is written."""
    runs = find_runs(dirs)
    return runs, _ordered(pd.concat([run_table(r) for r in runs], ignore_index=True))


def report(dirs: list[Path], out: Path,
           read: tuple[list[Path], pd.DataFrame] | None = None) -> dict:
    """Merge every run folder under `dirs` into out/results.csv and out/efficiency.csv, and
    draw out/plots/; returns {'runs', 'rows', 'figures', 'efficiency' (efficiency.csv's
    rows), 'run_folders'}. `read`: read_report(dirs), when the caller checked the inputs
    before clearing `out`. report.html is experiments/html_report.py's, over the same."""
    runs, table = read or read_report(dirs)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "results.csv", index=False, float_format="%.9g")
    eff = efficiency_table(table)
    eff.to_csv(out / "efficiency.csv", index=False, float_format="%.6g")
    figures = draw_report(dirs, out / "plots", table, runs)
    return {"runs": len(runs), "rows": len(table), "figures": figures,
            "efficiency": eff.to_dict("records"), "run_folders": runs}

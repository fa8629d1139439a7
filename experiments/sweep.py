"""`sweep SWEEP.yaml --out DIR`: many points of one base config, on a Dask cluster.

A sweep file (paths relative to its own folder):

    base: ../quickstart.yaml
    mode: predict                # or run (emulated; root on every worker)
    grid: {fabric.spine_link_mbps: [5, 10], routing: [[ecmp, ilp]]}
    points: [{fabric.spines: 2}] # optional: more points, after the grid's
    seeds: [1, 2]                # optional: the base config's seed otherwise
    repeat: 1                    # independent repetitions of every point
    set: {jobs[0].iterations: 2} # optional: changes to the base (like --set)
    util_bin_s: 0.5              # optional (predict): links_over_time.csv per point

Points = (grid product, then `points`) x seeds x repetitions. A point's name comes from its
values only (`spine_link_mbps-5_routing-ecmp+ilp_seed-1_rep-1`), so it is stable when the
sweep grows. Each point is an ordinary run folder, DIR/points/<name>/, written by the client
from the files the worker returns (no shared file system needed); its point.json, written
last, marks it finished. Started again, a sweep skips finished points whose config is
unchanged; a failed point is recorded (point.json, error.txt) and the sweep goes on.
DIR/results.csv holds every finished point's rows, DIR/sweep.json the points' status.

Points run on dask.distributed: a LocalCluster by default (predicted points in parallel, one
process per core; emulated points on one worker), or `--scheduler tcp://HOST:PORT`. Emulated
points ask for the worker resource `emulator: 1`, so a machine whose worker offers one
(`dask worker ... --nworkers 1 --resources emulator=1`) never runs two emulations at once.
"""
from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import logging
import math
import os
import re
import shutil
import signal
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from .config import MAX_SEED, ConfigError, Experiment, parse, quote, read_yaml
from .config.limits import MAX_DURATION_S, MIN_UTIL_BIN_S
from .overrides import parse_path, parse_set, set_path, shown

SWEEP_KEYS = {"base", "mode", "grid", "points", "seeds", "repeat", "set", "util_bin_s"}
MODES = ("predict", "run")
#: Points x seeds x repetitions of one sweep; values per grid key; repetitions.
MAX_POINTS = 10_000
MAX_REPEAT = 1_000
#: --workers of the local cluster.
MAX_WORKERS = 256
#: Resource every emulated point asks for; a worker offering 1 runs one emulation at a time.
EMULATOR = "emulator"
#: --scheduler: tcp:// or tls://, a host name or address, and a port; the first connection
#: attempt gives up after this long.
SCHEDULER_SCHEMES = ("tcp", "tls")
SCHEDULER_CONNECT_S = 5.0
_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")
NAME_CHARS = re.compile(r"[^A-Za-z0-9.+=-]+")
MAX_NAME = 100


@dataclass(frozen=True)
class Point:
    """One run of a sweep: its swept values, seed, repetition and full config document."""

    name: str
    values: dict[str, Any]
    seed: int
    repetition: int
    doc: dict = field(repr=False)

    def fingerprint(self, mode: str, util_bin_s: float | None) -> str:
        """Changes when anything that decides the point's results changes."""
        blob = json.dumps({"doc": self.doc, "mode": mode, "repetition": self.repetition,
                           "util_bin_s": util_bin_s}, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def columns(self) -> dict[str, Any]:
        """Swept values as results.csv columns (seed and repetition have their own)."""
        return dict(self.values)


@dataclass
class Sweep:
    path: Path
    base: Path
    mode: str
    points: list[Point]
    util_bin_s: float | None = None


def _slug(v: Any) -> str:
    if isinstance(v, list):
        return "+".join(_slug(x) for x in v)
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    s = json.dumps(v, sort_keys=True) if isinstance(v, dict) else str(v)
    return NAME_CHARS.sub("_", s).strip("_") or "_"


def point_name(values: dict[str, Any], seed: int, repetition: int) -> str:
    """A file name from the values alone (key order does not matter); long ones end in a
    hash of the values."""
    lasts = [shown(parse_path(k)[-1:]) if isinstance(parse_path(k)[-1], str) else k
             for k in values]
    short = {k: (last if lasts.count(last) == 1 else k) for k, last in zip(values, lasts)}
    parts = [f"{NAME_CHARS.sub('_', short[k])}-{_slug(values[k])}" for k in sorted(values)]
    name = "_".join(parts + [f"seed-{seed}", f"rep-{repetition}"])
    if len(name) > MAX_NAME:
        digest = hashlib.sha1(json.dumps(values, sort_keys=True, default=str).encode())
        name = f"{name[:MAX_NAME - 40]}-{digest.hexdigest()[:10]}_seed-{seed}_rep-{repetition}"
    return name


def _where(sweep_path: Path, key: str) -> str:
    return f"{sweep_path.name}: {key}"


def _mapping(v: Any, where: str) -> dict:
    if not isinstance(v, dict):
        raise ConfigError(f"{where}: expected a mapping of dotted keys to values, got "
                          f"{type(v).__name__} {quote(v)}")
    return v


def _combos(d: dict, path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(where, values): the grid's product (in the order written), then the listed points."""
    combos: list[tuple[str, dict[str, Any]]] = []
    grid = _mapping(d.get("grid") or {}, _where(path, "grid"))
    for k, vs in grid.items():
        parse_path(k, _where(path, f"grid.{k}"))
        if not isinstance(vs, list) or not vs:
            raise ConfigError(f"{_where(path, 'grid.' + k)}: expected a non-empty list of "
                              f"values, e.g. [5, 10], got {quote(vs)}")
    size = 1
    for vs in grid.values():
        size *= len(vs)
        if size > MAX_POINTS:
            raise ConfigError(f"{_where(path, 'grid')}: more than {MAX_POINTS:,} points")
    if grid:
        combos += [("grid", dict(zip(grid, vals)))
                   for vals in itertools.product(*grid.values())]
    listed = d.get("points") or []
    if not isinstance(listed, list):
        raise ConfigError(f"{_where(path, 'points')}: expected a list of mappings, got "
                          f"{quote(listed)}")
    for i, p in enumerate(listed):
        for k in _mapping(p, _where(path, f"points[{i}]")):
            parse_path(k, _where(path, f"points[{i}].{k}"))
        combos.append((f"points[{i}]", dict(p)))
    return combos or [("base", {})]


def _seeds(d: dict, path: Path) -> list[int] | None:
    seeds = d.get("seeds")
    if seeds is None:
        return None
    if (not isinstance(seeds, list) or not seeds
            or not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= MAX_SEED
                       for s in seeds) or len(set(seeds)) != len(seeds)):
        raise ConfigError(f"{_where(path, 'seeds')}: expected a list of distinct integers "
                          f"from 0 to {MAX_SEED:,}, got {quote(seeds)}")
    return seeds


def _int_key(d: dict, key: str, path: Path, default: int, maximum: int) -> int:
    v = d.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= maximum:
        raise ConfigError(f"{_where(path, key)}: expected an integer from 1 to {maximum:,}, "
                          f"got {quote(v)}")
    return v


def load_sweep(path: str | Path, cli_sets: list[str] | None = None) -> Sweep:
    """Read and expand a sweep file; ConfigError (one line naming the key) on bad input.
    Paths and keys are checked here; each point's values are checked by the config loader
    when it runs (a bad value fails that point only)."""
    path = Path(path)
    d = read_yaml(path)
    if not isinstance(d, dict):
        raise ConfigError(f"{path.name}: expected a mapping with base, grid, seeds, ...")
    unknown = sorted(set(d) - SWEEP_KEYS)
    if unknown:
        raise ConfigError(f"{_where(path, unknown[0])}: unknown key; allowed keys are "
                          f"{', '.join(sorted(SWEEP_KEYS))}")
    if not isinstance(d.get("base"), str) or not d["base"]:
        raise ConfigError(f"{_where(path, 'base')}: required; the config file to vary, "
                          "relative to the sweep file's folder")
    base = (path.parent / d["base"]).resolve()
    mode = d.get("mode", "predict")
    if mode not in MODES:
        raise ConfigError(f"{_where(path, 'mode')}: expected predict or run, got {quote(mode)}")
    util = d.get("util_bin_s")
    if util is not None and (isinstance(util, bool) or not isinstance(util, (int, float))
                             or mode != "predict" or not math.isfinite(util)
                             or not MIN_UTIL_BIN_S <= util <= MAX_DURATION_S):
        raise ConfigError(f"{_where(path, 'util_bin_s')}: seconds from {MIN_UTIL_BIN_S:g} to "
                          f"{MAX_DURATION_S:,.0f}, with mode predict only, got {quote(util)}")
    base_doc = read_yaml(base)
    if not isinstance(base_doc, dict):
        raise ConfigError(f"{base.name}: expected a mapping of keys")
    sets = [(parse_path(k, _where(path, f"set.{k}")), v)
            for k, v in _mapping(d.get("set") or {}, _where(path, "set")).items()]
    for p, v in sets:
        set_path(base_doc, p, v, _where(path, f"set.{shown(p)}"))
    combos = _combos(d, path)
    seeds = _seeds(d, path)
    swept = {shown(parse_path(k)) for _, values in combos for k in values}
    swept |= {"seed"} if seeds is not None else set()
    for text in cli_sets or []:
        p, v = parse_set(text)
        if shown(p) in swept:
            raise ConfigError(f"--set {shown(p)}: {path.name} sweeps this key, so every point "
                              "sets its own value; change it in the sweep file")
        set_path(base_doc, p, v)
    repeat = _int_key(d, "repeat", path, 1, MAX_REPEAT)
    total = len(combos) * len(seeds or [0]) * repeat
    if total > MAX_POINTS:
        raise ConfigError(f"{path.name}: {total:,} points (grid x points x seeds x repeat); "
                          f"at most {MAX_POINTS:,}")
    points = _expand(base_doc, combos, seeds, repeat, path)
    _check_base(base_doc, base, points, path)
    return Sweep(path.resolve(), base, mode, points, float(util) if util is not None else None)


def _check_base(base_doc: dict, base: Path, points: list[Point], path: Path) -> None:
    """The base config (with `set` and --set) is checked once, before any point runs; when it
    fails, the sweep goes on only if some point's values make a valid config (a base may
    leave a swept key to its points). ConfigError naming the base file otherwise."""
    try:
        parse(base_doc, base.parent)
        return
    except ConfigError as e:
        error = e
    for p in points:
        try:
            parse(p.doc, base.parent)
            return
        except ConfigError:
            continue
    raise ConfigError(f"{path.name}: base {base.name} (and every point): {error}") from None


def _expand(base_doc: dict, combos: list[tuple[str, dict[str, Any]]], seeds: list[int] | None,
            repeat: int, path: Path) -> list[Point]:
    """Every (values, seed, repetition) as a Point with its own config document; two points
    with the same name are refused."""
    points: list[Point] = []
    names: dict[str, int] = {}
    for i, (where, values) in enumerate(combos):
        doc = json.loads(json.dumps(base_doc))      # a deep copy of plain YAML data
        for k, v in values.items():
            set_path(doc, parse_path(k), v, _where(path, f"{where}.{k}"))
        for seed in seeds or [doc.get("seed", 1)]:
            for rep in range(1, repeat + 1):
                pdoc = json.loads(json.dumps(doc))
                if seeds is not None:
                    pdoc["seed"] = seed
                name = point_name(values, seed, rep)
                if name in names:
                    raise ConfigError(f"{path.name}: points {names[name] + 1} and {i + 1} are "
                                      f"the same point ({name}); list each once")
                names[name] = i
                points.append(Point(name, values, seed, rep, pdoc))
    return points


def check_points(sweep: Sweep) -> str:
    """Parse every point's config as `run`/`predict` would (the base was checked by
    load_sweep): a summary line, or ConfigError naming the first point that fails and how
    many do."""
    bad = []
    for p in sweep.points:
        try:
            parse(p.doc, sweep.base.parent)
        except ConfigError as e:
            bad.append((p.name, e))
    if bad:
        name, e = bad[0]
        raise ConfigError(f"{sweep.path.name}: point {name}: {e}"
                          + (f" ({len(bad) - 1} more points fail)" if len(bad) > 1 else ""))
    keys = list(dict.fromkeys(k for p in sweep.points for k in p.values))
    return (f"ok: a sweep of {len(sweep.points)} point{'s' * (len(sweep.points) != 1)} "
            f"(mode {sweep.mode}) over {sweep.base.name}, every point valid; swept: "
            f"{', '.join(keys) or 'seeds and repetitions only'}")


def describe_points(sweep: Sweep) -> str:
    """`sweep --dry-run`: one line per point (its name, values, seed, repetition)."""
    lines = [f"{sweep.path.name}: {len(sweep.points)} point"
             f"{'s' * (len(sweep.points) != 1)}, mode {sweep.mode}, base {sweep.base.name} "
             "(dry run: nothing run or written)"]
    for p in sweep.points:
        values = ", ".join(f"{k}={shown_value(v)}" for k, v in p.values.items())
        lines.append(f"  {p.name}: {values + ', ' if values else ''}seed {p.seed}, "
                     f"repetition {p.repetition}")
    return "\n".join(lines)


def shown_value(v: Any) -> str:
    """A swept value as YAML flow ([ecmp, ilp]); scalars as they are."""
    from .tidy import cell
    return str(cell(v))


# -- one point, on a worker ------------------------------------------------------------------
def repetition_offset(exp: Experiment, repetition: int) -> int:
    """Repetition r's source-port shift: (r - 1) x routings x connections, so that each
    repetition's flows hash to their own ECMP outcome (and an emulated run never meets a late
    segment of an earlier repetition's flows)."""
    from traffic.collectives import SOURCE_PORT_SPAN, unique_connections
    conns = len(unique_connections(exp.plans()))
    return (repetition - 1) * len(exp.routing) * conns % SOURCE_PORT_SPAN


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    if not isinstance(e, ConfigError):
        text = f"{type(e).__name__}: {text}"
    return text if len(text) <= 300 else text[:297] + "..."


def run_point(doc: dict, mode: str, repetition: int, util_bin_s: float | None,
              columns: dict[str, Any], name: str, argv: list[str],
              base_dir: str | None = None) -> dict:
    """Run one point in a temporary folder (on a Dask worker); return its status and every
    file of its run folder as bytes (the client writes them). Any failure is returned as
    one line (and its traceback in error.txt): the sweep goes on."""
    from .tidy import finish_environment, start_record, write_results_csv
    start = start_record([*argv, f"[point {name}]"])
    t0 = time.monotonic()
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="mlfabric-point-") as tmp:
        folder = Path(tmp)
        try:
            exp = parse(doc, base_dir)   # the base config's folder: its relative paths
            offset = repetition_offset(exp, repetition)
            if mode == "predict":
                from .config import check_util_bin_s
                from .predict import predict_experiment
                check_util_bin_s(exp, util_bin_s)
                results = predict_experiment(exp, folder, log=lines.append,
                                             util_bin_s=util_bin_s, repetition=repetition,
                                             port_offset=offset)
            else:
                from .runner import check_emulable, run_experiment
                check_emulable(exp)
                if os.geteuid() != 0:
                    raise ConfigError("mode run: emulation needs root on the worker; start "
                                      "it with sudo")
                results = run_experiment(exp, folder, log=lines.append,
                                         repetition=repetition, port_offset=offset)
            write_results_csv(folder, results, columns, point=name)
            finish_environment(folder, start)
            status, error, trace = "ok", None, None
        except Exception as e:  # noqa: BLE001 - any failure fails this point only
            status, error, trace = "failed", _one_line(e), traceback.format_exc()
        (folder / "log.txt").write_text("\n".join(lines) + ("\n" if lines else ""))
        if trace:
            (folder / "error.txt").write_text(f"{error}\n\n{trace}")
        files = {str(p.relative_to(folder)): p.read_bytes()
                 for p in sorted(folder.rglob("*")) if p.is_file()}
    return {"status": status, "error": error, "files": files,
            "wall_s": time.monotonic() - t0, "host": os.uname().nodename}


# -- the client ------------------------------------------------------------------------------
def point_dir(out: Path, p: Point) -> Path:
    return out / "points" / p.name


def finished(out: Path, p: Point, fingerprint: str) -> bool:
    """The point ran to completion with this very config (its point.json says so)."""
    try:
        rec = json.loads((point_dir(out, p) / "point.json").read_text())
    except (OSError, ValueError):
        return False
    return rec.get("status") == "ok" and rec.get("fingerprint") == fingerprint


def write_point(out: Path, p: Point, fingerprint: str, result: dict) -> dict:
    """Write a point's files, then point.json last (so a killed sweep reruns the point)."""
    folder = point_dir(out, p)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for rel, data in result.get("files", {}).items():
        target = (folder / rel).resolve()
        if folder.resolve() not in target.parents:     # never outside the point's folder
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    if result["status"] != "ok" and not (folder / "error.txt").exists():
        (folder / "error.txt").write_text(f"{result['error']}\n")
    rec = {"name": p.name, "values": p.values, "seed": p.seed, "repetition": p.repetition,
           "fingerprint": fingerprint, "status": result["status"], "error": result["error"],
           "wall_s": round(result.get("wall_s", 0.0), 3), "host": result.get("host")}
    (folder / "point.json").write_text(json.dumps(rec, indent=2, default=str) + "\n")
    return rec


@contextlib.contextmanager
def dask_client(scheduler: str | None, mode: str, workers: int | None) -> Iterator[Any]:
    """A Client on `scheduler`, or on a LocalCluster (predicted points: one single-threaded
    worker process per core) that is always closed on the way out."""
    from dask.distributed import Client, LocalCluster
    # the client's own Dask and tornado logs: a Ctrl-C inside Client.sync made the event loop
    # log a traceback; failed points and lost workers reach the user through run_sweep
    for name in ("distributed", "tornado"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    if scheduler:
        try:
            client = Client(scheduler, timeout=f"{SCHEDULER_CONNECT_S:g}s")
        except OSError as e:
            raise ConfigError(f"--scheduler: {scheduler}: {_one_line(e)}") from None
        try:
            if mode == "run" and not any(
                    w.get("resources", {}).get(EMULATOR) for w in
                    client.scheduler_info().get("workers", {}).values()):
                raise ConfigError(f"--scheduler: no worker of {scheduler} offers the "
                                  f"{EMULATOR} resource; start workers with --nworkers 1 "
                                  f"--resources {EMULATOR}=1 (docs/sweeps.md)")
            yield client
        finally:
            client.close()
        return
    n = workers or os.cpu_count() or 1
    # a terminal's Ctrl-C reaches the workers too (one process group), which printed their
    # tracebacks (63 lines): they ignore SIGINT from their start (this module's dask_setup
    # as their preload; SIGINT is blocked until then, through the mask they inherit), and
    # stop when the client leaves; a pending Ctrl-C is raised here once unblocked
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                               dashboard_address=":0", silence_logs=logging.CRITICAL,
                               preload=[__name__])
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
    try:
        client = Client(cluster)
        try:
            yield client
        finally:
            client.close()
    finally:
        cluster.close()


def parse_scheduler(s: str) -> tuple[str, str, int]:
    """'tcp://10.0.0.1:8786' -> ('tcp', '10.0.0.1', 8786); ConfigError naming --scheduler
    for another scheme, a host that is no name or address, or a port outside 1..65535."""
    import ipaddress
    from urllib.parse import urlsplit
    usage = f"expected tcp://HOST:PORT (e.g. tcp://10.0.0.1:8786), got {quote(s)}"
    try:
        u = urlsplit(s)
        port = u.port
    except ValueError as e:     # a port outside 0..65535, or not a number
        raise ConfigError(f"--scheduler: {_one_line(e)}; {usage}") from None
    host = u.hostname or ""
    if u.scheme not in SCHEDULER_SCHEMES or not host or u.path or u.query or u.username:
        raise ConfigError(f"--scheduler: {usage}")
    if port is None or not 1 <= port <= 65535:
        raise ConfigError(f"--scheduler: the port must be from 1 to 65535; {usage}")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if re.fullmatch(r"[0-9.]+", host) or len(host) > 253 or not all(
                _HOST_LABEL.fullmatch(x) for x in host.rstrip(".").split(".")):
            raise ConfigError(f"--scheduler: {quote(host)} is not a host name or an IP "
                              f"address; {usage}") from None
    return u.scheme, host, port


def check_scheduler(s: str | None, connect: bool = False) -> None:
    """--scheduler well formed; with `connect`, also answering a TCP connection within
    SCHEDULER_CONNECT_S (checked before --out is touched)."""
    if s is None:
        return
    _, host, port = parse_scheduler(s)
    if connect:
        import socket
        try:
            socket.create_connection((host, port), timeout=SCHEDULER_CONNECT_S).close()
        except OSError as e:
            why = "timed out" if isinstance(e, TimeoutError) else (e.strerror or str(e))
            raise ConfigError(f"--scheduler: {s}: no Dask scheduler answered within "
                              f"{SCHEDULER_CONNECT_S:g} s ({why}); start one (`dask "
                              "scheduler`) or leave --scheduler out for a local cluster") \
                from None


def dask_setup(worker) -> None:  # noqa: ARG001 - Dask's preload hook
    """In each worker of the local cluster, at its start: SIGINT ignored (see dask_client)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def check_workers(n: int | None) -> None:
    if n is not None and not 1 <= n <= MAX_WORKERS:
        raise ConfigError(f"--workers: from 1 to {MAX_WORKERS}, got {n}")


def merge_results(out: Path, sweep: Sweep) -> Path:
    """DIR/results.csv: the rows of every finished point, in the sweep's order."""
    import pandas as pd
    from .tidy import BASE_COLUMNS
    frames = []
    for p in sweep.points:
        csv = point_dir(out, p) / "results.csv"
        if csv.is_file() and (point_dir(out, p) / "point.json").is_file():
            frames.append(pd.read_csv(csv))
    table = (pd.concat(frames, ignore_index=True) if frames
             else pd.DataFrame(columns=BASE_COLUMNS))
    path = out / "results.csv"
    table.to_csv(path, index=False, float_format="%.9g")
    return path


def run_sweep(sweep: Sweep, out: Path, scheduler: str | None = None,
              workers: int | None = None, progress=None, argv: list[str] | None = None,
              log=print) -> dict:
    """Run every unfinished point of `sweep` into `out`; write sweep.json and results.csv;
    return the summary (points, ran, skipped, failed, wall_s)."""
    from .progress import SweepProgress
    from .tidy import now_utc
    t0 = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    prints = {p.name: p.fingerprint(sweep.mode, sweep.util_bin_s) for p in sweep.points}
    todo = [p for p in sweep.points if not finished(out, p, prints[p.name])]
    skipped = len(sweep.points) - len(todo)
    records: dict[str, dict] = {}
    pending = {p.name for p in todo}
    for p in sweep.points:
        if p.name not in pending:
            records[p.name] = json.loads((point_dir(out, p) / "point.json").read_text())
    summary = {"sweep": str(sweep.path), "base": str(sweep.base), "mode": sweep.mode,
               "scheduler": scheduler or "local", "started_at_utc": now_utc(),
               "points": len(sweep.points), "skipped": skipped}
    log(f"sweep {sweep.path.name}: {len(sweep.points)} points, {skipped} already finished, "
        f"{len(todo)} to run ({sweep.mode}) on {scheduler or 'a local Dask cluster'}")
    bar = progress or SweepProgress(len(sweep.points), skipped)
    try:
        if todo:
            _run_points(sweep, out, todo, prints, records, scheduler, workers, bar,
                        argv or [])
    finally:
        bar.close()
        summary.update(ended_at_utc=now_utc(), wall_s=round(time.monotonic() - t0, 3),
                       ran=len(records) - skipped,
                       failed=sum(r["status"] != "ok" for r in records.values()),
                       point_status=[records.get(p.name, {"name": p.name, "status": "pending"})
                                     for p in sweep.points])
        (out / "sweep.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
        merge_results(out, sweep)
    return summary


def _run_points(sweep: Sweep, out: Path, todo: list[Point], prints: dict[str, str],
                records: dict[str, dict], scheduler: str | None, workers: int | None,
                bar, argv: list[str]) -> None:
    if sweep.mode == "run" and scheduler is None:
        # one emulation at a time, in this process's main thread: a Ctrl-C or SIGTERM tears
        # the point's fabric down like any run's (a Dask worker's thread never saw them)
        for p in todo:
            result = run_point(p.doc, sweep.mode, p.repetition, sweep.util_bin_s, p.columns(),
                               p.name, argv, str(sweep.base.parent))
            _finish(out, p, prints, records, result, bar)
        return
    from dask.distributed import as_completed
    resources = {EMULATOR: 1} if sweep.mode == "run" else None
    with dask_client(scheduler, sweep.mode, workers) as client:
        base_dir = str(sweep.base.parent)
        futures = {client.submit(run_point, p.doc, sweep.mode, p.repetition, sweep.util_bin_s,
                                 p.columns(), p.name, argv, base_dir, pure=False,
                                 resources=resources): p for p in todo}
        for fut in as_completed(futures):
            p = futures.pop(fut)
            try:
                result = fut.result()
            except Exception as e:  # noqa: BLE001 - a lost worker fails this point only
                result = {"status": "failed", "error": _one_line(e), "files": {}}
            fut.release()
            _finish(out, p, prints, records, result, bar)


def _finish(out: Path, p: Point, prints: dict[str, str], records: dict[str, dict],
            result: dict, bar) -> None:
    rec = write_point(out, p, prints[p.name], result)
    records[p.name] = rec
    bar.point(p.name, rec["status"], rec["wall_s"], rec["error"])

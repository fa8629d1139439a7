"""Step 6 of a run: turn measured (or predicted) iteration times into the results schema.

Pure code; emulated and predicted runs go through the same functions. Units live in key names.

- per job: `efficiency` = its ideal CCT (on a non-blocking fabric: only host links limit, at
  the configured rate, from the flow-level model) / its mean CCT.
- per run: `cct_s[t]`: iteration t of the slowest job; `ideal_cct_s`: the largest of the jobs'
  ideal CCTs (no iteration's slowest job can beat it); `efficiency`: the LOWEST per-job
  efficiency (`efficiency_job` names that job), so that one job's ideal is never divided by
  another job's time; `network_efficiency`: the mean of the per-job efficiencies (each job
  counts once); `fairness`: the 2-layered max-min vector (see traffic/metrics.py; our reading).
- `solve`: what the routing solver did for the run (`solve_block`): per epoch, and their
  max and sum, for strategies that re-solve at every epoch; the one plan otherwise.
- per job, algbw and busbw follow nccl-tests: algbw = size / time, busbw = algbw x 2(n-1)/n
  for all-reduce, x (n-1)/n for all-gather, reduce-scatter and all-to-all.
- `throughput_mbps`: Hedera's aggregate throughput: the sum over a job's connections (per
  run: over every job's) of each one's rate while it had data in flight (`conn_rate_mbps`,
  bytes / time from first to last byte, over all iterations). `nonblocking_fraction`: a run's
  throughput / the `nonblocking` reference run's of the same mode, when the routings include it.
"""
from __future__ import annotations

import math
import os
import platform
import re
import statistics
import subprocess
import sys
from importlib import metadata
from itertools import repeat
from operator import itemgetter, truediv
from pathlib import Path

from traffic.collectives import JobPlan, JobSpec, bus_factor, unique_connections

from . import json_text

#: 2: run efficiency = lowest per-job efficiency; prediction_error_fraction; solve per epoch
#: (still 2: imported workloads' `workload`, `iteration_time_s` and the jobs' iteration start
#: and end are keys added beside the others, none changed meaning)
SCHEMA_VERSION = 2


def job_result(spec: JobSpec, cct_s: list[float], ideal: float,
               bytes_verified: bool | None, conn_rates_mbps: dict[int, float],
               throughput_mbps: float | None = None) -> dict:
    """One job's row; `ideal` is its non-blocking CCT (s); conn rates feed the fairness vector.
    `throughput_mbps`: their sum, when conn_rates_mbps is left empty (conn_rates.csv)."""
    mean = statistics.fmean(cct_s)
    algbw = spec.size_bytes * 8 / mean / 1e6
    return {
        "name": spec.name, "collective": spec.collective.value,
        "ranks_per_group": spec.group_size, "groups": len(spec.groups),
        "size_bytes": spec.size_bytes,
        "cct_s": cct_s, "cct_mean_s": mean, "ideal_cct_s": ideal, "efficiency": ideal / mean,
        "algbw_mbps": algbw, "busbw_mbps": algbw * bus_factor(spec.collective, spec.group_size),
        "throughput_mbps": (sum(conn_rates_mbps.values()) if throughput_mbps is None
                            else throughput_mbps),
        "bytes_verified": bytes_verified,
        "conn_rate_mbps": _by_id(conn_rates_mbps),
    }


def _by_id(rates: dict[int, float]) -> dict[str, float]:
    """{str(conn_id): rate} in conn_id order (one C-level pass: 16,384 per job at scale)."""
    items = sorted(rates.items())
    return dict(zip(map(str, map(itemgetter(0), items)), map(itemgetter(1), items)))


def fairness(jobs: list[dict], reference_rate_mbps: float) -> dict:
    """The 2-layered max-min vector (our reading, traffic/metrics.py) from job rows:
    layer 1 = job efficiencies ascending; layer 2 = per job in that order, its connections'
    rates / reference rate, ascending."""
    order = sorted(jobs, key=lambda j: (j["efficiency"], j["name"]))
    return {"jobs": [j["name"] for j in order],
            "layer1": [j["efficiency"] for j in order],
            "layer2": [sorted(map(truediv, j["conn_rate_mbps"].values(),
                                  repeat(reference_rate_mbps))) for j in order]}


#: A run lists at most this many connections' rates in results.json (each job's
#: `conn_rate_mbps` and the fairness vector's layer 2, ~40 B per connection: 6.8 M
#: connections made a 506 MB file); past it `predict` writes them to the run's
#: conn_rates.csv instead (experiments/predict.py).
CONN_RATES_INLINE = 100_000


def spilled(run: dict, csv_name: str) -> None:
    """A run whose per-connection rates went to csv_name (relative to the results folder,
    past CONN_RATES_INLINE): its fairness layer 2 is left empty and results.json names the
    file in `conn_rates_csv`."""
    if "fairness" in run:
        run["fairness"]["layer2"] = []
    run["conn_rates_csv"] = csv_name


def slowest_per_iteration(per_job: list[list[float]]) -> list[float]:
    """Iteration t's CCT of the slowest job that ran an iteration t."""
    n_iter = max(len(c) for c in per_job)
    return [max(c[t] for c in per_job if t < len(c)) for t in range(n_iter)]


def run_result(routing: str, mode: str, jobs: list[dict], max_link_flows: int,
               solve: dict, **extra) -> dict:
    """Aggregate per-job results into one run (one routing) of the results schema. Jobs whose
    ideal the model does not know (a program without declared traffic: efficiency None) take
    no part in the efficiencies, which are None when no job is known; the throughput is None
    unless every job counted its bytes (programs do not)."""
    cct = slowest_per_iteration([j["cct_s"] for j in jobs])
    known = [j for j in jobs if j.get("efficiency") is not None]
    worst = min(known, key=lambda j: (j["efficiency"], j["name"])) if known else None
    counted = all(j.get("throughput_mbps") is not None for j in jobs)
    return {"routing": routing, "mode": mode, "cct_s": cct, "cct_mean_s": statistics.fmean(cct),
            "ideal_cct_s": max(j["ideal_cct_s"] for j in known) if known else None,
            "efficiency": worst and worst["efficiency"],
            "efficiency_job": worst and worst["name"],
            "network_efficiency": (statistics.fmean(j["efficiency"] for j in known)
                                   if known else None),
            "throughput_mbps": sum(j["throughput_mbps"] for j in jobs) if counted else None,
            "max_link_flows": max_link_flows, "solve": solve, **extra, "jobs": jobs}


def host_link_flows(plans: list[JobPlan], fabric=None) -> int:
    """The most connections on one host link (a NIC's uplink or downlink); with `fabric`,
    a connection between two GPUs of one server is on NVLink, not on a NIC."""
    count: dict[tuple[str, str], int] = {}
    for c in unique_connections(plans):
        if fabric is not None and fabric.same_server(c.src, c.dst):
            continue
        for key in (("out", c.src), ("in", c.dst)):
            count[key] = count.get(key, 0) + 1
    return max(count.values(), default=0)


def add_nonblocking_fraction(results: dict, reference: str = "nonblocking") -> None:
    """Hedera's metric: each run's aggregate throughput / that of the non-blocking reference
    run of the same mode (`nonblocking_fraction`), when the results hold one."""
    ref = {r["mode"]: r["throughput_mbps"] for r in results["runs"]
           if r["routing"] == reference and r.get("throughput_mbps")}
    for r in results["runs"]:
        if r["mode"] in ref and r.get("throughput_mbps") is not None:
            r["nonblocking_fraction"] = r["throughput_mbps"] / ref[r["mode"]]


def solve_block(one_plan: dict, epoch_solves: list[dict] | None) -> dict:
    """The run's `solve`. A strategy that places flows re-solves at every epoch (job start or
    finish, failure, repair): every solve, then their count, sum and max time, the statuses
    seen, the largest gap and bound, whether a solver ran in any and which. ECMP and fixed host-enforced
    plans: the one plan computed before the run (`one_plan`, a SolveStats dict)."""
    if not epoch_solves:
        return {"scope": "one plan", **one_plan}
    times = [s["time_s"] for s in epoch_solves]
    statuses = sorted({s["status"] for s in epoch_solves})
    gaps = [s["gap"] for s in epoch_solves if s.get("gap") is not None]
    bounds = [s["lower_bound_link_flows"] for s in epoch_solves
              if s.get("lower_bound_link_flows") is not None]
    ran = [s["solver_ran"] for s in epoch_solves if s.get("solver_ran") is not None]
    calls = [s["solver_calls"] for s in epoch_solves if s.get("solver_calls") is not None]
    solvers = sorted({x.strip() for s in epoch_solves for x in (s.get("solver") or "").split(",")
                      if x.strip()})
    return {"scope": "epochs", "count": len(epoch_solves),
            "time_s": sum(times), "time_s_max": max(times),
            "status": statuses[0] if len(statuses) == 1 else "mixed: " + ", ".join(statuses),
            "gap": max(gaps) if gaps else None,
            "lower_bound_link_flows": max(bounds) if bounds else None,
            "solver_ran": any(ran) if ran else None,
            "solver_calls": sum(calls) if calls else None,
            "solver": ", ".join(solvers) or None,
            "epochs": epoch_solves}


def _version(pkg: str) -> str | None:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


def environment(datapath: str | None, tcp_cc: str, seed: int, mtu_bytes: int) -> dict:
    """What a reader needs to reproduce the numbers: versions, kernel, datapath, TCP, seed."""
    ovs = None
    try:
        out = subprocess.run(["ovs-vsctl", "--version"], capture_output=True, text=True,
                             timeout=5, stdin=subprocess.DEVNULL).stdout
        ovs = out.splitlines()[0].strip() if out else None
    except (OSError, subprocess.TimeoutExpired):
        pass
    return {
        "python": sys.version.split()[0], "kernel": platform.release(),
        "machine": platform.machine(), "cpus": os.cpu_count(),
        "open_vswitch": ovs, "datapath": datapath, "tcp_congestion_control": tcp_cc,
        "mtu_bytes": mtu_bytes, "seed": seed,
        "packages": {p: _version(p) for p in ("mininet", "networkx", "PuLP", "numpy")},
    }


def workload_times(notes, jobs: list[dict], ideal_jobs: dict[str, float] | None = None,
                   key: str = "iteration_end_s") -> dict:
    """An imported workload's iteration (traffic/streams.py): from its first compute to its
    last comm or compute, `iteration_time_s`; beside the same on a non-blocking fabric
    (`ideal_ends`: job -> its end there) and their ratio, `iteration_efficiency`."""
    from traffic.streams import iteration_time_s
    t = iteration_time_s({j["name"]: j[key][-1] for j in jobs}, notes.tail)
    out = {"iteration_time_s": t}
    if ideal_jobs is not None:
        ideal = iteration_time_s(ideal_jobs, notes.tail)
        out.update(ideal_iteration_time_s=ideal,
                   iteration_efficiency=ideal / t if t > 0 else 1.0)
    return out


def seconds(x: float) -> str:
    """A time in the unit that shows it (s, ms or us), 4 significant digits."""
    if x >= 1 or x == 0:
        return f"{x:.4g} s"
    if x >= 1e-3:
        return f"{x * 1e3:.4g} ms"
    return f"{x * 1e6:.4g} us"


def _decimals(top: float) -> int:
    """Decimals that show `top` to 4 significant digits (at least 0)."""
    return max(0, 3 - math.floor(math.log10(top))) if top > 0 else 3


def seconds_column(values: list[float | None]) -> list[str]:
    """A column of times in one unit (that of the largest: s, ms or us) and fixed decimals
    (4 significant digits of the largest): "7.200 s" beside "6.187 s"; None as "-"."""
    present = [abs(v) for v in values if v is not None]
    top = max(present, default=0.0)
    scale, unit = (1, "s") if top >= 1 or top == 0 else (1e3, "ms") if top >= 1e-3 \
        else (1e6, "us")
    d = _decimals(top * scale)
    return ["-" if v is None else f"{v * scale:.{d}f} {unit}" for v in values]


def rate_column(values_mbps: list[float | None]) -> tuple[str, list[str]]:
    """(unit, cells) of a column of rates: Gbit/s when the largest passes 10,000 Mbit/s,
    else Mbit/s; two decimals; None as "-"."""
    top = max((v for v in values_mbps if v is not None), default=0.0)
    scale, unit = (1e-3, "Gbit/s") if top > 10_000 else (1.0, "Mbit/s")
    return unit, ["-" if v is None else f"{v * scale:.2f}" for v in values_mbps]


#: The CPU monitor's causes (testbed/monitor.py) as a reader's words.
FLAG_REASONS = {"forwarding_thread": "forwarding thread at its limit",
                "starved": "starved by other work", "dropped": "ovs-vswitchd dropped packets"}
#: Routing strategies that choose no path by plan: ECMP's hash and spraying.
HASHED_STRATEGIES = ("ecmp", "spray")


def flag_reason(run: dict) -> str | None:
    """Why the CPU monitor flagged an emulated run (FLAG_REASONS), None when it did not."""
    f = run.get("fidelity")
    if not f or f.get("ok", True):
        return None
    return FLAG_REASONS.get(f.get("cause"), str(f.get("cause") or "flagged"))


def hashed(routing: str) -> bool:
    """ECMP (with any subflows) or spraying: the schemes a plan is compared against."""
    return routing.partition("@")[0] in HASHED_STRATEGIES


def speedups(results: dict) -> dict[tuple[str, str], dict[str, float | None]]:
    """Per (routing, mode): `speedup_over_ecmp` (ECMP's mean CCT / this one's, same mode;
    above 1 is faster) and `speedup_over_best_hashed` (over the hashed scheme of the lowest
    mean CCT); None where the run has no such scheme."""
    def mean(r: dict) -> float | None:
        if r.get("cct_mean_s") is not None:
            return r["cct_mean_s"]
        return statistics.fmean(r["cct_s"]) if r.get("cct_s") else None
    out = {}
    for r in results["runs"]:
        same = [x for x in results["runs"] if x["mode"] == r["mode"] and mean(x)]
        ecmp = next((mean(x) for x in same if x["routing"] == "ecmp"), None)
        best = min((mean(x) for x in same if hashed(x["routing"])), default=None)
        mine = mean(r)
        out[(r["routing"], r["mode"])] = {
            "speedup_over_ecmp": ecmp / mine if ecmp and mine else None,
            "speedup_over_best_hashed": best / mine if best and mine else None}
    return out


def write_json(path: Path, doc: dict) -> None:
    """doc as json.dumps(doc, indent=2) writes it (experiments/json_text.py: the same text),
    encoded whole before the file is opened, written piece by piece."""
    parts = json_text.pieces(doc)
    with path.open("w", encoding="utf-8") as f:
        f.writelines(parts)
        f.write("\n")


def _maybe(x, fmt) -> str:
    """A figure, or '-' where there is none (a program whose traffic the model does not
    know)."""
    return "-" if x is None else fmt(x)


def table(results: dict) -> str:
    """The table printed after a run: one row per routing; times in one unit per column
    with fixed decimals, rates in Gbit/s past 10,000 Mbit/s."""
    runs = results["runs"]
    emulated = any(r["mode"] == "emulated" for r in runs)
    fast = speedups(results)
    over_best = any(hashed(r["routing"]) and r["routing"] != "ecmp" for r in runs)
    bw = [[(j["algbw_mbps"], j["busbw_mbps"]) for j in r["jobs"] if "algbw_mbps" in j]
          for r in runs]
    unit, cells = rate_column([statistics.fmean(a for a, _ in b) if b else None for b in bw]
                              + [statistics.fmean(x for _, x in b) if b else None for b in bw])
    algbw, busbw = cells[:len(runs)], cells[len(runs):]
    cols = {"routing": [r["routing"] for r in runs], "mode": [r["mode"] for r in runs],
            "mean CCT": seconds_column([r["cct_mean_s"] for r in runs]),
            "ideal CCT": seconds_column([r["ideal_cct_s"] for r in runs]),
            "efficiency": [_maybe(r["efficiency"], lambda x: f"{x:.3f}") for r in runs],
            "vs ECMP": [_maybe(fast[(r["routing"], r["mode"])]["speedup_over_ecmp"],
                               lambda x: f"{x:.2f}x") for r in runs]}
    if over_best:
        cols["vs best hashed"] = [_maybe(fast[(r["routing"], r["mode"])]
                                         ["speedup_over_best_hashed"], lambda x: f"{x:.2f}x")
                                  for r in runs]
    cols["max flows/link"] = [str(r["max_link_flows"]) for r in runs]
    cols[f"algbw {unit}"], cols[f"busbw {unit}"] = algbw, busbw
    if emulated:
        cols["pred CCT"] = seconds_column([r.get("predicted_cct_mean_s") for r in runs])
        cols["pred err"] = [_maybe(r.get("prediction_error_fraction"), lambda x: f"{x:+.1%}")
                            for r in runs]
        cols["emulator"] = ["-" if r["mode"] != "emulated" else
                            f"flagged: {flag_reason(r)}" if flag_reason(r) else "faithful"
                            for r in runs]
    return "\n".join(_aligned(cols) + _notes(results, emulated, over_best))


def _aligned(cols: dict[str, list[str]]) -> list[str]:
    """A header, a rule and the rows: text columns left-aligned, figures right-aligned."""
    text = {"routing", "mode", "emulator"}
    width = {k: max(len(k), *(len(v) for v in vs)) for k, vs in cols.items()}
    def cell(k: str, v: str) -> str:
        return f"{v:<{width[k]}}" if k in text else f"{v:>{width[k]}}"
    head = "  ".join(cell(k, k) for k in cols).rstrip()
    rows = ["  ".join(cell(k, vs[i]) for k, vs in cols.items()).rstrip()
            for i in range(len(cols["routing"]))]
    return [head, "-" * len(head), *rows]


def _notes(results: dict, emulated: bool, over_best: bool) -> list[str]:
    rows = ["CCT: slowest job per iteration; ideal: the largest job's ideal; efficiency: the "
            "lowest job's ideal / mean CCT; vs ECMP: ECMP's mean CCT / this one's (above 1: "
            "faster)" + ("; vs best hashed: over the hashed scheme (ECMP, spray) of the "
                         "lowest mean CCT" if over_best else "")
            + "; algbw/busbw: mean over jobs (nccl-tests)."]
    its = [r for r in results["runs"] if "iteration_time_s" in r]
    if its:
        rows.append("iteration (first compute to last comm): " + "; ".join(
            f"{r['routing']} {seconds(r['iteration_time_s'])}"
            + (f" (ideal {seconds(r['ideal_iteration_time_s'])})"
               if "ideal_iteration_time_s" in r else "") for r in its))
    if emulated:
        rows.append("pred: the flow-level model of the same routing (the controller's epochs and "
                    "events replayed; ECMP: the spines its hash chose) and the goodput factor; "
                    "err = emulated / predicted - 1; emulator: the CPU monitor's verdict "
                    "(flagged: the emulator, not the fabric, may have set the time).")
    return rows


#: The metrics `--repeat`'s summary gives per routing: (label, function of a run and its
#: speed-ups, format).
REPEAT_METRICS = (("mean CCT (s)", lambda r, f: r["cct_mean_s"], "{:.4f}"),
                  ("efficiency", lambda r, f: r["efficiency"], "{:.3f}"),
                  ("vs ECMP", lambda r, f: f["speedup_over_ecmp"], "{:.2f}x"))


def repeat_summary(docs: list[dict]) -> str:
    """`--repeat N`'s summary: per routing (and mode) and metric, the min, median and max
    over the N repetitions' results.json documents."""
    values: dict[tuple[str, str, str], list[float]] = {}
    for doc in docs:
        fast = speedups(doc)
        for r in doc["runs"]:
            for label, get, _ in REPEAT_METRICS:
                v = get(r, fast[(r["routing"], r["mode"])])
                if v is not None:
                    values.setdefault((r["routing"], r["mode"], label), []).append(v)
    fmt = {label: f for label, _, f in REPEAT_METRICS}
    cols: dict[str, list[str]] = {"routing": [], "mode": [], "metric": [], "min": [],
                                  "median": [], "max": [], "n": []}
    for (routing, mode, label), vs in values.items():
        for k, v in (("routing", routing), ("mode", mode), ("metric", label),
                     ("min", fmt[label].format(min(vs))),
                     ("median", fmt[label].format(statistics.median(vs))),
                     ("max", fmt[label].format(max(vs))), ("n", str(len(vs)))):
            cols[k].append(v)
    text = {"routing", "mode", "metric"}
    width = {k: max([len(k), *map(len, vs)]) for k, vs in cols.items()}
    lines = ["  ".join(f"{k:<{width[k]}}" if k in text else f"{k:>{width[k]}}"
                       for k in cols).rstrip()]
    lines.append("-" * len(lines[0]))
    for i in range(len(cols["routing"])):
        lines.append("  ".join(f"{cols[k][i]:<{width[k]}}" if k in text
                               else f"{cols[k][i]:>{width[k]}}" for k in cols).rstrip())
    return f"over {len(docs)} repetitions (min / median / max):\n" + "\n".join(lines)


def short_status(status: str) -> str:
    """A solve's status as one short phrase: the statuses of a run's epochs that differ only
    in their numbers become one, with the numbers' range ("mixed: first-fit, first-fit (192
    to 1680 flows on ECMP)" for ten epochs of gff)."""
    head, sep, rest = status.partition("mixed: ")
    if not sep:
        return status
    groups: dict[str, list[int]] = {}
    for part in rest.split(", "):
        numbers = [int(n) for n in re.findall(r"\d+", part)]
        groups.setdefault(re.sub(r"\d+", "#", part), []).append(numbers[0] if numbers else 0)
    parts = []
    for shape, ns in groups.items():
        lo, hi = min(ns), max(ns)
        parts.append(shape.replace("#", str(lo) if lo == hi else f"{lo} to {hi}", 1)
                     .replace("#", ""))
    return "mixed: " + ", ".join(parts)

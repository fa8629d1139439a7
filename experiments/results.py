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

import json
import os
import platform
import statistics
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from traffic.collectives import JobPlan, JobSpec, bus_factor, unique_connections

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
        "conn_rate_mbps": {str(c): r for c, r in sorted(conn_rates_mbps.items())},
    }


def fairness(jobs: list[dict], reference_rate_mbps: float) -> dict:
    """The 2-layered max-min vector (our reading, traffic/metrics.py) from job rows:
    layer 1 = job efficiencies ascending; layer 2 = per job in that order, its connections'
    rates / reference rate, ascending."""
    order = sorted(jobs, key=lambda j: (j["efficiency"], j["name"]))
    return {"jobs": [j["name"] for j in order],
            "layer1": [j["efficiency"] for j in order],
            "layer2": [sorted(r / reference_rate_mbps for r in j["conn_rate_mbps"].values())
                       for j in order]}


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


def host_link_flows(plans: list[JobPlan]) -> int:
    """The most connections on one host link (a NIC's uplink or downlink)."""
    count: dict[tuple[str, str], int] = {}
    for c in unique_connections(plans):
        for key in (("out", c.src), ("in", c.dst)):
            count[key] = count.get(key, 0) + 1
    return max(count.values())


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


def write_json(path: Path, doc: dict) -> None:
    path.write_text(json.dumps(doc, indent=2) + "\n")


def _maybe(x, fmt) -> str:
    """A figure, or '-' where there is none (a program whose traffic the model does not
    know)."""
    return "-" if x is None else fmt(x)


def table(results: dict) -> str:
    """The table printed after a run: one row per routing."""
    emulated = any(r["mode"] == "emulated" for r in results["runs"])
    head = (f"{'routing':<14}{'mode':<10}{'mean CCT':>13}{'ideal CCT':>14}"
            f"{'efficiency':>11}{'max flows/link':>15}{'algbw Mbps':>11}{'busbw Mbps':>11}")
    if emulated:
        head += f"{'pred CCT (s)':>13}{'pred err':>9}  emulator"
    rows = [head, "-" * len(head)]
    for r in results["runs"]:
        bw = [(j["algbw_mbps"], j["busbw_mbps"]) for j in r["jobs"] if "algbw_mbps" in j]
        algbw = f"{statistics.fmean(a for a, _ in bw):.2f}" if bw else "-"
        busbw = f"{statistics.fmean(b for _, b in bw):.2f}" if bw else "-"
        row = (f"{r['routing']:<14}{r['mode']:<10}{seconds(r['cct_mean_s']):>13}"
               f"{_maybe(r['ideal_cct_s'], seconds):>14}"
               f"{_maybe(r['efficiency'], lambda x: f'{x:.3f}'):>11}"
               f"{r['max_link_flows']:>15d}{algbw:>11}{busbw:>11}")
        if emulated:
            ok = r.get("fidelity", {}).get("ok", True)
            row += (f"{_maybe(r.get('predicted_cct_mean_s'), seconds):>13}"
                    f"{_maybe(r.get('prediction_error_fraction'), lambda x: f'{x:+.1%}'):>9}  "
                    f"{'ok' if ok else 'SATURATED: emulator was the bottleneck'}")
        rows.append(row)
    rows.append("CCT: slowest job per iteration; ideal: the largest job's ideal; efficiency: the "
                "lowest job's ideal / mean CCT; algbw/busbw: mean over jobs (nccl-tests).")
    its = [r for r in results["runs"] if "iteration_time_s" in r]
    if its:
        rows.append("iteration (first compute to last comm): " + "; ".join(
            f"{r['routing']} {seconds(r['iteration_time_s'])}"
            + (f" (ideal {seconds(r['ideal_iteration_time_s'])})"
               if "ideal_iteration_time_s" in r else "") for r in its))
    if emulated:
        rows.append("pred: the flow-level model of the same routing (the controller's epochs and "
                    "events replayed; ECMP: the spines its hash chose) and the goodput factor; "
                    "err = emulated / predicted - 1.")
    return "\n".join(rows)

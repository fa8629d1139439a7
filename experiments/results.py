"""Step 6 of a run: turn measured (or predicted) iteration times into the results schema.

Pure code; emulated and predicted runs go through the same functions. Units live in key names.

- `cct_s[t]`: iteration t of the slowest job; `ideal_cct_s`: the slowest job's CCT on a
  non-blocking fabric (only host links limit, at the configured rate, from the flow-level
  model); `efficiency` = ideal_cct_s / cct_mean_s.
- `network_efficiency`: the mean over jobs of each job's ideal / mean CCT (each job counts
  once), and `fairness`: the 2-layered max-min vector (see traffic/metrics.py; our reading).
- per job, algbw and busbw follow nccl-tests: algbw = size / time, busbw = algbw x 2(n-1)/n
  for all-reduce, x (n-1)/n for all-gather, reduce-scatter and all-to-all.
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

from traffic.collectives import JobSpec, bus_factor

SCHEMA_VERSION = 1


def job_result(spec: JobSpec, cct_s: list[float], ideal: float,
               bytes_verified: bool | None, conn_rates_mbps: dict[int, float]) -> dict:
    """One job's row; `ideal` is its non-blocking CCT (s); conn rates feed the fairness vector."""
    mean = statistics.fmean(cct_s)
    algbw = spec.size_bytes * 8 / mean / 1e6
    return {
        "name": spec.name, "collective": spec.collective.value,
        "ranks_per_group": spec.group_size, "groups": len(spec.groups),
        "size_bytes": spec.size_bytes,
        "cct_s": cct_s, "cct_mean_s": mean, "ideal_cct_s": ideal, "efficiency": ideal / mean,
        "algbw_mbps": algbw, "busbw_mbps": algbw * bus_factor(spec.collective, spec.group_size),
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


def slowest_per_iteration(per_job: list[list[float]]) -> list[float]:
    """Iteration t's CCT of the slowest job that ran an iteration t."""
    n_iter = max(len(c) for c in per_job)
    return [max(c[t] for c in per_job if t < len(c)) for t in range(n_iter)]


def run_result(routing: str, mode: str, jobs: list[dict], max_link_flows: int,
               solve: dict, **extra) -> dict:
    """Aggregate per-job results into one run (one routing) of the results schema."""
    cct = slowest_per_iteration([j["cct_s"] for j in jobs])
    mean = statistics.fmean(cct)
    ideal = max(j["ideal_cct_s"] for j in jobs)
    return {"routing": routing, "mode": mode, "cct_s": cct, "cct_mean_s": mean,
            "ideal_cct_s": ideal, "efficiency": ideal / mean,
            "network_efficiency": statistics.fmean(j["efficiency"] for j in jobs),
            "max_link_flows": max_link_flows, "solve": solve, **extra, "jobs": jobs}


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
                             timeout=5).stdout
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


def write_json(path: Path, doc: dict) -> None:
    path.write_text(json.dumps(doc, indent=2) + "\n")


def table(results: dict) -> str:
    """The table printed after a run: one row per routing."""
    emulated = any(r["mode"] == "emulated" for r in results["runs"])
    head = (f"{'routing':<14}{'mode':<10}{'mean CCT (s)':>13}{'ideal CCT (s)':>14}"
            f"{'efficiency':>11}{'max flows/link':>15}{'algbw Mbps':>11}{'busbw Mbps':>11}")
    if emulated:
        head += f"{'pred CCT (s)':>13}{'pred err':>9}  emulator"
    rows = [head, "-" * len(head)]
    for r in results["runs"]:
        algbw = statistics.fmean(j["algbw_mbps"] for j in r["jobs"])
        busbw = statistics.fmean(j["busbw_mbps"] for j in r["jobs"])
        row = (f"{r['routing']:<14}{r['mode']:<10}{r['cct_mean_s']:>13.3f}"
               f"{r['ideal_cct_s']:>14.3f}{r['efficiency']:>11.3f}"
               f"{r['max_link_flows']:>15d}{algbw:>11.2f}{busbw:>11.2f}")
        if emulated:
            ok = r.get("fidelity", {}).get("ok", True)
            row += (f"{r['predicted_cct_mean_s']:>13.3f}{r['prediction_error']:>+9.1%}  "
                    f"{'ok' if ok else 'SATURATED: emulator was the bottleneck'}")
        rows.append(row)
    rows.append("CCT: slowest job per iteration; algbw/busbw: mean over jobs (nccl-tests).")
    if emulated:
        rows.append("pred: the flow-level model of the same routing (the controller's epochs and "
                    "events replayed; ECMP: the spines its hash chose) and the goodput factor; "
                    "err = emulated / predicted - 1.")
    return "\n".join(rows)

"""`run`: one experiment on the real emulated fabric, once per routing, same fabric and workload.

The steps, each in its own module:

    config (experiments/config.py) -> fabric (testbed/net.py) -> routes (routing/) ->
    rules (routing/rules.py, testbed/installer.py) -> traffic (traffic/driver.py, agent.py) ->
    measure (paths from OVS counters, experiments/results.py) -> teardown (testbed/net.py)

Everything that can be checked without root (config, routes, rules) is computed before the
fabric is built, so bad input changes nothing on the machine.
"""
from __future__ import annotations

import csv
import os
import statistics
import time
from pathlib import Path
from typing import Callable

import yaml

from routing import route
from routing.base import link_flow_counts, max_link_flows
from routing.rules import COOKIE_BASE, rules_for
from testbed.installer import flow_bytes_by_cookie, install
from testbed.monitor import CpuMonitor
from testbed.net import EmulatedFabric, EmulationSettings
from traffic.collectives import Connection, JobPlan, plan_jobs
from traffic.driver import JobRecord, TrafficDriver
from traffic.goodput import goodput_factor
from traffic.predictor import ideal, predict

from .config import Experiment
from .plots import emulated_vs_predicted
from .results import (environment, fairness, job_result, run_result, slowest_per_iteration,
                      table, write_json)


class PathMismatchError(RuntimeError):
    """A statically routed flow crossed a spine other than the one it was given."""


def observed_spines(fabric, conns: list[Connection]) -> dict[int, dict]:
    """Which spine each inter-leaf connection crossed, from the spines' per-flow counters."""
    counts = {s: flow_bytes_by_cookie(s) for s in fabric.spines}
    out: dict[int, dict] = {}
    for c in conns:
        if fabric.leaf_of(c.src) == fabric.leaf_of(c.dst):
            continue
        per_spine = {s: counts[s].get(COOKIE_BASE + c.conn_id, 0) for s in fabric.spines}
        crossed = [s for s, b in per_spine.items() if b > 0]
        out[c.conn_id] = {"spine": max(per_spine, key=per_spine.get) if crossed else None,
                          "spines_with_bytes": crossed,
                          "bytes": per_spine}
    return out


def measured_conn_rates(plan: JobPlan, record: JobRecord) -> dict[int, float]:
    """Per connection: bytes received / time a transfer was in flight (Mbit/s), all iterations."""
    conn_of = {t.tid: t.conn_id for t in plan.transfers}
    size_of = {t.tid: t.size_bytes for t in plan.transfers}
    bits: dict[int, float] = {}
    busy: dict[int, float] = {}
    for it in record.iterations:
        for tid, first, last in it.transfers:
            c = conn_of[tid]
            bits[c] = bits.get(c, 0.0) + size_of[tid] * 8
            busy[c] = busy.get(c, 0.0) + (last - first)
    return {c: bits[c] / busy[c] / 1e6 for c in bits if busy[c] > 0}


def write_transfers_csv(path: Path, plans, records) -> None:
    """Every transfer's first and last byte, in seconds from its iteration's start."""
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["job", "iteration", "tid", "step", "conn_id", "size_bytes",
                    "first_byte_s", "last_byte_s"])
        for p in plans:
            by_tid = {t.tid: t for t in p.transfers}
            for it in records[p.name].iterations:
                for tid, first, last in it.transfers:
                    t = by_tid[tid]
                    w.writerow([p.name, it.iteration, tid, t.step, t.conn_id, t.size_bytes,
                                f"{first - it.start_s:.6f}", f"{last - it.start_s:.6f}"])


def run_experiment(exp: Experiment, out_dir: Path,
                   log: Callable[[str], None] = print) -> dict:
    """Run every routing of `exp` on one emulated fabric; write and return results.json."""
    out_dir.mkdir(parents=True, exist_ok=True)
    plans = plan_jobs(exp.jobs)
    conns = [c for p in plans for c in p.connections]
    # everything pure first: a routing that cannot be computed fails before any build
    routed = {name: route(name, exp.fabric, conns, seed=exp.seed) for name in exp.routing}
    all_rules = {name: rules_for(exp.fabric, conns, name, rp.spine_of)
                 for name, rp in routed.items()}
    (out_dir / "config.yaml").write_text(yaml.safe_dump(exp.resolved(), sort_keys=False))
    (out_dir / "fabric.txt").write_text(exp.fabric.draw() + "\n")
    em = exp.emulation
    ideal_pred = ideal(exp.fabric, plans)
    slowest_ideal_s = max(j.mean_cct_s for j in ideal_pred.jobs.values())
    timeout_s = em.iteration_timeout_s or 20 * slowest_ideal_s + 30.0
    run_id = f"{os.getpid()}-{int(time.time())}"
    results = {"schema_version": 1, "name": exp.name, "seed": exp.seed, "runs": []}
    settings = EmulationSettings(datapath=em.datapath, mtu_bytes=em.mtu_bytes,
                                 queue_packets=em.queue_packets)

    log(f"building {exp.fabric.spec.leaves}x{exp.fabric.spec.spines} leaf-spine, "
        f"{len(exp.fabric.hosts)} hosts")
    with EmulatedFabric(exp.fabric, run_id, settings) as emu:
        results["environment"] = environment(emu.datapath, em.tcp_cc, exp.seed, em.mtu_bytes)
        results["environment"]["ovs_send_buffer_bytes"] = emu.send_buffer_bytes
        goodput, source = goodput_factor(emu.datapath, em.mtu_bytes, em.tcp_cc)
        results["environment"]["goodput_factor"] = goodput
        results["environment"]["goodput_factor_source"] = source
        write_json(out_dir / "environment.json", results["environment"])
        for name in exp.routing:
            rp = routed[name]
            run_dir = out_dir / name
            installed = install(all_rules[name], run_dir / "rules")
            log(f"[{name}] {installed['rules']} rules on {installed['switches']} switches in "
                f"{installed['install_s']:.2f} s; running {len(plans)} jobs")
            driver = TrafficDriver(emu, plans, exp.seed, em.tcp_cc, timeout_s, run_dir / "logs")
            try:
                driver.start_agents()
                driver.connect()
                with CpuMonitor() as monitor:
                    records = driver.run_jobs()
            finally:
                driver.stop_agents()
            fidelity = monitor.summary()
            write_transfers_csv(run_dir / "transfers.csv", plans, records)
            seen = observed_spines(exp.fabric, conns)
            if name != "ecmp":
                wrong = [(cid, rp.spine_of[cid], o["spines_with_bytes"])
                         for cid, o in seen.items() if o["spines_with_bytes"] != [rp.spine_of[cid]]]
                if wrong:
                    raise PathMismatchError(
                        f"[{name}] {len(wrong)} flows left their planned spine, e.g. conn "
                        f"{wrong[0][0]} planned {wrong[0][1]}, seen on {wrong[0][2]}")
            observed = {cid: o["spine"] for cid, o in seen.items()}
            # predict with the paths the flows really took (the plan, verified above, or
            # what the switches' hash chose), so that both sides compare like with like
            paths = {c.conn_id: observed.get(c.conn_id) for c in conns}
            pred = predict(exp.fabric, plans, paths, goodput)
            jobs = [job_result(p.spec, [it.cct_s for it in records[p.name].iterations],
                               ideal_pred.jobs[p.name].mean_cct_s, records[p.name].verified,
                               measured_conn_rates(p, records[p.name]))
                    for p in plans]
            loads = link_flow_counts(exp.fabric, conns, observed)
            for j in jobs:
                j["predicted_cct_s"] = pred.jobs[j["name"]].cct_s
                j["predicted_cct_mean_s"] = pred.jobs[j["name"]].mean_cct_s
                j["prediction_error"] = j["cct_mean_s"] / j["predicted_cct_mean_s"] - 1
            predicted_cct = slowest_per_iteration([j["predicted_cct_s"] for j in jobs])
            run = run_result(
                name, "emulated", jobs, max_link_flows(exp.fabric, conns, observed),
                rp.stats.as_dict(),
                fairness=fairness(jobs, exp.fabric.spec.host_link_mbps),
                fidelity=fidelity,
                predicted_cct_s=predicted_cct,
                predicted_cct_mean_s=statistics.fmean(predicted_cct),
                rules={"switches": installed["switches"], "rules": installed["rules"],
                       "install_s": installed["install_s"]},
                paths=[{"conn_id": c.conn_id, "job": c.job, "src": c.src, "dst": c.dst,
                        "src_port": c.src_port, "dst_port": c.dst_port,
                        "planned_spine": None if name == "ecmp" else rp.spine_of[c.conn_id],
                        "observed_spine": observed.get(c.conn_id),
                        "spine_bytes": seen.get(c.conn_id, {}).get("bytes")}
                       for c in conns],
                link_flows=[{"link": list(k), "flows": v} for k, v in sorted(loads.items())])
            run["prediction_error"] = run["cct_mean_s"] / run["predicted_cct_mean_s"] - 1
            results["runs"].append(run)
            log(f"[{name}] mean CCT {run['cct_mean_s']:.3f} s (predicted "
                f"{run['predicted_cct_mean_s']:.3f} s), efficiency {run['efficiency']:.3f}, "
                f"max flows per link {run['max_link_flows']}, emulator "
                f"{'ok' if fidelity['ok'] else 'SATURATED'} (ovs-vswitchd max "
                f"{fidelity['vswitchd_max_pct']:.0f}% of a core)")
            write_json(out_dir / "results.json", results)
    write_json(out_dir / "results.json", results)
    emulated_vs_predicted(results, out_dir / "emulated_vs_predicted.png")
    log(table(results))
    log(f"results: {out_dir / 'results.json'}")
    return results

"""`predict`: the flow-level model of an experiment, per routing, at any scale and without root.

config -> fabric model -> routes (routing/, recomputed at every epoch and event as the live
controller does: experiments/routes.py) -> max-min fluid simulation (traffic/predictor.py)
-> results in the same schema as `run`, with "mode": "predicted", plus per routing
`fct.csv` (every transfer's mean and max FCT over iterations) and `links.csv` (each used
directed link's time-weighted mean and max utilization of its nominal capacity).
"""
from __future__ import annotations

import contextlib
import csv
import itertools
from pathlib import Path

import numpy as np
from typing import Callable


from routing import route
from routing.base import RoutingError, link_flow_counts, max_link_flows
from routing.replay import read_flow_log, route_replay
from traffic.collectives import JobPlan, Transfers, unique_connections, with_port_offset
from traffic.predictor import Prediction, ideal, predict
from traffic.metrics import fabric_leaf_pairs, link_load_imbalance

from .config import ConfigError, Experiment, config_text
from .outdir import writing
from .csv_text import csv_text, formatted, labelled_rows
from .progress import PredictionProgress
from .routes import ControllerRoutes
from .routing_entry import NONBLOCKING
from .results import (CONN_RATES_INLINE, SCHEMA_VERSION, add_nonblocking_fraction, fairness,
                      host_link_flows, job_result, run_result, short_status, solve_block,
                      spilled, table,
                      workload_times, write_json)


def _bytes(x: float) -> str:
    """A part's bytes: whole for fixed parts, to 0.1 B for an adaptive split's fluid share."""
    return f"{x:.0f}" if x == int(x) else f"{x:.1f}"


def _bytes_column(x: np.ndarray) -> list:
    """`_bytes` of every part; ints as they are when all are whole (str of a whole number is
    its "%.0f")."""
    if x.dtype.kind in "iu":
        return x.tolist()
    if x.size and np.all(x == np.floor(x)) and float(np.abs(x).max()) < 2.0 ** 53 \
            and not np.signbit(x).any():
        return x.astype(np.int64).tolist()
    return [_bytes(v) for v in x.tolist()]


def _tid_step_conn(plan: JobPlan) -> tuple[list[int], list[int], list[int]]:
    """The tid, step and conn_id of each transfer, in order (Transfers: from its arrays)."""
    ts = plan.transfers
    if isinstance(ts, Transfers):
        return ts.tid.tolist(), ts.step.tolist(), ts.conn.tolist()
    return [t.tid for t in ts], [t.step for t in ts], [t.conn_id for t in ts]


#: Past this many transfers per iteration, fct.csv (a ~80-byte row per transfer, ~0.8 GB
#: here) gives way to fct_jobs.csv, a row per job (`report` reads CSVs up to 2 GiB).
MAX_FCT_ROWS = 10_000_000


def write_prediction_csvs(run_dir: Path, plans: list[JobPlan], pred: Prediction,
                          flows: dict | None = None) -> None:
    """Per transfer FCTs (fct.csv; per job, fct_jobs.csv, past MAX_FCT_ROWS transfers), per
    directed link utilization and flows (links.csv; `flows`: (src, dst) -> flows on the
    link, a planner's most over its epochs; None when no plan says) and, when the prediction was binned,
    each used link's utilization over time (links_over_time.csv)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    if sum(len(p.transfers) for p in plans) > MAX_FCT_ROWS:
        _write_job_fcts(run_dir / "fct_jobs.csv", plans, pred)
    else:
        _write_fcts(run_dir / "fct.csv", plans, pred)
    _write_links(run_dir, pred, flows)


def _write_fcts(path: Path, plans: list[JobPlan], pred: Prediction) -> None:
    """fct.csv: every transfer's bytes and mean and max FCT over iterations."""
    with writing(path), path.open("w", newline="") as f:
        f.write(csv_text([["job", "tid", "step", "conn_id", "size_bytes", "fct_mean_s",
                           "fct_max_s"]]))
        for p in plans:
            jr = pred.jobs[p.name]
            f.write(labelled_rows(p.name, *_tid_step_conn(p),
                                  _bytes_column(np.asarray(jr.transfer_bytes)),
                                  formatted(jr.fct_mean_s, "{:.9f}"),
                                  formatted(jr.fct_max_s, "{:.9f}")))


def _write_job_fcts(path: Path, plans: list[JobPlan], pred: Prediction) -> None:
    """fct_jobs.csv: per job, its transfers, their bytes, and the mean, median and max over
    them of each transfer's mean FCT over iterations, and the largest FCT of any."""
    with writing(path), path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["job", "transfers", "size_bytes", "fct_mean_s", "fct_median_s",
                    "fct_mean_max_s", "fct_max_s"])
        for p in plans:
            jr = pred.jobs[p.name]
            m = jr.fct_mean_s
            stats = (m.mean(), np.median(m), m.max(), jr.fct_max_s.max()) if m.size \
                else (0.0,) * 4
            w.writerow([p.name, m.size, _bytes(float(jr.transfer_bytes.sum())),
                        *(f"{x:.9f}" for x in stats)])


def _write_links(run_dir: Path, pred: Prediction, flows: dict | None = None) -> None:
    """links.csv (`flows` empty where no plan says), and links_over_time.csv when the
    prediction was binned."""
    with writing(run_dir / "links.csv"), (run_dir / "links.csv").open("w", newline="") as f:
        used = np.flatnonzero(np.asarray(pred.link_max_util) > 0)
        links = [pred.links[i] for i in used.tolist()]
        f.write(csv_text(itertools.chain(
            [["src", "dst", "capacity_mbps", "mean_utilization", "max_utilization", "flows"]],
            zip((u for u, _ in links), (v for _, v in links),
                formatted(np.asarray(pred.link_capacity_mbps)[used], "{:g}"),
                formatted(np.asarray(pred.link_mean_util)[used], "{:.6f}"),
                formatted(np.asarray(pred.link_max_util)[used], "{:.6f}"),
                [""] * len(links) if flows is None else [flows.get(e, 0) for e in links]))))
    if pred.link_util_series is not None:
        used = [i for i in range(len(pred.links)) if pred.link_max_util[i] > 0]
        path = run_dir / "links_over_time.csv"
        with writing(path), path.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["bin_start_s", "src", "dst", "mean_utilization"])
            for b, row in enumerate(pred.link_util_series):
                for i in used:
                    w.writerow([f"{b * pred.util_bin_s:.6f}", *pred.links[i],
                                f"{row[i]:.6f}"])


#: Past this many (job, connection) rates in a run, conn_rates.csv (a ~45-byte row each; SimAI's
#: 9,216-GPU file as flows: 130 M rows, 6.2 GB) gives way to conn_rates_jobs.csv, a row per job.
MAX_CONN_RATE_ROWS = 10_000_000
RATES_HEADER = ["job", "conn_id", "rate_mbps"]
JOB_RATES_HEADER = ["job", "connections", "rate_mbps_mean", "rate_mbps_median",
                    "rate_mbps_min", "rate_mbps_max"]


def _job_rows(plans: list[JobPlan], pred: Prediction, ideal_pred: Prediction,
              times: bool, rates_csv: Path | None = None) -> list[dict]:
    """Each job's row; `times` (imported workloads' streams): with when its iterations
    started and ended (s from the run's start). `rates_csv`: the connections' rates go to
    this CSV (conn_rates.csv: job, conn_id, rate_mbps; conn_rates_jobs.csv: per job, its
    connections and the mean, median, min and max of their rates) and the rows'
    conn_rate_mbps stay empty."""
    rows = []
    per_job = rates_csv is not None and rates_csv.name == "conn_rates_jobs.csv"
    with contextlib.ExitStack() as stack:
        out = None
        if rates_csv is not None:
            rates_csv.parent.mkdir(parents=True, exist_ok=True)
            stack.enter_context(writing(rates_csv))
            out = csv.writer(stack.enter_context(rates_csv.open("w", newline="")))
            out.writerow(JOB_RATES_HEADER if per_job else RATES_HEADER)
        summaries: dict[tuple, tuple] = {}     # per_job: by the arrays the rates come from
        for p in plans:
            jr = pred.jobs[p.name]
            if per_job:
                n, stats, total = _rate_summary(jr, summaries)
                out.writerow([p.name, n, *stats])
            else:
                conns, rates = (x.tolist() for x in jr.conn_rates())
                total = sum(rates)
                if out is not None:
                    out.writerows(zip(itertools.repeat(p.name), conns, rates))
            row = job_result(p.spec, jr.cct_s, ideal_pred.jobs[p.name].mean_cct_s, None,
                             {} if out is not None else dict(zip(conns, rates)),
                             throughput_mbps=total)
            if times:
                row["iteration_start_s"] = jr.iteration_start_s
                row["iteration_end_s"] = jr.iteration_end_s
            rows.append(row)
    return rows


def _rate_summary(jr, summaries: dict[tuple, tuple]) -> tuple[int, list[str], float]:
    """A job's connections, their rates' _rate_stats and sum (Mbit/s); jobs whose results
    hold the same arrays (a replayed solo job's: traffic/predictor_replay.py) share one
    summary in `summaries` (the arrays kept there, so their ids stay theirs)."""
    key = (id(jr.transfer_conn), id(jr.transfer_bytes), id(jr.fct_mean_s))
    if key not in summaries:
        rates = jr.conn_rates()[1].tolist()
        summaries[key] = (len(rates), _rate_stats(np.array(rates)), sum(rates),
                          (jr.transfer_conn, jr.transfer_bytes, jr.fct_mean_s))
    return summaries[key][:3]


def _rate_stats(rates: np.ndarray) -> list[str]:
    """Mean, median, min and max of a job's connection rates (Mbit/s; inf: never busy)."""
    if not rates.size:
        return ["0"] * 4
    return [repr(float(x)) for x in (rates.mean(), np.median(rates), rates.min(),
                                     rates.max())]


def _rates_csv(run_dir: Path, rows: int) -> Path | None:
    """Where a run's connection rates go past CONN_RATES_INLINE (job, connection) rows (else
    None): one row each, or one per job past MAX_CONN_RATE_ROWS."""
    if rows > MAX_CONN_RATE_ROWS:
        return run_dir / "conn_rates_jobs.csv"
    return run_dir / "conn_rates.csv" if rows > CONN_RATES_INLINE else None


def _iteration(exp: Experiment, jobs: list[dict], ideal_pred: Prediction) -> dict:
    """An imported workload's iteration time beside its ideal (experiments/results.py)."""
    if exp.workload is None:
        return {}
    return workload_times(exp.workload, jobs, {n: jr.iteration_end_s[-1]
                                               for n, jr in ideal_pred.jobs.items()})


def _nonblocking_run(exp: Experiment, plans: list[JobPlan], goodput_factor: float,
                     util_bin_s: float | None, run_dir: Path, log: Callable[[str], None]) -> dict:
    """The non-blocking reference: every flow crosses only its two host links."""
    pred = ideal(exp.fabric, plans, goodput_factor, util_bin_s=util_bin_s)
    rates_csv = _rates_csv(run_dir, sum(len(p.connections) for p in plans))
    jobs = _job_rows(plans, pred, pred, exp.workload is not None, rates_csv)
    run = run_result(NONBLOCKING, "predicted", jobs, host_link_flows(plans, exp.fabric),
                     {"scope": "one plan", "status": "reference", "time_s": 0.0},
                     fairness=fairness(jobs, exp.fabric.spec.host_link_mbps),
                     predict_wall_s=pred.wall_s, predict_kernels=pred.stats["kernels"],
                     **_iteration(exp, jobs, pred))
    write_prediction_csvs(run_dir, plans, pred)
    if rates_csv is not None:
        spilled(run, f"{run_dir.name}/{rates_csv.name}")
    links = "host links and NVLink" if exp.fabric.server_of else "host links"
    log(f"[{NONBLOCKING}] one switch, {links} only; predicted in {pred.wall_s:.2f} s")
    return run


#: results.json's `solve` of per-packet spraying: nothing is solved, the switches spray.
PER_PACKET_SOLVE = {"status": "per-packet", "time_s": 0.0}


def _routes(exp: Experiment, entry, conns: list) -> tuple:
    """(the one plan made before the run or None, the controller's routes in model time).
    One plan: ECMP's hash, the fixed host-enforced plan, or floodns's logged paths; the
    other strategies are solved at every epoch by the policy; per-packet spraying needs no
    routes (the router only carries the fabric's events)."""
    rp = None
    if entry.hashed or entry.host_enforced:
        rp = route(entry.strategy, exp.fabric, conns, seed=exp.seed)
    elif entry.replayed:
        rp = route_replay(exp.fabric, conns, exp.replay_flows or read_flow_log(exp.replay_log))
    routes = ControllerRoutes(entry.routed_by, exp.fabric, conns, exp.seed, exp.events,
                              static=rp.path_of if entry.fixed else None,
                              time_limit_s=exp.solver_time_limit_s,
                              hashed=rp.path_of if entry.hashed else None)
    return rp, routes


def sprayed_link_flows(fabric, conns: list) -> int:
    """The most connections whose packets cross one link when each is sprayed over every
    live shortest path of its leaf pair."""
    count: dict[int, int] = {}
    for c in conns:
        for p in range(1, fabric.planes + 1):      # packets spread over every NIC port too
            a, b = fabric.leaf_at(c.src, p), fabric.leaf_at(c.dst, p)
            for i, _ in (fabric.spray_shares(a, b) if a != b else ()):
                count[i] = count.get(i, 0) + 1
    return max(count.values(), default=0)


def check_predictable(exp: Experiment) -> None:
    """ConfigError unless `exp` has jobs to model (program jobs model their `traffic`)."""
    if not exp.jobs:
        raise ConfigError("jobs: the program jobs declare no traffic, so `predict` has nothing "
                          "to model; give them traffic: sections, or `run` them")


def predict_experiment(exp: Experiment, out_dir: Path, goodput_factor: float = 1.0,
                       log: Callable[[str], None] = print,
                       util_bin_s: float | None = None, repetition: int = 1,
                       port_offset: int = 0) -> dict:
    """Predict every routing of `exp`; write and return results.json. `util_bin_s`: also
    write each used link's utilization per time bin of that many seconds. `port_offset`
    shifts every source port (ECMP hashes them: each repetition its own outcome). `out_dir` is
    checked by the CLI (experiments/outdir.py); an OSError while writing names its file."""
    check_predictable(exp)
    out_dir.mkdir(parents=True, exist_ok=True)
    with writing(out_dir / "config.yaml"):
        (out_dir / "config.yaml").write_text(config_text(exp.resolved()))
    plans = exp.plans()
    if port_offset:
        plans = with_port_offset(plans, port_offset, emulated=False)
    conns = unique_connections(plans)
    pairs = fabric_leaf_pairs(exp.fabric, conns)
    ideal_pred = ideal(exp.fabric, plans)
    results = {"schema_version": SCHEMA_VERSION, "name": exp.name, "seed": exp.seed,
               "goodput_factor": goodput_factor, "repetition": repetition,
               "source_port_offset": port_offset,
               **({"workload": exp.workload.as_dict()} if exp.workload is not None else {}),
               "runs": []}
    for entry in exp.routings:
        name = entry.name
        if entry.reference:
            results["runs"].append(_nonblocking_run(exp, plans, goodput_factor, util_bin_s,
                                                    out_dir / entry.run_dir, log))
            continue
        try:
            rp, routes = _routes(exp, entry, conns)
            if routes.policy.places_flows:
                routes.track_links()        # links.csv's flows: each link's most per epoch
            follow = PredictionProgress(name)
            pred = predict(exp.fabric, plans, None, goodput_factor, util_bin_s=util_bin_s,
                           router=routes, semantics=exp.semantics, spray=entry.per_packet,
                           progress=follow if follow.on and log is print else None)
            follow.end()
        except RoutingError as e:
            raise ConfigError(f"routing: {e}") from None
        rates_csv = _rates_csv(out_dir / entry.run_dir, sum(len(p.connections) for p in plans))
        jobs = _job_rows(plans, pred, ideal_pred, exp.workload is not None, rates_csv)
        # the busiest link over the controller's epochs (ECMP and fixed plans: the one plan;
        # per-packet spraying: every flow on every link of its paths)
        peak = (routes.policy.peak_link_flows if routes.policy.places_flows
                else sprayed_link_flows(exp.fabric, conns) if entry.per_packet
                else max_link_flows(exp.fabric, conns, rp.path_of))
        run = run_result(name, "predicted", jobs, peak,
                         solve_block(rp.stats.as_dict() if rp else PER_PACKET_SOLVE,
                                     routes.policy.solves),
                         fairness=fairness(jobs, exp.fabric.spec.host_link_mbps),
                         link_load_imbalance=link_load_imbalance(pred, exp.fabric, pairs),
                         predict_wall_s=pred.wall_s, predict_kernels=pred.stats["kernels"],
                         **_iteration(exp, jobs, ideal_pred))
        write_prediction_csvs(out_dir / entry.run_dir, plans, pred, routes.link_peak
                              if routes.link_peak is not None else None if rp is None
                              else link_flow_counts(exp.fabric, conns, rp.path_of))
        if rates_csv is not None:
            spilled(run, f"{entry.run_dir}/{rates_csv.name}")
        results["runs"].append(run)
        solve = run["solve"]
        log(f"[{name}] " + (f"solved {solve['count']} epochs in {solve['time_s']:.3f} s "
                            f"(max {solve['time_s_max']:.3f} s, {short_status(solve['status'])})"
                            if solve["scope"] == "epochs" else
                            f"one plan in {solve['time_s']:.3f} s ({solve['status']})")
            + f"; predicted in {pred.wall_s:.2f} s")
    add_nonblocking_fraction(results)
    with writing(out_dir / "results.json"):
        write_json(out_dir / "results.json", results)
    log(table(results))
    log(f"results: {out_dir / 'results.json'}")
    return results

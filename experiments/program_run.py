"""One routing of program jobs on the live fabric (traffic/programs.py): the runner's steps
for programs instead of agents.

install (the controller and its rules: the programs' declared traffic pinned per host pair,
every pair counted at its source leaf) -> run the ranks (traffic/program_driver.py; with
`demand: measured` the controller learns the traffic first: experiments/learner.py) ->
measure (the switch counters: which path each host pair took) -> predict (the model of each
program's declared or learned traffic under the same policy) -> the results record: per
program its steps (slowest rank each), beside the model's step time.
"""
from __future__ import annotations

import statistics
from pathlib import Path
from typing import Callable

from routing.base import max_link_flows
from testbed.installer import settle_flow_stats
from testbed.rankns import hosts_file_text
from traffic.collectives import JobPlan, bus_factor
from traffic.program_driver import ProgramDriver, ProgramRecord
from traffic.predictor import Prediction

from .config import Experiment
from .measure import observed_paths, switch_counts
from .results import fairness, solve_block
from .routing_entry import RoutingEntry


def run_program_routing(exp: Experiment, emu, entry: RoutingEntry, rp, plans: list[JobPlan],
                        ideal_pred, goodput: float, run_dir: Path,
                        log: Callable[[str], None], port_offset: int = 0) -> dict:
    """Install, run the programs under the controller, measure, predict, assemble."""
    from .runner import (Measured, install, learns, monitor_verdict, predict_policy,
                         verify_paths)
    inst = install(exp, emu, entry, rp, plans, run_dir, log, port_offset)
    controller = inst.controller
    hosts = run_dir / "hosts"
    hosts.write_text(hosts_file_text({h: exp.fabric.ip_of(h) for h in exp.fabric.hosts}))
    driver = ProgramDriver(emu, exp.programs, run_dir / "logs", hosts)
    learner = None
    if learns(exp, entry):
        from .learner import DemandLearner
        learner = DemandLearner(controller, exp, log)
    try:
        with emu.cpu_monitor() as monitor:
            records = driver.run(
                on_start=controller.jobs_started if learner is None else learner.jobs_started,
                on_finish=(controller.job_finished if learner is None
                           else learner.job_finished),
                on_step=_progress(entry.name, log, learner), tick=learner and learner.tick)
    finally:
        driver.stop()
    fidelity = monitor_verdict(exp, monitor, run_dir)
    settle_flow_stats()
    every = controller.fabric_all
    counts = switch_counts(every)
    conns = [c for p in inst.plans for c in p.connections]
    flows = observed_paths(every, conns, counts)
    if entry.paths_given and learner is None:
        verify_paths(entry.name, controller, flows)
    measured = Measured(every, counts, flows, {cid: o["path"] for cid, o in flows.items()})
    pred = predict_policy(exp, entry, rp, inst, goodput, measured) if inst.plans else None
    jobs = [program_row(exp, rec, pred, ideal_pred, learner) for rec in records.values()]
    if learner is not None:
        learned_models(exp, jobs, learner, goodput)
    run = assemble_programs(exp, entry, rp, controller, jobs, fidelity, learner)
    if not controller.policy.places_flows:   # ECMP: the busiest link the counters saw
        run["max_link_flows"] = max_link_flows(exp.fabric, conns, measured.observed)
    return run


def _progress(name: str, log: Callable[[str], None], learner):
    """Each step record: the learner counts it; every 5th step of a job a progress line."""
    def on_step(job: str, step: int, t: float) -> None:
        if learner is not None:
            learner.step(job, step, t)
        if step % 5 == 0:
            log(f"[{name}] {job} step {step} at {t:.1f} s")
    return on_step


def program_row(exp: Experiment, rec: ProgramRecord, pred: Prediction | None, ideal_pred,
                learner) -> dict:
    """One program job's record: its steps and step times, and where the model knows its
    traffic (declared, or learned), the model's step time, ideal and efficiency."""
    spec = next(p for p in exp.programs if p.name == rec.name)
    times = [s["time_s"] for s in rec.steps] or [rec.wall_s]   # no records: the wall time
    row = {"name": rec.name, "kind": "program", "ranks": spec.ranks, "hosts": list(spec.hosts),
           "argv": list(spec.argv), "exit_codes": rec.exit_codes, "wall_s": rec.wall_s,
           "steps": rec.steps, "bad_step_lines": rec.bad_step_lines,
           "timed_by": "steps" if rec.steps else "wall",
           "cct_s": times, "cct_mean_s": statistics.fmean(times),
           "iteration_end_s": [s["at_s"] for s in rec.steps] or [rec.ended_s],
           "cct_median_s": statistics.median(times),
           "traffic": None, "ideal_cct_s": None, "efficiency": None,
           "predicted_cct_mean_s": None, "prediction_error_fraction": None,
           "conn_rate_mbps": {}}
    modelled = {j.name for j in exp.jobs}
    if rec.name in modelled and pred is not None:
        row["traffic"] = "declared"
        model = next(j for j in exp.jobs if j.name == rec.name)
        _model(row, model, pred.jobs[rec.name].mean_cct_s,
               ideal_pred.jobs[rec.name].mean_cct_s)
    if learner is not None:
        row.update(learner.job_record(rec, row))
    return row


def learned_models(exp: Experiment, jobs: list[dict], learner, goodput: float) -> None:
    """The model of what the controller learned, every learned job together (they share the
    fabric): each one's step time as the hash routed it while learning and as the plan
    routes it, and the error of its steps after the plan against the latter."""
    from traffic.collectives import plan_jobs
    from traffic.predictor import ideal, predict
    from .learner import learned_job, model_paths
    specs = [s for s in (learned_job(row["name"], learner.matrix(row["name"])) for row in jobs
                         if row["name"] in learner.planned_at) if s is not None]
    if not specs:
        return
    plans = plan_jobs(specs)
    before, after = model_paths(learner, plans)
    hashed = predict(exp.fabric, plans, before, goodput)
    placed = predict(exp.fabric, plans, after, goodput)
    alone = ideal(exp.fabric, plans, goodput)
    for spec in specs:
        row = next(r for r in jobs if r["name"] == spec.name)
        _model(row, spec, placed.jobs[spec.name].mean_cct_s, alone.jobs[spec.name].mean_cct_s)
        row["traffic"] = "learned"
        row["predicted_before_cct_mean_s"] = hashed.jobs[spec.name].mean_cct_s
        _, steps_after = learner.after_plan(row["name"], row["steps"])
        row["prediction_error_fraction"] = (statistics.fmean(steps_after)
                                            / row["predicted_cct_mean_s"] - 1
                                            if steps_after else None)


def _model(row: dict, spec, predicted_s: float, ideal_s: float) -> None:
    """The model's step time and ideal beside the measured steps; algbw and busbw (nccl-tests)
    of the traffic it knows (`spec`, a JobSpec)."""
    row["predicted_cct_mean_s"], row["ideal_cct_s"] = predicted_s, ideal_s
    row["efficiency"] = ideal_s / row["cct_mean_s"]
    row["prediction_error_fraction"] = row["cct_mean_s"] / predicted_s - 1
    row.update(collective=spec.collective.value, size_bytes=spec.size_bytes,
               ranks_per_group=spec.group_size, groups=len(spec.groups))
    row["algbw_mbps"] = spec.size_bytes * 8 / row["cct_mean_s"] / 1e6
    row["busbw_mbps"] = row["algbw_mbps"] * bus_factor(spec.collective, spec.group_size)


def assemble_programs(exp: Experiment, entry: RoutingEntry, rp, controller, jobs: list[dict],
                      fidelity: dict, learner) -> dict:
    """The run's record, as run_result's for collectives where the model knows the traffic
    (efficiency: the lowest modelled job's, network efficiency their mean), null where it
    knows none; cct_s: per step, the slowest program's."""
    cct = [max(j["cct_s"][t] for j in jobs if t < len(j["cct_s"]))
           for t in range(max(len(j["cct_s"]) for j in jobs))]
    known = [j for j in jobs if j["efficiency"] is not None]
    worst = min(known, key=lambda j: (j["efficiency"], j["name"])) if known else None
    run = {"routing": entry.name, "mode": "emulated", "cct_s": cct,
           "cct_mean_s": statistics.fmean(cct),
           "ideal_cct_s": max(j["ideal_cct_s"] for j in known) if known else None,
           "efficiency": worst and worst["efficiency"],
           "efficiency_job": worst and worst["name"],
           "network_efficiency": (statistics.fmean(j["efficiency"] for j in known)
                                  if known else None),
           "max_link_flows": controller.policy.peak_link_flows,
           "solve": solve_block(rp.stats.as_dict() if rp else {}, controller.policy.solves),
           "demand": exp.demand[0], "enforcement": entry.enforced_by, "fidelity": fidelity,
           "epochs": controller.epochs, "events": controller.events}
    if known:
        run["fairness"] = fairness(known, exp.fabric.spec.host_link_mbps)
        slowest = max(known, key=lambda j: j["cct_mean_s"])
        run["predicted_cct_mean_s"] = slowest["predicted_cct_mean_s"]
        run["prediction_error_fraction"] = slowest["prediction_error_fraction"]
    if learner is not None:
        run["learned"] = learner.record()
    run["jobs"] = jobs
    return run

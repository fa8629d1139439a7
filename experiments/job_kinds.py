"""The two kinds of job a run drives, behind one interface (experiments/routing_run.py's
steps call it):

    drive(step, inst, timeout_s) -> Driven            the jobs under the controller, monitored
    prediction(step, inst, driven, goodput, measured)  the model of the same policy, or None
    rows(step, inst, driven, pred, ideal, goodput)    one results row per job
    finish(run, step, inst, driven, measured, goodput)  the record's keys of this kind only

AgentJobs: collectives that mlfabric's agents run over real TCP (traffic/driver.py), every
transfer timed and verified. ProgramJobs: unmodified programs (traffic/program_driver.py),
timed by their step records; the model knows what their `traffic` declares or what the
controller learned (experiments/learner.py).
"""
from __future__ import annotations

import contextlib
import statistics

from routing.base import link_flow_counts
from testbed.rankns import hosts_file_text
from traffic.collectives import bus_factor, plan_jobs
from traffic.driver import TrafficDriver
from traffic.program_driver import ProgramDriver, ProgramRecord
from traffic.predictor import Prediction, ideal, predict

from .config import Experiment
from .controller import FlowReplanner
from .measure import measured_conn_rates, write_transfers_csv
from .progress import iteration_progress
from .results import (flag_reason, host_link_flows, job_result, slowest_per_iteration,
                      workload_times)
from .routing_run import (Driven, Installed, Measured, Step, after_events, conns_of,
                          emulated_semantics, learns, monitor_verdict, path_records,
                          predict_policy, unfired_events)


#: Who forwards, as the run's log line names it (the monitor's `forwarding_by`).
FORWARDER = {"vswitchd_thread": "ovs-vswitchd's forwarding thread",
             "softirq": "the kernel's softirq on its busiest core"}


def jobs_of(exp: Experiment) -> AgentJobs | ProgramJobs:
    """The kind of `exp`'s jobs (program jobs run in configs of their own)."""
    return ProgramJobs() if exp.programs else AgentJobs()


class AgentJobs:
    """Collectives run by mlfabric's agents: each transfer of each job's DAG over TCP."""

    def drive(self, step: Step, inst: Installed, timeout_s: float) -> Driven:
        """The jobs' traffic under the controller (its epochs and the config's events),
        watched by the CPU monitor and, when asked, a capture; writes cpu_samples.csv and
        transfers.csv."""
        exp, controller = step.exp, inst.controller
        progress = iteration_progress(step.entry.name, inst.plans, step.log)
        on_start, on_finish, on_iteration, watch = (controller.jobs_started,
                                                    controller.job_finished, progress, None)
        if learns(exp, step.entry):
            from .learner import DemandLearner
            watch = DemandLearner(controller, exp, step.log)
            on_start, on_finish = watch.jobs_started, watch.job_finished
            on_iteration = lambda job, rec: (watch.iteration_done(job, rec),  # noqa: E731
                                             progress(job, rec))
        elif exp.semantics.recompute == "flows" and step.entry.places_flows:
            watch = FlowReplanner(controller, inst.plans,
                                  emulated_semantics(exp).replan_min_interval_s)
        driver = TrafficDriver(step.emu, inst.plans, exp.seed, exp.emulation.tcp_cc,
                               timeout_s, step.run_dir / "logs", watch=watch)
        timers = [(e.at_s, lambda t, e=e: controller.fire(e, t)) for e in exp.events]
        capture = _capture(exp, step.run_dir)
        try:
            driver.start_agents()
            driver.connect()
            with step.emu.cpu_monitor() as monitor, (capture or contextlib.nullcontext()):
                records = driver.run_jobs(on_start=on_start, on_finish=on_finish,
                                          timers=timers, on_iteration=on_iteration)
        finally:
            driver.stop_agents()
        write_transfers_csv(step.run_dir / "transfers.csv", inst.plans, records)
        return Driven(records, driver.t0, monitor_verdict(exp, monitor, step.run_dir),
                      capture, watch if learns(exp, step.entry) else None)

    def prediction(self, step: Step, inst: Installed, driven: Driven, goodput: float,
                   measured: Measured) -> Prediction:
        """The same policy in the model; a learned plan in its steady state."""
        if driven.learner is not None:
            from .learner import agents_prediction
            return agents_prediction(step.exp, inst.plans, driven.learner, goodput)
        return predict_policy(step, inst, goodput, measured)

    def rows(self, step: Step, inst: Installed, driven: Driven, pred: Prediction, ideal_pred,
             goodput: float) -> list[dict]:
        """Each job's measured iterations beside the prediction of the same policy."""
        jobs = []
        for p in inst.plans:
            rec = driven.records[p.name]
            j = job_result(p.spec, [it.cct_s for it in rec.iterations],
                           ideal_pred.jobs[p.name].mean_cct_s, rec.verified,
                           measured_conn_rates(p, rec))
            j["tcp_retrans_segments"] = (rec.iterations[-1].retrans_segments
                                         if rec.iterations else 0)
            j["iteration_start_s"] = [it.start_s - driven.t0 for it in rec.iterations]
            j["iteration_end_s"] = [it.end_s - driven.t0 for it in rec.iterations]
            j["predicted_cct_s"] = pred.jobs[p.name].cct_s
            j["predicted_iteration_end_s"] = pred.jobs[p.name].iteration_end_s
            j["predicted_cct_mean_s"] = pred.jobs[p.name].mean_cct_s
            j["prediction_error_fraction"] = j["cct_mean_s"] / j["predicted_cct_mean_s"] - 1
            jobs.append(j)
        return jobs

    def finish(self, run: dict, step: Step, inst: Installed, driven: Driven,
               measured: Measured, goodput: float) -> None:
        """The agents' own keys: TCP counters, the model's per-iteration CCTs, rules, paths,
        link loads, events after the fact, the capture, what was learned; then the log."""
        exp, controller, jobs = step.exp, inst.controller, run["jobs"]
        fidelity = run["fidelity"]
        fidelity["tcp_retrans_segments"] = sum(j["tcp_retrans_segments"] for j in jobs)
        tcp = {cid: c for rec in driven.records.values() if rec.iterations
               for cid, c in rec.iterations[-1].tcp.items()}
        for key in ("out_of_order_packets", "reordering_seen"):
            counts = [c[key] for c in tcp.values() if c.get(key) is not None]
            fidelity[f"tcp_{key}"] = sum(counts) if counts else None
        conns = conns_of(inst.plans)
        loads = link_flow_counts(exp.fabric, conns, measured.observed)
        predicted = slowest_per_iteration([j["predicted_cct_s"] for j in jobs])
        run.update(
            predicted_cct_s=predicted, predicted_cct_mean_s=statistics.fmean(predicted),
            rules={"switches": inst.stats["switches"], "rules": inst.stats["rules"],
                   "install_s": inst.stats["install_s"],
                   "peak_per_switch": controller.peak_rules_per_switch},
            unfired_events=unfired_events(exp, controller),
            paths=path_records(step.entry, controller, conns, measured, tcp),
            link_flows=[{"link": list(k), "flows": v} for k, v in sorted(loads.items())])
        run["prediction_error_fraction"] = run["cct_mean_s"] / run["predicted_cct_mean_s"] - 1
        if exp.workload is not None:          # an imported workload: its iteration, both ways
            run.update(workload_times(exp.workload, jobs))
            run["predicted_iteration_time_s"] = workload_times(
                exp.workload, jobs, key="predicted_iteration_end_s")["iteration_time_s"]
        if step.entry.reference:      # no switch-to-switch links: the busiest is a host link
            run["max_link_flows"] = host_link_flows(inst.plans, step.exp.fabric)
        if controller.events:
            run["after_events"] = after_events(exp, controller, inst.plans, jobs, goodput,
                                               measured.counts)
        if driven.capture is not None:
            c = driven.capture
            run["capture"] = {"interface": c.interface, "path": str(c.path),
                              "packets": c.packets, "snap_bytes": c.snap_bytes,
                              "error": c.error}
        if driven.learner is not None:
            from .learner import agents_learned
            agents_learned(run, inst.plans, driven, driven.learner)
        log_run(step, run, controller)


class ProgramJobs:
    """Unmodified programs (JAX, PyTorch over gloo): their ranks in the hosts, their steps."""

    def drive(self, step: Step, inst: Installed, timeout_s: float) -> Driven:  # noqa: ARG002
        """Every rank run to its end under the controller (timeout_s: each job's own), with
        `demand: measured` the controller learning the traffic first; the monitor around."""
        exp, controller = step.exp, inst.controller
        hosts = step.run_dir / "hosts"
        hosts.write_text(hosts_file_text({h: exp.fabric.ip_of(h) for h in exp.fabric.hosts}))
        driver = ProgramDriver(step.emu, exp.programs, step.run_dir / "logs", hosts)
        learner = None
        if learns(exp, step.entry):
            from .learner import DemandLearner
            learner = DemandLearner(controller, exp, step.log)
        try:
            with step.emu.cpu_monitor() as monitor:
                records = driver.run(
                    on_start=controller.jobs_started if learner is None
                    else learner.jobs_started,
                    on_finish=(controller.job_finished if learner is None
                               else learner.job_finished),
                    on_step=_progress(step.entry.name, step.log, learner),
                    tick=learner and learner.tick)
        finally:
            driver.stop()
        return Driven(records, 0.0, monitor_verdict(exp, monitor, step.run_dir), None, learner)

    def prediction(self, step: Step, inst: Installed, driven: Driven,  # noqa: ARG002
                   goodput: float, measured: Measured) -> Prediction | None:
        """The model of the declared traffic under the same policy (None: none declared)."""
        return predict_policy(step, inst, goodput, measured) if inst.plans else None

    def rows(self, step: Step, inst: Installed, driven: Driven, pred: Prediction | None,
             ideal_pred, goodput: float) -> list[dict]:
        """Each program's steps, beside the model where it knows the traffic."""
        jobs = [program_row(step.exp, rec, pred, ideal_pred, driven.learner)
                for rec in driven.records.values()]
        if driven.learner is not None:
            learned_models(step.exp, jobs, driven.learner, goodput)
        return jobs

    def finish(self, run: dict, step: Step, inst: Installed, driven: Driven,  # noqa: ARG002
               measured: Measured, goodput: float) -> None:  # noqa: ARG002
        """The demand, the slowest modelled program's prediction, what was learned."""
        run["demand"] = step.exp.demand[0]
        known = [j for j in run["jobs"] if j["efficiency"] is not None]
        if known:
            slowest = max(known, key=lambda j: j["cct_mean_s"])
            run["predicted_cct_mean_s"] = slowest["predicted_cct_mean_s"]
            run["prediction_error_fraction"] = slowest["prediction_error_fraction"]
        if driven.learner is not None:
            run["learned"] = driven.learner.record()


def _capture(exp: Experiment, run_dir):
    """emulation.capture: a pcap of one switch port (given, or leaf1's first live uplink's
    far end), else None."""
    c = exp.emulation.capture
    if not c:
        return None
    from testbed.capture import SpineCapture  # scapy: imported only when capturing
    if c is True:
        up = next(s for s in exp.fabric.uplinks("leaf1") if exp.fabric.is_live(s, "leaf1"))
        c = (up, "leaf1")
    switch, nbr = c
    return SpineCapture(exp.fabric.intf(switch, nbr), run_dir / f"capture-{switch}-{nbr}.pcap")


def log_run(step: Step, run: dict, controller) -> None:
    """The run in a few lines: CCT against the prediction, the emulator's health, events."""
    name, log, fidelity = step.entry.name, step.log, run["fidelity"]
    log(f"[{name}] mean CCT {run['cct_mean_s']:.3f} s (predicted "
        f"{run['predicted_cct_mean_s']:.3f} s), efficiency {run['efficiency']:.3f}, "
        f"max flows per link {run['max_link_flows']}, emulator "
        f"{'faithful' if fidelity['ok'] else 'flagged: ' + str(flag_reason(run))} "
        f"({FORWARDER[fidelity.get('forwarding_by', 'vswitchd_thread')]} max "
        f"{fidelity['forwarding_max_pct'] or 0:.0f}% of a core"
        + (f", it dropped {fidelity['vswitchd_rx_drops']} packets"
           if fidelity.get("vswitchd_rx_drops") else "")
        + f"), {fidelity['tcp_retrans_segments']} TCP segments retransmitted"
        + (f", {fidelity['tcp_out_of_order_packets']} received out of order"
           if fidelity.get("tcp_out_of_order_packets") else ""))
    for line in fidelity["advice"]:
        log(f"[{name}] {line}")
    for ev in controller.events:
        log(f"[{name}] {ev['kind']} {'/'.join(ev['target'])} at {ev['at_s']:.2f} s: rules "
            f"in {ev['reroute_s'] * 1000:.0f} ms"
            + ("" if ev.get("flows_moved") is None else f", {ev['flows_moved']} flows moved"))


def _progress(name: str, log, learner):
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

"""One routing on the live fabric, the same five steps for every kind of job.

    install (controller, first rules) -> drive (the jobs under the controller, watched by the
    CPU monitor) -> measure (switch counters, the path each flow's bytes took, verified)
    -> predict (the model of the same policy) -> record (results.run_result and its extras)

What differs between mlfabric's agents and unmodified programs is behind one interface
(experiments/job_kinds.py: AgentJobs, ProgramJobs): how the jobs are driven, what the model
is told, each job's row and the record's kind-specific keys. Everything else is here, once.
"""
from __future__ import annotations

import dataclasses
import os
import statistics
from pathlib import Path
from typing import Callable

from routing import route
from routing.base import max_link_flows
from routing.host_enforced import with_source_ports
from routing.paths import Path as SwitchPath
from testbed.fabric import Fabric
from testbed.installer import settle_flow_stats
from testbed.monitor import CpuMonitor, advice
from traffic.collectives import Connection, JobPlan
from traffic.predictor import Prediction, Semantics, predict

from .config import Experiment
from .controller import EMULATED_REPLAN_INTERVAL_S, Controller
from .measure import ack_plane_bytes, observed_paths, phase_paths, switch_counts
from .routes import ControllerRoutes
from .routing_entry import ECMP, RoutingEntry
from .results import fairness, run_result, solve_block


class PathMismatchError(RuntimeError):
    """A statically routed flow crossed a switch that none of its given paths holds."""


@dataclasses.dataclass(frozen=True)
class Installed:
    """The controller with its first rules in, and the plans as run."""
    controller: Controller
    plans: list[JobPlan]      # @host: with the source ports that carry each flow's path
    stats: dict               # rules, switches, install_s (testbed/installer.py)


@dataclasses.dataclass(frozen=True)
class Driven:
    """What driving the jobs left behind."""
    records: dict             # per job: traffic/driver.py JobRecord or a ProgramRecord
    t0: float                 # time.monotonic() when the jobs' clock started
    fidelity: dict            # the CPU monitor's verdict and advice
    capture: object | None    # testbed/capture.py SpineCapture, when capturing
    learner: object | None = None   # demand: measured, experiments/learner.py


@dataclasses.dataclass(frozen=True)
class Measured:
    """The switch counters after the run, and the path each flow's bytes took."""
    every: Fabric                           # every switch, failed or not
    counts: dict[str, dict[int, int]]       # switch -> cookie -> bytes
    flows: dict[int, dict]                  # conn_id -> observed_paths' record
    observed: dict[int, SwitchPath | None]  # conn_id -> the path its bytes took
    acks: dict[int, dict[int, int]] = dataclasses.field(default_factory=dict)
    # on several planes: conn_id -> plane -> bytes of its reverse direction (ACKs)


@dataclasses.dataclass(frozen=True)
class Step:
    """What every step of one routing's run is given."""
    exp: Experiment
    emu: object               # testbed/net.py EmulatedFabric or experiments/split_run.py's
    entry: RoutingEntry
    rp: object                # the routing's one plan (routing.RoutingPlan)
    run_dir: Path
    log: Callable[[str], None]


def install(step: Step, plans: list[JobPlan], port_offset: int) -> Installed:
    """The controller, and its first rules written on every switch (no job active yet); for
    @host, the plans' source ports chosen to carry the fixed plan."""
    exp, entry, rules_dir = step.exp, step.entry, step.run_dir / "rules"
    if entry.host_enforced:
        plans = with_source_ports(exp.fabric, plans, step.rp.path_of, port_offset)
        controller = Controller(step.emu, exp.fabric, entry, plans, exp.seed, rules_dir,
                                static_paths=step.rp.path_of)
    elif learns(exp, entry):   # the pairs it learns are placed; the jobs' own, only counted
        from .learner import candidate_pairs
        owners = {h: p.name for p in exp.programs for h in p.hosts}
        owners.update({h: p.name for p in plans for h in p.spec.hosts})
        controller = Controller(step.emu, exp.fabric, entry, [] if exp.programs else plans,
                                exp.seed, rules_dir, time_limit_s=exp.solver_time_limit_s,
                                routed=candidate_pairs(owners))
    else:
        controller = Controller(step.emu, exp.fabric, entry, plans, exp.seed, rules_dir,
                                time_limit_s=exp.solver_time_limit_s)
    controller.restore_links(exp.events)
    stats = controller.install_initial()
    step.log(f"[{entry.name}] {stats['rules']} rules on {stats['switches']} switches in "
             f"{stats['install_s']:.2f} s; running {len(plans)} "
             f"job{'s' * (len(plans) != 1)}")
    return Installed(controller, plans, stats)


def learns(exp: Experiment, entry: RoutingEntry) -> bool:
    """demand: measured, for a routing that places flows (ECMP and fixed plans learn nothing
    they could use)."""
    return exp.demand[0] == "measured" and entry.places_flows


def monitor_verdict(exp: Experiment, monitor: CpuMonitor, run_dir: Path) -> dict:
    """The CPU monitor's summary with its advice; its samples in cpu_samples.csv."""
    fidelity = monitor.summary()
    monitor.write_csv(run_dir / "cpu_samples.csv")
    fidelity["advice"] = advice(fidelity, exp.fabric.spec.host_link_mbps * len(exp.fabric.hosts),
                                exp.emulation.mtu_bytes, len(exp.fabric.hosts),
                                os.getloadavg()[0], os.cpu_count())
    return fidelity


def measure(step: Step, inst: Installed, driven: Driven) -> Measured:
    """Every switch's counters and the path each flow's bytes took; a flow given its paths
    (placed or fixed) must have crossed only their switches."""
    settle_flow_stats()
    every = inst.controller.fabric_all  # candidates and counters of every switch, failed or not
    counts = switch_counts(every)
    flows = observed_paths(every, conns_of(inst.plans), counts,
                           planes=inst.controller.host_planes)
    if step.entry.paths_given and driven.learner is None:   # learned: pinned per pair
        verify_paths(step.entry.name, inst.controller, flows)
    return Measured(every, counts, flows, {cid: o["path"] for cid, o in flows.items()},
                    ack_plane_bytes(every, conns_of(inst.plans)))


def verify_paths(name: str, controller: Controller, flows: dict[int, dict]) -> None:
    """Raise PathMismatchError when a flow's bytes crossed a switch none of its paths holds."""
    given = {cid: {sw for p in paths for sw in p[1:-1]}
             for cid, paths in controller.history.items()}
    wrong = [(cid, sorted(given.get(cid, ())), nonzero(o["bytes"]))
             for cid, o in flows.items()
             if not set(o["switches_with_bytes"]) <= given.get(cid, set())]
    if wrong:
        raise PathMismatchError(
            f"[{name}] {len(wrong)} flows crossed a switch none of their paths holds, e.g. "
            f"conn {wrong[0][0]} given {wrong[0][1]}, bytes per switch {wrong[0][2]}")


def predict_policy(step: Step, inst: Installed, goodput: float,
                   measured: Measured) -> Prediction:
    """The model of the same policy: the controller's epochs and events replayed in model
    time (static paths verified by `measure`), for ECMP the paths its hash really chose, per
    phase between events, so that both sides compare like with like."""
    exp, entry = step.exp, step.entry
    conns = conns_of(inst.plans)
    readings = [{}, *inst.controller.counters_at_events, measured.counts]  # start, events, end
    routes = ControllerRoutes(
        entry.routed_by, exp.fabric, conns, exp.seed, exp.events,
        static=step.rp.path_of if entry.host_enforced else None,
        observed_phases=(phase_paths(measured.every, conns, readings,
                                     inst.controller.host_planes)
                         if not entry.paths_given else None),
        time_limit_s=exp.solver_time_limit_s)
    return predict(exp.fabric, inst.plans, None, goodput, router=routes,
                   semantics=emulated_semantics(exp))


def emulated_semantics(exp: Experiment) -> Semantics:
    """The semantics the emulator runs (check_emulable refuses others): ours, with the
    config's recompute policy; recompute="flows" holds the emulator's interval unless the
    config gives one."""
    sem = exp.semantics
    if sem.recompute == "flows" and sem.replan_min_interval_s is None:
        return dataclasses.replace(sem, replan_min_interval_s=EMULATED_REPLAN_INTERVAL_S)
    return sem


def record(step: Step, inst: Installed, rows: list[dict], driven: Driven,
           measured: Measured) -> dict:
    """The run's results record (results.run_result), with what every kind of job gets: the
    busiest link (over the controller's epochs, or for ECMP and fixed plans over the paths
    the counters saw), the solves, the fidelity verdict, epochs and events, fairness."""
    exp, controller = step.exp, inst.controller
    peak = (controller.policy.peak_link_flows if controller.policy.places_flows
            else max_link_flows(exp.fabric, conns_of(inst.plans), measured.observed))
    run = run_result(step.entry.name, "emulated", rows, peak,
                     solve_block(step.rp.stats.as_dict(), controller.policy.solves),
                     enforcement=step.entry.enforced_by, fidelity=driven.fidelity,
                     epochs=controller.epochs, events=controller.events)
    known = [j for j in rows if j["efficiency"] is not None]
    if known:
        run["fairness"] = fairness(known, exp.fabric.spec.host_link_mbps)
    return run


def unfired_events(exp: Experiment, controller: Controller) -> list[dict]:
    """The config's events the run ended before."""
    return [e.as_dict() for e in exp.events
            if not any(f["scheduled_at_s"] == e.at_s and f["kind"] == e.kind
                       and f["target"] == list(e.target) for f in controller.events)]


def path_records(entry: RoutingEntry, controller: Controller, conns: list[Connection],
                 measured: Measured, tcp: dict[int, dict]) -> list[dict]:
    """Per connection: its 5-tuple, the paths it was given, the path its bytes took, and its
    TCP counters over the run (the agents' TCP_INFO: the cost of reordering and loss)."""
    return [{"conn_id": c.conn_id, "job": c.job, "src": c.src, "dst": c.dst,
             "src_port": c.src_port, "dst_port": c.dst_port,
             "planned_paths": [list(p) for p in sorted(controller.history.get(c.conn_id, ()))],
             "final_path": _listed(controller.final_path(c.conn_id)
                                   if entry.paths_given else None),
             "observed_path": _listed(measured.observed.get(c.conn_id)),
             "switch_bytes": nonzero(measured.flows.get(c.conn_id, {}).get("bytes", {})) or None,
             **({"ack_plane_bytes": {str(p): n for p, n in measured.acks.get(c.conn_id,
                                                                           {}).items()}}
                if measured.every.planes > 1 else {}),
             **{f"tcp_{k}": v for k, v in tcp.get(c.conn_id, {}).items()}}
            for c in conns]


def after_events(exp: Experiment, controller: Controller, plans: list[JobPlan],
                 jobs: list[dict], goodput: float, final_counts: dict) -> dict:
    """Iterations that started after the last event, against the model of the degraded
    fabric: the optimizer's final paths, or for ECMP the model's hash over what is left."""
    last = max(e["at_s"] + e["links_set_s"] + e["reroute_s"] for e in controller.events)
    degraded = controller.fabric
    conns = conns_of(plans)
    if not controller.entry.paths_given:
        # the path each flow's bytes took after the last event (OVS's own hash), else the
        # model's hash over what is left
        seen = observed_paths(degraded, conns, final_counts, controller.counters_at_last_event,
                              controller.host_planes)
        hashed = route(ECMP, degraded, conns, seed=exp.seed).path_of
        paths = {c.conn_id: (seen.get(c.conn_id, {}).get("path") or hashed[c.conn_id])
                 for c in conns}
        basis = "the paths OVS's hash used after the last event (switch counters)"
    else:
        paths = {c.conn_id: controller.final_path(c.conn_id) for c in conns}
        basis = "the controller's paths after the last event"
    # the post-event phase as its own scenario: every job that ran iterations after the
    # last event, from the same offset, for as many iterations, on the degraded fabric
    phase = []
    for p, j in zip(plans, jobs):
        starts = [t for t in j["iteration_start_s"] if t >= last]
        if starts:
            spec = dataclasses.replace(p.spec, iterations=len(starts),
                                       start_s=min(starts) - last)
            phase.append(dataclasses.replace(p, spec=spec))
    out = {"last_event_s": last, "prediction_basis": basis, "jobs": []}
    if not phase:
        return out
    pred = predict(degraded, phase, paths, goodput)
    for p, j in zip(plans, jobs):
        after = [c for c, t in zip(j["cct_s"], j["iteration_start_s"]) if t >= last]
        if after:
            emu_s = statistics.fmean(after)
            pred_s = pred.jobs[j["name"]].mean_cct_s
            out["jobs"].append({"name": j["name"], "iterations": len(after),
                                "cct_mean_s": emu_s, "predicted_cct_mean_s": pred_s,
                                "prediction_error_fraction": emu_s / pred_s - 1})
    return out


def conns_of(plans: list[JobPlan]) -> list[Connection]:
    return [c for p in plans for c in p.connections]


def nonzero(per_switch: dict[str, int]) -> dict[str, int]:
    return {s: n for s, n in per_switch.items() if n}


def _listed(path: tuple[str, ...] | None) -> list[str] | None:
    return None if path is None else list(path)

"""`run`: one experiment on the real emulated fabric, once per routing, same fabric and workload.

The steps, each in its own module:

    config (experiments/config.py) -> fabric (testbed/net.py) -> routes (routing/) ->
    rules (routing/rules.py, testbed/installer.py) -> traffic (traffic/driver.py, agent.py) ->
    measure (paths from OVS counters, experiments/measure.py; the record, experiments/results.py)
    -> teardown (testbed/net.py)

Each routing's run (`run_one_routing`) is five steps, one function each: install (controller
and rules) -> drive (traffic under the controller) -> measure (counters, observed paths,
verification) -> predict_policy (the model of the same policy) -> assemble (the results record).

Everything that can be checked without root (config, routes, rules) is computed before the
fabric is built, so bad input changes nothing on the machine.
"""
from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import os
import statistics
import time
from pathlib import Path
from typing import Callable

import yaml

from routing import route
from routing.base import RoutingError, link_flow_counts, max_link_flows
from routing.host_enforced import check_port_plan, with_source_ports
from routing.paths import Path as SwitchPath
from testbed import topologies
from testbed.fabric import Fabric, FabricError
from testbed.installer import settle_flow_stats
from testbed.monitor import CpuMonitor, advice
from testbed.net import EmulatedFabric, EmulationSettings
from testbed.ovs import MALLOC_WARNING
from testbed.shaping import BUCKETS, Shaping
from traffic.collectives import Connection, JobPlan, plan_jobs, with_port_offset
from traffic.driver import JobRecord, TrafficDriver
from traffic.goodput import goodput_factor
from traffic.predictor import Prediction, Semantics, ideal, predict

from .config import ConfigError, Experiment, iteration_timeout_s
from .config.jobs import check_source_ports
from .controller import EMULATED_REPLAN_INTERVAL_S, Controller, FlowReplanner
from .measure import (measured_conn_rates, observed_paths, phase_paths, switch_counts,
                      write_transfers_csv)
from .routes import ControllerRoutes
from .routing_entry import ECMP, RoutingEntry
from .progress import iteration_progress, open_cli
from .results import (SCHEMA_VERSION, add_nonblocking_fraction, environment, fairness,
                      flag_reason,
                      host_link_flows, job_result, run_result, slowest_per_iteration,
                      solve_block, table, workload_times, write_json)


class PathMismatchError(RuntimeError):
    """A statically routed flow crossed a switch that none of its given paths holds."""


#: The fastest link `run` accepts: the whole emulator carried about 1.3 Gbit/s of host traffic
#: on 2 cores (fidelity benchmark), so one link faster than this could never be honoured.
MAX_EMULATED_MBPS = 1000.0


def _listed(path: tuple[str, ...] | None) -> list[str] | None:
    return None if path is None else list(path)


def check_emulable(exp: Experiment) -> None:
    """Raise ConfigError (before anything is built) for a fabric the emulator cannot shape,
    semantics its agents and controller do not run, or more connections than source ports."""
    if exp.machines:
        check_splittable(exp)
    check_source_ports(exp.jobs, exp.routing)     # one source port per connection
    sem = exp.semantics
    if sem.ring_sync != "rank" or sem.tail_step or sem.recompute == "iterations":
        raise ConfigError("semantics: the emulator runs ring_sync: rank, recompute: epochs or "
                          "flows and no tail step (floodns's semantics are the model's: use "
                          "`predict`)")
    if sem.connections != "job":
        raise ConfigError("semantics.connections: the emulator's agents open each job's own "
                          "connections (stream is the model's: use `predict`, or "
                          "connections: job)")
    for entry in exp.routings:
        if not entry.emulable:
            raise ConfigError(f"routing: {entry.name} is the model's fluid per-packet spraying; "
                              "Open vSwitch's select groups pick one bucket per flow (a hash "
                              "of its 5-tuple), so `run` cannot spray packets: use `predict`, "
                              "or spray with subflows: K")
    keys = topologies.rate_keys(exp.fabric.spec)      # the kind's YAML key per link tier
    for tier, rate in exp.fabric.spec.rates_mbps().items():
        key = keys[tier]
        if rate > MAX_EMULATED_MBPS:
            raise ConfigError(f"fabric.{key}: the emulator shapes at most "
                              f"{MAX_EMULATED_MBPS:g} Mbit/s per link; scale rates down for "
                              "`run`, or use `predict` at this scale")


def check_splittable(exp: Experiment) -> None:
    """What a run over `machines:` does not do yet: ConfigError, before anything is built."""
    names = [e.name for e in exp.routings if e.reference]
    if names:
        raise ConfigError(f"routing: {names[0]} (one switch joining every host) cannot be "
                          "split over machines; remove it, or run without machines")
    if exp.programs:
        raise ConfigError("jobs: programs (JAX / PyTorch) do not run over machines yet; "
                          "use collectives, or run without machines")
    if exp.emulation.capture:
        raise ConfigError("emulation.capture: not over machines yet; remove it")
    if exp.emulation.port_type != "system":
        raise ConfigError("emulation.port_type: tap ports need one ovs-vswitchd; use "
                          "system over machines")
    for i, m in enumerate(exp.machines):
        try:
            ipaddress.IPv4Address(m.address)
        except ValueError:
            raise ConfigError(f"machines[{i}].address: {m.address!r} is a name; a run over "
                              "machines needs each machine's underlay IPv4 address (the "
                              "tunnels' endpoints)") from None


def _fabric(exp: Experiment, run_id: str, settings: EmulationSettings, out_dir: Path,
            log: Callable[[str], None]):
    """The emulated fabric: on this machine, or split over the config's machines."""
    if exp.machines:
        from .split_run import SplitEmulation
        log(f"splitting it over {len(exp.machines)} machines: "
            + ", ".join(m.name for m in exp.machines))
        return SplitEmulation(exp, run_id, settings, out_dir / "machines", log)
    return EmulatedFabric(exp.fabric, run_id, settings)


def run_experiment(exp: Experiment, out_dir: Path,
                   log: Callable[[str], None] = print, repetition: int = 1,
                   port_offset: int = 0, cli: str | None = None) -> dict:
    """Run every routing of `exp` on one emulated fabric; write and return results.json.
    `port_offset` shifts every source port (each repetition its own ECMP hash outcome);
    `cli` "before" / "after": Mininet's CLI on the live fabric before the first routing's
    traffic or after the last routing (experiments/progress.py)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    plans = plan_jobs(exp.jobs)
    conns = [c for p in plans for c in p.connections]
    routed, twin = route_before_build(exp, plans)
    check_emulable(exp)
    if exp.machines and cli:
        raise ConfigError("--cli: not over machines (each machine's hosts are there); run "
                          "without --cli")
    (out_dir / "config.yaml").write_text(yaml.safe_dump(exp.resolved(), sort_keys=False))
    (out_dir / "fabric.txt").write_text(topologies.draw(exp.fabric) + "\n")
    em = exp.emulation
    ideal_pred = ideal(exp.fabric, plans)
    timeout_s = iteration_timeout_s(exp.jobs, exp.fabric, em)   # the one rule, config's
    run_id = f"{os.getpid()}-{int(time.time())}"
    results = {"schema_version": SCHEMA_VERSION, "name": exp.name, "seed": exp.seed,
               "repetition": repetition, "source_port_offset": port_offset,
               **({"workload": exp.workload.as_dict()} if exp.workload is not None else {}),
               "runs": []}
    settings = em.settings()

    load = check_load(log)     # the machine's load before anything is built
    log(f"building {topologies.title(exp.fabric)}, {len(exp.fabric.switches)} switches, "
        f"{len(exp.fabric.hosts)} hosts"
        + (f", over {em.switch_processes} ovs-vswitchd processes"
           if em.switch_processes > 1 else ""))
    with _fabric(exp, run_id, settings, out_dir, log) as emu:
        env, goodput = emulation_environment(exp, emu, load, log)
        results["environment"] = env
        write_json(out_dir / "environment.json", env)
        if cli == "before":
            open_cli(emu, log)
        for i, entry in enumerate(exp.routings):
            if entry.reference:
                continue        # on its own one-switch fabric, below
            # each routing's connections get their own source ports (see with_port_offset)
            run_plans = with_port_offset(plans, port_offset + i * len(conns))
            run = run_one_routing(exp, emu, entry, routed[entry], run_plans, ideal_pred,
                                  goodput, timeout_s, out_dir / entry.run_dir, log,
                                  port_offset=port_offset + i * len(conns))
            results["runs"].append(run)
            write_json(out_dir / "results.json", results)
        if cli == "after":
            open_cli(emu, log)
    if twin is not None:
        results["runs"].append(run_nonblocking(exp, twin, plans, ideal_pred, goodput, timeout_s,
                                               run_id, settings, out_dir, log, port_offset))
    add_nonblocking_fraction(results)
    write_json(out_dir / "results.json", results)
    log(table(results))
    log(f"results: {out_dir / 'results.json'}")
    return results


def route_before_build(exp: Experiment, plans: list[JobPlan]) -> tuple[dict, Fabric | None]:
    """Every routing's one plan (and the non-blocking twin), computed before anything is
    built: a routing that cannot be computed is an input error (ConfigError)."""
    conns = [c for p in plans for c in p.connections]
    try:
        routed = {e: route(e.strategy, exp.fabric, conns, seed=exp.seed)
                  for e in exp.routings if not e.reference}
        twin = exp.fabric.nonblocking() if any(e.reference for e in exp.routings) else None
        for e, rp in routed.items():
            if e.host_enforced:
                check_port_plan(exp.fabric, [c for p in with_source_ports(
                    exp.fabric, plans, rp.path_of) for c in p.connections], rp.path_of)
    except (RoutingError, FabricError) as e:   # an input error: nothing built
        raise ConfigError(f"routing: {e}") from None
    return routed, twin


def emulation_environment(exp: Experiment, emu, load: dict,
                          log: Callable[[str], None]) -> tuple[dict, float]:
    """environment.json's record of the live fabric (versions, datapath, OVS buffers and
    malloc settings, the shapers as built) and the goodput factor its runs are predicted
    with."""
    em = exp.emulation
    env = environment(emu.datapath, em.tcp_cc, exp.seed, em.mtu_bytes)
    env["load_avg_before"] = load
    env["port_type"] = emu.port_type
    env["switch_processes"] = em.switch_processes
    if exp.machines:
        env.update(emu.environment())
    env["ovs_send_buffer_bytes"] = emu.send_buffer_bytes
    env["ovs_vswitchd_malloc_tuned"] = emu.malloc_tuned
    if emu.malloc_tuned is False:
        log(MALLOC_WARNING)
    env["queue_packets"] = em.queue_packets
    env["link_scheduler"] = em.link_scheduler
    env["tcp_window_clamp_bytes"] = em.settings().window_clamp_bytes
    env["htb"] = {  # the shapers as built (testbed/shaping.py), per link kind: bursts at
        # a switch's egress and at a host's (host links only)
        kind: {"rate_mbps": rate, "burst_bytes": sh.burst_bytes,
               "quantum_bytes": sh.frame_bytes,
               "leaf_classes": BUCKETS + 1 if sh.scheduler == "fair" else 1,
               **({"host_burst_bytes": Shaping(rate, em.mtu_bytes, em.queue_packets,
                                              em.link_scheduler).burst_bytes}
                  if kind == "host_link" else {})}
        for kind, rate in ((f"{tier}_link", r)
                           for tier, r in exp.fabric.spec.rates_mbps().items())
        for sh in [Shaping(rate, em.mtu_bytes, em.queue_packets, em.link_scheduler,
                           em.switch_burst_frames)]}
    goodput, source = goodput_factor(emu.calibration_datapath, em.mtu_bytes, em.tcp_cc,
                                    em.link_scheduler)
    env["goodput_factor"], env["goodput_factor_source"] = goodput, source
    return env, goodput


def check_load(log: Callable[[str], None]) -> dict:
    """The load average before a run (recorded in environment.json); warns when the machine
    is already busy, since other work can starve the emulator (see the fidelity guard)."""
    one, five, fifteen = os.getloadavg()
    cpus = os.cpu_count() or 1
    if one >= 1.0:
        log(f"warning: load average {one:.2f} on {cpus} cores before the run: other work "
            "may starve the emulator (the CPU monitor will say)")
    return {"1min": one, "5min": five, "15min": fifteen, "cpus": cpus}


def flagged_runs(out: Path) -> list[str]:
    """`--strict`: the routings the CPU monitor flagged in OUT's results (OUT/results.json,
    or each OUT/rep-K/results.json), as 'rep-K/routing'."""
    import json
    files = [out / "results.json"] if (out / "results.json").exists() else sorted(
        out.glob("rep-*/results.json"))
    bad = []
    for f in files:
        for r in json.loads(f.read_text()).get("runs", []):
            if r.get("fidelity") and not r["fidelity"].get("ok", True):
                bad.append(f"{f.parent.name}/{r['routing']}")
    return bad


def run_nonblocking(exp: Experiment, twin: Fabric, plans: list[JobPlan], ideal_pred,
                    goodput: float, timeout_s: float, run_id: str,
                    settings: EmulationSettings, out_dir: Path,
                    log: Callable[[str], None], port_offset: int) -> dict:
    """The `nonblocking` reference: the same jobs on one OVS switch joining every host
    (Fabric.nonblocking), built after the fabric under test is torn down; no events."""
    i, entry = next((i, e) for i, e in enumerate(exp.routings) if e.reference)
    offset = port_offset + i * sum(len(p.connections) for p in plans)
    one = dataclasses.replace(exp, fabric=twin, events=[])
    log(f"building the non-blocking reference: one switch, {len(twin.hosts)} hosts")
    with EmulatedFabric(twin, f"{run_id}-nb", settings) as emu:
        conns = [c for p in plans for c in p.connections]
        return run_one_routing(one, emu, entry, route(ECMP, twin, conns),
                               with_port_offset(plans, offset), ideal_pred, goodput,
                               timeout_s, out_dir / entry.run_dir, log,
                               port_offset=offset)


def run_one_routing(exp: Experiment, emu, entry: RoutingEntry, rp, plans: list[JobPlan],
                    ideal_pred, goodput: float, timeout_s: float, run_dir: Path,
                    log: Callable[[str], None], port_offset: int = 0) -> dict:
    """One routing on the live fabric, step by step: install its rules, drive the jobs under
    the controller, measure where their bytes went, predict the same policy, assemble the
    results record."""
    if exp.programs:
        from .program_run import run_program_routing
        return run_program_routing(exp, emu, entry, rp, plans, ideal_pred, goodput, run_dir,
                                   log, port_offset)
    inst = install(exp, emu, entry, rp, plans, run_dir, log, port_offset)
    driven = drive(exp, emu, entry, inst, timeout_s, run_dir, log)
    measured = measure(entry, inst, driven, run_dir)
    if driven.learner is not None:      # the plan it learned, in its steady state
        from .learner import agents_learned, agents_prediction
        pred = agents_prediction(exp, inst.plans, driven.learner, goodput)
    else:
        pred = predict_policy(exp, entry, rp, inst, goodput, measured)
    jobs = job_results(inst.plans, driven, pred, ideal_pred)
    run = assemble(exp, entry, rp, inst, jobs, driven, measured, goodput)
    if driven.learner is not None:
        agents_learned(run, inst.plans, driven, driven.learner)
    log_run(entry.name, run, inst.controller, log)
    return run


@dataclasses.dataclass(frozen=True)
class Installed:
    """The controller with its first rules in, and the plans as run."""
    controller: Controller
    plans: list[JobPlan]      # @host: with the source ports that carry each flow's path
    stats: dict               # rules, switches, install_s (testbed/installer.py)


@dataclasses.dataclass(frozen=True)
class Driven:
    """What driving the jobs left behind."""
    records: dict[str, JobRecord]   # per job: its iterations
    t0: float                       # time.monotonic() when the jobs' clock started
    fidelity: dict                  # the CPU monitor's verdict and advice
    capture: object | None          # testbed/capture.py SpineCapture, when capturing
    learner: object | None = None   # demand: measured, experiments/learner.py


@dataclasses.dataclass(frozen=True)
class Measured:
    """The switch counters after the run, and the path each flow's bytes took."""
    every: Fabric                           # every switch, failed or not
    counts: dict[str, dict[int, int]]       # switch -> cookie -> bytes
    flows: dict[int, dict]                  # conn_id -> observed_paths' record
    observed: dict[int, SwitchPath | None]  # conn_id -> the path its bytes took


def install(exp: Experiment, emu, entry: RoutingEntry, rp, plans: list[JobPlan],
            run_dir: Path, log: Callable[[str], None], port_offset: int) -> Installed:
    """The controller, and its first rules written on every switch (no job active yet); for
    @host, the plans' source ports chosen to carry the fixed plan `rp`."""
    if entry.host_enforced:
        plans = with_source_ports(exp.fabric, plans, rp.path_of, port_offset)
        controller = Controller(emu, exp.fabric, entry, plans, exp.seed, run_dir / "rules",
                                static_paths=rp.path_of)
    elif learns(exp, entry):   # the pairs it learns are placed; the jobs' own, only counted
        from .learner import candidate_pairs
        owners = {h: p.name for p in exp.programs for h in p.hosts}
        owners.update({h: p.name for p in plans for h in p.spec.hosts})
        controller = Controller(emu, exp.fabric, entry, [] if exp.programs else plans,
                                exp.seed, run_dir / "rules",
                                time_limit_s=exp.solver_time_limit_s,
                                routed=candidate_pairs(owners))
    else:
        controller = Controller(emu, exp.fabric, entry, plans, exp.seed, run_dir / "rules",
                                time_limit_s=exp.solver_time_limit_s)
    stats = controller.install_initial()
    log(f"[{entry.name}] {stats['rules']} rules on {stats['switches']} switches in "
        f"{stats['install_s']:.2f} s; running {len(plans)} job{'s' * (len(plans) != 1)}")
    return Installed(controller, plans, stats)


def learns(exp: Experiment, entry: RoutingEntry) -> bool:
    """demand: measured, for a routing that places flows (ECMP and fixed plans learn nothing
    they could use)."""
    return exp.demand[0] == "measured" and entry.places_flows


def drive(exp: Experiment, emu, entry: RoutingEntry, inst: Installed, timeout_s: float,
          run_dir: Path, log: Callable[[str], None]) -> Driven:
    """The jobs' traffic under the controller (its epochs and the config's events), watched
    by the CPU monitor and, when asked, a capture; writes cpu_samples.csv."""
    controller = inst.controller
    progress = iteration_progress(entry.name, inst.plans, log)
    on_start, on_finish, on_iteration, watch = (controller.jobs_started,
                                                controller.job_finished, progress, None)
    if learns(exp, entry):
        from .learner import DemandLearner
        watch = DemandLearner(controller, exp, log)
        on_start, on_finish = watch.jobs_started, watch.job_finished
        on_iteration = lambda job, rec: (watch.iteration_done(job, rec), progress(job, rec))
    elif exp.semantics.recompute == "flows" and entry.places_flows:
        watch = FlowReplanner(controller, inst.plans,
                              emulated_semantics(exp).replan_min_interval_s)
    driver = TrafficDriver(emu, inst.plans, exp.seed, exp.emulation.tcp_cc, timeout_s,
                           run_dir / "logs", watch=watch)
    timers = [(e.at_s, lambda t, e=e: controller.fire(e, t)) for e in exp.events]
    capture = _capture(exp, run_dir)
    try:
        driver.start_agents()
        driver.connect()
        with ((emu.cpu_monitor() if exp.machines
               else CpuMonitor(emu.taps, others=emu.other_vswitchds)) as monitor,
              (capture or contextlib.nullcontext())):
            records = driver.run_jobs(on_start=on_start, on_finish=on_finish, timers=timers,
                                      on_iteration=on_iteration)
    finally:
        driver.stop_agents()
    return Driven(records, driver.t0, monitor_verdict(exp, monitor, run_dir), capture,
                  watch if learns(exp, entry) else None)


def monitor_verdict(exp: Experiment, monitor: CpuMonitor, run_dir: Path) -> dict:
    """The CPU monitor's summary with its advice; its samples in cpu_samples.csv."""
    fidelity = monitor.summary()
    monitor.write_csv(run_dir / "cpu_samples.csv")
    fidelity["advice"] = advice(fidelity, exp.fabric.spec.host_link_mbps * len(exp.fabric.hosts),
                                exp.emulation.mtu_bytes, len(exp.fabric.hosts),
                                os.getloadavg()[0], os.cpu_count())
    return fidelity


def _capture(exp: Experiment, run_dir: Path):
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


def measure(entry: RoutingEntry, inst: Installed, driven: Driven, run_dir: Path) -> Measured:
    """transfers.csv, then every switch's counters and the path each flow's bytes took;
    a flow given its paths (placed or fixed) must have crossed only their switches."""
    write_transfers_csv(run_dir / "transfers.csv", inst.plans, driven.records)
    settle_flow_stats()
    every = inst.controller.fabric_all  # candidates and counters of every switch, failed or not
    counts = switch_counts(every)
    flows = observed_paths(every, _conns(inst.plans), counts)
    if entry.paths_given and driven.learner is None:   # learned: pinned per pair, not flow
        verify_paths(entry.name, inst.controller, flows)
    return Measured(every, counts, flows, {cid: o["path"] for cid, o in flows.items()})


def verify_paths(name: str, controller: Controller, flows: dict[int, dict]) -> None:
    """Raise PathMismatchError when a flow's bytes crossed a switch none of its paths holds."""
    given = {cid: {sw for p in paths for sw in p[1:-1]}
             for cid, paths in controller.history.items()}
    wrong = [(cid, sorted(given.get(cid, ())), _nonzero(o["bytes"]))
             for cid, o in flows.items()
             if not set(o["switches_with_bytes"]) <= given.get(cid, set())]
    if wrong:
        raise PathMismatchError(
            f"[{name}] {len(wrong)} flows crossed a switch none of their paths holds, e.g. "
            f"conn {wrong[0][0]} given {wrong[0][1]}, bytes per switch {wrong[0][2]}")


def predict_policy(exp: Experiment, entry: RoutingEntry, rp, inst: Installed, goodput: float,
                   measured: Measured) -> Prediction:
    """The model of the same policy: the controller's epochs and events replayed in model
    time (static paths verified by `measure`), for ECMP the paths its hash really chose, per
    phase between events, so that both sides compare like with like."""
    conns = _conns(inst.plans)
    readings = [{}, *inst.controller.counters_at_events, measured.counts]  # start, events, end
    routes = ControllerRoutes(
        entry.routed_by, exp.fabric, conns, exp.seed, exp.events,
        static=rp.path_of if entry.host_enforced else None,
        observed_phases=(phase_paths(measured.every, conns, readings)
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


def job_results(plans: list[JobPlan], driven: Driven, pred: Prediction, ideal_pred) -> list[dict]:
    """Each job's record: its measured iterations beside the prediction of the same policy."""
    jobs = []
    for p in plans:
        rec = driven.records[p.name]
        j = job_result(p.spec, [it.cct_s for it in rec.iterations],
                       ideal_pred.jobs[p.name].mean_cct_s, rec.verified,
                       measured_conn_rates(p, rec))
        j["tcp_retrans_segments"] = rec.iterations[-1].retrans_segments if rec.iterations else 0
        j["iteration_start_s"] = [it.start_s - driven.t0 for it in rec.iterations]
        j["iteration_end_s"] = [it.end_s - driven.t0 for it in rec.iterations]
        j["predicted_cct_s"] = pred.jobs[p.name].cct_s
        j["predicted_iteration_end_s"] = pred.jobs[p.name].iteration_end_s
        j["predicted_cct_mean_s"] = pred.jobs[p.name].mean_cct_s
        j["prediction_error_fraction"] = j["cct_mean_s"] / j["predicted_cct_mean_s"] - 1
        jobs.append(j)
    return jobs


def assemble(exp: Experiment, entry: RoutingEntry, rp, inst: Installed, jobs: list[dict],
             driven: Driven, measured: Measured, goodput: float) -> dict:
    """The run's results record (experiments/results.py run_result) and its extras."""
    controller, plans, conns = inst.controller, inst.plans, _conns(inst.plans)
    fidelity = driven.fidelity
    predicted_cct = slowest_per_iteration([j["predicted_cct_s"] for j in jobs])
    fidelity["tcp_retrans_segments"] = sum(j["tcp_retrans_segments"] for j in jobs)
    tcp = {cid: c for rec in driven.records.values() if rec.iterations
           for cid, c in rec.iterations[-1].tcp.items()}
    for key in ("out_of_order_packets", "reordering_seen"):
        counts = [c[key] for c in tcp.values() if c.get(key) is not None]
        fidelity[f"tcp_{key}"] = sum(counts) if counts else None
    loads = link_flow_counts(exp.fabric, conns, measured.observed)
    run = run_result(
        entry.name, "emulated", jobs,
        # the busiest link: over the controller's epochs (its paths verified by `measure`),
        # or for ECMP and fixed plans over the paths the switch counters saw
        (controller.policy.peak_link_flows if controller.policy.places_flows
         else max_link_flows(exp.fabric, conns, measured.observed)),
        solve_block(rp.stats.as_dict(), controller.policy.solves),
        enforcement=entry.enforced_by,
        fairness=fairness(jobs, exp.fabric.spec.host_link_mbps),
        fidelity=fidelity,
        predicted_cct_s=predicted_cct,
        predicted_cct_mean_s=statistics.fmean(predicted_cct),
        rules={"switches": inst.stats["switches"], "rules": inst.stats["rules"],
               "install_s": inst.stats["install_s"],
               "peak_per_switch": controller.peak_rules_per_switch},
        epochs=controller.epochs, events=controller.events,
        unfired_events=unfired_events(exp, controller),
        paths=path_records(entry, controller, conns, measured, tcp),
        link_flows=[{"link": list(k), "flows": v} for k, v in sorted(loads.items())])
    run["prediction_error_fraction"] = run["cct_mean_s"] / run["predicted_cct_mean_s"] - 1
    if exp.workload is not None:          # an imported workload: its iteration, both ways
        run.update(workload_times(exp.workload, jobs))
        run["predicted_iteration_time_s"] = workload_times(
            exp.workload, jobs, key="predicted_iteration_end_s")["iteration_time_s"]
    if entry.reference:           # no switch-to-switch links: the busiest is a host link
        run["max_link_flows"] = host_link_flows(plans)
    if controller.events:
        run["after_events"] = after_events(exp, controller, plans, jobs, goodput, measured.counts)
    if driven.capture is not None:
        c = driven.capture
        run["capture"] = {"interface": c.interface, "path": str(c.path), "packets": c.packets,
                          "snap_bytes": c.snap_bytes, "error": c.error}
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
             "switch_bytes": _nonzero(measured.flows.get(c.conn_id, {}).get("bytes", {})) or None,
             **{f"tcp_{k}": v for k, v in tcp.get(c.conn_id, {}).items()}}
            for c in conns]


def log_run(name: str, run: dict, controller: Controller, log: Callable[[str], None]) -> None:
    """The run in a few lines: CCT against the prediction, the emulator's health, events."""
    fidelity = run["fidelity"]
    log(f"[{name}] mean CCT {run['cct_mean_s']:.3f} s (predicted "
        f"{run['predicted_cct_mean_s']:.3f} s), efficiency {run['efficiency']:.3f}, "
        f"max flows per link {run['max_link_flows']}, emulator "
        f"{'faithful' if fidelity['ok'] else 'flagged: ' + str(flag_reason(run))} "
        f"(ovs-vswitchd's forwarding thread max "
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


def _conns(plans: list[JobPlan]) -> list[Connection]:
    return [c for p in plans for c in p.connections]


def _nonzero(per_switch: dict[str, int]) -> dict[str, int]:
    return {s: n for s, n in per_switch.items() if n}


def after_events(exp: Experiment, controller: Controller, plans: list[JobPlan],
                 jobs: list[dict], goodput: float, final_counts: dict) -> dict:
    """Iterations that started after the last event, against the model of the degraded
    fabric: the optimizer's final paths, or for ECMP the model's hash over what is left."""
    last = max(e["at_s"] + e["links_set_s"] + e["reroute_s"] for e in controller.events)
    degraded = controller.fabric
    conns = [c for p in plans for c in p.connections]
    if not controller.entry.paths_given:
        # the path each flow's bytes took after the last event (OVS's own hash), else the
        # model's hash over what is left
        seen = observed_paths(degraded, conns, final_counts, controller.counters_at_last_event)
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

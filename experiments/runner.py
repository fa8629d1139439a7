"""`run`: one experiment on the real emulated fabric, once per routing, same fabric and workload.

The steps, each in its own module:

    config (experiments/config.py) -> fabric (testbed/net.py) -> routes (routing/) ->
    rules (routing/rules.py, testbed/installer.py) -> traffic (traffic/driver.py, agent.py) ->
    measure (paths from OVS counters, experiments/measure.py; the record, experiments/results.py)
    -> teardown (testbed/net.py)

Each routing's run (`run_one_routing`) is five steps, one function each, the same for
mlfabric's agents and for unmodified programs (experiments/routing_run.py; what differs
between the two kinds is experiments/job_kinds.py): install (controller and rules) -> drive
(traffic under the controller) -> measure (counters, observed paths, verification) ->
predict (the model of the same policy) -> record (results.run_result and its extras).

Everything that can be checked without root (config, routes, rules) is computed before the
fabric is built, so bad input changes nothing on the machine.
"""
from __future__ import annotations

import dataclasses
import ipaddress
import os
import time
from pathlib import Path
from typing import Callable


from routing import route
from routing.base import RoutingError
from routing.host_enforced import check_port_plan, with_source_ports
from testbed import topologies
from testbed.fabric import Fabric, FabricError
from testbed.net import EmulatedFabric, EmulationSettings
from testbed.ovs import MALLOC_WARNING
from testbed.shaping import BUCKETS, Shaping
from traffic.collectives import JobPlan, plan_jobs, with_port_offset
from traffic.goodput import goodput_factor
from traffic.predictor import ideal

from .config import ConfigError, Experiment, config_text, iteration_timeout_s
from .config.jobs import check_source_ports
from .job_kinds import jobs_of
from .routing_entry import ECMP, RoutingEntry
from .routing_run import PathMismatchError, Step, install, measure, record

__all__ = ["PathMismatchError", "check_emulable", "run_experiment", "run_one_routing"]
from .progress import open_cli
from .results import SCHEMA_VERSION, add_nonblocking_fraction, environment, table, write_json


#: Said when a run uses Open vSwitch's kernel datapath (docs/emulation.md, "Datapaths").
KERNEL_DATAPATH_NOTE = ("datapath kernel: mlfabric's fidelity figures were measured on the "
                        "userspace datapath only; this run's monitor watches the kernel's "
                        "softirq, and its calibration is its own (`mlfabric calibrate`)")

#: The fastest link `run` accepts: the whole emulator carried about 1.3 Gbit/s of host traffic
#: on 2 cores (fidelity benchmark), so one link faster than this could never be honoured.
MAX_EMULATED_MBPS = 1000.0


def check_emulable(exp: Experiment) -> None:
    """Raise ConfigError (before anything is built) for a fabric the emulator cannot shape,
    semantics its agents and controller do not run, or more connections than source ports."""
    if exp.fabric.planes > 1:
        _check_planes(exp)
    if exp.fabric.spec.has_nvlink:
        _check_servers(exp)
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


def _check_planes(exp: Experiment) -> None:
    """Planes the emulator runs: each flow's port set by its host's rules, on one machine,
    from declared traffic."""
    if exp.demand[0] == "measured" and exp.fabric.server_of and jobs_pxn(exp):
        raise ConfigError("demand: measured on planes learns host pairs without PXN's relay, "
                          "whose NIC would send them by port 1; set pxn: false on the jobs, "
                          "declare the traffic, or use planes: 1")
    if exp.machines:
        raise ConfigError("machines: several planes run on one machine; drop machines")


def _check_servers(exp: Experiment) -> None:
    """Servers the emulator can build: NVLink shaped as any link, one machine, and one PXN
    setting for every job (the hosts' routes carry it)."""
    if exp.fabric.spec.nvlink_mbps > MAX_EMULATED_MBPS:
        raise ConfigError(f"fabric.nvlink_mbps: the emulator shapes at most "
                          f"{MAX_EMULATED_MBPS:g} Mbit/s per link; scale NVLink down with the "
                          "NICs for `run` (e.g. 9x host_link_mbps, as NVLink 4 to 400G)")
    if exp.machines:
        raise ConfigError("machines: servers with NVLink are emulated on one machine; drop "
                          "machines or gpus_per_server")
    if len({j.pxn for j in exp.jobs}) > 1:
        raise ConfigError("jobs: pxn must be the same for every job of a `run` on servers (the "
                          "hosts' routes carry it); use `predict` to mix them")


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
    return EmulatedFabric(exp.fabric, run_id, settings, pxn=jobs_pxn(exp))


def jobs_pxn(exp: Experiment) -> bool:
    """Whether the jobs relay across rails (PXN): one setting for every job of a run, as
    the hosts' routes carry it (check_emulable)."""
    return all(j.pxn for j in exp.jobs)


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
    (out_dir / "config.yaml").write_text(config_text(exp.resolved()))
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
    if emu.datapath == "kernel":
        log(KERNEL_DATAPATH_NOTE)
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
    with EmulatedFabric(twin, f"{run_id}-nb", settings, pxn=jobs_pxn(exp)) as emu:
        conns = [c for p in plans for c in p.connections]
        return run_one_routing(one, emu, entry, route(ECMP, twin, conns),
                               with_port_offset(plans, offset), ideal_pred, goodput,
                               timeout_s, out_dir / entry.run_dir, log,
                               port_offset=offset)


def run_one_routing(exp: Experiment, emu, entry: RoutingEntry, rp, plans: list[JobPlan],
                    ideal_pred, goodput: float, timeout_s: float, run_dir: Path,
                    log: Callable[[str], None], port_offset: int = 0) -> dict:
    """One routing on the live fabric, in experiments/routing_run.py's steps, for the kind
    of jobs `exp` runs (experiments/job_kinds.py)."""
    step = Step(exp, emu, entry, rp, run_dir, log)
    jobs = jobs_of(exp)
    inst = install(step, plans, port_offset)
    driven = jobs.drive(step, inst, timeout_s)
    measured = measure(step, inst, driven)
    pred = jobs.prediction(step, inst, driven, goodput, measured)
    rows = jobs.rows(step, inst, driven, pred, ideal_pred, goodput)
    run = record(step, inst, rows, driven, measured)
    jobs.finish(run, step, inst, driven, measured, goodput)
    return run

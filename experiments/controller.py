"""The routing controller of an emulated run: epochs and failures, live.

The paper's controller does not route once. Here, during `run`:
- an **epoch** starts whenever the set of active flows changes (jobs start or finish): the
  routing policy (routing/policy.py) recomputes the routes of the active flows, starting from
  the previous assignment (low churn), and only the rules that differ are swapped, one atomic
  `ovs-ofctl bundle` per switch that changes;
- an **event** (fail_spine, fail_link, restore_*) takes the element down or up in the emulator
  in both directions, then the controller reacts as the fabric's control plane would: ECMP
  groups drop (or regain) the spines that can no longer (or can again) reach each leaf, as a
  routing protocol withdraws a next hop, and an optimizing strategy reroutes its flows. Between
  the event and those rules, ECMP buckets that watch a dead local uplink stop being used by the
  switch itself.

- with the epoch policy `recompute: flows` (`FlowReplanner`), also whenever the flows in
  flight change: the agents report every transfer as it lands, and the controller re-plans
  the connections then carrying a transfer, at most once per replan_min_interval_s
  (EMULATED_REPLAN_INTERVAL_S unless the config says), moving flows in flight.

Every epoch and event is recorded with its timing (seconds since the jobs' clock started);
a re-plan of the flows in flight is recorded as an epoch when it moved a flow.
"""
from __future__ import annotations

import time
from pathlib import Path

from routing.host_enforced import plane_of_port
from routing.policy import Decision, EpochPolicy
from routing.rules import HostRule, cookie_of, host_rules, rules_for, static_rules
from testbed.openflow import Rule, diff_lines, rule_key
from routing.paths import Path as SwitchPath
from testbed.fabric import Fabric, build_fabric, link_key
from testbed.installer import apply_lines, flow_bytes_by_cookie, install
from traffic.collectives import Connection, JobPlan
from traffic.inflight import InFlight

from .config import Event, apply_event
from .measure import switch_counts
from .routing_entry import RoutingEntry


#: The emulator's hold between two re-plans of the flows in flight (recompute: flows), s:
#: about what one re-plan's solve and rule bundles take on the quickstart, so re-plans do not
#: queue behind each other while a step's transfers land one after another.
EMULATED_REPLAN_INTERVAL_S = 0.05


class Controller:
    """Keeps the installed rules in step with the routing policy's decisions."""

    def __init__(self, emu, fabric: Fabric, entry: RoutingEntry, plans: list[JobPlan],
                 seed: int, rules_dir: Path,
                 static_paths: dict[int, SwitchPath | None] | None = None,
                 time_limit_s: float | None = None,
                 routed: list[Connection] | None = None):
        """`entry`: the routing run (the policy runs `entry.routed_by`). `static_paths`: a
        fixed plan enforced by the hosts' source ports (the plans' connections carry them);
        None: switch-enforced, recomputed at every epoch. `time_limit_s`: each ilp / mmf
        solve's CBC limit. `routed`: the connections the policy places, when not the plans'
        (demand: measured: the host pairs it learns, experiments/learner.py); the plans'
        are then counted, never pinned."""
        self.emu, self.fabric0 = emu, fabric
        # counters on every switch, failed or not: restored elements keep counting
        self.fabric_all = build_fabric(fabric.spec.with_failures((), ()))
        self.entry, self.strategy, self.rules_dir = entry, entry.routed_by, rules_dir
        self.conns: list[Connection] = [c for p in plans for c in p.connections]
        placed = self.conns if routed is None else routed
        if routed is not None:
            self.conns = self.conns + routed
        self.policy = EpochPolicy(self.strategy, fabric, placed, seed, static=static_paths,
                                  time_limit_s=time_limit_s)
        self.seed = seed
        self.installed: list[Rule] = []
        self.host_rules: list[HostRule] = []     # on several planes: each flow's NIC port
        self._planes: dict[int, int] = {}
        self._pins: set = set()      # upper switches' pins (rule keys) now
        self._held: set = set()      # those kept one update after their flows left
        self.epochs: list[dict] = []
        self.events: list[dict] = []
        self._n = 0
        self._modified = 0
        self.counters_at_last_event: dict[str, dict[int, int]] = {}
        #: spine counters (cookie -> bytes) read at each event, in order: ECMP's phases
        self.counters_at_events: list[dict[str, dict[int, int]]] = []
        self.peak_rules_per_switch: dict[str, int] = {}

    @property
    def fabric(self) -> Fabric:
        """The live fabric now (after the events so far)."""
        return self.policy.fabric

    @property
    def history(self) -> dict[int, set[SwitchPath]]:
        return self.policy.history

    def final_path(self, cid: int) -> SwitchPath | None:
        return self.policy.final_path(cid)

    # -- rules -------------------------------------------------------------------------------
    def _desired(self) -> list[Rule]:
        """The rules for now: pins only for the active flows (the assignment holds no other)."""
        return rules_for(self.fabric, self.conns, self.strategy, self.policy.assignment,
                         "switch" if self.policy.static is None else "host",
                         counted_on=self.fabric_all)

    def install_initial(self) -> dict:
        """Wipe and write every switch's rules (no job active yet): returns the install stats."""
        self.installed = self._desired()
        self._note_peak()
        stats = install(self.installed, self.rules_dir)
        self._apply_host_rules()
        return stats

    @property
    def host_planes(self) -> dict[int, int]:
        """conn_id -> the plane its host last sent it by (1 unless a host rule said)."""
        return self._planes

    def _apply_host_rules(self) -> None:
        """On several planes, swap in the hosts' port choices that differ (routing/rules.py
        HostRule): the removed ones first, per host one `ip -batch`."""
        by_port = self.policy.static is not None      # @host: the source port says
        new = host_rules(self.fabric, self.conns, self.strategy, self.policy.assignment,
                         self.seed, "host" if by_port else "switch")
        gone, added = set(self.host_rules) - set(new), set(new) - set(self.host_rules)
        lines: dict[str, list[str]] = {}
        for r in sorted(gone, key=lambda r: r.conn_id):
            lines.setdefault(r.host, []).append(r.line("del"))
        for r in sorted(added, key=lambda r: r.conn_id):
            lines.setdefault(r.host, []).append(r.line("add"))
        if lines:
            self.emu.set_host_rules(lines)
        self.host_rules = new
        if by_port:
            self._planes = {c.conn_id: plane_of_port(self.fabric, c.src_port)
                            for c in self.conns}
            return
        self._planes.update(dict.fromkeys(self.policy.assignment, 1))   # placed: port 1 ..
        self._planes.update({r.conn_id: r.plane for r in new})          # .. unless ruled

    def _note_peak(self) -> None:
        counts: dict[str, int] = {}
        for r in self.installed:
            counts[r.switch] = counts.get(r.switch, 0) + 1
        for sw, n in counts.items():
            self.peak_rules_per_switch[sw] = max(n, self.peak_rules_per_switch.get(sw, 0))

    def _apply(self, label: str) -> tuple[int, int, float]:
        """Swap in the rules that differ, the switches above the leaves first: a flow whose
        leaf now sends it elsewhere finds its pin wherever it arrives (an agg choosing its
        core), and the pins it leaves stay until the next update, for the packets still
        queued towards them; then the leaves."""
        leaves = set(self.fabric0.leaves)
        pins = ({rule_key(r) for r in static_rules(self.fabric, self.conns,
                                                   self.policy.assignment)
                 if r.switch not in leaves} if self.policy.static is None else set())
        hold = {k for k in self._pins - pins if k not in self._held}
        installed = {rule_key(r): r for r in self.installed}
        new = [r for r in self._desired() if rule_key(r) not in hold]
        new += [installed[k] for k in hold if k in installed]
        self._pins, self._held = pins | hold, hold
        lines = diff_lines(self.installed, new)
        t0 = time.perf_counter()
        apply_lines({s: ls for s, ls in lines.items() if s not in leaves}, self.rules_dir,
                    label)
        apply_lines({s: ls for s, ls in lines.items() if s in leaves}, self.rules_dir, label)
        self._apply_host_rules()
        install_s = time.perf_counter() - t0
        self.installed = new
        self._note_peak()
        kinds = [ln.split(" ", 2)[:2] for ls in lines.values() for ln in ls]
        added = sum(1 for k in kinds if k[1] == "add")
        removed = sum(1 for k in kinds if k[1].startswith("delete"))
        self._modified = sum(1 for k in kinds if k[1] == "modify")
        return added, removed, install_s

    # -- hooks called by the traffic driver --------------------------------------------------
    def _epoch(self, at_s: float, reason: str, decision: Decision) -> dict:
        self._n += 1
        added, removed, install_s = self._apply(f"epoch{self._n:02d}")
        rec = {"at_s": at_s, "reason": reason, "active_jobs": sorted(self.policy.active),
               "active_flows": sum(1 for c in self.conns if c.job in self.policy.active),
               "solve_time_s": decision.solve_s, "rules_added": added,
               "rules_removed": removed, "groups_modified": self._modified,
               "install_s": install_s, "flows_moved": decision.moved}
        self.epochs.append(rec)
        return rec

    def record_epoch(self, at_s: float, reason: str, decision: Decision) -> dict:
        """A decision the policy took for someone else (experiments/learner.py): its rules
        swapped in and recorded as an epoch."""
        return self._epoch(at_s, reason, decision)

    def jobs_started(self, jobs: list[str], at_s: float) -> None:
        self._epoch(at_s, "start " + ",".join(sorted(jobs)), self.policy.start(jobs))

    def job_finished(self, job: str, at_s: float) -> None:
        self._epoch(at_s, f"finish {job}", self.policy.finish(job))

    def replan_flows(self, in_flight: list[int], at_s: float) -> None:
        """recompute="flows": re-plan the connections `in_flight`; an epoch if a flow moved."""
        decision = self.policy.replan(in_flight, f"flows at {at_s:.3f} s")
        if decision.moved:
            self._epoch(at_s, "flows", decision)

    def iteration_bound(self, at_s: float) -> None:
        """floodns's epoch policy (Semantics recompute="iterations"): every active flow is
        rerouted at an iteration's start or end. The traffic driver does not call this yet."""
        self._epoch(at_s, "iteration", self.policy.recompute())

    def fire(self, event: Event, at_s: float) -> dict:
        """Apply `event` to the emulator, then reroute; record event-to-rules time."""
        t_start = time.perf_counter()
        up = event.kind.startswith("restore")
        after = apply_event(self.fabric, event)
        # a restored switch brings back only the links that are not failed on their own
        links = [(u, v) for u, v in self._links_of(event) if not up or after.is_live(u, v)]
        for u, v in links:
            self.emu.set_link(u, v, up)
        t_event = time.perf_counter()   # the element is now down (or up): the controller reacts
        decision = self.policy.change_fabric(after, f"{event.kind} {'/'.join(event.target)}")
        rec = self._epoch(at_s, f"{event.kind} {'/'.join(event.target)}", decision)
        reroute_s = time.perf_counter() - t_event
        moved = rec["flows_moved"]
        if moved is None and not up:   # ECMP: the active flows the failure forces off
            moved = len(self._active_flows_on(links))
        self.counters_at_last_event = switch_counts(self.fabric_all)
        self.counters_at_events.append(self.counters_at_last_event)
        ev = {"at_s": at_s, "scheduled_at_s": event.at_s, "kind": event.kind,
              "target": list(event.target), "links_set_s": t_event - t_start,
              "reroute_s": reroute_s,
              "flows_moved": moved, "links": [list(l) for l in links]}
        self.events.append(ev)
        return ev

    def restore_links(self, events: list[Event]) -> None:
        """Every link the config's events take down or up, set back as the run's fabric
        starts: an earlier routing's run on the same emulated fabric left them as its last
        event did."""
        links = dict.fromkeys(link for e in events for link in self._links_of(e))
        for u, v in links:
            self.emu.set_link(u, v, self.fabric0.is_live(u, v))

    def _active_flows_on(self, links: list[tuple[str, str]]) -> list[int]:
        """Active flows that had sent bytes over one of `links` (switch counters since the
        previous event): the upper end counted the flow, and the lower end is one of the
        flow's leaves or counted it too."""
        ends = {u for e in links for u in e if self.fabric0.role(u) != "leaf"}
        now = {s: flow_bytes_by_cookie(s) for s in ends}
        before = self.counters_at_last_event
        out = []
        for c in self.conns:
            if c.job not in self.policy.active:
                continue
            k = cookie_of(c.conn_id)
            leaves = {self.fabric0.leaf_at(h, p) for h in (c.src, c.dst)     # every plane's
                      for p in range(1, self.fabric0.planes + 1)}

            def sent(sw: str) -> bool:
                return now[sw].get(k, 0) - before.get(sw, {}).get(k, 0) > 0
            if any(sent(v) and (u in leaves if self.fabric0.role(u) == "leaf" else sent(u))
                   for u, v in links):
                out.append(c.conn_id)
        return out

    def _links_of(self, event: Event) -> list[tuple[str, str]]:
        """The links an event takes down or up: a switch's links to other switches, or one."""
        if event.on_switch:
            s = event.target[0]
            return [link_key(s, n) for n in self.fabric0.graph.successors(s)
                    if self.fabric0.role(n) != "host"]
        return [tuple(event.target)]


class FlowReplanner:
    """The traffic driver's watch (traffic/driver.py FlowWatch) under recompute="flows": keeps
    the transfers in flight from the agents' reports and has the controller re-plan their
    connections after each batch of reports, at most once per `gap_s` seconds."""

    def __init__(self, controller: Controller, plans: list[JobPlan], gap_s: float):
        self.controller, self.gap_s = controller, gap_s
        self.flying = InFlight(plans)
        self.dirty = False
        self.last_s = -float("inf")

    def iteration_started(self, job: str, t: float) -> None:
        self.flying.begin(job)
        self.dirty = True

    def transfer_received(self, job: str, tid: int, t: float) -> None:
        self.flying.received(job, tid)
        self.dirty = True

    def due_s(self) -> float | None:
        return self.last_s + self.gap_s if self.dirty else None

    def tick(self, t: float) -> None:
        if not self.dirty or t < self.last_s + self.gap_s:
            return
        self.dirty = False
        self.last_s = t
        self.controller.replan_flows(self.flying.conns(), t)

"""The routing controller of an emulated run: epochs and failures, live.

The paper's controller does not route once. Here, during `run`:
- an **epoch** starts whenever the set of active flows changes (jobs start or finish): the
  configured strategy recomputes the routes of the active flows, starting from the previous
  assignment (low churn), and only the rules that differ are swapped, one atomic
  `ovs-ofctl bundle` per switch that changes;
- an **event** (fail_spine, fail_link, restore_*) takes the element down or up in the emulator
  in both directions, then the controller reacts as the fabric's control plane would: ECMP
  groups drop (or regain) the spines that can no longer (or can again) reach each leaf, as a
  routing protocol withdraws a next hop, and an optimizing strategy reroutes its flows. Between
  the event and those rules, ECMP buckets that watch a dead local uplink stop being used by the
  switch itself.

Every epoch and event is recorded with its timing (seconds since the jobs' clock started).
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from routing.epochs import recompute
from routing.rules import Rule, cookie_of, diff_lines, rules_for
from testbed.fabric import Fabric, build_fabric
from testbed.installer import apply_lines, flow_bytes_by_cookie, install
from testbed.ovs import run
from traffic.collectives import Connection, JobPlan

from .config import Event, apply_event


class Controller:
    """Keeps the installed rules in step with the active jobs and the fabric's failures."""

    def __init__(self, emu, fabric: Fabric, strategy: str, plans: list[JobPlan], seed: int,
                 rules_dir: Path, static_spine_of: dict[int, str | None] | None = None):
        """`static_spine_of`: a fixed plan enforced by the hosts' source ports (the plans'
        connections carry them); None: switch-enforced, recomputed at every epoch."""
        self.emu, self.fabric0, self.fabric = emu, fabric, fabric
        # counters on every spine, failed or not: restored elements keep counting
        self.fabric_all = build_fabric(dataclasses.replace(fabric.spec, failed_spines=(),
                                                           failed_links=()))
        self.strategy, self.seed, self.rules_dir = strategy, seed, rules_dir
        self.conns: list[Connection] = [c for p in plans for c in p.connections]
        self.jobs = {p.name: p for p in plans}
        self.static = static_spine_of
        self.active: set[str] = set()
        self.assignment: dict[int, str | None] = {}
        self.history: dict[int, set[str]] = {}     # every spine a flow was given
        self.installed: list[Rule] = []
        self.epochs: list[dict] = []
        self.events: list[dict] = []
        self._by_id = {c.conn_id: c for c in self.conns}
        self._lost: set[int] = set()               # flows whose spine just failed
        self._last: dict[int, str | None] = {}     # finished flows: their last spine
        self._n = 0
        self._modified = 0
        self.counters_at_last_event: dict[str, dict[int, int]] = {}
        self.peak_rules_per_switch: dict[str, int] = {}

    # -- rules -------------------------------------------------------------------------------
    def _desired(self) -> list[Rule]:
        """The rules for now: pins only for the active flows (the assignment holds no other)."""
        return rules_for(self.fabric, self.conns, self.strategy, self.assignment,
                         "switch" if self.static is None else "host",
                         counted_on=self.fabric_all)

    def install_initial(self) -> dict:
        """Wipe and write every switch's rules (no job active yet): returns the install stats."""
        if self.static is not None:
            self.assignment = dict(self.static)
            for cid, s in self.static.items():
                if s is not None:
                    self.history.setdefault(cid, set()).add(s)
        self.installed = self._desired()
        self._note_peak()
        return install(self.installed, self.rules_dir)

    def _note_peak(self) -> None:
        counts: dict[str, int] = {}
        for r in self.installed:
            counts[r.switch] = counts.get(r.switch, 0) + 1
        for sw, n in counts.items():
            self.peak_rules_per_switch[sw] = max(n, self.peak_rules_per_switch.get(sw, 0))

    def _apply(self, label: str) -> tuple[int, int, float]:
        new = self._desired()
        lines = diff_lines(self.installed, new)
        t0 = time.perf_counter()
        apply_lines(lines, self.rules_dir, label)
        install_s = time.perf_counter() - t0
        self.installed = new
        self._note_peak()
        kinds = [ln.split(" ", 2)[:2] for ls in lines.values() for ln in ls]
        added = sum(1 for k in kinds if k[1] == "add")
        removed = sum(1 for k in kinds if k[1].startswith("delete"))
        self._modified = sum(1 for k in kinds if k[1] == "modify")
        return added, removed, install_s

    def _reroute(self) -> tuple[float, int | None]:
        """Recompute the active flows' spines; returns (solve time, flows moved)."""
        if self.strategy == "ecmp" or self.static is not None:
            return 0.0, None
        active = [c for c in self.conns if c.job in self.active]
        previous = {cid: s for cid, s in self.assignment.items()
                    if s is None or self._usable(cid, s)}
        result = recompute(self.strategy, self.fabric, active, previous, seed=self.seed)
        self.assignment = {c.conn_id: result.plan.spine_of[c.conn_id] for c in active}
        for cid, s in self.assignment.items():
            if s is not None:
                self.history.setdefault(cid, set()).add(s)
        moved = sum(1 for c in active if c.conn_id in previous
                    and previous[c.conn_id] != self.assignment[c.conn_id])
        moved += sum(1 for cid, s in self.assignment.items()
                     if cid in self._lost and s is not None)
        return result.plan.stats.time_s, moved

    def _usable(self, cid: int, spine: str) -> bool:
        c = self._by_id[cid]
        return spine in self.fabric.usable_spines(self.fabric.leaf_of(c.src),
                                                  self.fabric.leaf_of(c.dst))

    def final_spine(self, cid: int) -> str | None:
        """The spine a flow has now, or the last it had (finished jobs)."""
        if cid in self.assignment:
            return self.assignment[cid]
        return self._last.get(cid)

    # -- hooks called by the traffic driver --------------------------------------------------
    def _epoch(self, at_s: float, reason: str) -> dict:
        self._n += 1
        solve_s, moved = self._reroute()
        added, removed, install_s = self._apply(f"epoch{self._n:02d}")
        rec = {"at_s": at_s, "reason": reason, "active_jobs": sorted(self.active),
               "active_flows": sum(1 for c in self.conns if c.job in self.active),
               "solve_time_s": solve_s, "rules_added": added, "rules_removed": removed,
               "groups_modified": self._modified, "install_s": install_s,
               "flows_moved": moved}
        self.epochs.append(rec)
        return rec

    def jobs_started(self, jobs: list[str], at_s: float) -> None:
        self.active.update(jobs)
        self._epoch(at_s, "start " + ",".join(sorted(jobs)))

    def job_finished(self, job: str, at_s: float) -> None:
        self.active.discard(job)
        for c in self.jobs[job].connections:
            if c.conn_id in self.assignment:
                self._last[c.conn_id] = self.assignment.pop(c.conn_id)
        self._epoch(at_s, f"finish {job}")

    def fire(self, event: Event, at_s: float) -> dict:
        """Apply `event` to the emulator, then reroute; record event-to-rules time."""
        t_start = time.perf_counter()
        up = event.kind.startswith("restore")
        after = apply_event(self.fabric, event)
        # a restored spine brings back only the links that are not failed on their own
        links = [(leaf, spine) for leaf, spine in self._links_of(event)
                 if not up or after.is_live(leaf, spine)]
        for leaf, spine in links:
            self._set_link(leaf, spine, up)
        t_event = time.perf_counter()   # the element is now down (or up): the controller reacts
        self.fabric = after
        self._lost = {cid for cid, s in self.assignment.items()
                      if s is not None and not self._usable(cid, s)}
        for cid in self._lost:
            self.assignment.pop(cid)
        rec = self._epoch(at_s, f"{event.kind} {'/'.join(event.target)}")
        reroute_s = time.perf_counter() - t_event
        self._lost = set()
        moved = rec["flows_moved"]
        if moved is None and not up:   # ECMP: the active flows the failure forces off
            moved = len(self._active_flows_on(links))
        self.counters_at_last_event = {s: flow_bytes_by_cookie(s) for s in self.fabric0.spines}
        ev = {"at_s": at_s, "scheduled_at_s": event.at_s, "kind": event.kind,
              "target": list(event.target), "links_set_s": t_event - t_start,
              "reroute_s": reroute_s,
              "flows_moved": moved, "links": [list(l) for l in links]}
        self.events.append(ev)
        return ev

    def _active_flows_on(self, links: list[tuple[str, str]]) -> list[int]:
        """Active flows that had sent bytes over one of `links` (spine counters)."""
        spines = {s for _, s in links}
        counts = {s: flow_bytes_by_cookie(s) for s in spines}
        before = self.counters_at_last_event   # only bytes since the previous event count
        counts = {s: {k: v - before.get(s, {}).get(k, 0) for k, v in c.items()}
                  for s, c in counts.items()}
        out = []
        for c in self.conns:
            if c.job not in self.active:
                continue
            ends = {self.fabric0.leaf_of(c.src), self.fabric0.leaf_of(c.dst)}
            for leaf, s in links:
                if leaf in ends and counts[s].get(cookie_of(c.conn_id), 0) > 0:
                    out.append(c.conn_id)
                    break
        return out

    def _links_of(self, event: Event) -> list[tuple[str, str]]:
        if event.kind.endswith("_spine"):
            return [(leaf, event.target[0]) for leaf in self.fabric0.leaves]
        return [tuple(event.target)]

    def _set_link(self, leaf: str, spine: str, up: bool) -> None:
        """Both ends of the leaf-spine veth pair down (or up): both directions fail."""
        f = self.fabric0
        for intf in (f"{leaf}-eth{f.port(leaf, spine)}", f"{spine}-eth{f.port(spine, leaf)}"):
            run(["ip", "link", "set", "dev", intf, "up" if up else "down"])

"""The `events` section: failures and repairs at given times, checked by the fabric model
(Fabric.failable_switch, failable_link, changed) and replayed once in time order.
"""
from __future__ import annotations

from typing import Any

from testbed.fabric import Fabric, FabricError
from traffic.collectives import JobSpec

from ..routing_entry import parse_entries
from .limits import MAX_EVENTS
from .keys import EVENT_KINDS
from .readers import ConfigError, quote, _check_keys, _num
from .records import EmulationConfig, Event
from .fabric import unreachable
from .timing import events_horizon_s


def apply_event(fabric: Fabric, event: Event) -> Fabric:
    """The fabric after `event` (testbed/fabric.py Fabric.changed); FabricError when it
    cannot be built (e.g. a leaf would be cut off)."""
    return fabric.changed(event.kind.startswith("fail"), tuple(event.target))


def _replay(events: list[Event], fabric: Fabric, pairs: dict | None = None) -> None:
    """Every event must change something, leave every leaf connected and every pair of hosts
    the jobs connect (`pairs`, from host_pairs) a live path."""
    for i, e in enumerate(events):
        failed = set(fabric.spec.failed) if e.on_switch else set(fabric.spec.failed_links)
        key = e.target[0] if e.on_switch else tuple(e.target)
        if e.kind.startswith("fail") == (key in failed):
            state = "already failed" if e.kind.startswith("fail") else "not failed"
            raise ConfigError(f"events (at_s {e.at_s:g}): {'/'.join(e.target)} is {state} "
                              f"then; {e.kind} changes nothing")
        try:
            fabric = apply_event(fabric, e)
        except FabricError as err:
            raise ConfigError(f"events (at_s {e.at_s:g}, {e.kind}): {err}") from None
        cut = unreachable(fabric, pairs or {})
        if cut:
            raise ConfigError(f"events (at_s {e.at_s:g}, {e.kind} {'/'.join(e.target)}): the "
                              f"fabric then has no live path for {cut}; fail less, or "
                              "restore something first")


def _event_target(fabric: Fabric, kind: str, t: Any, where: str) -> tuple[str, ...]:
    """A checked event target (the fabric model checks it): (switch,) or a link as (lower
    tier, upper tier)."""
    try:
        if kind.endswith("_link"):
            return fabric.failable_link(t)
        return (fabric.failable_switch(t, "spine" if kind.endswith("_spine") else None),)
    except FabricError as e:
        raise ConfigError(f"{where}.{kind}: {e}") from None


def _events(v: Any, fabric: Fabric, routing: list[str], jobs: list[JobSpec],
            em: EmulationConfig, pairs: dict | None = None) -> list[Event]:
    if v is None:
        return []
    if not isinstance(v, list):
        raise ConfigError("events: expected a list like [{at_s: 3.0, fail_spine: spine2}], "
                          f"got {type(v).__name__} {quote(v)}")
    if len(v) > MAX_EVENTS:
        raise ConfigError(f"events: {len(v):,} events; at most {MAX_EVENTS} (each one rebuilds "
                          "the fabric and re-solves every routing)")
    horizon = events_horizon_s(jobs, fabric, em) if v else 0.0
    events = []
    for i, d in enumerate(v):
        where = f"events[{i}]"
        _check_keys(d, {"at_s", *EVENT_KINDS}, where)
        at_s = _num(d, "at_s", where, positive=False)
        if at_s > horizon:
            raise ConfigError(
                f"{where}.at_s: {at_s:g} s is after every job has ended or timed out (by "
                f"{horizon:,.1f} s: start_s + iterations x (compute_s + the iteration timeout), "
                "summed over jobs), so it could never fire; schedule it earlier")
        kinds = [k for k in EVENT_KINDS if k in d]
        if len(kinds) != 1:
            raise ConfigError(f"{where}: give exactly one of {', '.join(EVENT_KINDS)}")
        kind = kinds[0]
        events.append(Event(at_s, kind, _event_target(fabric, kind, d[kind], where)))
    _replay(sorted(events, key=lambda e: e.at_s), fabric, pairs)
    if events and any(e.host_enforced for e in parse_entries(routing)):
        raise ConfigError("events: host-enforced routing (@host) fixes each flow's source port "
                          "when it connects, so it cannot reroute; drop @host or the events")
    return sorted(events, key=lambda e: e.at_s)

"""Explicit jobs: a collective over listed hosts (`jobs[]` with `collective:`, and a program
job's declared `traffic:`), below both the jobs section and the program jobs that use them.
"""
from __future__ import annotations

from typing import Any

from testbed.fabric import Fabric
from traffic.collectives import Collective, JobSpec

from .limits import MAX_ITERATIONS, MAX_SIZE_BYTES
from .keys import EXPLICIT_JOB_KEYS
from .readers import ConfigError, quote, _check_keys, _choice, _int, _name, _num


def hosts_list(v: Any, where: str, fabric: Fabric) -> list[str]:
    """A list of this fabric's host names, e.g. [h1, h5]."""
    if not isinstance(v, list) or not v:
        raise ConfigError(f"{where}: expected a list of host names, e.g. [h1, h5], "
                          f"got {quote(v)}")
    n = len(fabric.hosts)
    for h in v:
        if not isinstance(h, str) or not fabric.graph.has_node(h) \
                or fabric.graph.nodes[h].get("role") != "host":
            raise ConfigError(f"{where}: unknown host {quote(h)} (this fabric has h1..h{n})")
    return list(v)


def _groups(d: dict, where: str, fabric: Fabric) -> list[list[str]]:
    """`hosts: [...]` (one group) or `groups: [[...], ...]` (several, e.g. the rings of a
    model job as resolved() writes them), exactly one of the two."""
    if ("hosts" in d) == ("groups" in d):
        raise ConfigError(f"{where}: give either hosts: [h1, h5, ...] or groups: "
                          "[[h1, h5], [h2, h6], ...]")
    if "hosts" in d:
        return [hosts_list(d["hosts"], f"{where}.hosts", fabric)]
    g = d["groups"]
    if not isinstance(g, list) or not g:
        raise ConfigError(f"{where}.groups: expected a list of host lists, e.g. "
                          f"[[h1, h5], [h2, h6]], got {quote(g)}")
    return [hosts_list(x, f"{where}.groups[{i}]", fabric) for i, x in enumerate(g)]


def explicit_job(d: dict, where: str, fabric: Fabric) -> JobSpec:
    """A job given as a collective, its hosts or groups and its size."""
    _check_keys(d, EXPLICIT_JOB_KEYS, where)
    name = _name(d, "name", where)
    collective = Collective(_choice(d, "collective", where, [c.value for c in Collective]))
    groups = _groups(d, where, fabric)
    return JobSpec(
        name=name, collective=collective, groups=groups,
        size_bytes=_int(d, "size_bytes", where, maximum=MAX_SIZE_BYTES, why="1 TiB"),
        iterations=_int(d, "iterations", where, 1, maximum=MAX_ITERATIONS),
        compute_s=_num(d, "compute_s", where, 0.0, positive=False),
        start_s=_num(d, "start_s", where, 0.0, positive=False))

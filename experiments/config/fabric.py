"""The `fabric` section: its topology kind (testbed/topologies/) reads its own keys with the
bounds its Params give, then the failures; and the check that the failures leave a live
path for every pair of hosts the jobs connect.
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from testbed import topologies
from testbed.fabric import ISOLATED, Fabric, FabricError, FabricSpec, build_fabric
from testbed.planes import MAX_PLANES
from testbed.servers import MAX_GPUS_PER_SERVER, MAX_NVLINK_MBPS
from testbed.topologies.base import MAX_RATE_MBPS, MIN_RATE_MBPS, RATE_WHY
from routing.path_blocks import (BYTES_PER_PATH_LINK_ID, BYTES_PER_SPRAYED_LINK_ID,
                                 MAX_PATH_LINK_IDS, path_link_ids)
from traffic.collectives import unique_connections

from .readers import ConfigError, quote, _check_keys, _int, _num, _name_list

#: The failure keys a fabric section may give (each kind takes some of them).
FAILURE_KEYS = ("failed_spines", "failed_switches", "failed_links")


def _rate(d: dict, key: str) -> float:
    return _num(d, key, "fabric", minimum=MIN_RATE_MBPS, maximum=MAX_RATE_MBPS, why=RATE_WHY)


def _switch_names(d: dict, key: str) -> tuple[str, ...]:
    names = _name_list(d, key, "fabric")
    for x in names:
        if not isinstance(x, str) or len(x) > 64:
            raise ConfigError(f"fabric.{key}: {quote(x)} is not a switch name, e.g. core3")
    _once(names, key)
    return tuple(names)


def _once(items: list, key: str) -> None:
    """ConfigError naming the first item of `items` that is listed twice."""
    seen = set()
    for x in items:
        x = tuple(sorted(x)) if isinstance(x, list) else x
        if x in seen:
            raise ConfigError(f"fabric.{key}: {quote(list(x) if isinstance(x, tuple) else x)} "
                              "is listed twice; fail it once")
        seen.add(x)


def _link_pairs(d: dict, key: str, example: str) -> tuple[tuple[str, str], ...]:
    pairs = _name_list(d, key, "fabric")
    for p in pairs:
        if (not isinstance(p, list) or len(p) != 2
                or not all(isinstance(x, str) and len(x) <= 64 for x in p)):
            raise ConfigError(f"fabric.{key}: {quote(p)} is not a pair of switch names, "
                              f"e.g. {example}")
    _once(pairs, key)
    return tuple(tuple(p) for p in pairs)


def _fabric(d: Any) -> Fabric:
    """The fabric section: its kind (`topology`, default leaf-spine) reads its own keys, each
    with the bound its Param gives, then the failures; the model builds and checks it."""
    if not isinstance(d, dict):
        raise ConfigError(f"fabric: expected a mapping of keys, got {type(d).__name__}")
    name = d.get("topology", topologies.DEFAULT)
    if not isinstance(name, str) or name not in topologies.KINDS:
        raise ConfigError(f"fabric.topology: unknown {quote(name)}; choose from "
                          f"{', '.join(topologies.KINDS)}")
    kind = topologies.kind(name)
    d = _check_keys(d, kind.keys, "fabric")
    sizes = {p.key: _int(d, p.key, "fabric", p.default, minimum=p.minimum, maximum=p.maximum,
                         why=p.why) for p in kind.params}
    rates = {tier: _rate(d, key) for tier, key in kind.rate_keys.items()
             if key in d or tier not in kind.optional_rates}
    failures = {key: _switch_names(d, key) for key in ("failed_switches",
                                                       *kind.extra_failure_keys)}
    failures["failed_links"] = _link_pairs(d, "failed_links", "[leaf1, spine2] or [agg1, core3]")
    planes = _int(d, "planes", "fabric", 1, minimum=1, maximum=MAX_PLANES,
                  why="NIC ports per GPU, one per plane")
    try:
        spec = kind.spec({**sizes, "planes": planes}, rates, failures)
        return build_fabric(_servers(d, dataclasses.replace(spec, planes=planes)))
    except FabricError as e:
        msg, given = str(e), [k for k in FAILURE_KEYS if d.get(k)]
        if msg.startswith(ISOLATED) and given:        # the keys this section gave
            msg = f"fabric.{'/'.join(given)}:" + msg[len("fabric:"):]
        raise ConfigError(msg) from None


def _servers(d: dict, spec: FabricSpec) -> FabricSpec:
    """The section's servers (testbed/servers.py) on the kind's spec: gpus_per_server
    (default 1; rail-optimized: its nics_per_server once NVLink is given) and nvlink_mbps."""
    nvlink = (_num(d, "nvlink_mbps", "fabric", minimum=MIN_RATE_MBPS,
                   maximum=MAX_NVLINK_MBPS, why="Mbit/s per GPU, each direction")
              if "nvlink_mbps" in d else 0.0)
    default = spec.nics_per_server if nvlink and spec.nics_per_server else 1
    gpus = _int(d, "gpus_per_server", "fabric", default, minimum=1,
                maximum=MAX_GPUS_PER_SERVER, why="GPUs in one NVLink domain")
    if gpus > 1 and not nvlink:
        raise ConfigError("fabric.nvlink_mbps: required with gpus_per_server > 1; give the "
                          "NVLink rate per GPU in Mbit/s (NVLink 4: 3600000)")
    return dataclasses.replace(spec, gpus_per_server=gpus, nvlink_mbps=nvlink)


def host_pairs(plans) -> dict[tuple[str, str], tuple[str, str, str]]:
    """The host pairs the jobs' connections join (job plans of traffic/collectives.py), each
    with one (job, src host, dst host) that needs it."""
    out: dict[tuple[str, str], tuple[str, str, str]] = {}
    for c in unique_connections(plans):
        out.setdefault((c.src, c.dst), (c.job, c.src, c.dst))
    return out


def unreachable(fabric: Fabric, pairs: dict) -> str | None:
    """'job ring: h1 -> h5 (leaf1 to leaf3)' for the first pair of hosts whose leaves have no
    live shortest path on `fabric`, or None when every pair has one."""
    seen: set[tuple[str, str]] = set()
    ends = pairs.values()
    leaves = zip(fabric.leaves_of(e[1] for e in ends), fabric.leaves_of(e[2] for e in ends))
    for (job, src, dst), (a, b) in zip(ends, leaves):
        if (a, b) in seen or a == b:
            continue
        seen.add((a, b))
        if not fabric.live_planes(src, dst):       # in no plane
            return f"job {job}: {src} -> {dst} ({a} to {b})"
    return None


#: The keys that set how many shortest paths join two leaves, by topology kind.
PATH_KEYS = {"leaf-spine": "spines", "fat-tree": "k", "clos3": "aggs_per_pod, cores_per_plane",
             "rail-optimized": "spines_per_group, cores_per_plane"}


def _check_paths(fabric: Fabric, plans: list, key: str, per_packet: bool) -> None:
    """The jobs' leaf pairs keep the model's path tables (one per plane a pair's connections
    may take) within MAX_PATH_LINK_IDS link ids, fewer with per-packet spraying
    (routing/path_blocks.py: the same memory); ConfigError naming `key` (jobs or jobs_from)
    otherwise."""
    ends = list(unique_connections(plans))
    conns = Counter(zip(fabric.leaves_of(c.src for c in ends),
                        fabric.leaves_of(c.dst for c in ends)))
    copies = {pair: min(n, fabric.planes) for pair, n in conns.items() if pair[0] != pair[1]}
    ids = path_link_ids(fabric, copies)
    per_id = BYTES_PER_SPRAYED_LINK_ID if per_packet else BYTES_PER_PATH_LINK_ID
    limit = MAX_PATH_LINK_IDS * BYTES_PER_PATH_LINK_ID // per_id
    if ids <= limit:
        return
    planes = f" in {fabric.planes} planes" if fabric.planes > 1 else ""
    sprayed = " with spray@packet" if per_packet else ""
    raise ConfigError(
        f"{key}: the connections join {len(copies):,} leaf pairs{planes} whose shortest paths "
        f"take {ids:,} link ids in the model's path table (~{ids * per_id / 1e9:.1f} GB); at "
        f"most {limit:,}{sprayed}: connect fewer leaf pairs, or give the fabric fewer paths "
        f"between leaves ({PATH_KEYS.get(fabric.spec.topology, 'its choice points')}: "
        f"{' x '.join(str(k) for _, k in fabric.choice_points)} now)")


def _check_reachable(fabric: Fabric, pairs: dict) -> None:
    """The failures in the fabric section leave a live path for every pair of hosts the jobs
    connect; ConfigError naming the failure keys otherwise."""
    cut = unreachable(fabric, pairs)
    if cut:
        keys = [k for k in ("failed_spines", "failed_switches", "failed_links")
                if getattr(fabric.spec, k)]
        raise ConfigError(f"fabric.{'/'.join(keys) or 'failed_switches'}: the failures leave "
                          f"no live path for {cut}; fail fewer switches or links")

"""Hedera's traffic patterns (Al-Fares et al., NSDI 2010, section 6.1) as sets of long flows.

Pure code. Every host of `hosts` (in the fabric's leaf-major order h1..hN, index x = 0..N-1)
sends one flow of `size_bytes`; a pattern only picks each sender's destination:

    stride(i)         x -> (x + i) mod N: with i = hosts per leaf every flow leaves its leaf,
                      with i = hosts per pod every flow leaves its pod
    staggered(pl, pp) to another host of the same leaf with probability pl, of the same pod
                      (another leaf) with pp, and of another pod otherwise
    random            to any other host, uniformly (receivers may get several flows); with
                      flows_per_host x, to x distinct other hosts (Hedera's randx2..4)
    random-bijective  a random permutation without fixed points: every host receives one flow
    hotspot           to one of `hotspots` hosts drawn at random (the hot hosts send to
                      each other in a ring when there are several, or stay idle)

Draws use random.Random(seed), so one seed gives one pattern. Where a staggered choice has no
candidate (a leaf of one host, a fabric of one pod) the next wider scope is used.
"""
from __future__ import annotations

import random
from typing import Callable

from testbed.fabric import Fabric
from traffic.collectives import WorkloadError

PATTERNS = ("stride", "staggered", "random", "random-bijective", "hotspot")

Pairs = list[tuple[str, str]]


def stride(hosts: list[str], i: int) -> Pairs:
    """x -> (x + i) mod N; i must not be a multiple of N (a host cannot send to itself)."""
    n = len(hosts)
    if i % n == 0:
        raise WorkloadError(f"stride: {i} is a multiple of the {n} hosts; every host would "
                            "send to itself")
    return [(hosts[x], hosts[(x + i) % n]) for x in range(n)]


def staggered(fabric: Fabric, hosts: list[str], p_leaf: float, p_pod: float,
              rng: random.Random) -> Pairs:
    """Same leaf with probability p_leaf, same pod with p_pod, another pod otherwise."""
    pairs = []
    for h in hosts:
        others = [d for d in hosts if d != h]
        leaf = [d for d in others if fabric.leaf_of(d) == fabric.leaf_of(h)]
        pod = [d for d in others if d not in leaf and _pod(fabric, d) == _pod(fabric, h)]
        rest = [d for d in others if d not in leaf and d not in pod]
        u = rng.random()
        scopes = ([leaf, pod, rest] if u < p_leaf else
                  [pod, rest, leaf] if u < p_leaf + p_pod else [rest, pod, leaf])
        pairs.append((h, rng.choice(next(s for s in scopes if s))))
    return pairs


def random_pairs(hosts: list[str], rng: random.Random, flows_per_host: int = 1) -> Pairs:
    """Each host to `flows_per_host` distinct, uniformly drawn other hosts."""
    if not 1 <= flows_per_host < len(hosts):
        raise WorkloadError(f"flows_per_host: {flows_per_host} must be between 1 and the "
                            f"{len(hosts) - 1} other hosts")
    if flows_per_host == 1:
        return [(h, rng.choice([d for d in hosts if d != h])) for h in hosts]
    return [(h, d) for h in hosts
            for d in rng.sample([d for d in hosts if d != h], flows_per_host)]


def random_bijective(hosts: list[str], rng: random.Random) -> Pairs:
    """A uniformly drawn derangement (rejection sampling: about e tries on average)."""
    while True:
        perm = hosts[:]
        rng.shuffle(perm)
        if all(a != b for a, b in zip(hosts, perm)):
            return list(zip(hosts, perm))


def hotspot(hosts: list[str], hotspots: int, rng: random.Random) -> Pairs:
    """Every host that is not hot sends to a hot host drawn uniformly; hot hosts form a ring."""
    if not 1 <= hotspots < len(hosts):
        raise WorkloadError(f"hotspots: {hotspots} must be between 1 and the {len(hosts) - 1} "
                            "hosts that can send to them")
    hot = rng.sample(hosts, hotspots)
    pairs = [(h, rng.choice(hot)) for h in hosts if h not in hot]
    if hotspots > 1:
        pairs += [(hot[i], hot[(i + 1) % hotspots]) for i in range(hotspots)]
    return pairs


def _pod(fabric: Fabric, host: str) -> int | None:
    return fabric.pod_of(fabric.leaf_of(host))


def pattern_pairs(fabric: Fabric, hosts: list[str], pattern: str, seed: int,
                  stride_hosts: int = 1, p_leaf: float = 0.0, p_pod: float = 0.0,
                  hotspots: int = 1, flows_per_host: int = 1) -> Pairs:
    """The (src, dst) flows of `pattern` over `hosts` (at least 2), seeded."""
    if len(hosts) < 2:
        raise WorkloadError("hosts: a pattern needs at least 2 hosts")
    rng = random.Random(seed)
    makers: dict[str, Callable[[], Pairs]] = {
        "stride": lambda: stride(hosts, stride_hosts),
        "staggered": lambda: staggered(fabric, hosts, p_leaf, p_pod, rng),
        "random": lambda: random_pairs(hosts, rng, flows_per_host),
        "random-bijective": lambda: random_bijective(hosts, rng),
        "hotspot": lambda: hotspot(hosts, hotspots, rng),
    }
    if pattern not in makers:
        raise WorkloadError(f"pattern: unknown {pattern!r}; choose from {list(PATTERNS)}")
    return makers[pattern]()

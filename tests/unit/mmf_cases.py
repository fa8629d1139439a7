"""The three-tier mmf regression's cases (tests/unit/routing/test_mmf_paths.py) and the two layers'
vectors, computed here from the routes alone. `python -m tests.unit.mmf_cases OUT.json` writes
what the mmf in the import path returns on them (the stored file was written by the former
PuLP/CBC form: tests/fixtures/mmf/paths_before.json)."""
from __future__ import annotations

import json
import random
import sys
from collections import Counter

from testbed.fabric import FabricSpec, build_fabric
from testbed.topologies import fat_tree_spec
from traffic.collectives import Collective, JobSpec, plan_jobs

KINDS = [Collective.ALLREDUCE, Collective.ALLTOALL, Collective.PIPELINE, Collective.ALLGATHER]


def fabric_of(n: int):
    """Case n's fabric: fat-tree k=4, k=6 or a small oversubscribed clos3, some failed."""
    rng = random.Random(f"mmf-paths-{n}")
    kind = n % 3
    if kind == 0:
        spec = fat_tree_spec(4, 100.0, 100.0)
    elif kind == 1:
        spec = fat_tree_spec(6, 100.0, 100.0)
    else:
        spec = FabricSpec(topology="clos3", pods=3, leaves_per_pod=3, aggs_per_pod=2,
                          cores_per_plane=2, hosts_per_leaf=4, host_link_mbps=100.0,
                          leaf_agg_mbps=100.0, agg_core_mbps=50.0)
    fabric = build_fabric(spec)
    if rng.random() < 0.4:
        fail = tuple(sorted(rng.sample(fabric.cores, 1)))
        fabric = build_fabric(spec.with_failures(fail, ()))
    return fabric, rng


def large_fabric_of(n: int):
    """Cases SMALL..: fat-tree k=6 or a 4-pod clos3 (128 hosts, 2:1 at the core)."""
    rng = random.Random(f"mmf-paths-large-{n}")
    if n % 2:
        return build_fabric(fat_tree_spec(6, 100.0, 100.0)), rng
    return build_fabric(FabricSpec(topology="clos3", pods=4, leaves_per_pod=4, aggs_per_pod=4,
                                   cores_per_plane=2, hosts_per_leaf=8, host_link_mbps=100.0,
                                   leaf_agg_mbps=100.0, agg_core_mbps=50.0)), rng


def case(n: int):
    """(fabric, connections, description) of case n: 2-4 random jobs on random hosts (cases
    from SMALL on: 4-6 larger jobs on a larger fabric)."""
    large = n >= SMALL
    fabric, rng = large_fabric_of(n) if large else fabric_of(n)
    hosts = list(fabric.hosts)
    rng.shuffle(hosts)
    specs = []
    for k in range(rng.randint(4, 6) if large else rng.randint(2, 4)):
        kind = rng.choice(KINDS)
        size = (rng.randint(4, 6 if kind == Collective.ALLTOALL else 16) if large else
                rng.randint(3, 5 if kind == Collective.ALLTOALL else 8))
        if len(hosts) < size:
            break
        group, hosts = hosts[:size], hosts[size:]
        specs.append(JobSpec(f"j{k}-{kind.value}", kind, [group], 1 << 20))
    conns = [c for p in plan_jobs(specs) for c in p.connections]
    return fabric, conns, f"case {n}: {fabric.kind}, {len(specs)} jobs, {len(conns)} flows"


def vectors(fabric, conns, path_of) -> tuple[list[int], list[int]]:
    """(job levels, link loads), each in decreasing order, from the routes."""
    load: Counter = Counter()
    for c in conns:
        p = path_of[c.conn_id]
        if p:
            load.update(zip(p, p[1:]))
    level: dict[str, int] = {}
    for c in conns:
        p = path_of[c.conn_id]
        if p:
            level[c.job] = max(level.get(c.job, 0), max(load[e] for e in zip(p, p[1:])))
    return sorted(level.values(), reverse=True), sorted(load.values(), reverse=True)


SMALL, CASES = 24, 36


def main(out: str) -> None:
    from routing import route
    doc = {}
    for n in range(CASES):
        fabric, conns, desc = case(n)
        plan = route("mmf", fabric, conns, time_limit_s=20.0)
        jobs, links = vectors(fabric, conns, plan.path_of)
        doc[str(n)] = {"case": desc, "status": plan.stats.status, "jobs": jobs, "links": links,
                       "time_s": round(plan.stats.time_s, 3)}
        print(desc, plan.stats.status, f"{plan.stats.time_s:.2f} s", file=sys.stderr)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])


def random_bounds(rng: random.Random):
    """A random Bounds of mmf's bound search (routing/mmf_bounds.py): A levels, J jobs, up to
    4 full sides and 3 more, a node budget; with random fixes (level -> jobs). Returns (bounds,
    A, J, fixes)."""
    from routing.mmf_bounds import Bounds
    A, J = rng.randint(2, 5), rng.randint(0, 6)
    sides = [({j: rng.randint(1, 12) for j in rng.sample(range(J), rng.randint(0, J))},
              rng.randint(1, 9)) for _ in range(rng.randint(1, 7))]
    b = Bounds.__new__(Bounds)
    b.setup(A, False, sides[:4], sides[4:], [rng.randint(1, 9) for _ in range(J)],
            rng.choice([200, 2_000, 100_000]))
    fixes = {k: rng.randint(0, J) for k in range(A, 1, -1) if rng.random() < 0.4}
    return b, A, J, fixes

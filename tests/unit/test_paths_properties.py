"""Every strategy on three-tier fabrics: live shortest paths only, loads that add up, the lower
bound below everything and the ILP at or below every other strategy."""
import random

import pytest

from routing import KERNELS, route
from routing.base import link_flow_counts
from routing.paths import path_lower_bound, path_table
from testbed.fabric import FabricError, FabricSpec, build_fabric, fat_tree_spec
from traffic.collectives import Collective, JobSpec, plan_jobs

THREE_TIER = sorted(KERNELS)


def random_case(seed: int):
    rng = random.Random(seed)
    for _ in range(50):
        if rng.random() < 0.5:
            spec = fat_tree_spec(rng.choice([4, 6]), 10, 10)
        else:
            spec = FabricSpec(topology="clos3", pods=rng.randint(2, 4),
                              leaves_per_pod=rng.randint(1, 3), aggs_per_pod=rng.randint(1, 3),
                              cores_per_plane=rng.randint(1, 3), hosts_per_leaf=rng.randint(1, 3),
                              host_link_mbps=10, leaf_agg_mbps=10, agg_core_mbps=5)
        f = build_fabric(spec)
        fail = tuple(c for c in f.cores if rng.random() < 0.15)
        try:
            f = build_fabric(spec.with_failures(fail, ()))
        except FabricError:
            continue
        hosts = list(f.hosts)
        rng.shuffle(hosts)            # fragmented placement: jobs share leaves and pods
        jobs, k = [], 0
        while len(hosts) >= 2 and k < 3:
            m = rng.randint(2, min(8, len(hosts)))
            jobs.append(JobSpec(f"j{k}", rng.choice([Collective.ALLREDUCE, Collective.ALLTOALL]),
                                [[hosts.pop() for _ in range(m)]], 1000))
            k += 1
        conns = [c for p in plan_jobs(jobs) for c in p.connections]
        try:
            path_table(f, conns)
        except Exception:
            continue                  # a pair the failures disconnected
        return f, conns
    pytest.skip("no connected case")


@pytest.mark.parametrize("seed", range(25))
def test_strategies_on_three_tiers(seed):
    f, conns = random_case(seed)
    lb = path_lower_bound(path_table(f, conns), f)
    worst = {}
    for name in THREE_TIER:
        # mmf on three tiers has no leaf-spine speed-ups: a few cases here take ~60 s to prove,
        # so it gets 4 s (its result is then feasible, and the properties still hold)
        plan = route(name, f, conns, seed=seed, **({"time_limit_s": 4} if name == "mmf" else {}))
        for c in conns:
            p = plan.path_of[c.conn_id]
            a, b = f.leaf_of(c.src), f.leaf_of(c.dst)
            if a == b:
                assert p is None
            else:
                assert p in f.switch_paths(a, b), (name, c, p)
        load = link_flow_counts(f, conns, plan.path_of)
        hops = sum(len(p) - 1 for p in plan.path_of.values() if p)
        assert sum(load.values()) == hops
        worst[name] = max(load.values(), default=0)
        assert worst[name] >= lb, name
        assert plan.stats.lower_bound_link_flows == lb, name
    assert worst["ilp"] == min(worst.values()), worst


def test_greedy_stays_within_2x_of_the_ilp_on_these_cases():
    """On leaf-spine the greedy is provably within 2x of the optimum (routing/greedy.py). On
    three tiers the proof does not carry over (a path has four links, and one flow's min-max no
    longer bounds the sum over a leaf's links); we have no proof and no counterexample: over 575
    random fragmented cases (seeds 25-599 of this generator) the worst ratio was exactly 2.0
    (seed 193: greedy 2, ILP 1). This checks the empirical statement on the first 25."""
    ratios = []
    for seed in range(25):
        f, conns = random_case(seed)
        g = max(link_flow_counts(f, conns, route("greedy", f, conns, seed=seed).path_of).values(),
                default=0)
        o = max(link_flow_counts(f, conns, route("ilp", f, conns, seed=seed).path_of).values(),
                default=0)
        if o:
            ratios.append(g / o)
    assert ratios and max(ratios) <= 2.0

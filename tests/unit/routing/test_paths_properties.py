"""Every strategy on three-tier fabrics: live shortest paths only, loads that add up, the lower
bound below everything and the ILP at or below every other strategy."""
import random

import pytest

from experiments.config import parse
from routing import KERNELS, route
from routing.base import link_flow_counts
from routing.greedy import spine_rank
from routing.paths import path_lower_bound, path_table
from testbed.fabric import FabricError, FabricSpec, build_fabric
from testbed.topologies import fat_tree_spec
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
    """On these random fragmented cases (failed cores only) the worst greedy/ILP ratio is 2.0
    over 575 of them (seeds 25-599 of this generator; seed 193: greedy 2, ILP 1); this checks
    the first 25. It is no bound: with failed links, greedy reaches 3x (the next test)."""
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


#: Greedy 3, ILP 1 on a k=4 fat-tree with five failed links: four flows out of pod 1, on its
#: agg->core links m11 = agg1->core1, m12, m23 = agg2->core3, m24. The failures leave
#: h1->h5 {m11, m12} (leaf3 lost agg4), h2->h9 {m23, m24} (leaf5 lost agg5), h3->h13 {m11, m23}
#: (core2->agg7 and core4->agg8 failed) and h4->h15 {m11} only (leaf8 also lost agg8): the
#: textbook lower bound for greedy load balancing with restricted machines. Greedy visits
#: leaf1's flows first: h1->h5 and h2->h9 meet empty links and take their first path (m11,
#: m23); h3->h13 then sees (max 1, sum 1) on both paths and takes the first, m11; h4->h15 has
#: no choice: m11 carries 3. The ILP routes them on m12, m24, m23, m11: 1 flow per link.
#: Every choice above but the forced one is a tie, so the seed decides: all paths here have
#: at most two candidates, so a seed only orders positions 0 and 1, and the seeds that rank
#: position 0 first (seed 0; the configs' default seed 1 does not) give 3, the others 1.
#: No tie-free counterexample with optimum 1 exists: fix an optimal routing; the first flow
#: greedy routes differently sees no load on its optimal path (key (0, 0)), so it tied. Four
#: flows is the fewest on k=4 and k=6 fat-trees: 3 on one link with optimum 1 needs the third
#: flow's every path through a link the first two share, and an exhaustive search over three
#: flows (any subsets of their paths, so any failures; any order and tie-breaks) found none.
COUNTEREXAMPLE = {
    "name": "greedy-3x-ilp", "seed": 0,
    "fabric": {"topology": "fat-tree", "k": 4, "host_link_mbps": 10, "fabric_link_mbps": 10,
               "failed_links": [["agg4", "leaf3"], ["agg5", "leaf5"], ["core2", "agg7"],
                                ["core4", "agg8"], ["agg8", "leaf8"]]},
    "jobs": [{"name": "f", "collective": "flows", "size_bytes": 1000000,
              "groups": [["h1", "h5"], ["h2", "h9"], ["h3", "h13"], ["h4", "h15"]]}],
    "routing": ["greedy", "ilp"]}


def test_greedy_is_3x_the_ilp_on_a_fat_tree_with_failed_links():
    exp = parse(COUNTEREXAMPLE)      # a valid config: every host, link and failure checked
    f = exp.fabric
    conns = [c for p in plan_jobs(exp.jobs) for c in p.connections]
    assert [len(f.switch_paths(f.leaf_of(c.src), f.leaf_of(c.dst))) for c in conns] == [2, 2, 2, 1]
    greedy = route("greedy", f, conns, seed=exp.seed)
    assert [greedy.path_of[c.conn_id][1:3] for c in conns] == [
        ("agg1", "core1"), ("agg2", "core3"), ("agg1", "core1"), ("agg1", "core1")]
    ilp = route("ilp", f, conns, seed=exp.seed)
    assert ilp.stats.status == "optimal" and ilp.stats.lower_bound_link_flows == 1
    assert [ilp.path_of[c.conn_id][1:3] for c in conns] == [
        ("agg1", "core2"), ("agg2", "core4"), ("agg2", "core3"), ("agg1", "core1")]
    assert max(link_flow_counts(f, conns, greedy.path_of).values()) == 3
    assert max(link_flow_counts(f, conns, ilp.path_of).values()) == 1
    # the seed only orders positions 0 and 1: greedy gets 3 exactly when position 0 comes first
    for seed in range(8):
        g = max(link_flow_counts(f, conns, route("greedy", f, conns, seed=seed).path_of).values())
        rank = spine_rank(2, seed)
        assert g == (3 if rank[0] < rank[1] else 1), seed


#: The same counterexample for every seed: on an 8-pod clos3 (two aggs, two cores per plane,
#: one host per leaf), pods 1-4 hold the one above (hosts h1, h2 -> h3, h5, h7, h8) and pods 5-8
#: its mirror image (h9, h10 -> h11, h13, h15, h16), whose flows have {m11', m12'}, {m23', m24'},
#: {m12', m24'} and {m24'} on pod 5's agg->core links: where a seed puts position 1 first, the
#: mirror's flows take m12', m24', m24', m24'. The copies share no link, so greedy's choices in
#: one do not see the other, and every candidate set has at most two paths, so every seed
#: orders positions 0 and 1 one of the two ways: greedy 3 for every seed; the ILP 1.
MIRRORED = {
    "name": "greedy-3x-ilp-any-seed", "seed": 1,
    "fabric": {"topology": "clos3", "pods": 8, "leaves_per_pod": 2, "aggs_per_pod": 2,
               "cores_per_plane": 2, "hosts_per_leaf": 1, "host_link_mbps": 10,
               "leaf_agg_mbps": 10, "agg_core_mbps": 10,
               "failed_links": [["agg4", "leaf3"], ["agg5", "leaf5"], ["core2", "agg7"],
                                ["core4", "agg8"], ["agg8", "leaf8"],
                                ["agg12", "leaf11"], ["agg13", "leaf13"], ["core1", "agg15"],
                                ["core3", "agg16"], ["agg15", "leaf16"]]},
    "jobs": [{"name": "f", "collective": "flows", "size_bytes": 1000000,
              "groups": [["h1", "h3"], ["h1", "h5"], ["h2", "h7"], ["h2", "h8"],
                         ["h9", "h11"], ["h9", "h13"], ["h10", "h15"], ["h10", "h16"]]}],
    "routing": ["greedy", "ilp"]}


def test_greedy_is_3x_the_ilp_for_every_seed():
    exp = parse(MIRRORED)
    f = exp.fabric
    conns = [c for p in plan_jobs(exp.jobs) for c in p.connections]
    assert max(len(f.switch_paths(f.leaf_of(c.src), f.leaf_of(c.dst))) for c in conns) == 2
    ilp = route("ilp", f, conns, seed=exp.seed)
    assert ilp.stats.status == "optimal"
    assert max(link_flow_counts(f, conns, ilp.path_of).values()) == 1
    orders = set()
    for seed in range(8):
        greedy = route("greedy", f, conns, seed=seed)
        load = link_flow_counts(f, conns, greedy.path_of)
        hot = ("agg1", "core1") if spine_rank(2, seed)[0] == 0 else ("agg10", "core4")
        assert max(load.values()) == load[hot] == 3, seed
        orders.add(tuple(spine_rank(2, seed)))
    assert orders == {(0, 1), (1, 0)}       # both orders met: every seed is one of these


#: Whole switches failed, no link: greedy 3, ILP 1 (seed 0) on a clos3 of 4 pods x 3 leaves,
#: 2 aggs, 2 cores per plane, with core2 (plane 1 keeps core1 only) and agg8 (pod 4 keeps
#: plane 1 only) failed. h10->h6 leaves pod 4 on its one path, via core1->agg3 into pod 2, and
#: the ILP leaves that link to it alone. Greedy visits h1's flows first: h1->h4 takes
#: core1->agg3 (all empty, first path), h1->h7 core3; then leaf7's group: h4->h7 takes core1
#: (its plane-2 paths meet h1->h7 on agg6->leaf7); h4->h5 takes agg4 (h4->agg3 is taken);
#: h8->h5 sees max 1, sum 1 on all three paths (core1->agg3 or agg4->leaf5) and takes the
#: first, core1->agg3 (2); h10->h6 has no choice (3). Ties decide: 8 of seeds 0-19 give 3.
SWITCHES_ONLY = {
    "name": "greedy-3x-ilp-switches", "seed": 0,
    "fabric": {"topology": "clos3", "pods": 4, "leaves_per_pod": 3, "aggs_per_pod": 2,
               "cores_per_plane": 2, "hosts_per_leaf": 1, "host_link_mbps": 10,
               "leaf_agg_mbps": 10, "agg_core_mbps": 10, "failed_switches": ["core2", "agg8"]},
    "jobs": [{"name": "f", "collective": "flows", "size_bytes": 1000000,
              "groups": [["h1", "h4"], ["h1", "h7"], ["h4", "h7"], ["h4", "h5"], ["h8", "h5"],
                         ["h10", "h6"]]}],
    "routing": ["greedy", "ilp"]}


def test_greedy_is_3x_the_ilp_with_failed_switches_only():
    exp = parse(SWITCHES_ONLY)
    f = exp.fabric
    conns = [c for p in plan_jobs(exp.jobs) for c in p.connections]
    greedy = route("greedy", f, conns, seed=exp.seed)
    assert [greedy.path_of[c.conn_id][1:-1] for c in conns] == [
        ("agg1", "core1", "agg3"), ("agg2", "core3", "agg6"), ("agg3", "core1", "agg5"),
        ("agg4",), ("agg5", "core1", "agg3"), ("agg7", "core1", "agg3")]
    load = link_flow_counts(f, conns, greedy.path_of)
    assert max(load.values()) == load["core1", "agg3"] == 3
    ilp = route("ilp", f, conns, seed=exp.seed)
    assert ilp.stats.status == "optimal"
    assert max(link_flow_counts(f, conns, ilp.path_of).values()) == 1

def bound_case(seed: int):
    """A clos3 or k=4 fat-tree with at most two aggs per pod, some cores failed, and flows
    crowding 2-4 leaves (None when failures cut a pair)."""
    rng = random.Random(seed)
    spec = fat_tree_spec(4, 10, 10) if seed % 3 == 0 else FabricSpec(
        topology="clos3", pods=rng.randint(2, 5), leaves_per_pod=rng.randint(1, 4),
        aggs_per_pod=rng.randint(1, 2), cores_per_plane=rng.randint(1, 4), hosts_per_leaf=1,
        host_link_mbps=10, leaf_agg_mbps=10, agg_core_mbps=10)
    cores = build_fabric(spec).cores
    try:
        f = build_fabric(spec.with_failures(tuple(c for c in cores if rng.random() < 0.2), ()))
    except FabricError:
        return None
    hosts = f.hosts
    hot = rng.sample(hosts, min(len(hosts), rng.randint(2, 4)))
    groups = []
    for _ in range(rng.randint(1, 40)):
        a, b = (rng.choice(hot) if rng.random() < 0.5 else rng.choice(hosts) for _ in range(2))
        if f.leaf_of(a) != f.leaf_of(b):
            groups.append([a, b])
    if not groups:
        return None
    conns = [c for p in plan_jobs([JobSpec("f", Collective.FLOWS, groups, 1000)])
             for c in p.connections]
    try:
        path_table(f, conns)
    except Exception:
        return None
    return f, conns


@pytest.mark.parametrize("block", range(4))
def test_greedy_within_2x_of_the_bound_with_two_aggs_per_pod(block):
    """Proof: greedy <= 2 x path_lower_bound (so <= 2 x the ILP) on a clos3 or fat-tree with at
    most two aggs per pod (k=4) whose only failures are whole cores, whatever the visiting order
    and tie-breaks. Let B be the bound's leaf and pod cuts: a leaf sends (receives) at most A*B
    flows (A aggs per pod), a pod sends (receives) at most m*B inter-pod flows (m: its live
    agg->core links, the same in every pod when only cores fail). Say greedy ends at G >= 2B + 1
    and f (leaf a of pod P -> leaf b of pod Q) first brought a link to G: then every candidate
    path of f had a link at >= w = G - 1 >= 2B. Fewer than A*B/w <= A/2 <= 1 planes, so none,
    have a's uplink (or b's downlink) at w. An inter-pod path is a plane and a live core: it
    alone uses its agg->core link of P and its core->agg link of Q, and fewer than m*B/w <= m/2
    of each are at w: fewer than m of f's m paths are blocked (intra-pod f: fewer than A of A).
    With three aggs a plane blocked at the leaf blocks all its cores and the count no longer
    closes (k=6: open); with failed links or a failed agg, pairs see different planes, and it
    is false (the counterexamples above). Here: 391 cases x 3 seeds, worst greedy/bound 2.0."""
    for seed in range(block * 100, block * 100 + 100):
        case = bound_case(seed)
        if case is None:
            continue
        f, conns = case
        for s in range(3):
            plan = route("greedy", f, conns, seed=s)
            g = max(link_flow_counts(f, conns, plan.path_of).values())
            assert g <= 2 * plan.stats.lower_bound_link_flows, (seed, s)


#: Leaf-spine with failed links: the same gadget on leaf1's uplinks. h1->h5 (leaf2) can use
#: spines {1, 2}, h2->h9 (leaf3) {3, 4}, h3->h13 (leaf4) {1, 3}, h4->h17 (leaf5) {1} only.
#: Seed 0 breaks greedy's ties towards spine1 and spine3: 3 flows on leaf1 -> spine1, where
#: the ILP puts 1 on every link. The leaf-spine proof of 2x holds with whole spines failed.
LEAF_SPINE_LINKS = {
    "name": "greedy-3x-ilp-leaf-spine", "seed": 0,
    "fabric": {"spines": 4, "leaves": 5, "hosts_per_leaf": 4, "host_link_mbps": 10,
               "spine_link_mbps": 10,
               "failed_links": [["leaf2", "spine3"], ["leaf2", "spine4"], ["leaf3", "spine1"],
                                ["leaf3", "spine2"], ["leaf4", "spine2"], ["leaf4", "spine4"],
                                ["leaf5", "spine2"], ["leaf5", "spine3"], ["leaf5", "spine4"]]},
    "jobs": [{"name": "f", "collective": "flows", "size_bytes": 1000000,
              "groups": [["h1", "h5"], ["h2", "h9"], ["h3", "h13"], ["h4", "h17"]]}],
    "routing": ["greedy", "ilp"]}


def test_greedy_is_3x_the_ilp_on_leaf_spine_with_failed_links():
    exp = parse(LEAF_SPINE_LINKS)
    f = exp.fabric
    conns = [c for p in plan_jobs(exp.jobs) for c in p.connections]
    greedy = route("greedy", f, conns, seed=exp.seed)
    assert [greedy.path_of[c.conn_id][1] for c in conns] == ["spine1", "spine3", "spine1",
                                                             "spine1"]
    assert max(link_flow_counts(f, conns, greedy.path_of).values()) == 3
    ilp = route("ilp", f, conns, seed=exp.seed)
    assert ilp.stats.status == "optimal"
    assert max(link_flow_counts(f, conns, ilp.path_of).values()) == 1

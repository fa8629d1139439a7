"""Greedy on paths without a PathTable (fresh_greedy_paths), its compiled placement loop and the
cached lower bound: the same routes and bound as the path-table code they replaced, on small
random three-tier cases (some cores failed) and on k=8 fat-trees."""
import math
import random
from collections import Counter

import numpy as np
import pytest

from routing import route
from routing.greedy import (greedy_fill_paths, path_rank, place_flows, place_in_order,
                            visit_order, warm_kernel)
from routing.paths import loads_of, path_lower_bound, path_of_assignment, path_table

from .test_greedy_paths_equivalence import fat_tree_case, reference_fill
from .test_paths_properties import random_case


def reference_lower_bound(t, fabric) -> int:
    """path_lower_bound before its per-fabric caches (commit dcc300d), verbatim."""
    bound = 0
    for side, deg in ((t.uplinks, Counter(t.src)), (t.downlinks, Counter(t.dst))):
        for leaf, n in deg.items():
            bound = max(bound, math.ceil(n / max(1, len(side[leaf]))))
    if fabric.tiers == 3:
        pod_of = [fabric.pod_of(leaf) for leaf in t.leaf_names]
        out_pod: Counter = Counter()
        in_pod: Counter = Counter()
        for a, b in zip(t.src, t.dst):
            if pod_of[a] != pod_of[b]:
                out_pod[pod_of[a]] += 1
                in_pod[pod_of[b]] += 1
        for pod, n in out_pod.items():
            bound = max(bound, math.ceil(n / max(1, pod_core_links(fabric, pod, up=True))))
        for pod, n in in_pod.items():
            bound = max(bound, math.ceil(n / max(1, pod_core_links(fabric, pod, up=False))))
    forced: Counter = Counter()
    for pair, n in Counter(zip(t.src, t.dst)).items():
        ids = t.pair_paths[pair]
        for e in set(t.path_links[ids[0]]).intersection(*(t.path_links[p] for p in ids[1:])):
            forced[e] += n
    return max(bound, max(forced.values(), default=0))


def pod_core_links(fabric, pod: int, up: bool) -> int:
    n = 0
    for g in fabric.aggs:
        if fabric.pod_of(g) == pod:
            n += sum(1 for c in fabric.uplinks(g)
                     if (fabric.is_live(g, c) if up else fabric.is_live(c, g)))
    return n


def check_route(f, conns, seed: int) -> None:
    """route('greedy') fresh == the path table filled by the per-link loop; same bound."""
    t = path_table(f, conns)
    want = path_of_assignment(t, reference_fill(t, [-1] * len(t.flows), [0] * t.n_links, seed))
    plan = route("greedy", f, conns, seed=seed)
    assert plan.path_of == want
    assert plan.stats.lower_bound_link_flows == reference_lower_bound(t, f)
    assert path_lower_bound(t, f) == reference_lower_bound(t, f)


@pytest.mark.parametrize("seed", range(60))
def test_fresh_route_and_bound_on_small_three_tier_cases(seed):
    f, conns = random_case(seed)
    check_route(f, conns, seed % 5)


@pytest.mark.parametrize("seed", range(15))
def test_fresh_route_and_bound_on_k8_fat_trees(seed):
    f, conns = fat_tree_case(seed)
    check_route(f, conns, seed % 3)


@pytest.mark.parametrize("seed", range(15))
def test_plain_python_loop_places_as_the_compiled_one(seed):
    """place_flows uncompiled (the fallback without numba) == compiled, positions and loads."""
    f, conns = fat_tree_case(seed)
    t = path_table(f, conns)
    order = visit_order(t.src, t.dst, len(t.leaf_names), [-1] * len(t.flows))
    arrays = [t.pair_links[a, b] for a, b, _ in order]
    rank = path_rank(max(len(c) for c in t.cand), seed)
    got = []
    for kernel in (None, place_flows):
        loads = np.zeros(t.n_links, dtype=np.int64)
        got.append((place_in_order(order, arrays, rank, loads, kernel).tolist(),
                    loads.tolist()))
    assert got[0] == got[1]


@pytest.mark.parametrize("seed", range(10))
def test_paths_of_unequal_length_are_padded(seed):
    """A pair whose paths differ in length (never for shortest up-down paths) is scored over
    each path's own links: links cut off some paths, as the per-link loop sees them."""
    f, conns = fat_tree_case(seed)
    t = path_table(f, conns)
    rng = random.Random(seed)
    t.path_links = [x[:rng.randint(1, len(x))] for x in t.path_links]
    t.pair_links = {pair: None for pair in t.pair_links}
    for start in ([-1] * len(t.flows), [rng.choice(c) if rng.random() < 0.5 else -1
                                         for c in t.cand]):
        want_load, got_load = loads_of(t, start), loads_of(t, start)
        assert (greedy_fill_paths(t, list(start), got_load, seed % 3)
                == reference_fill(t, list(start), want_load, seed % 3))
        assert got_load == want_load


def test_warm_kernel_says_what_it_did():
    took, how = warm_kernel()
    assert took >= 0
    assert how.startswith(("numba import", "plain Python"))

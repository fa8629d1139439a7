"""The greedy's compiled loops (visit_order, place_in_order), its fresh solve without a PathTable
(fresh_greedy_paths) and the cached lower bound: the same order, routes and bound as the Python
code they replaced, on small random three-tier cases (some cores failed), k=8 fat-trees and
leaf-spine flow tables."""
import math
import random
from collections import Counter

import numpy as np
import pytest

from routing import route
from routing.base import flow_table
from routing.greedy import (greedy_fill_paths, improve_kernel, improve_max_paths, order_kernel,
                            path_rank, place_flows, place_in_order, visit_order, visit_pairs,
                            warm_kernels)
from routing.path_blocks import LinkBlocks, pair_blocks
from routing.paths import PathTable, loads_of, path_lower_bound, path_of_assignment, path_table
from testbed.fabric import FabricSpec, build_fabric
from traffic.collectives import Collective, JobSpec, plan_jobs

from .test_greedy_paths_equivalence import fat_tree_case, reference_fill, reference_visit_pairs
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


def leaf_spine_case(seed: int):
    """A random leaf-spine fabric (some spines failed) with 2-5 jobs on random hosts."""
    rng = random.Random(seed)
    leaves, spines, hpl = rng.randint(2, 12), rng.randint(2, 6), rng.randint(2, 6)
    dead = tuple(f"spine{i}" for i in rng.sample(range(1, spines + 1), rng.randint(0, 1)))
    f = build_fabric(FabricSpec(spines, leaves, hpl, 100.0, 100.0, dead))
    hosts = list(f.hosts)
    rng.shuffle(hosts)
    jobs = []
    for k in range(rng.randint(2, 5)):
        m = rng.randint(2, 8)
        if len(hosts) < m:
            break
        jobs.append(JobSpec(f"j{k}", rng.choice([Collective.ALLREDUCE, Collective.ALLTOALL]),
                            [[hosts.pop() for _ in range(m)]], 1000))
    return f, [c for p in plan_jobs(jobs) for c in p.connections]


def calls(visit, src, dst, n_leaves, assign) -> list:
    """What visit_pairs-like `visit` hands `place`, in order (outs and ins as sorted lists)."""
    seen = []
    mine = list(assign)

    def place(a, b, ids, outs, ins):
        seen.append((a, b, list(ids), sorted(outs), sorted(ins)))
        for f in ids:
            mine[f] = 0
    visit(src, dst, n_leaves, mine, place)
    return seen


def check_order(src, dst, n_leaves, rng: random.Random) -> None:
    """visit_pairs (compiled order) == the Python one it replaced, fresh and from a partial
    assignment; the order loop uncompiled == compiled."""
    for assign in ([-1] * len(src), [0 if rng.random() < 0.4 else -1 for _ in src]):
        assert (calls(visit_pairs, src, dst, n_leaves, assign)
                == calls(reference_visit_pairs, src, dst, n_leaves, assign))
        got = visit_order(src, dst, n_leaves, assign)
        plain = order_kernel(np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64),
                             np.array([x < 0 for x in assign]), n_leaves)
        assert [x.tolist() for x in got] == [x.tolist() for x in plain]


@pytest.mark.parametrize("seed", range(40))
def test_visiting_order_as_the_python_one_on_three_tiers(seed):
    f, conns = random_case(seed) if seed % 2 else fat_tree_case(seed)
    t = path_table(f, conns)
    check_order(t.src, t.dst, len(t.leaf_names), random.Random(seed))


@pytest.mark.parametrize("seed", range(40))
def test_visiting_order_as_the_python_one_on_leaf_spines(seed):
    f, conns = leaf_spine_case(seed)
    t = flow_table(f, conns)
    check_order(t.src, t.dst, t.n_leaves, random.Random(seed))


def test_visiting_order_of_no_flows():
    pairs, start, flows = visit_order([], [], 4, [])
    assert (pairs.tolist(), start.tolist(), flows.tolist()) == ([], [0], [])
    assert calls(visit_pairs, [0, 1], [1, 0], 2, [3, 4]) == []


@pytest.mark.parametrize("seed", range(15))
def test_plain_python_loop_places_as_the_compiled_one(seed):
    """place_flows uncompiled (the fallback without numba) == compiled, positions and loads."""
    f, conns = fat_tree_case(seed)
    t = path_table(f, conns)
    L = len(t.leaf_names)
    pairs, start, _ = visit_order(t.src, t.dst, L, [-1] * len(t.flows))
    blocks = LinkBlocks.of([t.pair_links[divmod(q, L)] for q in pairs.tolist()])
    rank = path_rank(max(len(c) for c in t.cand), seed)
    got = []
    for kernel in (None, place_flows):
        loads = np.zeros(t.n_links, dtype=np.int64)
        got.append((place_in_order(blocks, start, rank, loads, kernel).tolist(),
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
    took, how = warm_kernels()
    assert took >= 0
    assert how.startswith(("numba import", "plain Python", "built ahead of time"))


def test_pair_blocks_grow_across_solves():
    """One fabric, job sets meeting new leaf pairs solve after solve: the cached blocks of the
    pairs met earlier stay right as the buffer grows, and every block is its pair's links."""
    f, _ = fat_tree_case(0)
    hosts = list(f.hosts)
    for seed in range(8):
        rng = random.Random(seed)
        rng.shuffle(hosts)
        m = rng.randint(2, 3 + 6 * seed)
        jobs = [JobSpec("j", Collective.ALLTOALL, [hosts[:m]], 1000)]
        check_route(f, [c for p in plan_jobs(jobs) for c in p.connections], seed % 3)
    cache = pair_blocks(f)
    L = len(f.leaves)
    met = np.flatnonzero(cache.blocks.off >= 0)
    assert len(met) > 50
    b = cache.blocks.select(met)
    for k, q in enumerate(met.tolist()):
        a, c = f.leaves[q // L], f.leaves[q % L]
        block = b.links[b.off[k]:b.off[k] + b.hops[k] * b.width[k]]
        assert block.reshape(b.hops[k], b.width[k]).T.tolist() == [
            list(x) for x in f.switch_path_links(a, c)]
        assert [cache.path(q, p) for p in range(b.width[k])] == f.switch_paths(a, c)


def improve_max_paths_reference(t: PathTable, assign: list[int], load: list[int],
                                max_moves: int = 10_000) -> int:
    """The per-link Python loop improve_kernel replaced (moved here from routing/greedy.py: only
    this test compares against it)."""
    pl = t.path_links
    moves = 0
    while moves < max_moves:
        m = max(load, default=0)
        if m <= 1:
            return moves
        moved = False
        hot = [i for i, p in enumerate(assign) if any(load[e] == m for e in pl[p])]
        for i in hot:
            p = assign[i]
            old = pl[p]
            if all(load[e] != m for e in old):
                continue
            for q in t.cand[i]:
                new = pl[q]
                if (q != p and any(load[e] == m for e in old if e not in new)
                        and all(load[e] + 1 < m for e in new if e not in old)):
                    for e in old:
                        load[e] -= 1
                    for e in new:
                        load[e] += 1
                    assign[i] = q
                    moves += 1
                    moved = True
                    break
            if moves >= max_moves:
                return moves
        if not moved:
            return moves
    return moves


@pytest.mark.parametrize("seed", range(30))
def test_improve_kernel_moves_as_the_python_loop(seed):
    """improve_max_paths (compiled, and its loop run as plain Python) makes the moves the
    per-link reference makes, from a random start that leaves links above the max."""
    f, conns = random_case(seed)
    t = path_table(f, conns)
    rng = random.Random(seed)
    start = [rng.choice(list(c)) for c in t.cand]
    runs = []
    for fn, kw in ((improve_max_paths, {}), (improve_max_paths, {"kernel": improve_kernel}),
                   (improve_max_paths_reference, {})):
        assign, load = list(start), loads_of(t, start)
        moves = fn(t, assign, load, **kw)
        assert load == loads_of(t, assign)
        runs.append((moves, assign))
    assert runs[0] == runs[1] == runs[2]

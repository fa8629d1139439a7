"""greedy_fill_paths takes the visiting order first (a compiled loop, visit_order) and places
every flow in another (place_in_order); it must choose exactly what the per-link Python loop it
replaced chose, in the order of the Python visit_pairs it replaced (both kept below, verbatim,
as the reference), fresh and from a partial assignment, on small random three-tier cases and
on k=8 fat-trees."""
import heapq
import random

import pytest

from routing.greedy import greedy_fill_paths, path_rank
from routing.paths import loads_of, path_table
from testbed.fabric import build_fabric
from testbed.topologies import fat_tree_spec
from traffic.collectives import Collective, JobSpec, plan_jobs

from .test_paths_properties import random_case


def reference_visit_pairs(src: list[int], dst: list[int], n_leaves: int, assign: list[int],
                          place) -> None:
    """visit_pairs before its compiled order (commit 518e6f1), verbatim."""
    L = n_leaves
    # per side (0: source-leaf groups / uplinks, 1: destination-leaf groups / downlinks)
    size = ([0] * L, [0] * L)          # the side's whole demand (every flow counts)
    placed = ([0] * L, [0] * L)        # flows of the group already assigned
    pair_ids: dict[tuple[int, int], list[int]] = {}
    for i, (a, b) in enumerate(zip(src, dst)):
        size[0][a] += 1
        size[1][b] += 1
        if assign[i] >= 0:
            placed[0][a] += 1
            placed[1][b] += 1
        else:
            lst = pair_ids.get((a, b))
            if lst is None:
                pair_ids[a, b] = [i]
            else:
                lst.append(i)
    if not pair_ids:
        return
    # unassigned leaf pairs per group: rem[0][a] = {b: None}, rem[1][b] = {a: None} (ordered)
    rem: tuple[list[dict[int, None]], list[dict[int, None]]] = (
        [{} for _ in range(L)], [{} for _ in range(L)])
    for a, b in sorted(pair_ids):
        rem[0][a][b] = None
        rem[1][b][a] = None
    heap = [(-size[k][g], -placed[k][g], k, g) for k in (0, 1) for g in range(L) if rem[k][g]]
    heapq.heapify(heap)
    while heap:
        _, negp, k, g = heapq.heappop(heap)
        mine = rem[k][g]
        if not mine or -negp != placed[k][g]:
            continue                    # done, or a stale entry (a newer one is queued)
        ok = 1 - k
        pl = placed[ok]
        if k == 0:
            pairs = sorted(((g, h) for h in mine), key=lambda p: (-pl[p[1]], -len(pair_ids[p]), p))
        else:
            pairs = sorted(((h, g) for h in mine), key=lambda p: (-pl[p[0]], -len(pair_ids[p]), p))
        for a, b in pairs:
            ids = pair_ids.pop((a, b))
            del rem[0][a][b]
            del rem[1][b][a]
            place(a, b, ids, rem[0][a], rem[1][b])
            n = len(ids)
            placed[0][a] += n
            placed[1][b] += n
            h = b if k == 0 else a
            if rem[ok][h]:
                heapq.heappush(heap, (-size[ok][h], -placed[ok][h], ok, h))


def reference_fill(t, assign: list[int], load: list[int], seed: int = 0) -> list[int]:
    """greedy_fill_paths before vectorization (commit 12ab310), verbatim."""
    width = max((len(c) for c in t.cand), default=0)
    rank = path_rank(width, seed)
    pl = t.path_links

    def place(a, b, ids, outs, ins):
        cand = t.pair_paths[a, b]
        for f in ids:
            best, bp = None, -1
            for pos, p in enumerate(cand):
                m = s = 0
                for e in pl[p]:
                    x = load[e]
                    s += x
                    if x > m:
                        m = x
                key = (m, s, rank[pos])
                if best is None or key < best:
                    best, bp = key, p
            assign[f] = bp
            for e in pl[bp]:
                load[e] += 1

    reference_visit_pairs(t.src, t.dst, len(t.leaf_names), assign, place)
    return assign


def fat_tree_case(seed: int):
    """A k=8 fat-tree with 2-4 ring or all-to-all jobs on random hosts."""
    rng = random.Random(seed)
    f = build_fabric(fat_tree_spec(8, 10, 10))
    hosts = list(f.hosts)
    rng.shuffle(hosts)
    jobs = []
    for k in range(rng.randint(2, 4)):
        m = rng.randint(2, 24)
        jobs.append(JobSpec(f"j{k}", rng.choice([Collective.ALLREDUCE, Collective.ALLTOALL]),
                            [[hosts.pop() for _ in range(m)]], 1000))
    return f, [c for p in plan_jobs(jobs) for c in p.connections]


def check_same(t, seed: int, rng: random.Random) -> None:
    n = len(t.flows)
    starts = [[-1] * n]
    if n:                            # a partial assignment, as the low-churn mode leaves it
        starts.append([rng.choice(c) if rng.random() < 0.5 else -1 for c in t.cand])
    for start in starts:
        want_load = loads_of(t, start)
        want = reference_fill(t, list(start), want_load, seed)
        got_load = loads_of(t, start)
        got = greedy_fill_paths(t, list(start), got_load, seed)
        assert got == want
        assert got_load == want_load


@pytest.mark.parametrize("block", range(10))
def test_same_choices_as_the_loop_on_small_three_tier_cases(block):
    rng = random.Random(block)
    for seed in range(block * 25, block * 25 + 25):      # 250 cases
        f, conns = random_case(seed)
        check_same(path_table(f, conns), seed % 5, rng)


@pytest.mark.parametrize("seed", range(40))
def test_same_choices_as_the_loop_on_k8_fat_trees(seed):
    f, conns = fat_tree_case(seed)
    check_same(path_table(f, conns), seed % 3, random.Random(seed))


def test_pairs_without_link_arrays():
    """Pairs without a cached link array get one built from the table's path links."""
    for seed in range(20):
        f, conns = fat_tree_case(seed)
        t = path_table(f, conns)
        t.pair_links = {pair: None for pair in t.pair_links}
        check_same(t, seed % 3, random.Random(seed))

"""The staged edge-colouring's path pick by numpy (routing/edge_coloring.py pick_paths) against
the per-flow loop over candidates it replaced: the same path for every flow, and -1 where no
candidate has the wanted plane and core, on small random three-tier cases (some cores failed),
k=8 fat-trees and random wants; route('edge-coloring') as before on the same cases."""
import random

import pytest

from routing import route
from routing.edge_coloring import pick_paths, pick_paths_reference
from routing.paths import path_table

from .test_greedy_paths_equivalence import fat_tree_case
from .test_paths_properties import random_case


def random_wants(fabric, t, rng: random.Random) -> list[tuple]:
    """Per flow: a plane (sometimes one no path has) and, across pods, a core number."""
    A, C = fabric.spec.aggs_per_pod, fabric.spec.cores_per_plane
    out = []
    for i in range(len(t.flows)):
        p = rng.randint(1, A + 1)
        same = fabric.pod_of(t.leaf_names[t.src[i]]) == fabric.pod_of(t.leaf_names[t.dst[i]])
        out.append((p,) if same else (p, rng.randint(1, C)))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_pick_paths_as_the_loop_over_candidates(seed):
    f, conns = random_case(seed) if seed < 30 else fat_tree_case(seed)
    t = path_table(f, conns)
    rng = random.Random(seed)
    for _ in range(3):
        want = random_wants(f, t, rng)
        assert pick_paths(f, t, want) == pick_paths_reference(f, t, want)


@pytest.mark.parametrize("seed", range(10))
def test_edge_coloring_routes_with_either_pick(seed, monkeypatch):
    import routing.edge_coloring as ec
    f, conns = random_case(seed)
    plan = route("edge-coloring", f, conns, seed=seed % 3)
    monkeypatch.setattr(ec, "pick_paths", ec.pick_paths_reference)
    assert route("edge-coloring", f, conns, seed=seed % 3).path_of == plan.path_of

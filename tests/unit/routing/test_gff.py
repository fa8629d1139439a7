"""gff's compiled first fit (first_fit_kernel) against its plain form: the same path per flow
and the same count of flows left on ECMP, on random three-tier cases (some cores failed,
agg-core links at half the host rate, so some flows fit nowhere) and k=8 fat-trees."""
import pytest

from routing.gff import first_fit, first_fit_reference, natural_demands, route_gff
from routing.paths import path_table

from .test_greedy_paths_equivalence import fat_tree_case
from .test_paths_properties import random_case


@pytest.mark.parametrize("seed", range(30))
def test_first_fit_matches_reference(seed):
    f, conns = random_case(seed) if seed % 3 else fat_tree_case(seed)
    t = path_table(f, conns)
    demand = natural_demands([(c.src, c.dst) for c in t.flows])
    want = first_fit_reference(f, t, demand, seed)
    assert first_fit(f, t, demand, seed) == want
    assert first_fit(f, path_table(f, conns), demand, seed) == want   # cached ECMP columns


def test_some_cases_fall_back_to_ecmp():
    """The comparison above covers flows that fit nowhere, not only first fits."""
    fell = 0
    for seed in range(1, 30, 3):
        f, conns = random_case(seed)
        t = path_table(f, conns)
        fell += first_fit(f, t, natural_demands([(c.src, c.dst) for c in t.flows]), seed)[1]
    assert fell > 0


def test_route_gff_names_fallbacks():
    f, conns = random_case(1)
    plan = route_gff(f, conns, seed=1)
    assert set(plan.path_of) == {c.conn_id for c in conns}
    assert plan.stats.status.startswith("first-fit")

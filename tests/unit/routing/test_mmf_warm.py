"""mmf's compiled kernels are made ready before its timed solve (routing.route): the warm-ups
compile every signature a solve then calls, so no compile lands inside solve times."""
from __future__ import annotations

from routing import mmf_descent, mmf_search, route

from ..mmf_cases import case


def _signatures() -> dict[str, set]:
    kernels = {"search": mmf_search.search_kernel, "fits": mmf_search.fits_kernel,
               "hot": mmf_search.hot_kernel, "descend": mmf_descent.descend_kernel,
               "link matrix": mmf_descent.link_matrix_kernel}
    return {name: set(k.signatures) for name, k in kernels.items()}


def test_the_warm_ups_cover_what_a_three_tier_solve_calls():
    mmf_search.warm()
    mmf_descent.warm()
    warmed = _signatures()
    assert all(warmed.values())
    for n in (0, 3, 7):
        fabric, conns, _ = case(n)
        route("mmf", fabric, conns, seed=n, time_limit_s=20)
    assert _signatures() == warmed

"""mmf's compiled kernels are made ready before its timed solve (routing.route): the warm-ups
compile every signature a solve then calls, so no compile lands inside solve times (numba's
kernels here; the module built ahead of time has one signature each: tests/unit/traffic/
test_aot.py)."""
from __future__ import annotations

from routing import mmf_descent, mmf_search, route
from traffic import jit

from ..mmf_cases import case


def _signatures() -> dict[str, set]:
    kernels = {**mmf_search.kernel.made, **mmf_descent.kernel.made}
    return {name: set(k.signatures) for name, k in kernels.items()}


def test_the_warm_ups_cover_what_a_three_tier_solve_calls(monkeypatch):
    monkeypatch.setattr(jit, "AHEAD_OF_TIME", False)
    monkeypatch.setattr(mmf_search.kernel, "made", {})
    monkeypatch.setattr(mmf_descent.kernel, "made", {})
    mmf_search.warm()
    mmf_descent.warm()
    warmed = _signatures()
    assert len(warmed) == 5 and all(warmed.values())
    for n in (0, 3, 7):
        fabric, conns, _ = case(n)
        route("mmf", fabric, conns, seed=n, time_limit_s=20)
    assert _signatures() == warmed

"""The ILP's stats say whether CBC ran: a warm start that meets the lower bound is optimal
without a solve, and its time must not pass for CBC's."""
from __future__ import annotations

import pulp
import pytest

from routing import route
from routing.base import lower_bound_link_flows, max_link_flows
from testbed.fabric import FabricSpec, build_fabric
from traffic.collectives import Connection


def fabric(spines=4, leaves=4, hpl=4):
    return build_fabric(FabricSpec(spines, leaves, hpl, 100.0, 100.0))


def rings(f, hpl=4):
    """Every host sends to the same slot on the next leaf (greedy meets the bound of 1)."""
    L = f.spec.leaves
    return [Connection(leaf * hpl + slot - 1, "j", f"h{leaf * hpl + slot}",
                       f"h{((leaf + 1) % L) * hpl + slot}", 20000 + leaf * hpl + slot, 5001)
            for leaf in range(L) for slot in range(1, hpl + 1)]


@pytest.fixture
def no_cbc(monkeypatch):
    def refuse(self, *args, **kwargs):
        raise AssertionError("CBC was called")
    monkeypatch.setattr(pulp.LpProblem, "solve", refuse)


def test_warm_start_at_the_bound_is_optimal_without_cbc(no_cbc):
    f = fabric()
    conns = rings(f)
    plan = route("ilp", f, conns)
    assert max_link_flows(f, conns, plan.spine_of) == lower_bound_link_flows(f, conns) == 1
    assert plan.stats.status == "optimal" and plan.stats.gap == 0.0
    assert plan.stats.solver_ran is False
    assert plan.stats.solver_calls == 0
    d = plan.stats.as_dict()
    assert d["solver_ran"] is False and d["solver_calls"] == 0


def test_cbc_run_is_recorded():
    f = fabric()
    conns = rings(f)
    # a previous assignment with every flow on spine1 starts at 4 flows per link: CBC must run
    plan = route("ilp", f, conns, previous={c.conn_id: "spine1" for c in conns})
    assert max_link_flows(f, conns, plan.spine_of) == 1
    assert plan.stats.status == "optimal"
    assert plan.stats.solver_ran is True
    assert plan.stats.solver_calls == 1
    assert plan.stats.as_dict()["solver_ran"] is True


def test_no_flows_no_cbc(no_cbc):
    f = fabric()
    plan = route("ilp", f, [Connection(0, "j", "h1", "h2", 20000, 5001)])
    assert plan.stats.status == "optimal" and plan.stats.solver_ran is False


@pytest.mark.parametrize("name", ["ecmp", "greedy", "edge-coloring", "annealing"])
def test_strategies_without_a_solver_leave_it_unset(name):
    f = fabric()
    d = route(name, f, rings(f)).stats.as_dict()
    assert d["solver_ran"] is None and d["solver_calls"] is None
    # the keys every user of the results' `solve` block reads are still there
    assert {"time_s", "status", "gap", "lower_bound_link_flows"} <= set(d)


def test_cbc_is_ended_at_its_hard_cap(monkeypatch):
    """CBC checks its own limit only in branch and bound; the wrapper ends the process this
    solve started at the cap, leaves no child and no temporary files behind."""
    import os
    import random

    import psutil
    import pulp

    from routing import ilp
    monkeypatch.setattr(ilp, "CAP_FACTOR", 0.0)
    monkeypatch.setattr(ilp, "CAP_SLACK_S", 0.3)
    rng = random.Random(1)
    prob = pulp.LpProblem("knapsacks", pulp.LpMaximize)
    x = [pulp.LpVariable(f"x{i}", cat="Binary") for i in range(300)]
    prob += pulp.lpSum(rng.randint(1, 1000) * v for v in x)
    for _ in range(150):                          # far more than CBC can close in 0.3 s
        prob += pulp.lpSum(rng.randint(1, 1000) * v for v in x) <= 40_000
    solver = ilp.cbc(60, warm=False)
    children = {c.pid for c in psutil.Process().children()}
    with pytest.raises(pulp.PulpSolverError):
        prob.solve(solver)
    assert solver.capped
    assert ilp.solver_error(solver, RuntimeError("x")).startswith("time-limit (CBC ended")
    assert {c.pid for c in psutil.Process().children()} <= children
    # this solve's own files (other processes' CBC runs share the temporary folder)
    assert solver._files and all(f.startswith(solver.tmpDir) for f in solver._files)
    assert not [f for f in solver._files if os.path.exists(f)]

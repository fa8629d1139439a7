"""mmf on two tiers, timed on the outside test pass's case (a script, not a test): four jobs
(two all-to-alls, an 8-rank ring all-reduce, a pipeline; 35 flows) on 8 leaves x 5 spines,
the case the former formulation left `feasible` at its 60 s limit (docs/prediction.md, "mmf
on two tiers"; its routes are checked in tests/unit/routing/test_solver_mmf.py).

    python -m experiments.benchmarks.mmf_case_bench [--repeats 3]

Prints the conditions, then `route("mmf", ...)`'s wall and CPU per call (min / median / max
of --repeats, after one untimed call that loads the kernels) and the status, gap and solver
calls of the last call.
"""
from __future__ import annotations

import argparse

from experiments.benchmarks.harness import Spread, conditions, repeat
from routing import route
from testbed.fabric import FabricSpec, build_fabric
from traffic.collectives import Collective, JobSpec, plan_jobs


def four_jobs() -> tuple:
    """The outside test pass's case: two all-to-alls, an 8-rank ring all-reduce and a
    pipeline on 8 leaves x 5 spines (4 hosts per leaf), 35 flows: the fabric and its
    connections (tests/unit/routing/test_solver_mmf.py solves it too). The former mmf hit
    its 60 s limit on it and returned "feasible"."""
    f = build_fabric(FabricSpec(spines=5, leaves=8, hosts_per_leaf=4, host_link_mbps=100.0,
                                spine_link_mbps=100.0))
    specs = [
        JobSpec("a2a-1", Collective.ALLTOALL, [["h4", "h8", "h30", "h21"]], 1 << 20),
        JobSpec("a2a-2", Collective.ALLTOALL, [["h20", "h6", "h1", "h11"]], 1 << 20),
        JobSpec("ring", Collective.ALLREDUCE,
                [["h15", "h27", "h18", "h22", "h28", "h24", "h3", "h23"]], 1 << 20),
        JobSpec("pipe", Collective.PIPELINE, [["h5", "h26", "h7", "h19"]], 1 << 20),
    ]
    return f, [c for p in plan_jobs(specs) for c in p.connections]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    if not 1 <= args.repeats <= 1000:
        ap.error(f"--repeats: from 1 to 1000, got {args.repeats}")
    f, conns = four_jobs()
    with conditions(kernels=False):
        route("mmf", f, conns)                          # untimed: kernels and solver loaded
        calls, plan = repeat(lambda: route("mmf", f, conns), args.repeats)
        w, c = calls.wall_spread(), Spread.of(calls.cpu)
        print(f"mmf, {len(conns)} connections on 8 leaves x 5 spines: wall {w.median:.3f} s "
              f"({w.low:.3f}-{w.high:.3f}), CPU {c.median:.3f} s ({c.low:.3f}-{c.high:.3f}), "
              f"medians of {w.n}; status {plan.stats.status}, gap {plan.stats.gap}, "
              f"solver calls {plan.stats.as_dict().get('solver_calls')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Routing benchmark over the paper's matrix (a script, not a test).

    .venv/bin/python experiments/benchmarks/routing_bench.py [--quick] [--repeats N]

Matrix: 1..5 jobs x ring sizes 2, 4, 8 x 0, 1, 4, 8 failed spines, plus 5% failed leaf-spine
links, on the paper's fabric (64 leaves, 32 spines, 32 NICs per leaf). Jobs take whole random
leaves; models rotate GPT-3 (64 GPUs per copy), BLOOM (48), LLaMA2-70B (128); GPU i of every copy
forms ring i, so a job of d copies has (GPUs per copy) rings of d flows each. Cases that do not
fit in 64 leaves are skipped (as in the paper: 4-5 jobs x ring size 8).

Per strategy it prints the median solve time, max link flows against the lower bound (ratio of
sums over the cases, and how many cases hit the bound), and the churn of an epoch change
(one job leaves, a new job arrives; flows present in both epochs whose spine changed).

Jobs come from traffic/models.py (`model_job`, random whole leaves) when it is importable; else
they are generated here with the same layout (GPU i of every copy forms ring i). The predicted
all-reduce time (one iteration, no compute, slowest job) comes from traffic/predictor.py when
importable, reported as the ratio to the ILP's prediction; otherwise that column says n/a.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from routing import STRATEGIES, route  # noqa: E402
from routing.base import lower_bound_link_flows, max_link_flows  # noqa: E402
from routing.epochs import recompute  # noqa: E402
from testbed.fabric import Fabric, FabricSpec, build_fabric  # noqa: E402
from traffic.collectives import Connection, JobSpec, Collective, plan_jobs  # noqa: E402

try:  # model presets (another module of the project); fall back to the generator below
    from traffic.models import model_job  # noqa: E402
except ImportError:  # pragma: no cover
    model_job = None
try:
    from traffic.predictor import predict  # noqa: E402
except ImportError:  # pragma: no cover
    predict = None
PRESETS = ["gpt3-175b", "bloom-176b", "llama2-70b"]

LEAVES, SPINES, NICS = 64, 32, 32
MODELS = [("gpt3", 64), ("bloom", 48), ("llama2-70b", 128)]


def paper_fabric(failed_spines: int, link_fail_frac: float, rng: random.Random) -> Fabric:
    """The paper's fabric with `failed_spines` random spines and a fraction of failed links
    (never isolating a leaf: each leaf keeps at least half its uplinks)."""
    spines = [f"spine{i}" for i in range(1, SPINES + 1)]
    dead = tuple(sorted(rng.sample(spines, failed_spines), key=lambda s: int(s[5:])))
    links: list[tuple[str, str]] = []
    if link_fail_frac > 0:
        alive = [s for s in spines if s not in dead]
        all_links = [(f"leaf{l}", s) for l in range(1, LEAVES + 1) for s in alive]
        want = round(link_fail_frac * len(all_links))
        per_leaf: dict[str, int] = {}
        for leaf, s in rng.sample(all_links, len(all_links)):
            if len(links) >= want:
                break
            if per_leaf.get(leaf, 0) < len(alive) // 2:
                links.append((leaf, s))
                per_leaf[leaf] = per_leaf.get(leaf, 0) + 1
    spec = FabricSpec(spines=SPINES, leaves=LEAVES, hosts_per_leaf=NICS, host_link_mbps=100_000,
                      spine_link_mbps=100_000, failed_spines=dead, failed_links=tuple(links))
    return build_fabric(spec)


def paper_jobs(n_jobs: int, ring: int, rng: random.Random,
               first_model: int = 0) -> list[JobSpec] | None:
    """Jobs on whole random leaves; None when they do not fit in the fabric."""
    need = []
    for j in range(n_jobs):
        name, gpc = MODELS[(first_model + j) % len(MODELS)]
        need.append((name, gpc, -(-gpc * ring // NICS)))
    if sum(n for _, _, n in need) > LEAVES:
        return None
    leaves = rng.sample(range(1, LEAVES + 1), LEAVES)
    specs = []
    for j, (name, gpc, n_leaves) in enumerate(need):
        mine, leaves = leaves[:n_leaves], leaves[n_leaves:]
        gpus = [f"h{(leaf - 1) * NICS + slot}" for leaf in mine for slot in range(1, NICS + 1)]
        groups = [[gpus[c * gpc + i] for c in range(ring)] for i in range(gpc)]
        specs.append(JobSpec(name=f"{name}-{j}", collective=Collective.ALLREDUCE, groups=groups,
                             size_bytes=1 << 20))
    return specs


def connections(specs: list[JobSpec]) -> list[Connection]:
    return [c for p in plan_jobs(specs) for c in p.connections]


def make_jobs(n_jobs: int, ring: int, fabric: Fabric, rng: random.Random,
              first_model: int = 0, used: set[str] | None = None) -> list[JobSpec] | None:
    """Jobs of rotating models on whole random leaves; None when they do not fit."""
    need = sum(-(-MODELS[(first_model + j) % 3][1] * ring // NICS) for j in range(n_jobs))
    if need > LEAVES - len(used or ()):
        return None
    if model_job is None:
        return paper_jobs(n_jobs, ring, rng, first_model)
    used = set() if used is None else used
    return [model_job(f"{PRESETS[(first_model + j) % 3]}-{first_model + j}",
                      PRESETS[(first_model + j) % 3], ring, fabric, rng, used,
                      iterations=1, compute_s=0.0)
            for j in range(n_jobs)]


def allreduce_s(fabric: Fabric, specs: list[JobSpec], spine_of: dict) -> float | None:
    """Predicted all-reduce time of the slowest job (one iteration, seconds)."""
    if predict is None:
        return None
    pred = predict(fabric, plan_jobs(specs), spine_of)
    return max(max(j.cct_s) for j in pred.jobs.values())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strategies", default="ecmp,greedy,edge-coloring,annealing,ilp,mmf")
    ap.add_argument("--repeats", type=int, default=1, help="seeds per matrix cell")
    ap.add_argument("--quick", action="store_true", help="ring size 4 and 0/4 failed spines only")
    ap.add_argument("--no-predict", action="store_true", help="skip the all-reduce prediction")
    ap.add_argument("--ilp-time-limit", type=float, default=30.0)
    args = ap.parse_args(argv)
    names = args.strategies.split(",")
    for n in names:
        if n not in STRATEGIES:
            ap.error(f"unknown strategy {n}")
    opts = {"ilp": {"time_limit_s": args.ilp_time_limit},
            "mmf": {"time_limit_s": 2 * args.ilp_time_limit}}
    rings = [4] if args.quick else [2, 4, 8]
    fails: list[tuple[int, float]] = [(0, 0.0), (4, 0.0)] if args.quick else \
        [(0, 0.0), (1, 0.0), (4, 0.0), (8, 0.0), (0, 0.05)]
    rows: dict[str, dict[str, list]] = {
        n: {"t": [], "max": [], "lb": [], "ar": [], "churn": [], "fresh": [], "common": []}
        for n in names}
    cases = 0
    for n_jobs in range(1, 6):
        for ring in rings:
            for n_fail, frac in fails:
                for rep in range(args.repeats):
                    rng = random.Random(f"{n_jobs}-{ring}-{n_fail}-{frac}-{rep}")
                    fabric = paper_fabric(n_fail, frac, rng)
                    specs = make_jobs(n_jobs, ring, fabric, rng)
                    if specs is None:
                        continue
                    conns = connections(specs)
                    lb = lower_bound_link_flows(fabric, conns)
                    cases += 1
                    # next epoch: the first job stops, a new job of the next model starts on
                    # free leaves; churn is counted over the flows of the jobs that stay
                    kept_jobs = {s.name for s in specs[1:]}
                    used = {fabric.leaf_of(h) for s in specs[1:] for h in s.hosts}
                    new = make_jobs(1, ring, fabric, rng, n_jobs, used) or []
                    nxt_specs = specs[1:] + new
                    nxt = [c for c in conns if c.job in kept_jobs]
                    base = max(c.conn_id for c in conns) + 1
                    nxt += [Connection(base + k, c.job, c.src, c.dst, 30000 + k, c.dst_port)
                            for k, c in enumerate(connections(new))]
                    ar_ref = None
                    plans = {}
                    for name in names:
                        plan = route(name, fabric, conns, seed=rep, **opts.get(name, {}))
                        plans[name] = plan
                        r = rows[name]
                        r["t"].append(plan.stats.time_s)
                        r["max"].append(max_link_flows(fabric, conns, plan.spine_of))
                        r["lb"].append(lb)
                        if kept_jobs:
                            prev = {c.conn_id: plan.spine_of[c.conn_id] for c in nxt
                                    if c.job in kept_jobs}
                            ep = recompute(name, fabric, nxt, prev, seed=rep,
                                           **opts.get(name, {}))
                            fresh = recompute(name, fabric, nxt, prev, seed=rep,
                                              low_churn=False, **opts.get(name, {}))
                            r["churn"].append(ep.churned)
                            r["fresh"].append(fresh.churned)
                            r["common"].append(ep.common)
                    if not args.no_predict and predict is not None:
                        ar = {n: allreduce_s(fabric, specs, plans[n].spine_of) for n in names}
                        ref = ar.get("ilp")
                        for n in names:
                            if ref:
                                rows[n]["ar"].append(ar[n] / ref)
                    print(f"jobs={n_jobs} ring={ring} failed_spines={n_fail} "
                          f"failed_links={frac:.0%} flows={len(conns)} bound={lb} max: "
                          + " ".join(f"{n}={rows[n]['max'][-1]}" for n in names)
                          + " ms: " + " ".join(f"{n}={1000 * rows[n]['t'][-1]:.0f}"
                                               for n in names),
                          file=sys.stderr, flush=True)
    print(f"\n{cases} cases (64 leaves x 32 spines x 32 NICs; {args.repeats} seed(s) per cell)\n")
    print("| strategy | median solve (ms) | max solve (ms) | max link flows / bound (sum) "
          "| cases at bound | worst max/bound | all-reduce / ILP (mean, worst) "
          "| churn low-churn mode | churn fresh solve |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in names:
        r = rows[name]
        if not r["t"]:
            continue
        ratio = sum(r["max"]) / max(1, sum(r["lb"]))
        hit = sum(m == b for m, b in zip(r["max"], r["lb"]))
        worst = max(m / max(1, b) for m, b in zip(r["max"], r["lb"]))
        ar = (f"{statistics.mean(r['ar']):.3f}, {max(r['ar']):.3f}" if r["ar"] else "n/a")
        common = sum(r["common"])
        churn = f"{sum(r['churn']) / common:.1%}" if common else "n/a"
        fresh = f"{sum(r['fresh']) / common:.1%}" if common else "n/a"
        print(f"| {name} | {1000 * statistics.median(r['t']):.1f} | {1000 * max(r['t']):.0f} "
              f"| {ratio:.3f} | {hit}/{len(r['max'])} | {worst:.2f} | {ar} | {churn} | {fresh} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

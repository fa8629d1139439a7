"""Routing benchmark over the paper's matrix (a script, not a test).

    python -m experiments.benchmarks.routing_bench [--quick] [--repeats N]

Matrix: 1..5 jobs x ring sizes 2, 4, 8 x 0, 1, 4, 8 failed spines, plus 5% failed leaf-spine
links, on the paper's fabric (64 leaves, 32 spines, 32 NICs per leaf). Jobs take whole random
leaves; models rotate GPT-3 (64 GPUs per copy), BLOOM (48), LLaMA2-70B (128); GPU i of every copy
forms ring i, so a job of d copies has (GPUs per copy) rings of d flows each. Cases that do not
fit in 64 leaves are skipped (as in the paper: 4-5 jobs x ring size 8).

Per strategy it prints the median solve time, max link flows against the lower bound (ratio of
sums over the cases, and how many cases hit the bound), and the churn of an epoch change
(one job leaves, a new job arrives; flows present in both epochs whose spine changed). For the
solver strategies (ilp, mmf) a second table splits the cases in which CBC ran from those whose
optimum a bound proved without it (`solve.solver_ran`), counts the statuses and names the
slowest case.

Then a mixed section (`--mixed N`, 0 to skip): jobs sharing leaves, where mmf's job layer is
not trivial (on the paper matrix every job has leaves of its own). N cases of the outside
test pass's shape (two 4-rank all-to-alls, an 8-rank ring all-reduce and a 4-stage pipeline
on random hosts of 8 leaves x 5 spines x 4 hosts) and N random harder ones (4-16 leaves, 2-8
spines, 2-8 hosts per leaf, 2-7 jobs of all-to-all / ring / pipeline / all-gather, some
failed spines and links), solved by ilp and mmf; it prints the median and max solve time,
the statuses and the worst case.

It first prints the conditions (load average, versions) and how long the compiled loops took
to get ready (numba import, then compile or load from numba's cache: a one-time cost per
process, kept out of the solve times), and the load average again at the end. The three-tier
section times whole `route` calls (solve and lower bound): per case one first call, then
--calls-per-case more; its tables give the medians of wall and CPU time per call
(process_time, which the load of a shared machine moves less than wall time), the max, and
the first calls' median apart, after each fabric's path index is built (its time printed).

Jobs come from traffic/models.py (`model_job`, random whole leaves) when it is importable; else
they are generated here with the same layout (GPU i of every copy forms ring i). The predicted
all-reduce time (one iteration, no compute, slowest job) comes from traffic/predictor.py when
importable, reported as the ratio to the ILP's prediction; otherwise that column says n/a.
"""
from __future__ import annotations

import argparse
import itertools
import random
import statistics
import sys
import time
from collections import Counter

from routing import STRATEGIES, RoutingError, route
from routing.base import lower_bound_link_flows, max_link_flows
from routing.epochs import churn as spine_churn, recompute
from routing.paths import pair_blocks
from testbed.fabric import Fabric, FabricError, FabricSpec, build_fabric
from testbed.topologies import fat_tree_spec
from traffic.collectives import Connection, JobSpec, Collective, plan_jobs

from experiments.benchmarks.conditions import load_average
from experiments.benchmarks.harness import Calls, conditions

try:  # model presets (another module of the project); fall back to the generator below
    from traffic.models import model_job
except ImportError:  # pragma: no cover
    model_job = None
try:
    from traffic.predictor import predict
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
    """Jobs of rotating models on whole random leaves with no host in `used` (host names;
    the hosts taken are added to it); None when they do not fit."""
    need = sum(-(-MODELS[(first_model + j) % 3][1] * ring // NICS) for j in range(n_jobs))
    if need > LEAVES - len({fabric.leaf_of(h) for h in used or ()}):
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


def fmt_ms(seconds: float) -> str:
    ms_ = 1000 * seconds
    return f"{ms_:.1f}" if ms_ < 10 else f"{ms_:.0f}"


def ms(values: list[float]) -> str:
    """median / max in ms, or a dash."""
    if not values:
        return "-"
    return f"{fmt_ms(statistics.median(values))} / {fmt_ms(max(values))}"


def solver_table(results: dict[str, list[tuple]]) -> None:
    """Per solver strategy: cases where CBC ran vs proven without it, statuses, worst case."""
    solvers = {n: r for n, r in results.items()
               if r and any(st.solver_ran is not None for st, _ in r)}
    if not solvers:
        return
    print("\n| strategy | CBC ran | solve when CBC ran: median / max (ms) "
          "| no CBC (bound met): median / max (ms) | CBC solves per case (max) | statuses "
          "| slowest case |")
    print("| --- | ---: | ---: | ---: | ---: | --- | --- |")
    for name, r in solvers.items():
        ran = [st.time_s for st, _ in r if st.solver_ran]
        not_ran = [st.time_s for st, _ in r if not st.solver_ran]
        statuses = Counter(st.status for st, _ in r)
        st, case = max(r, key=lambda x: x[0].time_s)
        print(f"| {name} | {len(ran)}/{len(r)} | {ms(ran)} | {ms(not_ran)} "
              f"| {max((s.solver_calls or 0) for s, _ in r)} "
              f"| {', '.join(f'{k} {v}' for k, v in statuses.most_common())} "
              f"| {fmt_ms(st.time_s)} ms, {st.status}, {st.solver_calls} CBC solves: "
              f"{case} |")


KINDS = [Collective.ALLTOALL, Collective.ALLREDUCE, Collective.PIPELINE, Collective.ALLGATHER]


def four_jobs_case(seed: int) -> tuple[Fabric, list[Connection], str]:
    """The outside test pass's shape: 2 all-to-alls (4 ranks), an 8-rank ring all-reduce and
    a 4-stage pipeline on random hosts of 8 leaves x 5 spines x 4 hosts."""
    rng = random.Random(f"four-jobs-{seed}")
    fabric = build_fabric(FabricSpec(5, 8, 4, 100.0, 100.0))
    hosts = [f"h{i}" for i in range(1, 33)]
    rng.shuffle(hosts)
    specs = []
    for k, (kind, n) in enumerate([(Collective.ALLTOALL, 4), (Collective.ALLTOALL, 4),
                                   (Collective.ALLREDUCE, 8), (Collective.PIPELINE, 4)]):
        group, hosts = hosts[:n], hosts[n:]
        specs.append(JobSpec(f"j{k}-{kind.value}", kind, [group], 1 << 20))
    conns = connections(specs)
    return fabric, conns, f"8x5x4, 4 jobs, seed {seed}, {len(conns)} flows"


def random_mixed_case(seed: int) -> tuple[Fabric, list[Connection], str] | None:
    """Random jobs sharing leaves on a random small fabric, some elements failed."""
    rng = random.Random(f"mixed-{seed}")
    leaves, spines, hpl = rng.randint(4, 16), rng.randint(2, 8), rng.randint(2, 8)
    dead = tuple(rng.sample([f"spine{i}" for i in range(1, spines + 1)],
                            rng.choice([0, 0, 0, 1]))) if spines > 2 else ()
    links = {(f"leaf{rng.randint(1, leaves)}", f"spine{rng.randint(1, spines)}")
             for _ in range(rng.choice([0, 0, 1, 3]))}
    links = tuple(sorted(x for x in links if x[1] not in dead))
    try:
        fabric = build_fabric(FabricSpec(spines, leaves, hpl, 100.0, 100.0,
                                         tuple(sorted(dead)), links))
    except FabricError:
        return None
    hosts = [f"h{i}" for i in range(1, leaves * hpl + 1)]
    rng.shuffle(hosts)
    specs = []
    for k in range(rng.randint(2, 7)):
        kind = rng.choice(KINDS)
        n = rng.randint(3, 6 if kind == Collective.ALLTOALL else 12)
        if len(hosts) < n:
            break
        group, hosts = hosts[:n], hosts[n:]
        specs.append(JobSpec(f"j{k}-{kind.value}", kind, [group], 1 << 20))
    conns = connections(specs)
    return fabric, conns, (f"{leaves}x{spines}x{hpl}, {len(specs)} jobs, {len(dead)} failed "
                           f"spines, {len(links)} failed links, seed {seed}, "
                           f"{len(conns)} flows")


def mixed(n: int, names: list[str], opts: dict) -> None:
    """Jobs sharing leaves: solve times, statuses and worst cases of the solver strategies."""
    for title, make in (("4 jobs on 8 leaves x 5 spines", four_jobs_case),
                        ("random harder cases", random_mixed_case)):
        results: dict[str, list[tuple]] = {name: [] for name in names}
        made = seed = 0
        while made < n:
            case = make(seed)
            seed += 1
            if case is None:
                continue
            fabric, conns, desc = case
            try:
                plans = {name: route(name, fabric, conns, **opts.get(name, {}))
                         for name in names}
            except RoutingError:
                continue
            made += 1
            for name, plan in plans.items():
                results[name].append((plan.stats, desc))
            print(f"[mixed] {desc}: " + " ".join(
                f"{name}={1000 * p.stats.time_s:.0f}ms ({p.stats.status}, "
                f"{p.stats.solver_calls} CBC)" for name, p in plans.items()),
                file=sys.stderr, flush=True)
        print(f"\nMixed: {title}, {n} cases")
        print("| strategy | median solve (ms) | max solve (ms) | statuses |")
        print("| --- | ---: | ---: | --- |")
        for name, r in results.items():
            t = [st.time_s for st, _ in r]
            statuses = Counter(st.status for st, _ in r)
            print(f"| {name} | {fmt_ms(statistics.median(t))} | {fmt_ms(max(t))} "
                  f"| {', '.join(f'{k} {v}' for k, v in statuses.most_common())} |")
        solver_table(results)


# -- three tiers --------------------------------------------------------------------------------
def three_tier_fabrics() -> list[tuple[str, FabricSpec]]:
    """The fabrics of the issue's targets: fat-trees k=8 and k=16, and the 2,048-NIC clos3 of
    experiments/configs/clos3-2048-5jobs.yaml (8 pods x 8 leaves x 32 NICs, 8 planes of 8
    cores, 2:1 at the core)."""
    clos3 = FabricSpec(topology="clos3", pods=8, leaves_per_pod=8, aggs_per_pod=8,
                       cores_per_plane=8, hosts_per_leaf=32, host_link_mbps=100_000,
                       leaf_agg_mbps=100_000, agg_core_mbps=50_000)
    return [("fat-tree k=8", fat_tree_spec(8, 100_000, 100_000)),
            ("fat-tree k=16", fat_tree_spec(16, 100_000, 100_000)),
            ("clos3 2,048 NICs", clos3)]


def three_tier_jobs(fabric: Fabric, rng: random.Random, placement: str) -> list[JobSpec]:
    """2-5 jobs of ring all-reduce (4 or 8 ranks per ring, rings of GPU i of every copy) over
    about 3/4 of the hosts: `whole-leaves` places each job on random whole leaves (as the
    paper), `fragmented` on random hosts of the whole fabric (jobs share leaves and pods)."""
    hosts = list(fabric.hosts)
    per_leaf = fabric.spec.hosts_per_leaf
    n_jobs = rng.randint(2, 5)
    budget = (3 * len(hosts) // 4) // n_jobs
    if placement == "whole-leaves":
        leaves = list(fabric.leaves)
        rng.shuffle(leaves)
        take = max(1, budget // per_leaf)
        groups = [[h for leaf in leaves[i * take:(i + 1) * take]
                   for h in hosts if fabric.leaf_of(h) == leaf] for i in range(n_jobs)]
    else:
        rng.shuffle(hosts)
        groups = [hosts[i * budget:(i + 1) * budget] for i in range(n_jobs)]
    specs = []
    for j, g in enumerate(groups):
        ring = rng.choice([4, 8])
        copies = len(g) // ring
        if copies < 1:
            continue
        # GPU i of every copy forms ring i: rings cross leaves whatever the placement
        rings = [[g[c * (len(g) // ring) + i] for c in range(ring)] for i in range(copies)]
        specs.append(JobSpec(f"j{j}", Collective.ALLREDUCE, rings, 1_000_000))
    return specs


def three_tier(names: list[str], seeds: int, opts: dict, repeats: int = 3) -> None:
    """Per fabric and placement: wall and CPU time per route call, medians over every case's
    `repeats` calls (the first call of a case counted apart: its leaf pairs' paths may be
    new to the fabric's cache on fabrics too large to fill it at once), max link flows over
    the path lower bound (sum over cases), cases at the bound. The fabric's path index
    (routing/paths.py pair_blocks) is built before the first timed call, and its time printed."""
    for title, spec in three_tier_fabrics():
        fabric = build_fabric(spec)
        t0 = time.perf_counter()
        index = pair_blocks(fabric)
        print(f"\n{title}: path index of {index.used:,} link ids built in "
              f"{time.perf_counter() - t0:.2f} s ({load_average()})")
        for placement in ("whole-leaves", "fragmented"):
            rows = {n: {"first": Calls(), "calls": Calls(), "max": [], "lb": [], "at": 0}
                    for n in names}
            for seed in range(seeds):
                rng = random.Random(f"{title}-{placement}-{seed}")
                conns = connections(three_tier_jobs(fabric, rng, placement))
                for name in names:
                    r = rows[name]
                    call = (lambda: route(name, fabric, conns, seed=seed,  # noqa: E731
                                          **opts.get(name, {})))
                    plan = r["first"].time(call)
                    for _ in range(repeats):
                        r["calls"].time(call)
                    m = max_link_flows(fabric, conns, plan.path_of)
                    lb = plan.stats.lower_bound_link_flows
                    r["max"].append(m)
                    r["lb"].append(lb)
                    r["at"] += m == lb
                    print(f"[{title} {placement} {seed}] {name}: {len(conns)} conns, "
                          f"{1000 * plan.stats.time_s:.1f} ms, max {m} (bound {lb}), "
                          f"{plan.stats.status}", file=sys.stderr, flush=True)
            print(f"\n{title} ({len(fabric.hosts)} hosts, {len(fabric.switches)} switches), "
                  f"{placement}, {seeds} cases x {repeats} calls ({load_average()})")
            print("| strategy | median wall per call (ms) | median CPU per call (ms) "
                  "| max wall (ms) | first call of a case: median wall (ms) "
                  "| max link flows / bound | cases at bound |")
            print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
            for name, r in rows.items():
                c = r["calls"]
                print(f"| {name} | {fmt_ms(c.median_wall())} | {fmt_ms(c.median_cpu())} "
                      f"| {fmt_ms(max(c.wall))} | {fmt_ms(r['first'].median_wall())} "
                      f"| {sum(r['max']) / max(1, sum(r['lb'])):.2f} | {r['at']}/{seeds} |")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strategies", default="ecmp,greedy,edge-coloring,annealing,ilp,mmf")
    ap.add_argument("--repeats", type=int, default=1, help="seeds per matrix cell")
    ap.add_argument("--quick", action="store_true", help="ring size 4 and 0/4 failed spines only")
    ap.add_argument("--no-predict", action="store_true", help="skip the all-reduce prediction")
    ap.add_argument("--ilp-time-limit", type=float, default=30.0)
    ap.add_argument("--mixed", type=int, default=20,
                    help="cases per mixed set (4-job 8x5, random harder); 0: skip")
    ap.add_argument("--no-paper", action="store_true", help="skip the paper matrix")
    ap.add_argument("--three-tier", type=int, default=5,
                    help="cases per three-tier fabric and placement; 0: skip")
    ap.add_argument("--three-tier-strategies", default="ecmp,gff,greedy,edge-coloring,ilp,"
                    "annealing")
    ap.add_argument("--only-three-tier", action="store_true")
    ap.add_argument("--calls-per-case", type=int, default=3,
                    help="three tiers: timed route calls per case after its first (1-100)")
    args = ap.parse_args(argv)
    if not 1 <= args.calls_per_case <= 100:
        ap.error("--calls-per-case: 1-100")
    for n in args.strategies.split(","):
        if n not in STRATEGIES:
            ap.error(f"unknown strategy {n}")
    return args


def next_epoch(specs: list[JobSpec], conns: list[Connection], ring: int, fabric: Fabric,
               rng: random.Random) -> tuple[set[str], list[Connection]]:
    """The next epoch: the first job stops, a new job of the next model starts on free leaves
    (none with a host of a job that stays); the jobs that stay and the epoch's connections."""
    kept_jobs = {s.name for s in specs[1:]}
    used = {h for s in specs[1:] for h in s.hosts}
    new = make_jobs(1, ring, fabric, rng, len(specs), used) or []
    nxt = [c for c in conns if c.job in kept_jobs]
    base = max(c.conn_id for c in conns) + 1
    nxt += [Connection(base + k, c.job, c.src, c.dst, 30000 + k, c.dst_port)
            for k, c in enumerate(connections(new))]
    return kept_jobs, nxt


def churn_of(name: str, fabric: Fabric, plan, kept_jobs: set[str], nxt: list[Connection],
             seed: int, opts: dict) -> tuple[int, int, int]:
    """Flows of the jobs that stay (on both sides), and how many changed spine re-planned in
    low-churn mode and solved fresh; churn is counted over the flows of the jobs that stay."""
    prev = {c.conn_id: plan.spine_of[c.conn_id] for c in nxt if c.job in kept_jobs}
    ep = recompute(name, fabric, nxt, prev, seed=seed, **opts.get(name, {}))
    fresh = recompute(name, fabric, nxt, prev, seed=seed, low_churn=False, **opts.get(name, {}))
    # spines compared on both sides (whatever form the plans' routes take)
    common, changed = spine_churn(prev, ep.plan.spine_of)
    _, changed_fresh = spine_churn(prev, fresh.plan.spine_of)
    return common, len(changed), len(changed_fresh)


def paper_case(rows: dict, names: list[str], opts: dict, case: tuple, predicting: bool
               ) -> float | None:
    """One cell of the paper matrix, every strategy routed, re-routed at an epoch change and
    (`predicting`) its all-reduce predicted, into `rows`; the case's wall seconds, or None
    when its jobs do not fit."""
    n_jobs, ring, n_fail, frac, rep = case
    rng = random.Random(f"{n_jobs}-{ring}-{n_fail}-{frac}-{rep}")
    fabric = paper_fabric(n_fail, frac, rng)
    specs = make_jobs(n_jobs, ring, fabric, rng)
    if specs is None:
        return None
    case0 = time.perf_counter()
    conns = connections(specs)
    lb = lower_bound_link_flows(fabric, conns)
    kept_jobs, nxt = next_epoch(specs, conns, ring, fabric, rng)
    plans = {}
    for name in names:
        plan = plans[name] = route(name, fabric, conns, seed=rep, **opts.get(name, {}))
        r = rows[name]
        r["t"].append(plan.stats.time_s)
        r["stats"].append(plan.stats)
        r["case"].append(f"{n_jobs} jobs, ring {ring}, {n_fail} failed spines, {frac:.0%} "
                         f"failed links, {len(conns)} flows")
        r["max"].append(max_link_flows(fabric, conns, plan.spine_of))
        r["lb"].append(lb)
        if kept_jobs:
            for key, v in zip(("common", "churn", "fresh"),
                              churn_of(name, fabric, plan, kept_jobs, nxt, rep, opts)):
                r[key].append(v)
    if predicting and predict is not None:
        ar = {n: allreduce_s(fabric, specs, plans[n].spine_of) for n in names}
        ref = ar.get("ilp")
        for n in names:
            if ref:
                rows[n]["ar"].append(ar[n] / ref)
    wall = time.perf_counter() - case0
    print(f"jobs={n_jobs} ring={ring} failed_spines={n_fail} failed_links={frac:.0%} "
          f"flows={len(conns)} bound={lb} case {wall:.2f} s max: "
          + " ".join(f"{n}={rows[n]['max'][-1]}" for n in names)
          + " ms: " + " ".join(f"{n}={1000 * rows[n]['t'][-1]:.0f}" for n in names),
          file=sys.stderr, flush=True)
    return wall


def paper_table(rows: dict, names: list[str]) -> None:
    """The paper matrix's table per strategy, then the solver table."""
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
        print(f"| {name} | {fmt_ms(statistics.median(r['t']))} "
              f"| {fmt_ms(max(r['t']))} | {ratio:.3f} | {hit}/{len(r['max'])} "
              f"| {worst:.2f} | {ar} | {churn} | {fresh} |")
    solver_table({n: list(zip(rows[n]["stats"], rows[n]["case"])) for n in names})


def paper_matrix(args: argparse.Namespace, names: list[str], opts: dict) -> None:
    """Every cell of the paper matrix (1-5 jobs x ring sizes x failures x --repeats seeds),
    then its tables."""
    rings = [4] if args.quick else [2, 4, 8]
    fails: list[tuple[int, float]] = [(0, 0.0), (4, 0.0)] if args.quick else \
        [(0, 0.0), (1, 0.0), (4, 0.0), (8, 0.0), (0, 0.05)]
    rows: dict[str, dict[str, list]] = {
        n: {"t": [], "max": [], "lb": [], "ar": [], "churn": [], "fresh": [], "common": [],
            "stats": [], "case": []}
        for n in names}
    case_s: list[float] = []           # wall seconds per case, every strategy
    cpu0 = time.process_time()
    for case in itertools.product(range(1, 6), rings, fails, range(args.repeats)):
        n_jobs, ring, (n_fail, frac), rep = case
        wall = paper_case(rows, names, opts, (n_jobs, ring, n_fail, frac, rep),
                          not args.no_predict)
        if wall is not None:
            case_s.append(wall)
    if not case_s:
        return
    print(f"\n{len(case_s)} cases (64 leaves x 32 spines x 32 NICs; {args.repeats} seed(s) "
          f"per cell): every strategy routed, re-routed at an epoch change and its "
          f"all-reduce predicted in {sum(case_s):.1f} s wall ({time.process_time() - cpu0:.1f} "
          f"s CPU), per case median {statistics.median(case_s):.2f} s, max "
          f"{max(case_s):.2f} s ({load_average()})\n")
    paper_table(rows, names)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    names = args.strategies.split(",")
    opts = {"ilp": {"time_limit_s": args.ilp_time_limit},
            "mmf": {"time_limit_s": 2 * args.ilp_time_limit}}
    # the compiled loops (greedy's order and placement, the predictor's water-filling) are
    # made ready first by the conditions: numba's import and compile or cache load, outside
    # every time below
    with conditions():
        if args.only_three_tier:
            three_tier(args.three_tier_strategies.split(","), args.three_tier, opts,
                       args.calls_per_case)
            return 0
        if not args.no_paper:
            paper_matrix(args, names, opts)
        if args.mixed > 0:
            mixed(args.mixed, [n for n in ("ilp", "mmf") if n in names], opts)
        if args.three_tier > 0:
            three_tier(args.three_tier_strategies.split(","), args.three_tier, opts,
                       args.calls_per_case)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Tables over sweep folders, which `report` does not draw: Hedera's suite, the three-tier
what-ifs, the load-balancing matrix and rings as flows (a script, not a test; it reads
finished sweep folders and measures nothing).

    python -m experiments.benchmarks.sweep_tables hedera results/hp results/he --out results/hedera
    python -m experiments.benchmarks.sweep_tables whatif results/wi
    python -m experiments.benchmarks.sweep_tables lb results/lb-quickstart results/lb-fat-tree-rings
    python -m experiments.benchmarks.sweep_tables ringflow results/ringflow-clos3

hedera: the sweep folders of experiments/configs/sweeps/hedera-k4.yaml (predicted) and
hedera-k4-emulated.yaml (emulated): per traffic pattern and routing the fraction of the
non-blocking throughput, like Hedera's figure (NSDI 2010, Fig. 9) and Mininet-HiFi's
reproduction, the non-blocking reference's efficiency against the host links (target >= 0.95),
the emulated runs' prediction errors (targets: median |error| <= 5%, worst <= 10%), and the
grouped bar plot (PNG and SVG).

whatif: the folder of experiments/configs/sweeps/clos3-whatif.yaml: per point (jobs, failed
switches) and strategy the efficiency (lowest job), network efficiency (mean over jobs), the
fairness vector's first layer, the busiest link's flow count and the solver status; then where
the strategies differ.

lb: the folders of experiments/configs/sweeps/lb-<config>.yaml (one per config; the
-emulated ones too): per config and scheme (routing, K subflows, split, re-planning) the
efficiency (lowest job's ideal / mean CCT; the median over the hash seeds, with the min and
max), the network efficiency (mean over jobs; median over seeds), the link-load imbalance (max
/ mean bytes over the usable fabric links) and the most flows on one link of the median run,
the connections and predict's median wall time (points ran in parallel worker processes: a
rough figure); emulated runs their model error and the CPU monitor's verdict ("flagged"). Then
per config the smallest K at which ECMP's median network efficiency reaches 90% of the better
planner's (greedy, ilp) at K = 1.

ringflow: the folder of experiments/configs/sweeps/ringflow-<config>.yaml (semantics.ring_sync
rank against flow, per routing): the transfers per iteration of each, and per routing the
jobs' mean CCT ratio flow / steps (median and extremes over jobs) and both efficiencies,
steps -> flow. (predict's time, steps against flow: predictor_bench --ring-sync-ab.)

A script and not `report`: report's tables are per-run efficiencies with confidence intervals;
these pivot a sweep's points by their swept values (Hedera's pattern names, the failed
switches, the schemes) against the routings, take medians with the extremes over hash seeds,
pair runs across points (the CCT ratios), and check the targets of docs/scenarios.md.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml


def finished(sweep: Path) -> list[tuple[Path, dict, dict]]:
    """(point folder, point.json, results.json) of every finished point of a sweep folder."""
    out = []
    for point in sorted((sweep / "points").glob("*/point.json")):
        meta = json.loads(point.read_text())
        if meta.get("status") == "ok":
            out.append((point.parent, meta, json.loads((point.parent / "results.json")
                                                       .read_text())))
    return out


# -- Hedera's suite ------------------------------------------------------------------------------
ROUTINGS = ("ecmp", "gff", "ilp", "nonblocking")


def pattern_label(values: dict) -> str:
    """Hedera's names: stride4, stag(0.2,0.3)-s1, rand-s0, randbij-s2, randx3, hotspot."""
    v = {k.split(".")[-1]: x for k, x in values.items()}
    p = v.get("pattern", "random-bijective")
    seed = f"-s{v['seed']}" if "seed" in v else ""
    if p == "stride":
        return f"stride{v['stride']}"
    if p == "staggered":
        return f"stag({v['p_leaf']:g},{v['p_pod']:g}){seed}"
    if p == "random":
        return f"randx{v['flows_per_host']}" if v.get("flows_per_host", 1) > 1 else f"rand{seed}"
    if p == "random-bijective":
        return f"randbij{seed}"
    return p


ORDER = ("stag(0.2", "stag(0.5", "stride", "rand-", "randbij", "randx", "hotspot")


def _order(label: str) -> tuple[int, str]:
    """Hedera's figure order: staggered, stride, random, bijective, randx, hotspot."""
    return next(i for i, p in enumerate(ORDER + ("",)) if label.startswith(p)), label


def hedera_runs(sweep: Path) -> dict[str, dict[str, dict]]:
    """pattern -> routing -> run (results.json) of every finished point of one sweep folder."""
    out = {pattern_label(meta["values"]): {r["routing"]: r for r in res["runs"]}
           for _, meta, res in finished(sweep)}
    return dict(sorted(out.items(), key=lambda kv: _order(kv[0])))


def table(mode: str, runs: dict[str, dict[str, dict]]) -> list[str]:
    lines = [f"{mode}: fraction of the non-blocking throughput (Hedera's metric)",
             f"{'pattern':<22}" + "".join(f"{r:>13}" for r in ROUTINGS)]
    for pattern, by in runs.items():
        lines.append(f"{pattern:<22}" + "".join(
            f"{by[r]['nonblocking_fraction']:>13.3f}" if r in by else f"{'-':>13}"
            for r in ROUTINGS))
    for r in ROUTINGS:
        xs = [by[r]["nonblocking_fraction"] for by in runs.values() if r in by]
        if xs:
            lines.append(f"  {r}: median {statistics.median(xs):.3f}, min {min(xs):.3f} "
                         f"over {len(xs)} patterns")
    return lines


def fidelity(runs: dict[str, dict[str, dict]]) -> list[str]:
    """The emulated suite against its targets."""
    nb = [by["nonblocking"]["efficiency"] for by in runs.values() if "nonblocking" in by]
    errs = [abs(r["prediction_error_fraction"]) for by in runs.values() for r in by.values()]
    flagged = sum(not r.get("fidelity", {}).get("ok", True)
                  for by in runs.values() for r in by.values())
    lines = []
    if nb:
        lines.append(f"non-blocking reference: efficiency against the host links min "
                     f"{min(nb):.3f}, median {statistics.median(nb):.3f} (target >= 0.95)")
    if errs:
        lines.append(f"|prediction error| over {len(errs)} runs: median "
                     f"{statistics.median(errs):.1%}, worst {max(errs):.1%} (targets 5%, 10%); "
                     f"{flagged} runs flagged SATURATED")
    return lines


def plot(sets: dict[str, dict[str, dict[str, dict]]], out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(sets), 1, figsize=(14, 3.8 * len(sets)), sharey=True,
                             squeeze=False)
    width = 0.8 / len(ROUTINGS)
    for ax, (mode, runs) in zip(axes[:, 0], sets.items()):
        patterns = list(runs)
        for i, r in enumerate(ROUTINGS):
            ys = [runs[p][r]["nonblocking_fraction"] if r in runs[p] else 0 for p in patterns]
            ax.bar([x + (i - 1.5) * width for x in range(len(patterns))], ys, width, label=r)
        ax.set_xticks(range(len(patterns)), patterns, rotation=45, ha="right", fontsize=8)
        ax.set_ylabel("throughput / non-blocking")
        ax.set_ylim(0, 1.1)
        ax.axhline(1.0, color="grey", lw=0.6, ls=":")
        ax.set_title(f"Hedera's patterns on a k=4 fat-tree, {mode}")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.005, 1.0))
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out.with_suffix(".png"), dpi=120)
    fig.savefig(out.with_suffix(".svg"))
    plt.close(fig)


def hedera(sweeps: list[Path], out: Path) -> int:
    sets: dict[str, dict] = {}
    for sweep in sweeps:
        runs = hedera_runs(sweep)
        if not runs:
            print(f"sweep_tables: {sweep}: no finished points", file=sys.stderr)
            return 2
        mode = next(iter(next(iter(runs.values())).values()))["mode"]
        sets[mode] = runs
        print("\n".join(table(mode, runs)))
        if mode == "emulated":
            print("\n".join(fidelity(runs)))
        print()
    plot(sets, out / "hedera")
    print(f"plot: {out / 'hedera.png'}")
    return 0


# -- the three-tier what-ifs --------------------------------------------------------------------
def points(sweep: Path) -> list[tuple[int, list[str], dict[str, dict]]]:
    """(job count, failed switches, routing -> run) of every finished point, sorted."""
    out = []
    for folder, _, res in finished(sweep):
        fabric = yaml.safe_load((folder / "config.yaml").read_text())["fabric"]
        runs = {r["routing"]: r for r in res["runs"]}
        out.append((len(next(iter(runs.values()))["jobs"]),
                    fabric.get("failed_switches") or [], runs))
    return sorted(out, key=lambda p: (p[0], len(p[1])))


def rows(pts) -> list[str]:
    lines = ["| jobs | failed | strategy | efficiency | network eff. | fairness layer 1 "
             "| max flows/link | solve |",
             "| ---: | --- | --- | ---: | ---: | --- | ---: | --- |"]
    for n, failed, runs in pts:
        for name, r in runs.items():
            layer1 = ", ".join(f"{x:.3f}" for x in r["fairness"]["layer1"])
            lines.append(f"| {n} | {', '.join(failed) or '-'} | {name} | {r['efficiency']:.3f} "
                         f"| {r['network_efficiency']:.3f} | {layer1} | {r['max_link_flows']} "
                         f"| {r['solve']['status']} |")
    return lines


def differences(pts, tol: float = 0.005) -> list[str]:
    """Per point, which strategies' efficiencies differ by more than `tol`."""
    out = []
    for n, failed, runs in pts:
        eff = {k: r["efficiency"] for k, r in runs.items()}
        best = max(eff.values())
        behind = {k: v for k, v in eff.items() if v < best - tol}
        out.append(f"{n} jobs, failed {failed or 'none'}: best {best:.3f} ("
                   + ", ".join(k for k, v in eff.items() if v >= best - tol) + ")"
                   + (("; behind: " + ", ".join(f"{k} {v:.3f}" for k, v in behind.items()))
                      if behind else "; all equal"))
    return out


def whatif(sweep: Path) -> int:
    pts = points(sweep)
    if not pts:
        print(f"sweep_tables: {sweep}: no finished points", file=sys.stderr)
        return 2
    print("\n".join(rows(pts)))
    print()
    print("\n".join(differences(pts)))
    return 0


# -- the load-balancing matrix ------------------------------------------------------------------
@dataclass(frozen=True)
class Scheme:
    """One row of the matrix: a routing with K subflows split `split` (pieces of piece_bytes)
    and the semantics' `recompute` (flows: the flows in flight re-planned)."""

    routing: str
    subflows: int
    split: str
    recompute: str
    piece_bytes: int

    def order(self) -> tuple:
        """The matrix's order: even splits (ecmp, spray, greedy, ilp, others; then re-planned
        flows; then per-packet), then adaptive ones; K ascending."""
        rank = ("ecmp", "spray", "greedy", "ilp")
        return (self.split != "even", self.routing.endswith("@packet"),
                self.recompute == "flows",
                rank.index(self.routing) if self.routing in rank else len(rank),
                self.routing, self.subflows)


def point_scheme(folder: Path) -> tuple[Scheme, int]:
    """The scheme of a point's config.yaml (its first job's subflows and split; routing left
    blank) and its connections per iteration (K subflows each their own)."""
    from experiments.config import load
    from traffic.collectives import plan_jobs
    exp = load(folder / "config.yaml")
    job = exp.jobs[0]
    return (Scheme("", job.subflows, job.split, exp.semantics.recompute, job.split_piece_bytes),
            sum(len(p.connections) for p in plan_jobs(exp.jobs)))


def lb_row(config: str, s: Scheme, members: list[tuple[int, dict, int]]) -> dict:
    """One scheme's row from its (seed, run, connections), sorted by seed: medians over the
    seeds with the extremes; the imbalance and the busiest link of the median run."""
    runs = [run for _, run, _ in members]
    effs = sorted(r["efficiency"] for r in runs)
    mid = sorted(runs, key=lambda r: r["network_efficiency"])[len(runs) // 2]
    walls = [r["predict_wall_s"] for r in runs if r.get("predict_wall_s") is not None]
    row = {"config": config, "routing": s.routing, "subflows": s.subflows, "split": s.split,
           "recompute": s.recompute, "piece_bytes": s.piece_bytes, "seeds": len(runs),
           "connections": members[0][2], "efficiency": statistics.median(effs),
           "efficiency_min": effs[0], "efficiency_max": effs[-1],
           "network_efficiency": statistics.median(r["network_efficiency"] for r in runs),
           "link_load_imbalance": mid.get("link_load_imbalance"),
           "max_link_flows": mid.get("max_link_flows"),
           "predict_wall_s": statistics.median(walls) if walls else None}
    if runs[0].get("mode") == "emulated":
        row.update(prediction_error_fraction=statistics.median(
            r["prediction_error_fraction"] for r in runs),
            emulator_ok=all(r.get("fidelity", {}).get("ok", True) for r in runs))
    return row


def lb_rows(sweep: Path) -> list[dict]:
    """One row per scheme of one sweep folder (a config), in the matrix's order."""
    groups: dict[Scheme, list[tuple[int, dict, int]]] = {}
    name = ""
    for folder, meta, res in finished(sweep):
        name = res["name"]
        point, conns = point_scheme(folder)
        for run in res["runs"]:
            groups.setdefault(replace(point, routing=run["routing"]), []).append(
                (meta["seed"], run, conns))
    return [lb_row(name, s, sorted(groups[s], key=lambda m: m[0]))
            for s in sorted(groups, key=Scheme.order)]


def _cell(x: float | None, fmt: str, width: int) -> str:
    return f"{'-':>{width}}" if x is None else f"{x:{width}{fmt}}"


def lb_table(rows: list[dict]) -> list[str]:
    """The matrix as a table: per row the efficiency (median over seeds, min-max when
    several), network efficiency, link-load imbalance, most flows on a link, predict's median
    wall time (s); emulated rows their model error and the CPU monitor's verdict."""
    lines = [f"{'config':22} {'routing':12} {'K':>2} {'split':8} {'replan':6} {'conns':>6} "
             f"{'eff':>6} {'(min-max)':>13} {'net eff':>7} {'imbal':>6} {'maxfl':>5} "
             f"{'wall s':>7} {'err':>7}"]
    for r in rows:
        spread = (f"{r['efficiency_min']:.3f}-{r['efficiency_max']:.3f}"
                  if r["seeds"] > 1 else "")
        err = r.get("prediction_error_fraction")
        lines.append(
            f"{r['config']:22} {r['routing']:12} {r['subflows']:>2} {r['split']:8} "
            f"{r['recompute']:6} {r['connections']:>6} {r['efficiency']:6.3f} {spread:>13} "
            f"{r['network_efficiency']:7.3f} {_cell(r['link_load_imbalance'], '.2f', 6)} "
            f"{r['max_link_flows'] if r['max_link_flows'] is not None else '-':>5} "
            f"{_cell(r['predict_wall_s'], '.2f', 7)}"
            + ("" if err is None else f" {err:+7.1%}"
               + ("" if r["emulator_ok"] else " flagged")))
    return lines


def subflows_needed(rows: list[dict]) -> list[str]:
    """Per config: the smallest K with ECMP's (even split) median network efficiency >= 0.9 x
    the better planner's (greedy, ilp) at K = 1, re-planned at iteration bounds."""
    lines = ["ECMP subflows needed for 90% of planning (network efficiency, K = 1 planner):"]
    for name in dict.fromkeys(r["config"] for r in rows):
        mine = [r for r in rows if r["config"] == name]
        plan = max((r["network_efficiency"] for r in mine if r["routing"] in ("greedy", "ilp")
                    and r["subflows"] == 1 and r["recompute"] != "flows"), default=None)
        if plan is None:
            continue
        ks = [r["subflows"] for r in mine if r["routing"] == "ecmp" and r["split"] == "even"
              and r["network_efficiency"] >= 0.9 * plan]
        tried = max((r["subflows"] for r in mine if r["routing"] == "ecmp"), default=0)
        lines.append(f"  {name:22} planner {plan:.3f}: "
                     + (f"K = {min(ks)}" if ks else f"not reached by K = {tried}"))
    return lines


def lb(sweeps: list[Path]) -> int:
    rows = []
    for sweep in sweeps:
        mine = lb_rows(sweep)
        if not mine:
            print(f"sweep_tables: {sweep}: no finished points", file=sys.stderr)
            return 2
        rows += mine
    print("\n".join(lb_table(rows)))
    print()
    print("\n".join(subflows_needed(rows)))
    return 0


# -- rings as flows against rings as steps -------------------------------------------------------
def transfers(folder: Path) -> int:
    """Transfers per iteration of a point's config."""
    from experiments.config import load
    return sum(len(p.transfers) for p in load(folder / "config.yaml").plans())


@dataclass
class RingSweep:
    """One ring_sync sweep folder: its config's name, routing -> run with rings as steps and
    with rings as flows, and the transfers per iteration of each (steps, flow)."""

    name: str = ""
    steps: dict[str, dict] = field(default_factory=dict)
    flows: dict[str, dict] = field(default_factory=dict)
    transfers: list[int] = field(default_factory=lambda: [0, 0])


def ring_runs(sweep: Path) -> RingSweep:
    """The finished points of one sweep folder over semantics.ring_sync (flow or not)."""
    out = RingSweep()
    for folder, _, res in finished(sweep):
        out.name = res["name"]
        config = yaml.safe_load((folder / "config.yaml").read_text())
        flow = (config.get("semantics") or {}).get("ring_sync") == "flow"
        if not out.transfers[flow]:
            out.transfers[flow] = transfers(folder)
        for run in res["runs"]:
            (out.flows if flow else out.steps)[run["routing"]] = run
    return out


def ring_lines(steps: dict[str, dict], flows: dict[str, dict]) -> list[str]:
    """Per routing with both variants: the jobs' mean CCT ratio flow / steps (median, the
    extremes), and the efficiency and network efficiency, steps -> flow."""
    lines = []
    for routing in [r for r in steps if r in flows]:
        a, b = steps[routing], flows[routing]
        cct = {j["name"]: j["cct_mean_s"] for j in a["jobs"]}
        ratios = [j["cct_mean_s"] / cct[j["name"]] for j in b["jobs"] if j["name"] in cct]
        lines.append(f"  {routing:>14}: CCT flow/steps median {statistics.median(ratios):.4f} "
                     f"(min {min(ratios):.4f}, max {max(ratios):.4f}, {len(ratios)} jobs); "
                     f"efficiency {a['efficiency']:.3f} -> {b['efficiency']:.3f}; network "
                     f"efficiency {a['network_efficiency']:.3f} -> "
                     f"{b['network_efficiency']:.3f}")
    return lines


def ringflow(sweep: Path) -> int:
    rs = ring_runs(sweep)
    lines = ring_lines(rs.steps, rs.flows)
    if not lines:
        print(f"sweep_tables: {sweep}: no routing finished with rings both as steps and as "
              "flows", file=sys.stderr)
        return 2
    print(f"{rs.name}: {rs.transfers[0]:,} -> {rs.transfers[1]:,} transfers per iteration "
          "(steps -> flow)")
    print("\n".join(lines))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="table", required=True)
    hp = sub.add_parser("hedera", help="Hedera's suite from its sweep folders")
    hp.add_argument("sweeps", nargs="+", type=Path, help="sweep output folders")
    hp.add_argument("--out", type=Path, default=Path("results/hedera"),
                    help="folder for hedera.png / hedera.svg")
    wp = sub.add_parser("whatif", help="the three-tier what-ifs from their sweep folder")
    wp.add_argument("sweep", type=Path)
    lp = sub.add_parser("lb", help="the load-balancing matrix from its sweep folders "
                        "(experiments/configs/sweeps/lb-*.yaml), one per config")
    lp.add_argument("sweeps", nargs="+", type=Path, help="sweep output folders")
    rp = sub.add_parser("ringflow", help="rings as flows against rings as steps from a sweep "
                        "folder (experiments/configs/sweeps/ringflow-*.yaml)")
    rp.add_argument("sweep", type=Path)
    args = ap.parse_args(argv)
    if args.table == "hedera":
        return hedera(args.sweeps, args.out)
    if args.table == "lb":
        return lb(args.sweeps)
    return ringflow(args.sweep) if args.table == "ringflow" else whatif(args.sweep)


if __name__ == "__main__":
    sys.exit(main())

"""Tables over sweep folders, which `report` does not draw: Hedera's suite and the three-tier
what-ifs (a script, not a test; it reads finished sweep folders and measures nothing).

    python -m experiments.benchmarks.sweep_tables hedera results/hp results/he --out results/hedera
    python -m experiments.benchmarks.sweep_tables whatif results/wi

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

A script and not `report`: report's tables are per-run efficiencies with confidence intervals;
these pivot a sweep's points by their swept values (Hedera's pattern names, the failed
switches) against the routings, and check the targets of docs/scenarios.md.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="table", required=True)
    hp = sub.add_parser("hedera", help="Hedera's suite from its sweep folders")
    hp.add_argument("sweeps", nargs="+", type=Path, help="sweep output folders")
    hp.add_argument("--out", type=Path, default=Path("results/hedera"),
                    help="folder for hedera.png / hedera.svg")
    wp = sub.add_parser("whatif", help="the three-tier what-ifs from their sweep folder")
    wp.add_argument("sweep", type=Path)
    args = ap.parse_args(argv)
    return hedera(args.sweeps, args.out) if args.table == "hedera" else whatif(args.sweep)


if __name__ == "__main__":
    sys.exit(main())

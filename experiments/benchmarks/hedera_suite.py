"""Hedera's suite: fraction of the non-blocking throughput per traffic pattern and routing.

Reads the sweep folders of experiments/configs/sweeps/hedera-k4.yaml (predicted) and
hedera-k4-emulated.yaml (emulated), prints a table like Hedera's figure (NSDI 2010, Fig. 9)
and Mininet-HiFi's reproduction, the non-blocking reference's efficiency against the host
links (target >= 0.95), the emulated runs' prediction errors (targets: median |error| <= 5%,
worst <= 10%), and draws the grouped bar plot (PNG and SVG):

    python -m experiments sweep experiments/configs/sweeps/hedera-k4.yaml --out results/hp
    sudo .venv/bin/python -m experiments sweep \\
        experiments/configs/sweeps/hedera-k4-emulated.yaml --out results/he
    python experiments/benchmarks/hedera_suite.py results/hp results/he --out results/hedera
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

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


def load(sweep: Path) -> dict[str, dict[str, dict]]:
    """pattern -> routing -> run (results.json) of every finished point of one sweep folder."""
    out: dict[str, dict[str, dict]] = {}
    for point in sorted((sweep / "points").glob("*/point.json")):
        meta = json.loads(point.read_text())
        if meta.get("status") != "ok":
            continue
        res = json.loads((point.parent / "results.json").read_text())
        out[pattern_label(meta["values"])] = {r["routing"]: r for r in res["runs"]}
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweeps", nargs="+", type=Path, help="sweep output folders")
    ap.add_argument("--out", type=Path, default=Path("results/hedera"),
                    help="folder for hedera.png / hedera.svg")
    args = ap.parse_args(argv)
    sets: dict[str, dict] = {}
    for sweep in args.sweeps:
        runs = load(sweep)
        if not runs:
            print(f"hedera_suite: {sweep}: no finished points", file=sys.stderr)
            return 2
        mode = next(iter(next(iter(runs.values())).values()))["mode"]
        sets[mode] = runs
        print("\n".join(table(mode, runs)))
        if mode == "emulated":
            print("\n".join(fidelity(runs)))
        print()
    plot(sets, args.out / "hedera")
    print(f"plot: {args.out / 'hedera.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

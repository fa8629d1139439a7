"""The three-tier what-ifs as one table: per point (jobs, failed switches) and strategy, the
efficiency (lowest job), network efficiency (mean over jobs), the fairness vector's first
layer, the busiest link's flow count and the solver status; then where the strategies differ.

    python -m experiments sweep experiments/configs/sweeps/clos3-whatif.yaml --out results/wi
    python experiments/benchmarks/whatif_table.py results/wi
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml


def points(sweep: Path) -> list[tuple[int, list[str], dict[str, dict]]]:
    """(job count, failed switches, routing -> run) of every finished point, sorted."""
    out = []
    for point in (sweep / "points").glob("*/point.json"):
        if json.loads(point.read_text()).get("status") != "ok":
            continue
        res = json.loads((point.parent / "results.json").read_text())
        fabric = yaml.safe_load((point.parent / "config.yaml").read_text())["fabric"]
        failed = fabric.get("failed_switches") or []
        runs = {r["routing"]: r for r in res["runs"]}
        out.append((len(next(iter(runs.values()))["jobs"]), failed, runs))
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep", type=Path)
    args = ap.parse_args(argv)
    pts = points(args.sweep)
    if not pts:
        print(f"whatif_table: {args.sweep}: no finished points", file=sys.stderr)
        return 2
    print("\n".join(rows(pts)))
    print()
    print("\n".join(differences(pts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

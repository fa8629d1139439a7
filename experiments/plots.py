"""Plots of a run folder (matplotlib, no display needed)."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def emulated_vs_predicted(results: dict, path: Path) -> None:
    """Per iteration and routing: emulated CCT (y) against predicted CCT (x), with y = x."""
    fig, ax = plt.subplots(figsize=(5.5, 5))
    hi = 0.0
    for run in results["runs"]:
        pred = run.get("predicted_cct_s")
        if not pred:
            continue
        ax.scatter(pred, run["cct_s"], label=f"{run['routing']} "
                   f"(error {run['prediction_error']:+.1%})", s=28)
        hi = max(hi, *pred, *run["cct_s"])
    hi *= 1.08
    ax.plot([0, hi], [0, hi], color="grey", lw=1, ls="--", label="y = x")
    ax.set_xlim(0, hi)
    ax.set_ylim(0, hi)
    ax.set_xlabel("predicted CCT (s)")
    ax.set_ylabel("emulated CCT (s)")
    ax.set_title(f"{results['name']}: CCT per iteration (slowest job)")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

"""The timeline of an emulated run folder (matplotlib, no display needed); its other
figures are experiments/report.py's."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
# the backend's C extension loads at the first figure unless imported here, where the CLI holds
# signals while modules import: a Ctrl-C during its initialisation failed it (ImportError,
# exit 1; CI, a SIGINT in the teardown test landing as the run drew its plots)
import matplotlib.backends.backend_agg  # noqa: E402,F401


#: Markers and sizes per job: jobs with identical CCTs (the quickstart's four rings) draw
#: concentric open markers, so that every series stays visible.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")


def _marker(i: int) -> dict:
    return {"marker": MARKERS[i % len(MARKERS)], "ms": 11 - 2 * (i % 4), "mfc": "none",
            "mew": 1.3}


def timeline(results: dict, path: Path) -> None:
    """Per routing, each job's iteration CCT at the time the iteration ended, with epochs
    (dotted), failure events (red) and the ideal CCT (dashed) marked. The panels share their
    axes, so heights compare across routings; jobs with equal CCTs show as concentric open
    markers of different shapes."""
    runs = [r for r in results["runs"] if r["mode"] == "emulated"
            and any(j.get("iteration_end_s") for j in r["jobs"])]
    if not runs:
        return
    fig, axes = plt.subplots(len(runs), 1, figsize=(8, 2.6 * len(runs)), squeeze=False,
                             sharex=True, sharey=True)
    top = max((max(j["cct_s"]) for r in runs for j in r["jobs"] if j["cct_s"]), default=1.0)
    top = max([top, 1e-6] + [r["ideal_cct_s"] for r in runs if r["ideal_cct_s"] is not None])
    for ax, run in zip(axes[:, 0], runs):
        for i, j in enumerate(run["jobs"]):
            if not j.get("iteration_end_s"):
                continue
            ax.plot(j["iteration_end_s"], j["cct_s"], lw=1, label=j["name"], **_marker(i))
        if run["ideal_cct_s"] is not None:      # programs whose traffic the model knows
            ax.axhline(run["ideal_cct_s"], color="black", ls="--", lw=1, label="ideal CCT")
        for e in run.get("epochs", []):
            ax.axvline(e["at_s"], color="grey", ls=":", lw=1)
        for e in run.get("events", []):
            ax.axvline(e["at_s"], color="red", lw=1.2)
            ax.annotate(f"{e['kind']} {'/'.join(e['target'])}", (e["at_s"], 0.03),
                        xycoords=("data", "axes fraction"), xytext=(3, 0),
                        textcoords="offset points", color="red", fontsize=7, rotation=90,
                        va="bottom")
        ax.set_ylabel("iteration CCT (s)")
        ax.set_ylim(0, top * 1.25)
        ax.set_title(f"{run['routing']}: iteration CCT over time (dotted: epochs)", fontsize=9)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    axes[-1, 0].set_xlabel("time since the jobs started (s)")
    fig.suptitle(f"{results['name']}: iteration CCT per job", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

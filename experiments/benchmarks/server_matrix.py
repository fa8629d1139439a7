"""The modern-cluster matrix (docs/servers.md, "The modern-cluster matrix"): rail-optimized
8-GPU servers against the same GPUs as lone NICs, data-parallel rings and an MoE all-to-all,
PXN on and off, ECMP, spray, greedy and the ILP with K subflows, predicted.

    python -m experiments.benchmarks.server_matrix [--groups 4] [--servers-per-group 32]
        [--subflows 1 4]

The fabric: `groups` pods of `servers-per-group` servers of 8 GPUs, each GPU's NIC on its
rail leaf, 1:1 at every tier (as many spines per group as servers, 8 cores per plane), 400
Gbit/s links, NVLink 4 (3.6 Tbit/s per GPU) where the GPUs are servers. Jobs:
- dp: 4 data-parallel all-reduces of 1 GiB, each over every 4th server (so across pods);
- moe: one all-to-all of 256 MiB per GPU over 8 servers, every 8th.
Rings are one flow per hop (semantics ring_sync: flow), which gives the same CCTs here.
"""
from __future__ import annotations

import argparse
import sys

from experiments.benchmarks.harness import conditions, predict_experiment_timed
from experiments.config import parse

ROUTINGS = ["ecmp", "spray", "greedy", "ilp"]
RATE_MBPS, NVLINK_MBPS, GPUS = 400_000, 3_600_000, 8


def fabric(groups: int, servers: int, nvlink: bool) -> dict:
    """The 1:1 rail-optimized fabric, with or without NVLink servers."""
    out = {"topology": "rail-optimized", "nics_per_server": GPUS, "servers_per_group": servers,
           "spines_per_group": servers, "groups": groups, "cores_per_plane": GPUS,
           "host_link_mbps": RATE_MBPS, "spine_link_mbps": RATE_MBPS,
           "core_link_mbps": RATE_MBPS}
    return {**out, "nvlink_mbps": NVLINK_MBPS} if nvlink else out


def jobs(case: str, n_servers: int) -> list[dict]:
    """The jobs of a case: dp (4 rings, every 4th server each) or moe-* (one all-to-all)."""
    srv = [[f"h{k * GPUS + i}" for i in range(1, GPUS + 1)] for k in range(n_servers)]
    if case == "dp":
        return [{"name": f"dp{j}", "collective": "allreduce", "size_bytes": 1 << 30,
                 "hosts": [h for k in range(j, n_servers, 4) for h in srv[k]]}
                for j in range(4)]
    step = max(1, n_servers // 8)
    moe = {"name": "moe", "collective": "alltoall", "size_bytes": 1 << 28,
           "hosts": [h for k in range(0, step * 8, step) for h in srv[k]]}
    return [{**moe, "pxn": case == "moe-pxn"} if case != "moe" else moe]


#: (row label, job case, GPUs as servers on NVLink)
CASES = [("dp, lone NICs", "dp", False), ("dp, 8-GPU servers", "dp", True),
         ("moe, lone NICs", "moe", False), ("moe, servers, PXN", "moe-pxn", True),
         ("moe, servers, no PXN", "moe-nopxn", True)]


def row(label: str, case: str, nvlink: bool, k: int, args) -> str:
    """One case at K subflows: each routing's efficiency and max flows per link."""
    doc = {"name": f"matrix-{case}", "seed": 1, "routing": ROUTINGS, "subflows": k,
           "semantics": {"ring_sync": "flow"},
           "fabric": fabric(args.groups, args.servers_per_group, nvlink),
           "jobs": jobs(case, args.groups * args.servers_per_group)}
    calls, record = predict_experiment_timed(parse(doc))
    runs = {r["routing"]: r for r in record["runs"]}
    cells = [f"{runs[r]['efficiency']:.3f} ({runs[r]['max_link_flows']})" for r in ROUTINGS]
    ideal = runs["ecmp"]["ideal_cct_s"] * 1e3
    return (f"{label:<24} {k:>2} {ideal:>9.3f} " + " ".join(f"{c:>13}" for c in cells)
            + f" {calls.median_wall():>7.1f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--groups", type=int, default=4, choices=range(2, 17), metavar="2..16")
    ap.add_argument("--servers-per-group", type=int, default=32, choices=range(8, 65),
                    metavar="8..64")
    ap.add_argument("--subflows", type=int, nargs="+", default=[1, 4],
                    choices=range(1, 9), metavar="1..8")
    args = ap.parse_args()
    gpus = args.groups * args.servers_per_group * GPUS
    with conditions(kernels=False):
        print(f"\n{gpus:,} GPUs: {args.groups} groups x {args.servers_per_group} servers x "
              f"{GPUS}; efficiency (max flows per link) per routing")
        print(f"{'case':<24} {'K':>2} {'ideal ms':>9} "
              + " ".join(f"{r:>13}" for r in ROUTINGS) + f" {'wall s':>7}")
        for label, case, nvlink in CASES:
            for k in args.subflows:
                print(row(label, case, nvlink, k, args), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

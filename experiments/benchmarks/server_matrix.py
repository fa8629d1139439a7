"""The modern-cluster matrix (docs/servers.md, "The modern-cluster matrix"): rail-optimized
8-GPU servers against the same GPUs as lone NICs, data-parallel rings and an MoE all-to-all,
PXN on and off, a failed spine or leaf-spine link, rings whose every hop crosses pods, and
the same GPUs under a three-tier Clos; ECMP, spray, greedy and the ILP with K subflows,
predicted.

    python -m experiments.benchmarks.server_matrix [--groups 4] [--servers-per-group 32]
        [--subflows 1 4] [--cases base | all | NAME ...] [--routings ecmp spray greedy ilp]

The fabric: `groups` pods of `servers-per-group` servers of 8 GPUs, each GPU's NIC on its
rail leaf, 1:1 at every tier (as many spines per group as servers, 8 cores per plane), 400
Gbit/s links, NVLink 4 (3.6 Tbit/s per GPU) where the GPUs are servers. The clos3 cases put
the same servers 4 to a leaf (32 NICs), 32 aggs per pod and a core per leaf of a pod in
every plane: 1:1 as well. Jobs:
- dp: 4 data-parallel all-reduces of 1 GiB, each over every 4th server (so across pods);
- xpod: the same servers, each ring's servers taken pod by pod in turn, so that every hop
  between servers crosses pods;
- moe: one all-to-all of 256 MiB per GPU over 8 servers, every 8th.
Failures: spine 1 of group 1 (`failed_switches: [agg1]`), or rail leaf 1's link to it
(`failed_links: [[leaf1, agg1]]`). The planes cases put the same groups on two planes (HPN:
each NIC 2 x 200 Gbit/s, one port per plane, every plane its own rail leaves, spines and
cores, half as many 400 Gbit/s spines per group and plane as servers: 1:1). Rings are one
flow per hop (semantics ring_sync: flow), which gives the same CCTs here.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys

from experiments.benchmarks.harness import conditions, predict_experiment_timed
from experiments.config import parse

ROUTINGS = ["ecmp", "spray", "greedy", "ilp"]
RATE_MBPS, NVLINK_MBPS, GPUS = 400_000, 3_600_000, 8
#: clos3 cases: NICs per leaf (4 servers) and aggs per pod (as many as a leaf's NICs: 1:1)
CLOS3_HOSTS_PER_LEAF = CLOS3_AGGS = 32
FAILURES = {"spine": {"failed_switches": ["agg1"]},
            "link": {"failed_links": [["leaf1", "agg1"]]}}


@dataclasses.dataclass(frozen=True)
class Case:
    """One row of the matrix: its label, jobs (dp, xpod, moe, moe-pxn, moe-nopxn), GPUs on
    NVLink or lone, the fabric kind (rail or clos3) and a failure (FAILURES' key)."""

    label: str
    jobs: str
    nvlink: bool
    kind: str = "rail"
    failure: str | None = None


CASES = {"dp-lone": Case("dp, lone NICs", "dp", False),
         "dp-servers": Case("dp, 8-GPU servers", "dp", True),
         "moe-lone": Case("moe, lone NICs", "moe", False),
         "moe-pxn": Case("moe, servers, PXN", "moe-pxn", True),
         "moe-nopxn": Case("moe, servers, no PXN", "moe-nopxn", True),
         "dp-spine": Case("dp, servers, spine down", "dp", True, failure="spine"),
         "dp-link": Case("dp, servers, link down", "dp", True, failure="link"),
         "xpod-lone": Case("xpod, lone NICs", "xpod", False),
         "xpod-servers": Case("xpod, servers", "xpod", True),
         "xpod-spine": Case("xpod, servers, spine down", "xpod", True, failure="spine"),
         "xpod-link": Case("xpod, servers, link down", "xpod", True, failure="link"),
         "clos3-dp-lone": Case("dp, clos3, lone NICs", "dp", False, kind="clos3"),
         "clos3-dp-servers": Case("dp, clos3, servers", "dp", True, kind="clos3"),
         "dp-planes": Case("dp, servers, 2 planes", "dp", True, kind="planes"),
         "moe-planes": Case("moe, no PXN, 2 planes", "moe-nopxn", True, kind="planes")}
#: The matrix before failures and cross-pod rings were added (the default).
BASE = ["dp-lone", "dp-servers", "moe-lone", "moe-pxn", "moe-nopxn"]


def fabric(groups: int, servers: int, nvlink: bool, kind: str = "rail",
           failure: str | None = None) -> dict:
    """The 1:1 rail-optimized (or clos3, or two-plane) fabric, with or without NVLink
    servers."""
    if kind == "clos3":
        leaves = servers * GPUS // CLOS3_HOSTS_PER_LEAF
        out = {"topology": "clos3", "pods": groups, "leaves_per_pod": leaves,
               "aggs_per_pod": CLOS3_AGGS, "cores_per_plane": leaves,
               "hosts_per_leaf": CLOS3_HOSTS_PER_LEAF, "host_link_mbps": RATE_MBPS,
               "leaf_agg_mbps": RATE_MBPS, "agg_core_mbps": RATE_MBPS,
               **({"gpus_per_server": GPUS} if nvlink else {})}
    else:
        planes = 2 if kind == "planes" else 1     # each port 200G, half the spines per plane
        out = {"topology": "rail-optimized", "nics_per_server": GPUS,
               "servers_per_group": servers, "spines_per_group": servers // planes,
               "groups": groups, "host_link_mbps": RATE_MBPS / planes,
               "spine_link_mbps": RATE_MBPS, **({"planes": planes} if planes > 1 else {}),
               **({"cores_per_plane": GPUS, "core_link_mbps": RATE_MBPS} if groups > 1
                  else {})}
    out.update(FAILURES[failure] if failure else {})
    return {**out, "nvlink_mbps": NVLINK_MBPS} if nvlink else out


def jobs(case: str, n_servers: int, groups: int = 1) -> list[dict]:
    """The jobs of a case: dp or xpod (4 rings, every 4th server each; xpod takes each
    ring's servers pod by pod in turn, `groups` pods) or moe-* (one all-to-all)."""
    srv = [[f"h{k * GPUS + i}" for i in range(1, GPUS + 1)] for k in range(n_servers)]
    per_pod = n_servers // groups
    if case in ("dp", "xpod"):
        def order(j: int) -> list[int]:
            ks = range(j, n_servers, 4)
            return sorted(ks, key=lambda k: (k % per_pod, k // per_pod)) if case == "xpod" \
                else list(ks)
        return [{"name": f"dp{j}", "collective": "allreduce", "size_bytes": 1 << 30,
                 "hosts": [h for k in order(j) for h in srv[k]]} for j in range(4)]
    step = max(1, n_servers // 8)
    moe = {"name": "moe", "collective": "alltoall", "size_bytes": 1 << 28,
           "hosts": [h for k in range(0, step * 8, step) for h in srv[k]]}
    return [{**moe, "pxn": case == "moe-pxn"} if case != "moe" else moe]


def row(case: Case, k: int, args) -> str:
    """One case at K subflows: each routing's efficiency and max flows per link."""
    n_servers = args.groups * args.servers_per_group
    doc = {"name": f"matrix-{case.jobs}", "seed": 1, "routing": args.routings, "subflows": k,
           "semantics": {"ring_sync": "flow"},
           "fabric": fabric(args.groups, args.servers_per_group, case.nvlink, case.kind,
                            case.failure),
           "jobs": jobs(case.jobs, n_servers, args.groups)}
    calls, record = predict_experiment_timed(parse(doc))
    runs = {r["routing"]: r for r in record["runs"]}
    cells = [f"{runs[r]['efficiency']:.3f} ({runs[r]['max_link_flows']})" for r in args.routings]
    ideal = record["runs"][0]["ideal_cct_s"] * 1e3
    return (f"{case.label:<26} {k:>2} {ideal:>9.3f} " + " ".join(f"{c:>13}" for c in cells)
            + f" {calls.median_wall():>7.1f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--groups", type=int, default=4, choices=range(2, 17), metavar="2..16")
    ap.add_argument("--servers-per-group", type=int, default=32, choices=range(8, 65),
                    metavar="8..64")
    ap.add_argument("--subflows", type=int, nargs="+", default=[1, 4],
                    choices=range(1, 9), metavar="1..8")
    ap.add_argument("--cases", nargs="+", default=["base"],
                    choices=["base", "all", *CASES], metavar="base|all|CASE",
                    help=f"rows to run: base (the first five), all, or any of {list(CASES)}")
    ap.add_argument("--routings", nargs="+", default=ROUTINGS, choices=ROUTINGS)
    args = ap.parse_args()
    names = [n for c in args.cases for n in (BASE if c == "base" else list(CASES)
                                             if c == "all" else [c])]
    if args.servers_per_group % 4 and any(CASES[n].kind == "clos3" for n in names):
        ap.error("--servers-per-group: give a multiple of 4 (clos3 puts 4 servers on a leaf)")
    gpus = args.groups * args.servers_per_group * GPUS
    with conditions(kernels=False):
        print(f"\n{gpus:,} GPUs: {args.groups} groups x {args.servers_per_group} servers x "
              f"{GPUS}; efficiency (max flows per link) per routing")
        print(f"{'case':<26} {'K':>2} {'ideal ms':>9} "
              + " ".join(f"{r:>13}" for r in args.routings) + f" {'wall s':>7}")
        for name in dict.fromkeys(names):
            for k in args.subflows:
                print(row(CASES[name], k, args), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

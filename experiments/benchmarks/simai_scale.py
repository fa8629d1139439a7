"""SimAI's 9,216-GPU example (`example/workload_analytical.txt`) at scale: its first L layers
(or all), counted and written as a config on a 9,216-NIC clos3, for `predict` under
/usr/bin/time -v (docs/interop.md).

    python -m experiments.benchmarks.simai_scale WORKLOAD --layers L --out DIR \
        [--ring-sync flow] [--connections stream] [--fabric 1:1|16:1]
    /usr/bin/time -v .venv/bin/mlfabric predict DIR/config.yaml --no-plots --out DIR/res

Prints the cut's jobs, transfers per iteration, connections and the prediction's memory
estimate (experiments/config/jobs.py); the cut keeps the header and the first L layer rows.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from experiments.benchmarks.harness import conditions
from experiments.config.jobs import predict_size
from traffic import simai, simai_passes
from traffic.collectives import CONNECTIONS
from traffic.prediction import RING_SYNCS
from traffic.streams import Notes

#: 12 pods x 12 leaves x 64 NICs = 9,216 NICs at 100 Gbit/s; --fabric 1:1 (default): 8 aggs
#: per pod and 12 cores per plane, every leaf and agg uplink 800 Gbit/s, so no tier is
#: oversubscribed (6.4 Tbit/s up from every leaf and agg); 16:1: 4 aggs, 4 cores per plane,
#: every link 100 Gbit/s (each leaf's 64 NICs share 4 uplinks)
FABRICS = {
    "1:1": {"topology": "clos3", "pods": 12, "leaves_per_pod": 12, "aggs_per_pod": 8,
            "cores_per_plane": 12, "hosts_per_leaf": 64, "host_link_mbps": 100_000,
            "leaf_agg_mbps": 800_000, "agg_core_mbps": 800_000},
    "16:1": {"topology": "clos3", "pods": 12, "leaves_per_pod": 12, "aggs_per_pod": 4,
             "cores_per_plane": 4, "hosts_per_leaf": 64, "host_link_mbps": 100_000,
             "leaf_agg_mbps": 100_000, "agg_core_mbps": 100_000},
}


def cut(src: Path, layers: int | None, dst: Path) -> Path:
    """The header and the first `layers` layer rows of src (all: None), written to dst."""
    lines = src.read_text().splitlines()
    n = int(lines[1].split()[0])
    keep = n if layers is None else min(layers, n)
    dst.write_text("\n".join([lines[0], str(keep)] + lines[2:2 + keep]) + "\n")
    return dst


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("workload", type=Path)
    ap.add_argument("--layers", type=int, default=None, help="first L layers (default all)")
    ap.add_argument("--routing", default="ecmp")
    ap.add_argument("--fabric", choices=FABRICS, default="1:1",
                    help="oversubscription of the 9,216-NIC clos3 (see FABRICS)")
    ap.add_argument("--ring-sync", choices=RING_SYNCS, default="rank",
                    help="semantics.ring_sync (flow: rings as one flow per hop)")
    ap.add_argument("--connections", choices=CONNECTIONS, default="job",
                    help="semantics.connections (stream: a communicator's collectives share "
                    "its connections)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    with conditions(kernels=False):
        write_and_count(args)
    return 0


def write_and_count(args: argparse.Namespace) -> None:
    """The cut workload and its config under --out; its jobs, transfers and connections."""
    args.out.mkdir(parents=True, exist_ok=True)
    w = cut(args.workload, args.layers, args.out / "workload.txt")
    doc = {"name": f"simai-9216-{args.layers or 'all'}", "routing": [args.routing],
           "jobs_from": {"simai": str(w.resolve())}, "fabric": FABRICS[args.fabric],
           "semantics": {"ring_sync": args.ring_sync, "connections": args.connections}}
    (args.out / "config.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    hosts = [f"h{i}" for i in range(1, 9217)]
    specs = simai_passes.job_specs(w, hosts, 100_000.0, None, simai.default_dim0(9216, 64),
                                   Notes("simai", "cycles"))
    conns, transfers, need = predict_size(specs, args.ring_sync, args.connections)
    print(f"{w}: {len(specs):,} jobs, {transfers:,} transfers per iteration, {conns:,} "
          f"connections; predict needs ~{need / 2 ** 30:.1f} GiB")


if __name__ == "__main__":
    sys.exit(main())

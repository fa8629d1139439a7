"""mlfabric's iteration against SimAI's analytical backend on the same SimAI workload file
(docs/servers.md, "Against SimAI's analytical backend").

    python -m experiments.benchmarks.simai_compare WORKLOAD --simai RESULT --out DIR \
        [--gpus N] [--gpus-per-server 8] [--nvlink-gibps 360] [--nic-gibps 48.5]

RESULT: the `<prefix>EndToEnd.csv` that `SimAI_analytical -w WORKLOAD -g N -g_p_s 8 -nv 360
-nic 48.5 -n_p_s 8 -r <prefix>` writes under results/ (its "Total time" row, in us), or
SimAI's total time as a number of us. Writes DIR/config.yaml: WORKLOAD on servers of
`--gpus-per-server` GPUs, each GPU with its own NIC, at SimAI's NIC and NVLink rates (SimAI's
GB/s are GiB/s: its `GBps` is 1/2^30), predicted non-blocking (host links and NVLink only, as
SimAI's busbw model has no switches). Prints both iterations and their ratio.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from experiments.benchmarks.harness import conditions, predict_experiment_timed
from experiments.config import ConfigError
from experiments.config.parse import load

#: SimAI's EndToEnd.csv summary keys, in the order it writes them (us each)
SIMAI_KEYS = ("Expose DP comm", "Expose DP_EP comm", "Expose TP comm", "Expose_EP_comm",
              "Expose_PP_comm", "bubble time", "total comp", "total exposed comm", "Total time")
MAX_SERVERS_PER_GROUP = 250


def gibps_to_mbps(gibps: float) -> float:
    """SimAI's GB/s (2^30 bytes a second) in Mbit/s."""
    return gibps * 2 ** 30 * 8 / 1e6


def simai_summary(result: str) -> dict[str, float]:
    """SimAI's summary row in us: from its EndToEnd.csv (each key of SIMAI_KEYS), or
    {"Total time": x} when `result` is a number; ValueError naming the file otherwise."""
    try:
        return {"Total time": float(result)}
    except ValueError:
        pass
    lines = Path(result).read_text().splitlines()
    for k, line in enumerate(lines[:-1]):
        if line.startswith("File name,") and "Total time" in line:
            cells = [c.strip() for c in lines[k + 1].split(",")][1:]
            return {key: float(c.split()[0]) for key, c in zip(SIMAI_KEYS, cells)}
    raise ValueError(f"{result}: no 'File name, ..., Total time' row; give SimAI_analytical's "
                     "results/<prefix>EndToEnd.csv or its total time in us")


def header_gpus(workload: Path) -> int | None:
    """The `all_gpus:` of a SimAI header, or None when it has none (AICB's older files)."""
    tokens = workload.read_text().splitlines()[0].split()
    for k, t in enumerate(tokens[:-1]):
        if t == "all_gpus:":
            return int(tokens[k + 1])
    return None


def fabric(gpus: int, per_server: int, nvlink_gibps: float, nic_gibps: float) -> dict:
    """A rail-optimized fabric of gpus / per_server servers, one NIC per GPU at SimAI's NIC
    rate and NVLink at its rate; ValueError when the servers cannot be split into groups."""
    if gpus % per_server:
        raise ValueError(f"--gpus {gpus} is not a whole number of {per_server}-GPU servers")
    servers = gpus // per_server
    groups = next((g for g in range(1, servers + 1)
                   if servers % g == 0 and servers // g <= MAX_SERVERS_PER_GROUP), None)
    if groups is None or groups > 256:
        raise ValueError(f"{servers} servers do not split into at most 256 groups of at most "
                         f"{MAX_SERVERS_PER_GROUP}")
    nic = gibps_to_mbps(nic_gibps)
    out = {"topology": "rail-optimized", "nics_per_server": per_server,
           "servers_per_group": servers // groups, "spines_per_group": min(per_server, 64),
           "host_link_mbps": nic, "spine_link_mbps": min(nic, 1_000_000),
           "nvlink_mbps": gibps_to_mbps(nvlink_gibps)}
    if groups > 1:
        out.update(groups=groups, cores_per_plane=min(per_server, 64),
                   core_link_mbps=min(nic, 1_000_000))
    return out


def config_doc(args: argparse.Namespace) -> dict:
    """The config: the workload on the fabric, routed non-blocking; ValueError on bad input."""
    gpus = args.gpus or header_gpus(args.workload)
    if gpus is None:
        raise ValueError(f"{args.workload}: the header has no all_gpus; give --gpus N")
    doc = {"name": f"simai-compare-{args.workload.stem}", "routing": ["nonblocking"],
           "jobs_from": {"simai": str(args.workload.resolve()), "all_gpus": gpus},
           "fabric": fabric(gpus, args.gpus_per_server, args.nvlink_gibps, args.nic_gibps)}
    semantics = {**({"connections": "stream"} if args.stream else {}),   # whole files
                 **({"ring_sync": "flow"} if args.flows else {})}
    if semantics:
        doc["semantics"] = semantics
    return doc


def table(name: str, simai: dict[str, float], ours_s: float) -> str:
    """Both iterations (ms) and their ratio, with SimAI's breakdown where it was given."""
    total_ms = simai["Total time"] / 1e3
    rows = [f"{'workload':<40} {'SimAI ms':>10} {'mlfabric ms':>12} {'mlfabric/SimAI':>15}",
            f"{name:<40} {total_ms:>10.3f} {ours_s * 1e3:>12.3f} "
            f"{ours_s * 1e3 / total_ms:>15.4f}"]
    if len(simai) > 1:
        rows.append("SimAI's breakdown (ms): " + ", ".join(
            f"{k} {v / 1e3:.3f}" for k, v in simai.items() if k != "Total time"))
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("workload", type=Path)
    ap.add_argument("--simai", required=True,
                    help="SimAI_analytical's results/<prefix>EndToEnd.csv, or its total in us")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--gpus", type=int, default=None, help="default: the header's all_gpus")
    ap.add_argument("--gpus-per-server", type=int, default=8, help="SimAI's -g_p_s")
    ap.add_argument("--nvlink-gibps", type=float, default=360.0, help="SimAI's -nv")
    ap.add_argument("--nic-gibps", type=float, default=48.5, help="SimAI's -nic")
    ap.add_argument("--stream", action="store_true",
                    help="semantics.connections: stream (SimAI's whole 9,216-GPU file)")
    ap.add_argument("--flows", action="store_true",
                    help="semantics.ring_sync: flow (rings as flows; on servers the whole "
                         "file's rings pass the bound on transfers otherwise)")
    args = ap.parse_args()
    try:
        simai, doc = simai_summary(args.simai), config_doc(args)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    with conditions(kernels=False):
        args.out.mkdir(parents=True, exist_ok=True)
        config = args.out / "config.yaml"
        config.write_text(yaml.safe_dump(doc, sort_keys=False))
        try:
            exp = load(config)
        except ConfigError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        calls, record = predict_experiment_timed(exp)
        ours = record["runs"][0]["iteration_time_s"]
        print(f"predict: {calls.median_wall():.1f} s wall, {calls.median_cpu():.1f} s CPU")
        print(table(args.workload.name, simai, ours))
    return 0


if __name__ == "__main__":
    sys.exit(main())

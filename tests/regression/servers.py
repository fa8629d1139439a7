"""What `predict` writes for NVLink servers, as data: the baseline of the connection columns
(traffic/connections.py), which must move nothing. Two shipped server configs and the
modern-cluster matrix's cases (experiments/benchmarks/server_matrix.py) at its smallest
scale, each under ECMP, per-packet spraying and greedy, through the whole `predict` code
(experiments.predict.predict_experiment).

`digest(doc)` returns, per config: results.json without the wall times and the kernels'
name (which vary by machine and process), and the sha256 of every CSV `predict` wrote;
every job's CCTs are exact floats in it. `python -m tests.regression.servers` writes
servers.json.gz from the code as it is (run once, before the columns; run again when the
link load imbalance stopped counting the leaf pairs of NVLink-only transfers: that key of
the four dp and xpod matrix cases moved, nothing else).
"""
from __future__ import annotations

import copy
import gzip
import hashlib
import json
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = Path(__file__).with_name("servers.json.gz")
CONFIGS = ("servers-8gpu.yaml", "servers-dual-plane.yaml")
#: results.json's keys that hold wall times or which kernels ran: left out
VOLATILE = ("time_s", "time_s_max", "predict_wall_s", "predict_kernels")


def read_expected() -> dict:
    return json.loads(gzip.decompress(EXPECTED.read_bytes()))


def matrix_docs() -> dict[str, dict]:
    """The matrix's cases at 2 groups x 8 servers of 8 GPUs, each under ECMP, spray and
    greedy, one subflow."""
    from experiments.benchmarks.server_matrix import CASES, fabric, jobs
    out = {}
    for key, case in CASES.items():
        groups = 1 if case.kind == "planes" else 2
        out[f"matrix-{key}"] = {
            "name": f"matrix-{key}", "seed": 1, "routing": ["ecmp", "spray@packet", "greedy"],
            "subflows": 1, "semantics": {"ring_sync": "flow"},
            "fabric": fabric(groups, 8, case.nvlink, case.kind, case.failure),
            "jobs": jobs(case.jobs, groups * 8, groups)}
    return out


def docs() -> dict[str, dict]:
    """Every config the baseline holds, by name."""
    shipped = {name: yaml.safe_load((ROOT / "experiments" / "configs" / name).read_text())
               for name in CONFIGS}
    return {**shipped, **matrix_docs()}


def _strip(x):
    if isinstance(x, dict):
        return {k: _strip(v) for k, v in x.items() if k not in VOLATILE}
    if isinstance(x, list):
        return [_strip(v) for v in x]
    return x


def digest(doc: dict) -> dict:
    """results.json (VOLATILE keys left out) and the sha256 of each CSV, by path."""
    from experiments.config import parse
    from experiments.predict import predict_experiment
    exp = parse(copy.deepcopy(doc))
    with tempfile.TemporaryDirectory(prefix="mlfabric-servers-") as tmp:
        out = Path(tmp)
        predict_experiment(exp, out, log=lambda _line: None)
        results = _strip(json.loads((out / "results.json").read_text()))
        files = {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
                 for p in sorted(out.rglob("*.csv"))}
    return {"results": results, "csv_sha256": files}


def main() -> None:
    sys.path.insert(0, str(ROOT))
    doc = {name: digest(d) for name, d in docs().items()}
    EXPECTED.write_bytes(gzip.compress((json.dumps(doc, sort_keys=True) + "\n").encode(),
                                       mtime=0))
    print(f"wrote {EXPECTED} ({len(doc)} configs)")


if __name__ == "__main__":
    main()

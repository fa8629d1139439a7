"""Every workload file and trace that SimAI, AICB, ASTRA-sim and Chakra publish, read unedited:
`validate` and `predict` on each, in one table (docs/interop.md).

    .venv/bin/python -m experiments.benchmarks.workload_corpus --simai SIMAI --aicb AICB \\
        --astra-sim ASTRA_SIM --chakra CHAKRA [--chakra-python PY]

Each of SIMAI, AICB, ASTRA_SIM and CHAKRA is a git clone of aliyun/SimAI, aliyun/aicb,
astra-sim/astra-sim and mlcommons/chakra (a work tree or a bare repository); the files are
taken from its refs as published (ASTRA-sim 1.0 from branch ASTRA-sim-1.0, the tutorial from
tag tutorial-micro2024, the older custom-collective sample from the commit before it moved).
With --chakra-python (a Python with protobuf and grpcio-tools), Chakra's own
text_converter.py converts the ASTRA-sim 1.0 files for 8 NPUs: its collective count per rank
is the `chakra` column, and its traces are read as a set of their own.

Each file runs on a leaf-spine of 100 Gbit/s links with at least its GPUs (2 hosts per leaf up
to 16 GPUs, else 8); a header without all_gpus gets 8, or 2 x its model-parallel group.
`parses`: validate's exit (0, or 2 and its one line); `jobs`: collectives after streams;
`ideal err`: the largest |non-blocking prediction / closed form - 1| over the jobs that ran
with no other job in flight (the hand calculation; custom collectives: their critical path);
`iteration`: first compute to last comm under ECMP; `wall`: validate + predict (ECMP and the
non-blocking reference).
"""
from __future__ import annotations

import argparse
import io
import math
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from experiments.benchmarks.harness import conditions
from experiments.config import ConfigError, parse
from experiments.predict import predict_experiment
from experiments.results import seconds
from traffic.collectives import ideal_cct_s

B_MBPS = 100_000
SIMAI_SETS = [("simai", "HEAD", "example"), ("aicb", "HEAD", "workload/simAI")]
ASTRA1 = ("ASTRA-sim-1.0", "inputs/workload")
CHAKRA_SETS = [("HEAD", "examples/workload/microbenchmarks"),
               ("HEAD", "examples/system/custom_collectives"),
               ("tutorial-micro2024", "examples/network_analytical/workload")]
OLD_SAMPLE = "examples/custom_collective/sample"


def export(repo: Path, ref: str, path: str, into: Path) -> Path:
    """`path` of `repo` at `ref`, as published, under `into` (git archive)."""
    out = subprocess.run(["git", "-C", str(repo), "archive", ref, "--", path],
                         capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(out)) as t:
        t.extractall(into, filter="data")
    return into / path


def old_sample_ref(repo: Path) -> str:
    """The last commit of the default branch that still had the older custom-collective
    sample folder (the parent of the commit that moved it)."""
    moved = subprocess.run(["git", "-C", str(repo), "rev-list", "-1", "HEAD", "--", OLD_SAMPLE],
                           capture_output=True, text=True, check=True).stdout.strip()
    return f"{moved}^"


def fabric_for(gpus: int) -> dict:
    per_leaf = 2 if gpus <= 16 else 8 if gpus <= 2_000 else 64
    leaves = max(2, math.ceil(gpus / per_leaf))
    return {"spines": 4, "leaves": leaves, "hosts_per_leaf": per_leaf,
            "host_link_mbps": B_MBPS, "spine_link_mbps": B_MBPS}


def simai_gpus(path: Path) -> tuple[int, bool]:
    """(GPUs to run on, whether the header says all_gpus)."""
    toks = path.read_text(errors="replace").split("\n", 1)[0].split()
    for i, t in enumerate(toks[:-1]):
        if t == "all_gpus:":
            return int(toks[i + 1]), True
    tp = next((int(toks[i + 1]) for i, t in enumerate(toks[:-1])
               if t == "model_parallel_NPU_group:"), 1)
    return max(8, 2 * tp), False


def run_one(kind: str, path: Path, gpus: int, give_gpus: bool, out: Path) -> dict:
    """validate and predict one file or trace folder; the row's figures."""
    src = {kind: str(path)}
    if give_gpus:
        src["all_gpus"] = gpus
    doc = {"name": "corpus", "routing": ["ecmp", "nonblocking"], "fabric": fabric_for(gpus),
           "jobs_from": src}
    t0 = time.perf_counter()
    try:
        exp = parse(doc)
    except ConfigError as e:
        return {"parses": f"2: {str(e)[:90]}", "wall_s": time.perf_counter() - t0}
    res = predict_experiment(exp, out, log=lambda _m: None)
    wall = time.perf_counter() - t0
    run = res["runs"][0]
    alone = _alone(res["runs"][-1]["jobs"])
    errs = [abs(j["ideal_cct_s"] / ideal_cct_s(spec, B_MBPS) - 1)
            for j, spec in zip(run["jobs"], exp.jobs) if j["name"] in alone]
    err = max(errs) if errs else None
    return {"parses": "0", "jobs": len(exp.jobs), "ideal_err": err,
            "iteration_s": run.get("iteration_time_s"), "cct_s": run["cct_mean_s"],
            "wall_s": wall, "skipped": sum(res["workload"]["skipped_comms"].values())}


def _alone(jobs: list[dict]) -> set[str]:
    """Jobs that ran with no other job in flight (their closed form is then exact)."""
    spans = sorted((j["iteration_start_s"][0], j["iteration_end_s"][-1], j["name"])
                   for j in jobs)
    out = set()
    for k, (a, b, name) in enumerate(spans):
        before = max((s[1] for s in spans[:k]), default=-1.0)
        after = spans[k + 1][0] if k + 1 < len(spans) else float("inf")
        if before <= a and b <= after:
            out.add(name)
    return out


def chakra_counts(chakra: Path, python: str, files: list[Path], work: Path) -> dict[str, Path]:
    """Convert ASTRA-sim 1.0 files with Chakra's text_converter (8 NPUs, 1 pass)."""
    src = work / "chakra-src"
    export(chakra, "HEAD", "schema", src)
    export(chakra, "HEAD", "src", src)
    pkg = work / "pkg" / "chakra"
    (pkg / "schema").mkdir(parents=True)
    subprocess.run([python, "-m", "grpc_tools.protoc", "-I", str(src / "schema/protobuf"),
                    f"--python_out={src / 'schema/protobuf'}",
                    str(src / "schema/protobuf/et_def.proto")], check=True)
    (src / "schema/protobuf").rename(pkg / "schema" / "protobuf")
    (pkg / "src").mkdir()
    for part in ("converter", "third_party"):
        (src / "src" / part).rename(pkg / "src" / part)
    for d in [pkg, *[p for p in pkg.rglob("*") if p.is_dir()]]:
        (d / "__init__.py").touch()
    out: dict[str, Path] = {}
    for f in files:
        d = work / "converted" / f.stem
        d.mkdir(parents=True)
        code = ("import sys; from chakra.src.converter.text_converter import TextConverter "
                "as T; T(sys.argv[1], sys.argv[2], 8, 1).convert()")
        r = subprocess.run([python, "-c", code, str(f), str(d / f.stem)], capture_output=True,
                           text=True, env={**os.environ, "PYTHONPATH": str(work / "pkg")})
        if r.returncode == 0:
            out[f.name] = d
    return out


def collect(args, work: Path) -> list[tuple[str, str, Path, int, bool]]:
    """(set, kind, path, gpus, give all_gpus) of every published file and trace folder."""
    items = []
    for name, ref, path in SIMAI_SETS:
        root = export(getattr(args, name), ref, path, work / name)
        for f in sorted(root.rglob("*.txt")):
            gpus, has = simai_gpus(f)
            items.append((name, "simai", f, gpus, not has))
    root = export(args.astra_sim, *ASTRA1, work / "astra1")
    for f in sorted(root.glob("*.txt")):
        items.append(("astra-sim 1.0", "simai", f, 8, True))
    for i, (ref, path) in enumerate(CHAKRA_SETS + [(old_sample_ref(args.astra_sim), OLD_SAMPLE)]):
        root = export(args.astra_sim, ref, path, work / f"astra2-{i}")
        for d in sorted({p.parent for p in root.rglob("*.et")}):
            ranks = len(list(d.glob("*.et")))
            items.append(("astra-sim", "chakra", d, ranks, False))
    tests = work / "chakra-tests"
    tgz = export(args.chakra, "HEAD", "tests/data/feeder_tests_trace.tar.gz", tests)
    with tarfile.open(tgz) as t:
        t.extractall(tests, filter="data")
    items.append(("chakra tests", "chakra", tests / "tests" / "data", 1, False))
    return items


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name in ("simai", "aicb", "astra-sim", "chakra"):
        ap.add_argument(f"--{name}", type=Path, required=True, help="a git clone")
    ap.add_argument("--chakra-python", help="a Python with protobuf and grpcio-tools")
    args = ap.parse_args(argv)
    with conditions(kernels=False), tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        items = collect(args, work)
        counts: dict[str, int] = {}
        if args.chakra_python:
            astra1 = sorted(p[2] for p in items if p[0] == "astra-sim 1.0")
            for name, d in chakra_counts(args.chakra, args.chakra_python, astra1,
                                         work).items():
                from traffic.chakra import COLL, read_trace
                counts[name] = sum(1 for n in read_trace(next(d.glob("*.0.et")))
                                   if n.type == COLL)
                items.append(("chakra converter", "chakra", d, 8, False))
        print(f"{'set':<17}{'file':<58}{'parses':<8}{'jobs':>6}{'chakra':>8}"
              f"{'ideal err':>11}{'iteration':>12}{'wall':>9}")
        for k, (set_name, kind, path, gpus, give) in enumerate(items):
            row = run_one(kind, path, gpus, give, work / f"out{k}")
            label = path.name if kind == "simai" else "/".join(path.parts[-2:])
            chakra = str(counts.get(path.name, "")) if kind == "simai" else ""
            err = "" if row.get("ideal_err") is None else f"{row['ideal_err']:.1e}"
            figures = (f"{row['jobs']:>6}{chakra:>8}{err:>11}"
                       f"{seconds(row['iteration_s']):>12}" if "jobs" in row else
                       f"{'':>6}{chakra:>8}{'':>11}{'':>12}")
            print(f"{set_name:<17}{label[:57]:<58}{row['parses'][:7]:<8}{figures}"
                  f"{row['wall_s']:>8.2f}s")
            if row["parses"] != "0":
                print(f"{'':<17}  -> {row['parses'][3:]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

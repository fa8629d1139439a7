"""What the leaf-spine configs route and predict, as data: the regression baseline of the
"routes as paths" change (routing, rules and the predictor moved from spines to paths).

`snapshot(config)` returns, per routing entry: the one plan computed before a run (conn ->
spine), the controller's assignment after every epoch and event replayed in model time, and the
predicted per-job iteration CCTs (exact floats). `python -m tests.regression.snapshot` writes
expected.json.gz from the code as it is; it was run once, on 3e49fe2 (before the change) with
the issue-10 solver fixes (annealing 2514841, ilp 89d1bb0, mmf de2c40a) laid over it.
One entry was replaced since: paper-3jobs-d4-fail4's annealing epochs, when annealing's spine
kernel was dropped (its later epochs took other plans of the same CCTs; docs/architecture.md).
"""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "experiments" / "configs").glob("*.yaml"))
EXPECTED = Path(__file__).with_name("expected.json.gz")


def read_expected() -> dict:
    return json.loads(gzip.decompress(EXPECTED.read_bytes()))


def spine_of_path(path) -> str | None:
    """A leaf-spine route as its spine: None (same leaf), a spine name, or a path tuple."""
    if path is None or isinstance(path, str):
        return path
    return path[1] if len(path) == 3 else None


def _spines(routes: dict) -> dict[str, str | None]:
    return {str(cid): spine_of_path(p) for cid, p in sorted(routes.items())}


def snapshot(config: Path) -> dict:
    from experiments.config import load
    from experiments.routes import ControllerRoutes
    from routing import route
    from traffic.collectives import plan_jobs
    from traffic.predictor import predict

    exp = load(config)
    plans = plan_jobs(exp.jobs)
    conns = [c for p in plans for c in p.connections]
    out = {}
    for entry in exp.routings:
        name = entry.name
        rp = route(entry.strategy, exp.fabric, conns, seed=exp.seed)
        one_plan = getattr(rp, "path_of", None) or rp.spine_of
        routes = ControllerRoutes(entry.strategy, exp.fabric, conns, exp.seed, exp.events,
                                  static=one_plan if entry.host_enforced else None)
        epochs: list[dict] = []
        for hook in ("jobs_started", "job_finished", "fire"):
            inner = getattr(routes, hook)

            def recorded(*args, _inner=inner, _hook=hook):
                result = _inner(*args)
                assignment = result[1] if _hook == "fire" else result
                epochs.append({"hook": _hook, "routes": _spines(assignment)})
                return result
            setattr(routes, hook, recorded)
        pred = predict(exp.fabric, plans, None, 1.0, router=routes)
        out[name] = {"one_plan": _spines(one_plan), "epochs": epochs,
                     "cct_s": {p.name: pred.jobs[p.name].cct_s for p in plans}}
    return out


def main() -> None:
    sys.path.insert(0, str(ROOT))
    doc = {c.name: snapshot(c) for c in CONFIGS}
    EXPECTED.write_bytes(gzip.compress((json.dumps(doc, sort_keys=True) + "\n").encode(),
                                       mtime=0))
    print(f"wrote {EXPECTED} ({len(doc)} configs)")


if __name__ == "__main__":
    main()

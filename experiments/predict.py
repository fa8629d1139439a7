"""`predict`: the flow-level model of an experiment, per routing, at any scale and without root.

config -> fabric model -> routes (routing/) -> max-min fluid simulation (traffic/predictor.py)
-> results in the same schema as `run`, with "mode": "predicted".
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import yaml

from routing import route
from routing.base import max_link_flows
from traffic.collectives import plan_jobs
from traffic.predictor import ideal, predict

from .config import Experiment
from .results import fairness, job_result, run_result, table, write_json


def predict_experiment(exp: Experiment, out_dir: Path, goodput_factor: float = 1.0,
                       log: Callable[[str], None] = print) -> dict:
    """Predict every routing of `exp`; write and return results.json."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.yaml").write_text(yaml.safe_dump(exp.resolved(), sort_keys=False))
    plans = plan_jobs(exp.jobs)
    conns = [c for p in plans for c in p.connections]
    ideal_pred = ideal(exp.fabric, plans)
    results = {"schema_version": 1, "name": exp.name, "seed": exp.seed,
               "goodput_factor": goodput_factor, "runs": []}
    for name in exp.routing:
        rp = route(name, exp.fabric, conns, seed=exp.seed)
        pred = predict(exp.fabric, plans, rp.spine_of, goodput_factor)
        jobs = [job_result(p.spec, pred.jobs[p.name].cct_s, ideal_pred.jobs[p.name].mean_cct_s,
                           None, pred.jobs[p.name].conn_rates_mbps()) for p in plans]
        run = run_result(name, "predicted", jobs, max_link_flows(exp.fabric, conns, rp.spine_of),
                         rp.stats.as_dict(),
                         fairness=fairness(jobs, exp.fabric.spec.host_link_mbps),
                         predict_wall_s=pred.wall_s)
        results["runs"].append(run)
        log(f"[{name}] solved in {rp.stats.time_s:.3f} s ({rp.stats.status}); predicted in "
            f"{pred.wall_s:.2f} s")
    write_json(out_dir / "results.json", results)
    log(table(results))
    log(f"results: {out_dir / 'results.json'}")
    return results

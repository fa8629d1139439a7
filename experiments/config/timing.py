"""How long a config's jobs may take: the ideal iteration, the run's iteration timeout
(computed here only) and the horizon after which no event can fire.
"""
from __future__ import annotations

from testbed.fabric import Fabric
from traffic.collectives import JobSpec, ideal_cct_s, ideal_schedule

from .limits import MAX_DURATION_S, MAX_SECONDS, TIMEOUT_FACTOR, TIMEOUT_SLACK_S
from .readers import ConfigError
from .records import EmulationConfig


def ideal_iteration_s(job: JobSpec, fabric: Fabric) -> float:
    """One iteration of `job` on a non-blocking fabric (traffic/collectives.ideal_cct_s: the
    predictor's non-blocking model in closed form)."""
    return ideal_cct_s(job, fabric.spec.host_link_mbps)


def iteration_timeout_s(exp_jobs: list[JobSpec], fabric: Fabric,
                        emulation: EmulationConfig) -> float:
    """The run's timeout per iteration: given, or 20 x the slowest ideal CCT + 30 s."""
    if emulation.iteration_timeout_s is not None:
        return emulation.iteration_timeout_s
    slowest = max((ideal_iteration_s(j, fabric) for j in exp_jobs), default=0.0)
    return TIMEOUT_FACTOR * slowest + TIMEOUT_SLACK_S


def _check_timing(jobs: list[JobSpec], fabric: Fabric, em: EmulationConfig,
                  source: str | None = None) -> None:
    """Bound how long the experiment runs, and what the iteration timeout can be. `source`:
    the jobs_from key the jobs came from (messages name it and the job, not jobs[i])."""
    ideal = [ideal_iteration_s(j, fabric) for j in jobs]
    ends = ideal_schedule(jobs, fabric.spec.host_link_mbps)    # after the jobs they wait for
    for i, j in enumerate(jobs):
        end = ends[j.name][1]
        if not end <= MAX_DURATION_S:
            where = f"jobs_from.{source}: job {j.name}" if source else f"jobs[{i}]"
            raise ConfigError(
                f"{where}: ends {end:,.0f} s after the start even on a non-blocking fabric; "
                f"an experiment may take at most {MAX_DURATION_S:,.0f} s (1 week): use fewer "
                "iterations, fewer bytes, less compute_s or faster links")
    k = max(range(len(jobs)), key=lambda i: ideal[i])
    if em.iteration_timeout_s is None:
        if TIMEOUT_FACTOR * ideal[k] + TIMEOUT_SLACK_S > MAX_SECONDS:
            where = f"jobs_from.{source}: job {jobs[k].name}" if source else f"jobs[{k}]"
            raise ConfigError(
                f"{where}: one iteration takes {ideal[k]:,.0f} s even on a non-blocking "
                f"fabric, so the default iteration timeout (20 x that + 30 s) exceeds "
                f"{MAX_SECONDS:,.0f} s; use fewer bytes or faster links, or set "
                "emulation.iteration_timeout_s")
    elif em.iteration_timeout_s < ideal[k]:
        raise ConfigError(
            f"emulation.iteration_timeout_s: {em.iteration_timeout_s:g} s is shorter than one "
            f"iteration of job {jobs[k].name!r} on a non-blocking fabric ({ideal[k]:.3g} s), "
            "so every run would time out; give more, or leave it out (20 x ideal + 30 s)")


def events_horizon_s(jobs: list[JobSpec], fabric: Fabric, em: EmulationConfig) -> float:
    """By this time every job has ended, or a run has stopped on its iteration timeout: the
    sum over jobs of start_s + iterations x (compute_s + the iteration timeout). An event
    later than this can never fire."""
    t = iteration_timeout_s(jobs, fabric, em)
    return sum(j.start_s + max((g for _, g in j.after), default=0.0)
               + j.iterations * (j.compute_s + t) for j in jobs)

"""Program jobs (`program:` in `jobs`) and the controller's `demand` (traffic/programs.py).

    - name: jax-ar
      program: [python, experiments/programs/jax_allreduce.py, --sizes, 64M]   # argv, no shell
      hosts: [h1, h5, h9, h13]          # rank r on hosts[r]; or placement + ranks
      env: {XLA_FLAGS: --xla_cpu_multi_thread_eigen=false}
      timeout_s: 300                    # every rank must have exited by then
      cwd: .                            # default: where mlfabric runs
      traffic: {collective: allreduce, size_bytes: 67108864, hosts: [h13, h9, h5, h1]}

`traffic` (optional) declares what the program sends per step in the jobs' own vocabulary
(hosts default to the program's, in rank order): routed and modelled as host pairs, since
the program's ports are ephemeral. gloo's ring sends from rank r to rank r-1: list its hosts
in reverse rank order.
"""
from __future__ import annotations

import math
import os
import random
import re
import shutil
from pathlib import Path
from typing import Any

from testbed.fabric import Fabric
from traffic.collectives import JobSpec, WorkloadError
from traffic.programs import DEFAULT_LEARN_STEPS, ProgramSpec, rank_path

from .limits import (MAX_ARG_CHARS, MAX_ARGV, MAX_ENV, MAX_LEARN_STEPS, MAX_PROGRAMS,
                     MAX_SECONDS)
from .explicit import explicit_job
from .keys import EXPLICIT_JOB_KEYS, PROGRAM_JOB_KEYS
from .readers import (ConfigError, quote, _check_keys, _int, _name, _num, _choice, _rel_path,
                      _str)

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
DEMANDS = ("declared", "measured")


def _text(a: Any) -> str | None:
    """An argument or variable value as text: a string, or a YAML integer or finite number;
    None for anything else (booleans, NaN, infinities, mappings) and for a NUL byte, which
    no argv or environment can carry."""
    if isinstance(a, bool) or not isinstance(a, (str, int, float)):
        return None
    if isinstance(a, float) and not math.isfinite(a):
        return None
    text = str(a)
    return None if "\0" in text else text


def _argv(v: Any, where: str, cwd: Path, path: str) -> tuple[str, ...]:
    """The argument list: strings, or numbers written as YAML numbers (kept as text);
    `path`: the PATH the ranks get, where a bare argv[0] must be found."""
    texts = [_text(a) for a in v] if isinstance(v, list) else None
    if not texts or len(texts) > MAX_ARGV or not all(
            t is not None and 0 < len(t) <= MAX_ARG_CHARS for t in texts):
        bad = next((i for i, t in enumerate(texts or []) if t is None
                    or not 0 < len(t) <= MAX_ARG_CHARS), None) if isinstance(v, list) else None
        which = (f"; argument {bad} is {quote(v[bad])}" if bad is not None else
                 f", got {quote(v)}")
        raise ConfigError(f"{where}.program: expected a list of 1 to {MAX_ARGV} strings of 1 "
                          f"to {MAX_ARG_CHARS} characters (argv, no shell, no NUL byte), e.g. "
                          f"[python, train.py]{which}")
    exe = texts[0]
    if "/" in exe:
        found = (cwd / exe).is_file() and os.access(cwd / exe, os.X_OK)
    else:
        found = shutil.which(exe, path=path) is not None
    if not found:
        raise ConfigError(f"{where}.program: {quote(exe)} is not an executable on the ranks' "
                          f"PATH or below cwd {cwd}; give its path")
    return tuple(texts)


def _env(v: Any, where: str) -> tuple[tuple[str, str], ...]:
    if v is None:
        return ()
    if not isinstance(v, dict) or len(v) > MAX_ENV:
        raise ConfigError(f"{where}.env: expected a mapping of at most {MAX_ENV} variables, "
                          f"got {quote(v)}")
    out = []
    for k, val in v.items():
        if not isinstance(k, str) or not ENV_NAME.fullmatch(k):
            raise ConfigError(f"{where}.env: {quote(k)} is not a variable name")
        text = _text(val)
        if text is None or len(text) > MAX_ARG_CHARS:
            raise ConfigError(f"{where}.env.{k}: expected a string of at most {MAX_ARG_CHARS} "
                              f"characters without a NUL byte (or a finite number), got "
                              f"{quote(val)}")
        out.append((k, text))
    return tuple(out)


def _ranks_argv(v: Any, where: str, cwd: Path, env: dict[str, str]) -> tuple[str, ...]:
    """argv checked against the PATH the ranks will have: the job's env.PATH if it sets
    one (an error then names env.PATH), else mlfabric's (rank_path)."""
    if "PATH" not in env:
        return _argv(v, where, cwd, rank_path())
    try:
        return _argv(v, where, cwd, env["PATH"])
    except ConfigError:
        exe = _argv(v, where, cwd, rank_path())[0]
        raise ConfigError(f"{where}.env.PATH: {quote(exe)} (the program) is not on "
                          f"{quote(env['PATH'])}; add its directory to env.PATH or drop "
                          "env.PATH") from None


def _cwd(d: dict, where: str, base_dir: Path | None) -> Path:
    """`cwd`: beside the config file first, then from where mlfabric runs (its default)."""
    cwd = _rel_path(_str(d, "cwd", where), base_dir) if "cwd" in d else Path(".")
    if not cwd.is_dir():
        raise ConfigError(f"{where}.cwd: {quote(str(cwd))} is not a directory")
    return cwd.resolve()


def program_job(d: dict, where: str, fabric: Fabric, rng: random.Random, used: set[str],
                base_dir: Path | None, hosts_of) -> tuple[ProgramSpec, JobSpec | None]:
    """One `program:` job and its declared traffic (a JobSpec of host pairs) if any;
    `hosts_of(d, where)` reads its hosts (explicit) or places `ranks` (placement)."""
    _check_keys(d, PROGRAM_JOB_KEYS, where)
    name = _name(d, "name", where)
    cwd = _cwd(d, where, base_dir)
    env = _env(d.get("env"), where)
    argv = _ranks_argv(d["program"], where, cwd, dict(env))
    hosts = hosts_of(d, where)
    spec = ProgramSpec(name=name, argv=argv, hosts=tuple(hosts), env=env,
                       timeout_s=_num(d, "timeout_s", where, 600.0, maximum=MAX_SECONDS),
                       cwd=str(cwd), start_s=_num(d, "start_s", where, 0.0, positive=False))
    traffic = d.get("traffic")
    if traffic is None:
        return spec, None
    if not isinstance(traffic, dict):
        raise ConfigError(f"{where}.traffic: expected a mapping (collective, size_bytes, "
                          f"hosts or groups), got {quote(traffic)}")
    _check_keys(traffic, EXPLICIT_JOB_KEYS - {"name", "start_s", "subflows", "split",
                                              "split_piece_bytes"}, f"{where}.traffic")
    job = explicit_job({"name": name, **({"hosts": list(hosts)} if "groups" not in traffic
                                          and "hosts" not in traffic else {}), **traffic},
                        f"{where}.traffic", fabric)
    stray = set(job.hosts) - set(hosts)
    if stray:
        raise ConfigError(f"{where}.traffic: host {sorted(stray)[0]} runs no rank of this "
                          "program; its traffic is between its own hosts")
    return spec, JobSpec(name=job.name, collective=job.collective, groups=job.groups,
                         size_bytes=job.size_bytes, iterations=job.iterations,
                         compute_s=job.compute_s, start_s=spec.start_s, host_pairs=True)


def demand(d: dict) -> tuple[str, int, float | None]:
    """`demand` (declared | measured), `learn_steps` (default 2) and `learn_s` (optional: a
    time window instead of steps); the learning keys are kept with `declared` too, so that
    one config serves both (`--set demand=measured`)."""
    kind = _choice(d, "demand", "config", DEMANDS, "declared")
    if "learn_steps" in d and "learn_s" in d:
        raise ConfigError("learn_s: give learn_steps or learn_s, not both")
    steps = _int(d, "learn_steps", "config", DEFAULT_LEARN_STEPS, maximum=MAX_LEARN_STEPS)
    window = _num(d, "learn_s", "config", maximum=MAX_SECONDS) if "learn_s" in d else None
    return kind, steps, window


def check_programs(programs: list[ProgramSpec], jobs: list[JobSpec]) -> None:
    """Programs run in configs of their own (their traffic models aside), at most
    MAX_PROGRAMS."""
    if len(programs) > MAX_PROGRAMS:
        raise ConfigError(f"jobs: {len(programs)} program jobs; at most {MAX_PROGRAMS} (each "
                          "its own rendezvous port)")
    if programs and any(not j.host_pairs for j in jobs):
        raise ConfigError("jobs: program jobs run in a config of their own; move the "
                          "collectives to another config")
    try:
        for j in jobs:
            if j.host_pairs and j.subflows > 1:
                raise WorkloadError(f"jobs.{j.name}.subflows: a program's traffic is routed "
                                    "by host pair; its subflows are the program's own")
    except WorkloadError as e:
        raise ConfigError(str(e)) from None

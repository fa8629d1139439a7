"""Programs as jobs: real training or benchmark programs run one rank per host (pure code).

A program job names an argument list (never a shell string), its hosts (rank r on hosts[r])
and what else each rank's environment needs. mlfabric starts every rank in its host
(testbed/rankns.py gives each its own hostname and hosts file), tells it the rendezvous the
usual way (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, JAX's coordinator), and reads
step records from its standard output, one JSON object per line:

    {"mlfabric": "step", "step": 3, "time_s": 1.234, "end_mono_s": 5012.345}

(end_mono_s optional: when the step ended, on time.monotonic();
experiments/programs/mlfabric_steps.py prints them and needs nothing of mlfabric). A job's
step time is its slowest rank's, as a collective's iteration is its slowest rank's. Lines
that are not JSON objects with a "mlfabric" key are the program's own output; records that
have the key but not a step number and a time are counted as bad and ignored.
"""
from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

#: MASTER_PORT of program job j (its index among the config's programs): MASTER_PORT_BASE + j
MASTER_PORT_BASE = 29500
STEP_KEY = "mlfabric"
#: Steps per learning window of demand: measured (experiments/learner.py), by default.
DEFAULT_LEARN_STEPS = 2


@dataclass(frozen=True)
class ProgramSpec:
    """One program job: rank r runs `argv` on hosts[r] with `env` added."""

    name: str
    argv: tuple[str, ...]
    hosts: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    timeout_s: float = 600.0
    cwd: str | None = None              # None: the directory mlfabric runs in
    start_s: float = 0.0

    @property
    def ranks(self) -> int:
        return len(self.hosts)


def rank_path() -> str:
    """PATH as ranks get it: mlfabric's own Python first (JAX comes with it), then the
    caller's PATH."""
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def rank_env(spec: ProgramSpec, index: int, rank: int, ip_of: dict[str, str],
             interface: str) -> dict[str, str]:
    """The variables rank `rank` of program job number `index` gets (beside the config's
    `env`, which may override them): the torch.distributed / gloo rendezvous, JAX's
    coordinator, and the interface gloo must bind (GLOO_SOCKET_IFNAME)."""
    master = ip_of[spec.hosts[0]]
    port = MASTER_PORT_BASE + index
    return {
        "RANK": str(rank), "WORLD_SIZE": str(spec.ranks), "LOCAL_RANK": "0",
        "LOCAL_WORLD_SIZE": "1", "MASTER_ADDR": master, "MASTER_PORT": str(port),
        "JAX_COORDINATOR_ADDRESS": f"{master}:{port}", "JAX_NUM_PROCESSES": str(spec.ranks),
        "JAX_PROCESS_ID": str(rank), "GLOO_SOCKET_IFNAME": interface,
        "MLFABRIC_JOB": spec.name, "MLFABRIC_HOST": spec.hosts[rank],
        "PYTHONUNBUFFERED": "1",
    }


@dataclass
class StepLog:
    """One rank's step records as they arrive: step -> (time_s, arrival time)."""

    steps: dict[int, tuple[float, float]] = field(default_factory=dict)
    bad: int = 0

    def feed(self, line: str, arrived: float, clock0: float | None = None) -> int | None:
        """Read one line of the rank's output; the step number it recorded, if any. The
        step ended at its `end_mono_s` (time.monotonic(), shared by every namespace of the
        machine) minus `clock0` when both are given, else when the line `arrived`."""
        line = line.strip()
        if not line.startswith("{"):
            return None
        try:
            rec = json.loads(line)
        except ValueError:
            return None
        if not isinstance(rec, dict) or STEP_KEY not in rec:
            return None
        step, t = rec.get("step"), rec.get("time_s")
        if (rec[STEP_KEY] != "step" or isinstance(step, bool) or not isinstance(step, int)
                or step < 0 or isinstance(t, bool) or not isinstance(t, (int, float))
                or not math.isfinite(t) or t < 0):
            self.bad += 1
            return None
        end = rec.get("end_mono_s")
        if clock0 is not None and isinstance(end, (int, float)) and not isinstance(end, bool) \
                and math.isfinite(end):
            arrived = min(arrived, end - clock0)
        self.steps[step] = (float(t), arrived)
        return step


def job_steps(logs: list[StepLog]) -> list[dict]:
    """The job's steps: every step some rank recorded, in order, with the slowest rank's time
    (s), how many ranks recorded it and when the last rank ended it (runner's clock, s)."""
    numbers = sorted({s for log in logs for s in log.steps})
    out = []
    for s in numbers:
        recs = [log.steps[s] for log in logs if s in log.steps]
        out.append({"step": s, "time_s": max(t for t, _ in recs), "ranks": len(recs),
                    "at_s": max(a for _, a in recs)})
    return out

"""Streams and the compute between collectives, for the importers (SimAI, Chakra): pure code.

A training iteration is compute and collectives. A collective is issued on a stream (NCCL's
communicator: a SimAI group kind, a Chakra process group) and runs once the stream's previous
collective has ended and the compute before it is done; compute may wait for a collective (a
blocking one) or run on (a non-blocking one). `Control` follows one rank's program and
turns each collective into a JobSpec whose `after` says exactly that: (job, gap_s) pairs, the
gap being the compute between that job's end and this one's issue. Its clock is a set of
terms {job: s after that job ends} ("" = s after the iteration starts); a time is the latest
of its terms, so no time is guessed before the network has run.

`Notes` is what an importer says about a workload besides its jobs: comms it did not turn
into traffic (by reason), and the iteration's end after the last collective (compute that
follows it), so that `iteration_time_s` can report the iteration from its first compute to
its last comm or compute; and `warn`, an assumption the importer made that changes the
traffic (one line, shown on stderr by the command line and kept in results.json).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from traffic.collectives import JobSpec

#: `after` pairs of one workload, at most: each is a few bytes and one step in the predictor,
#: and a program whose non-blocking waits pile up (a term per layer) is quadratic in layers.
MAX_AFTER = 2_000_000
START = ""


class StreamError(ValueError):
    """A program whose dependencies grow past MAX_AFTER."""


class WorkloadWarning(UserWarning):
    """An importer read a file by an assumption that changes its traffic. `one_line`: the
    command line shows it as one `warning: ...` line (experiments/__main__.py)."""
    one_line = True


@dataclass
class Notes:
    """What an importer did besides making jobs: `skipped` counts comms sent as no traffic
    by reason; `tail` is the program's end as (job, gap_s) terms ("" = from time 0)."""

    source: str
    time_unit: str
    skipped: dict[str, int] = field(default_factory=dict)
    tail: dict[str, float] = field(default_factory=dict)
    collectives: int = 0
    warnings: list[str] = field(default_factory=list)

    def skip(self, reason: str, n: int = 1) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + n

    def warn(self, line: str) -> None:
        """Keep `line` (one line) and issue it as a WorkloadWarning."""
        self.warnings.append(line)
        warnings.warn(line, WorkloadWarning, stacklevel=2)

    def as_dict(self) -> dict:
        return {"source": self.source, "time_unit": self.time_unit,
                "collectives": self.collectives,
                "skipped_comms": dict(sorted(self.skipped.items())),
                "warnings": list(self.warnings)}


class Control:
    """One rank's program counter as terms; `issue` makes the JobSpecs, `wait` joins one."""

    def __init__(self) -> None:
        self.terms: dict[str, float] = {START: 0.0}
        self.last: dict[str, str] = {}          # stream -> its latest job
        self.specs: list[JobSpec] = []
        self.after_count = 0
        self._issued_at: dict[str, int] = {}    # job -> self._moves when issued
        self._moves = 0

    def compute(self, seconds: float) -> None:
        if seconds > 0:
            for k in self.terms:
                self.terms[k] += seconds
            self._moves += 1

    def issue(self, spec: JobSpec, stream: str) -> str:
        """Queue `spec` on `stream` now; returns its name (to `wait` for)."""
        after = {k: v for k, v in self.terms.items() if k != START}
        prev = self.last.get(stream)
        if prev is not None:
            after[prev] = max(after.get(prev, 0.0), 0.0)
        spec.start_s = self.terms.get(START, 0.0)
        spec.after = tuple(after.items())
        spec.stream = stream
        self.after_count += len(after)
        if self.after_count > MAX_AFTER:
            raise StreamError(f"more than {MAX_AFTER:,} dependencies between collectives "
                              "(non-blocking waits that pile up over many layers)")
        self.last[stream] = spec.name
        self.specs.append(spec)
        self._issued_at[spec.name] = self._moves
        return spec.name

    def wait(self, name: str | None) -> None:
        """The program waits for job `name` to end (None: a comm that sent nothing)."""
        if name is None:
            return
        if self._issued_at.get(name) == self._moves:
            self.terms = {name: 0.0}          # nothing ran since its issue: it ends last
        else:
            self.terms[name] = max(self.terms.get(name, 0.0), 0.0)
        self._moves += 1


def iteration_time_s(jobs_end_s: dict[str, float], tail: dict[str, float]) -> float:
    """The iteration from time 0 (its first compute) to the end of its last comm, or of the
    compute after it (`tail` terms), whichever is later."""
    ends = list(jobs_end_s.values())
    ends += [jobs_end_s[k] + v if k else v for k, v in tail.items()
             if not k or k in jobs_end_s]
    return max(ends, default=0.0)

"""Step records for mlfabric, from any program: a one-file helper that needs nothing else.

mlfabric puts this folder on every rank's PYTHONPATH, so a program it runs may
`import mlfabric_steps`; a copy of this file works anywhere. Each record is one line on
standard output, which mlfabric reads (a program that prints none still gets its wall time):

    {"mlfabric": "step", "step": 3, "time_s": 1.234, "end_mono_s": 5012.345}

(`end_mono_s`, optional: when the step ended on the machine's monotonic clock, so that
mlfabric knows it exactly, not when it read the line.)

    import mlfabric_steps
    for step in range(20):
        with mlfabric_steps.timed(step):
            train_step()
"""
from __future__ import annotations

import json
import sys
import time
from contextlib import contextmanager


def report(step: int, time_s: float, **extra) -> None:
    """Print step `step`'s record: it took `time_s` seconds, and ended now (`end_mono_s`, the
    machine's monotonic clock, which mlfabric reads too); extra keys are kept as given."""
    sys.stdout.write(json.dumps({"mlfabric": "step", "step": int(step),
                                 "time_s": float(time_s), "end_mono_s": time.monotonic(),
                                 **extra}) + "\n")
    sys.stdout.flush()


@contextmanager
def timed(step: int, **extra):
    """Time the block with a monotonic clock and report it as step `step`."""
    t0 = time.perf_counter()
    yield
    report(step, time.perf_counter() - t0, **extra)

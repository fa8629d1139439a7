"""Progress and inspection while mlfabric runs.

- `iteration_progress`: one line per finished iteration during `run` (job, iteration, CCT,
  the job's running mean), called by the traffic driver after each verified iteration.
- `SweepProgress`: a sweep's points done and failed with an ETA: a tqdm bar on a terminal,
  one plain line per finished point otherwise (logs, CI).
- `PredictionProgress`: one overwritten terminal line inside a long prediction (transfers
  done of all, simulated seconds, time left); nothing when not a terminal.
- `open_cli`: Mininet's CLI on the live fabric (`run --cli`); the run tears down as usual
  when the user leaves it.
"""
from __future__ import annotations

import statistics
import sys
import time
from typing import Any, Callable, TextIO


def iteration_progress(routing: str, plans: list, log: Callable[[str], None]
                       ) -> Callable[[str, Any], None]:
    """A driver hook printing `[ecmp] ring-a iteration 2/3: CCT 4.812 s, running mean
    4.806 s` for each finished iteration (`record.cct_s` in seconds)."""
    totals = {p.name: p.spec.iterations for p in plans}
    seen: dict[str, list[float]] = {}

    def report(job: str, record: Any) -> None:
        ccts = seen.setdefault(job, [])
        ccts.append(record.cct_s)
        log(f"[{routing}] {job} iteration {len(ccts)}/{totals.get(job, '?')}: CCT "
            f"{record.cct_s:.3f} s, running mean {statistics.fmean(ccts):.3f} s")
    return report


def open_cli(emu: Any, log: Callable[[str], None]) -> None:
    """Mininet's CLI on the live fabric `emu` (testbed/net.py EmulatedFabric); returns when
    the user types `exit` or Ctrl-D, and the caller then tears down as usual."""
    from mininet.cli import CLI   # needs root and Mininet: imported only when asked for
    from mininet.log import lg, setLogLevel
    log("Mininet CLI on the live fabric (e.g. `h1 ping -c1 h5`, `dpctl dump-flows`); "
        "`exit` or Ctrl-D tears it down")
    quiet = lg.level            # the build silences Mininet; its CLI prints at "output"
    setLogLevel("output")
    from testbed.signals import PENDING
    try:
        CLI(emu.net)
        PENDING.clear()         # Ctrl-C at the CLI's prompt interrupts a command, not the run
    finally:
        lg.setLevel(quiet)


class SweepProgress:
    """Points done / failed / total with an ETA; `stream` a terminal: a tqdm bar."""

    def __init__(self, total: int, skipped: int = 0, stream: TextIO | None = None,
                 bar: bool | None = None):
        self.stream = stream or sys.stderr
        self.total, self.done, self.failed = total, skipped, 0
        self.t0 = time.monotonic()
        self.start_done = skipped
        self.bar = None
        if bar if bar is not None else self.stream.isatty():
            from tqdm import tqdm
            self.bar = tqdm(total=total, initial=skipped, unit="point", file=self.stream,
                            dynamic_ncols=True)
            self.bar.set_postfix(failed=0)

    def eta_s(self) -> float | None:
        """Seconds left at the rate of the points finished in this session."""
        ran = self.done - self.start_done
        if ran <= 0:
            return None
        return (time.monotonic() - self.t0) / ran * (self.total - self.done)

    def point(self, name: str, status: str, wall_s: float, error: str | None = None) -> None:
        self.done += 1
        self.failed += status != "ok"
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix(failed=self.failed)
            if error:
                self.bar.write(f"failed {name}: {error}", file=self.stream)
            return
        eta = self.eta_s()
        line = (f"[{self.done}/{self.total}] {name} {status} in {wall_s:.2f} s; "
                f"{self.failed} failed; ETA {'?' if eta is None else f'{eta:.0f} s'}")
        print(line + (f": {error}" if error else ""), file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class PredictionProgress:
    """One terminal line that follows a long prediction, overwritten about once a second:
    `[ecmp] 41.2% of 3,512,000 transfers, 12.305 s simulated, about 14 s left`; nothing
    when `stream` is not a terminal. Call it as traffic/predictor.py's `progress`, then
    `end()` (clears the line)."""

    def __init__(self, routing: str, stream=None):
        self.routing, self.stream = routing, stream or sys.stdout
        self.on = self.stream.isatty()
        self.t0, self.shown = time.monotonic(), False

    def __call__(self, simulated_s: float, done: int, total: int) -> None:
        frac = min(1.0, done / total) if total else 0.0
        left = (time.monotonic() - self.t0) * (1 - frac) / frac if frac > 0 else None
        self.stream.write(f"\r[{self.routing}] {frac:.1%} of {total:,} transfers, "
                          f"{simulated_s:.3f} s simulated"
                          + (f", about {left:.0f} s left" if left is not None else "")
                          + "\033[K")
        self.stream.flush()
        self.shown = True

    def end(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()

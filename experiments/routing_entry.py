"""One entry of a config's `routing` list, parsed once: what it routes with and who enforces it.

    "ilp"          -> RoutingEntry("ilp", "ilp", "switch")       placed by the controller
    "ilp@host"     -> RoutingEntry("ilp@host", "ilp", "host")    fixed, by source ports
    "ecmp"         -> hashed: every switch with a choice hashes the 5-tuple
    "nonblocking"  -> the reference: the same hosts on one switch, host links only
    "replay"       -> floodns's logged paths, fixed for the whole run
    "spray@packet" -> every flow sprayed per packet over all its live shortest paths (the
                      model's fluid form; Open vSwitch cannot, so `run` refuses it)

The entry string itself (`name`) is what results.json and the run folders show.
"""
from __future__ import annotations

from dataclasses import dataclass

from routing.replay import REPLAY
from routing.rules import ECMP

#: The reference "routing": the same hosts on one non-blocking switch (host links only). The
#: model predicts it as traffic/predictor.ideal; the emulator builds one OVS switch for it.
NONBLOCKING = "nonblocking"


@dataclass(frozen=True)
class RoutingEntry:
    """A routing entry: `name` as written, its `strategy`, its `enforcement` (switch or host)."""
    name: str
    strategy: str
    enforcement: str = "switch"

    @classmethod
    def parse(cls, entry: str) -> RoutingEntry:
        """'ilp@host' -> ('ilp@host', 'ilp', 'host'); 'ilp' -> ('ilp', 'ilp', 'switch').
        Splits only; experiments/config.py checks the parts."""
        strategy, _, enforcement = entry.partition("@")
        return cls(entry, strategy, enforcement or "switch")

    @property
    def hashed(self) -> bool:
        """ECMP: the switches' own hash chooses each flow's path."""
        return self.strategy == ECMP

    @property
    def host_enforced(self) -> bool:
        """One fixed plan, enforced by the hosts' choice of source port (@host)."""
        return self.enforcement == "host"

    @property
    def per_packet(self) -> bool:
        """Per-packet spraying (`spray@packet`): the model only."""
        return self.enforcement == "packet"

    @property
    def reference(self) -> bool:
        """The non-blocking reference: one switch, no routes."""
        return self.strategy == NONBLOCKING

    @property
    def replayed(self) -> bool:
        """floodns's logged paths (routing/replay.py), fixed for the whole run."""
        return self.strategy == REPLAY

    @property
    def fixed(self) -> bool:
        """One plan for the whole run, given to the controller as static paths."""
        return self.host_enforced or self.replayed

    @property
    def emulable(self) -> bool:
        """`run` can emulate it: everything but per-packet spraying."""
        return not self.per_packet

    @property
    def paths_given(self) -> bool:
        """The controller gives each flow its paths (placed or fixed), so a run checks the
        switch counters against them; not so for ECMP's hash or the reference's one switch."""
        return not (self.hashed or self.reference)

    @property
    def places_flows(self) -> bool:
        """The controller places each flow at every epoch (not hashed, fixed nor the
        reference): the strategies whose paths a run verifies against the counters."""
        return not (self.hashed or self.reference or self.fixed)

    @property
    def routed_by(self) -> str:
        """The strategy the controller and the model run: the reference's one switch
        forwards by its base rules, as ECMP's switches do with no choice to make; per-packet
        spraying decides nothing either (the model spreads every flow itself)."""
        return ECMP if self.reference or self.per_packet else self.strategy

    @property
    def enforced_by(self) -> str:
        """results.json's `enforcement` (emulated runs): switch, host, switch-hash (ECMP) or
        one switch."""
        if self.reference:
            return "one switch"
        return "switch-hash" if self.hashed else self.enforcement

    @property
    def run_dir(self) -> str:
        """The folder of this routing's run: 'ilp@host' -> 'ilp-at-host'."""
        return run_dir_name(self.name)


def run_dir_name(entry: str) -> str:
    """The folder of one routing's run: 'ilp@host' -> 'ilp-at-host'."""
    return entry.replace("@", "-at-")


def parse_entries(names: list[str]) -> list[RoutingEntry]:
    """Every entry of a `routing` list, in order."""
    return [RoutingEntry.parse(n) for n in names]

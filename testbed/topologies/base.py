"""What a topology kind is: the YAML keys it takes (with their bounds), how they become the
fabric model's FabricSpec, how it builds its graph (`check`, then `build` on a Topo, as
Mininet's Topo.build), and how the spec is written back, titled and drawn.

Pure data and code, no mininet. The kinds build from two Clos shapes (./tiers.py: leaves under
spines, or pods of leaves and aggs under planes of cores), each numbering its own hosts; the
layers every kind shares (servers' NVLink, planes, failures) are added after its build
(testbed/topologies/__init__.py). Bounds that every kind shares (hosts, hosts per leaf, link
rates) live here, once; the config (experiments/config) reads each Param with its typed
readers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..fabric_spec import FabricError, FabricSpec
from ..topo import MAX_HOSTS, MAX_HOSTS_PER_LEAF, Topo

#: Link rates, Mbit/s: 1 kbit/s .. 1 Tbit/s for `predict` (`run` shapes at most 1,000).
MIN_RATE_MBPS = 0.001
MAX_RATE_MBPS = 1_000_000.0
RATE_WHY = "Mbit/s; `run` shapes at most 1000"
#: Keys every kind takes for its failures: switch names, and pairs of adjacent switches.
FAILURE_KEYS = ("failed_switches", "failed_links")
#: Keys every kind takes for its servers (testbed/servers.py): GPUs per server, NVLink rate,
#: and the NIC's planes (testbed/planes.py; two-tier kinds only).
SERVER_KEYS = ("gpus_per_server", "nvlink_mbps", "planes")
__all__ = ["MAX_HOSTS", "MAX_HOSTS_PER_LEAF", "MAX_LEAVES_TOTAL", "MIN_RATE_MBPS",
           "MAX_RATE_MBPS", "Param", "Kind", "FabricError", "check_hosts", "check_leaves", "Built"]


class Built(Protocol):
    """What a kind draws from: a built fabric's names (testbed/fabric.py's Fabric)."""

    spec: FabricSpec
    hosts: list[str]
    leaves: list[str]
    spines: list[str]
    aggs: list[str]
    cores: list[str]
    servers: list[list[str]]
    planes: int


@dataclass(frozen=True)
class Param:
    """One integer size key (rates are Kind.rate_keys): bounds, default (None: required)."""

    key: str
    maximum: int
    why: str = ""
    minimum: int = 1
    default: int | None = None


class Kind:
    """A topology kind. Subclasses set `name`, `params`, `rate_keys` (link tier -> YAML key)
    and `extra_failure_keys`, and implement `spec`, `check`, `build`, `resolved`, `title` and
    `draw`."""

    name: str = ""
    params: tuple[Param, ...] = ()
    #: link tier (FabricSpec.rates_mbps' keys: host, spine, leaf_agg, agg_core) -> YAML key
    rate_keys: dict[str, str] = {}
    extra_failure_keys: tuple[str, ...] = ()
    #: link tiers whose rate key may be left out (the kind's spec says when it is needed)
    optional_rates: tuple[str, ...] = ()
    #: what the kind's switches above the leaves are called in messages
    upper_roles: str = "spine"

    @property
    def keys(self) -> set[str]:
        """Every key the kind's fabric section may hold."""
        return ({"topology", *FAILURE_KEYS, *SERVER_KEYS, *self.extra_failure_keys,
                 *self.rate_keys.values()}
                | {p.key for p in self.params})

    def rate_keys_of(self, spec: FabricSpec) -> dict[str, str]:  # noqa: ARG002 - per spec
        """Link tier -> YAML key, for this spec (a kind whose shape depends on its sizes
        overrides it)."""
        return self.rate_keys

    def spec(self, sizes: dict[str, int], rates: dict[str, float],
             failures: dict[str, Any]) -> FabricSpec:
        """The model's spec from the checked values; FabricError naming a key otherwise."""
        raise NotImplementedError

    def check(self, spec: FabricSpec) -> None:
        """The spec's sizes and rates can be built; FabricError naming the key otherwise."""
        raise NotImplementedError

    def build(self, topo: Topo, spec: FabricSpec) -> None:
        """Lay out the kind's switches, hosts and links on `topo` (checked first)."""
        raise NotImplementedError

    def has_planes(self, spec: FabricSpec) -> bool:  # noqa: ARG002 - per spec
        """Whether this spec can take NIC planes (testbed/planes.py copies two tiers)."""
        return False

    def resolved(self, spec: FabricSpec) -> dict:
        """The fabric section as the YAML gives it (it loads again to the same spec)."""
        raise NotImplementedError

    def title(self, spec: FabricSpec) -> str:
        raise NotImplementedError

    def draw(self, fabric: Built) -> str:
        raise NotImplementedError


#: Leaves in all: the model keeps a table over every leaf pair (routing/path_blocks.py's
#: PairBlocks, leaves^2 x 8 bytes: 2 GiB at 16,384; 65,536 leaves asked for 32 GiB).
MAX_LEAVES_TOTAL = 16_384


def check_leaves(n: int, key: str) -> None:
    """At most MAX_LEAVES_TOTAL leaves in all; FabricError naming `key` otherwise."""
    if n > MAX_LEAVES_TOTAL:
        raise FabricError(f"fabric.{key}: {n:,} leaves exceed {MAX_LEAVES_TOTAL:,} (the model's "
                          "table over leaf pairs takes leaves^2 x 8 bytes); use fewer pods or "
                          "leaves per pod, and more hosts per leaf")


def check_hosts(n: int, key: str) -> None:
    """At most MAX_HOSTS hosts in all; FabricError naming `key` otherwise."""
    if n > MAX_HOSTS:
        raise FabricError(f"fabric.{key}: {n:,} hosts exceed {MAX_HOSTS:,}")


def three_tier_failures(failures: dict[str, Any]) -> dict[str, tuple]:
    """failed_switches sorted without repeats; failed_links canonical (lower tier first),
    sorted, without repeats."""
    from ..fabric_spec import link_key
    return {"failed_switches": tuple(sorted(set(failures.get("failed_switches", ())))),
            "failed_links": tuple(sorted({link_key(*p)
                                          for p in failures.get("failed_links", ())}))}


def failed_lines(spec: FabricSpec) -> list[str]:
    """The drawing's line of failures, if any."""
    if spec.failed or spec.failed_links:
        return [f"  failed: switches {list(spec.failed)}, links "
                f"{[list(p) for p in spec.failed_links]}"]
    return []

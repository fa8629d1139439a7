"""What a topology kind is: the YAML keys it takes (with their bounds), how they become the
fabric model's FabricSpec, and how the spec is written back, titled and drawn.

Pure data and code, no mininet. The fabric model (testbed/fabric.py) is one Clos graph of two
tiers (leaves under spines) or three (pods of leaves and aggs under planes of cores), with
hosts numbered leaf by leaf or, for multi-NIC servers, server by server; a kind maps its own
keys onto that. Bounds that every kind shares (hosts, hosts per leaf, link rates) live here,
once; the config (experiments/config) reads each Param with its typed readers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..fabric import MAX_HOSTS, MAX_HOSTS_PER_LEAF, Fabric, FabricError, FabricSpec

#: Link rates, Mbit/s: 1 kbit/s .. 1 Tbit/s for `predict` (`run` shapes at most 1,000).
MIN_RATE_MBPS = 0.001
MAX_RATE_MBPS = 1_000_000.0
RATE_WHY = "Mbit/s; `run` shapes at most 1000"
#: Keys every kind takes for its failures: switch names, and pairs of adjacent switches.
FAILURE_KEYS = ("failed_switches", "failed_links")
#: Keys every kind takes for its servers (testbed/servers.py): GPUs per server, NVLink rate,
#: and the NIC's planes (testbed/planes.py; two-tier kinds only).
SERVER_KEYS = ("gpus_per_server", "nvlink_mbps", "planes")
__all__ = ["MAX_HOSTS", "MAX_HOSTS_PER_LEAF", "MIN_RATE_MBPS", "MAX_RATE_MBPS", "Param",
           "Kind", "FabricError", "check_hosts"]


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
    and `extra_failure_keys`, and implement `spec`, `resolved`, `title` and `draw`."""

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

    def resolved(self, spec: FabricSpec) -> dict:
        """The fabric section as the YAML gives it (it loads again to the same spec)."""
        raise NotImplementedError

    def title(self, spec: FabricSpec) -> str:
        raise NotImplementedError

    def draw(self, fabric: Fabric) -> str:
        raise NotImplementedError


def check_hosts(n: int, key: str) -> None:
    """At most MAX_HOSTS hosts in all; FabricError naming `key` otherwise."""
    if n > MAX_HOSTS:
        raise FabricError(f"fabric.{key}: {n:,} hosts exceed {MAX_HOSTS:,}")


def three_tier_failures(failures: dict[str, Any]) -> dict[str, tuple]:
    """failed_switches sorted without repeats; failed_links canonical (lower tier first),
    sorted, without repeats."""
    from ..fabric import link_key
    return {"failed_switches": tuple(sorted(set(failures.get("failed_switches", ())))),
            "failed_links": tuple(sorted({link_key(*p)
                                          for p in failures.get("failed_links", ())}))}


def failed_lines(spec: FabricSpec) -> list[str]:
    """The drawing's line of failures, if any."""
    if spec.failed or spec.failed_links:
        return [f"  failed: switches {list(spec.failed)}, links "
                f"{[list(p) for p in spec.failed_links]}"]
    return []

"""Model presets: data-parallel training jobs of the paper's three LLMs, as JobSpecs.

Pure code. A model is split over `tp x pp` GPUs (one *copy*); `dp` copies train in data
parallel. GPU i of every copy holds the same shard of the parameters, so GPU i of the dp copies
forms ring i, and each ring all-reduces that shard's gradient every iteration:

    bytes per ring  = 4 bytes (fp32 gradient) x params / GPUs per copy        (x scale_bytes)
    bytes per flow  = bytes per ring / dp   (one ring step; 2(dp-1) steps per all-reduce)

e.g. LLaMA2-70B, dp = 4: 4 x 70e9 / 128 / 4 = 546,875,000 bytes per flow.

Compute time between iterations, from A100 peak FLOPs (312 TFLOP/s, dense BF16):

    compute_s = 6 x params x TOKENS_PER_COPY / (GPUs per copy x 312e12)

6 FLOPs per parameter per token (forward + backward); TOKENS_PER_COPY = 256,000 tokens per copy
per iteration, our choice (the paper's token count is not public), made so that LLaMA2-70B gives
the ~2.69 s of the notes (6 x 70e9 x 256e3 / (128 x 312e12) = 2.692 s); GPT-3 175B gives 13.46 s
and BLOOM 176B 18.05 s. Each copy processes its own tokens, so compute_s does not depend on dp
(weak scaling). `compute_s` in the YAML overrides it.

Placement: a host is one GPU's NIC. `random-tors` draws whole leaves at random (seeded, from
those no other job uses), ceil(GPUs / hosts_per_leaf) of them, and fills them in draw order, leaf
by leaf; `fragmented` draws single free hosts anywhere, `packed` takes the lowest-numbered free
ones (see `place`). Copy c's GPU i is the (c x GPUs per copy + i)-th placed host. Explicit
`hosts` lists give the same mapping over the listed hosts.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

from testbed.fabric import Fabric
from traffic.collectives import Collective, JobSpec, WorkloadError

#: A100 dense BF16 peak, FLOP/s.
A100_FLOPS = 312e12
#: Tokens each model copy processes per iteration (see the module docstring).
TOKENS_PER_COPY = 256_000
#: Bytes of gradient per parameter (fp32).
GRADIENT_BYTES_PER_PARAM = 4


@dataclass(frozen=True)
class ModelPreset:
    """One LLM's parallelism: `tp` x `pp` GPUs per copy, `params` parameters."""

    name: str
    params: float
    tp: int
    pp: int

    @property
    def gpus_per_copy(self) -> int:
        return self.tp * self.pp

    def ring_bytes(self, scale_bytes: float = 1.0) -> int:
        """Bytes each ring all-reduces per iteration: 4 x params / GPUs per copy x scale."""
        return int(round(GRADIENT_BYTES_PER_PARAM * self.params / self.gpus_per_copy * scale_bytes))

    def flow_bytes(self, dp: int, scale_bytes: float = 1.0) -> float:
        """Bytes of one ring step's flow (ring bytes / dp), as the paper counts them."""
        return self.ring_bytes(scale_bytes) / dp

    def compute_s(self, tokens_per_copy: int = TOKENS_PER_COPY,
                  flops_per_gpu: float = A100_FLOPS) -> float:
        """6 x params x tokens / (GPUs per copy x FLOP/s), seconds per iteration."""
        return 6.0 * self.params * tokens_per_copy / (self.gpus_per_copy * flops_per_gpu)


MODELS: dict[str, ModelPreset] = {
    "gpt3-175b": ModelPreset("gpt3-175b", 175e9, tp=8, pp=8),      # 64 GPUs per copy
    "bloom-176b": ModelPreset("bloom-176b", 176e9, tp=4, pp=12),   # 48 GPUs per copy
    "llama2-70b": ModelPreset("llama2-70b", 70e9, tp=8, pp=16),    # 128 GPUs per copy
}


def get_model(name: str, key: str = "model") -> ModelPreset:
    try:
        return MODELS[name]
    except (KeyError, TypeError):
        raise WorkloadError(f"{key}: unknown model {name!r}; choose from {sorted(MODELS)}") from None


def leaves_of(fabric: Fabric, hosts: list[str]) -> set[str]:
    """The leaves `hosts` sit on (raises WorkloadError for an unknown host)."""
    out = set()
    for h in hosts:
        if h not in fabric.graph or fabric.graph.nodes[h].get("role") != "host":
            raise WorkloadError(f"unknown host {h!r} (h1..h{len(fabric.hosts)})")
        out.add(fabric.leaf_of(h))
    return out


def rings_of(hosts: list[str], gpus_per_copy: int, dp: int) -> list[list[str]]:
    """Ring i = GPU i of every copy, where copy c's GPU i is hosts[c x gpus_per_copy + i]."""
    return [[hosts[c * gpus_per_copy + i] for c in range(dp)] for i in range(gpus_per_copy)]


PLACEMENTS = ("random-tors", "fragmented", "packed", "servers")


def model_job(name: str, model: str, dp: int, fabric: Fabric, rng: random.Random,
              used: set[str], iterations: int = 11, start_s: float = 0.0,
              compute_s: float | None = None, scale_bytes: float = 1.0,
              hosts: list[str] | None = None, placement: str = "random-tors") -> JobSpec:
    """A data-parallel job of `model` with `dp` copies, as a JobSpec whose groups are the rings.

    hosts=None places it by `placement` (see `place`) on hosts not in `used`; explicit `hosts`
    (at least GPUs-per-copy x dp of them, extra ones unused) are taken as given. Either way
    the hosts it takes are added to `used`. Raises WorkloadError naming the YAML key."""
    key = f"jobs.{name}"
    preset = get_model(model, f"{key}.model")
    if isinstance(dp, bool) or not isinstance(dp, int) or dp < 2:
        raise WorkloadError(f"{key}.dp: must be an integer >= 2 (the ring size), got {dp!r}")
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise WorkloadError(f"{key}.iterations: must be a positive integer, got {iterations!r}")
    if not isinstance(start_s, (int, float)) or start_s < 0:
        raise WorkloadError(f"{key}.start_s: must be a number >= 0, got {start_s!r}")
    if compute_s is not None and (not isinstance(compute_s, (int, float)) or compute_s < 0):
        raise WorkloadError(f"{key}.compute_s: must be a number >= 0, got {compute_s!r}")
    if not isinstance(scale_bytes, (int, float)) or not scale_bytes > 0:
        raise WorkloadError(f"{key}.scale_bytes: must be a positive number, got {scale_bytes!r}")
    gpus = preset.gpus_per_copy * dp
    if hosts is None:
        placed = place(fabric, gpus, placement, rng, used, f"{model} x dp={dp}", f"{key}.dp")
    else:
        if len(hosts) < gpus:
            raise WorkloadError(f"{key}.hosts: {model} x dp={dp} needs {gpus} hosts, "
                                f"{len(hosts)} given")
        if len(set(hosts)) != len(hosts):
            raise WorkloadError(f"{key}.hosts: a host is listed twice")
        try:
            leaves_of(fabric, hosts)
        except WorkloadError as e:
            raise WorkloadError(f"{key}.hosts: {e}") from None
        used.update(hosts)
        placed = list(hosts[:gpus])
    ring_bytes = preset.ring_bytes(scale_bytes)
    if ring_bytes < dp:
        raise WorkloadError(f"{key}.scale_bytes: {scale_bytes} leaves {ring_bytes} bytes per "
                            f"ring, fewer than the ring size {dp}")
    return JobSpec(
        name=name, collective=Collective.ALLREDUCE,
        groups=rings_of(placed, preset.gpus_per_copy, dp), size_bytes=ring_bytes,
        iterations=iterations, start_s=float(start_s),
        compute_s=float(preset.compute_s() if compute_s is None else compute_s))


def place(fabric: Fabric, gpus: int, placement: str, rng: random.Random, used: set[str],
          what: str = "the job", key: str = "placement") -> list[str]:
    """`gpus` hosts not in `used`, in rank order, and add them to `used`:

    random-tors  whole leaves drawn at random from those with no used host, filled in draw
                 order (the leaves' leftover hosts are reserved too: no other job shares them)
    fragmented   hosts drawn at random from all free hosts of the fabric, so that jobs share
                 leaves, aggregation and core links (a busy scheduler's leftovers)
    packed       the lowest-numbered free hosts, leaf after leaf (a simple first-fit scheduler)
    servers      whole multi-NIC servers drawn at random from the free ones, each filled NIC
                 by NIC (a rail-optimized fabric: GPU i of a server on its rail i)
    """
    if placement == "servers":
        return _place_servers(fabric, gpus, rng, used, what, key)
    if placement == "random-tors":
        per_leaf = fabric.spec.hosts_per_leaf
        k = math.ceil(gpus / per_leaf)
        free = [leaf for leaf in fabric.leaves if not used.intersection(_hosts_on(fabric, leaf))]
        if k > len(free):
            raise WorkloadError(
                f"{key}: {what} needs {gpus} GPUs = {k} whole leaves of "
                f"{per_leaf} hosts, but only {len(free)} of {len(fabric.leaves)} leaves are free")
        chosen = rng.sample(free, k)
        on_leaves = [h for leaf in chosen for h in _hosts_on(fabric, leaf)]
        used.update(on_leaves)
        return on_leaves[:gpus]
    if placement not in PLACEMENTS:
        raise WorkloadError(f"placement: unknown {placement!r}; choose from {list(PLACEMENTS)}")
    free_hosts = [h for h in fabric.hosts if h not in used]
    if gpus > len(free_hosts):
        raise WorkloadError(f"{key}: {what} needs {gpus} GPUs, but only {len(free_hosts)} of "
                            f"{len(fabric.hosts)} hosts are free")
    placed = (rng.sample(free_hosts, gpus) if placement == "fragmented"
              else free_hosts[:gpus])
    used.update(placed)
    return placed


def _place_servers(fabric: Fabric, gpus: int, rng: random.Random, used: set[str], what: str,
                   key: str) -> list[str]:
    """Whole servers at random from those with no used host, NIC by NIC."""
    if not fabric.servers:
        raise WorkloadError(f"{key}: placement servers needs a fabric of multi-NIC servers "
                            "(topology: rail-optimized); choose random-tors, fragmented or "
                            "packed")
    per = len(fabric.servers[0])
    k = math.ceil(gpus / per)
    free = [s for s in fabric.servers if not used.intersection(s)]
    if k > len(free):
        raise WorkloadError(f"{key}: {what} needs {gpus} GPUs = {k} whole servers of {per} "
                            f"NICs, but only {len(free)} of {len(fabric.servers)} are free")
    hosts = [h for s in rng.sample(free, k) for h in s]
    used.update(hosts)
    return hosts[:gpus]


def _hosts_on(fabric: Fabric, leaf: str) -> list[str]:
    return fabric.hosts_on(leaf)

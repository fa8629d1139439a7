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
by leaf: copy c's GPU i is the (c x GPUs per copy + i)-th host. Explicit `hosts` lists give the
same mapping over the listed hosts.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

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


def leaves_needed(model: ModelPreset, dp: int, hosts_per_leaf: int) -> int:
    return math.ceil(model.gpus_per_copy * dp / hosts_per_leaf)


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


def model_job(name: str, model: str, dp: int, fabric: Fabric, rng: random.Random,
              used_leaves: set[str], iterations: int = 11, start_s: float = 0.0,
              compute_s: float | None = None, scale_bytes: float = 1.0,
              hosts: list[str] | None = None) -> JobSpec:
    """A data-parallel job of `model` with `dp` copies, as a JobSpec whose groups are the rings.

    hosts=None places it with `random-tors`: whole leaves drawn with `rng` from those not in
    `used_leaves`; the leaves it takes are added to `used_leaves` (so later jobs avoid them).
    With explicit `hosts` (at least GPUs-per-copy x dp of them, extra ones unused) their
    leaves are added to `used_leaves` too. Raises WorkloadError naming the YAML key."""
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
        per_leaf = fabric.spec.hosts_per_leaf
        k = leaves_needed(preset, dp, per_leaf)
        free = [leaf for leaf in fabric.leaves if leaf not in used_leaves]
        if k > len(free):
            raise WorkloadError(
                f"{key}.dp: {model} x dp={dp} needs {gpus} GPUs = {k} whole leaves of "
                f"{per_leaf} hosts, but only {len(free)} of {len(fabric.leaves)} leaves are free")
        chosen = rng.sample(free, k)
        placed = [h for leaf in chosen for h in _hosts_on(fabric, leaf)][:gpus]
        used_leaves.update(chosen)
    else:
        if len(hosts) < gpus:
            raise WorkloadError(f"{key}.hosts: {model} x dp={dp} needs {gpus} hosts, "
                                f"{len(hosts)} given")
        if len(set(hosts)) != len(hosts):
            raise WorkloadError(f"{key}.hosts: a host is listed twice")
        try:
            used_leaves.update(leaves_of(fabric, hosts))
        except WorkloadError as e:
            raise WorkloadError(f"{key}.hosts: {e}") from None
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


def _hosts_on(fabric: Fabric, leaf: str) -> list[str]:
    i = fabric.index_of(leaf)
    h = fabric.spec.hosts_per_leaf
    return [f"h{(i - 1) * h + s}" for s in range(1, h + 1)]


_MODEL_KEYS = {"name", "model", "dp", "placement", "hosts", "iterations", "start_s",
               "compute_s", "scale_bytes"}
_EXPLICIT_KEYS = {"name", "collective", "hosts", "groups", "size_bytes", "iterations",
                  "start_s", "compute_s", "scale_bytes"}


def specs_from_entries(entries: list[dict[str, Any]], fabric: Fabric,
                       seed: int = 0) -> list[JobSpec]:
    """Turn the YAML `jobs:` list into JobSpecs (a convenience for config loaders).

    Model entries: {name, model, dp, placement: random-tors | hosts: [...], iterations, start_s,
    compute_s?, scale_bytes?}. Explicit entries: {name, collective, hosts | groups,
    size_bytes, iterations?, start_s?, compute_s?, scale_bytes?}. Explicit jobs are placed
    first; their leaves are never drawn for random-tors jobs. Random draws use
    random.Random(seed), in the order the entries appear."""
    if not isinstance(entries, list) or not entries:
        raise WorkloadError("jobs: must be a non-empty list")
    used: set[str] = set()
    specs: dict[int, JobSpec] = {}
    names: set[str] = set()
    for e in entries:
        if not isinstance(e, dict) or not isinstance(e.get("name"), str) or not e["name"]:
            raise WorkloadError("jobs: every job needs a name")
        if e["name"] in names:
            raise WorkloadError(f"jobs.{e['name']}: duplicate job name")
        names.add(e["name"])
    rng = random.Random(seed)
    order = sorted(range(len(entries)), key=lambda k: "model" in entries[k])  # explicit first
    for k in order:
        e = entries[k]
        key = f"jobs.{e['name']}"
        if "model" in e:
            unknown = set(e) - _MODEL_KEYS
            if unknown:
                raise WorkloadError(f"{key}: unknown keys {sorted(unknown)}")
            placement = e.get("placement", "random-tors" if "hosts" not in e else "explicit")
            if placement not in ("random-tors", "explicit"):
                raise WorkloadError(f"{key}.placement: 'random-tors' or 'explicit', "
                                    f"got {placement!r}")
            if placement == "explicit" and "hosts" not in e:
                raise WorkloadError(f"{key}.hosts: explicit placement needs a host list")
            specs[k] = model_job(
                e["name"], e["model"], e.get("dp"), fabric, rng, used,
                iterations=e.get("iterations", 11), start_s=e.get("start_s", 0.0),
                compute_s=e.get("compute_s"), scale_bytes=e.get("scale_bytes", 1.0),
                hosts=e.get("hosts") if placement == "explicit" else None)
        else:
            specs[k] = _explicit_job(e, fabric, used)
    return [specs[k] for k in range(len(entries))]


def _explicit_job(e: dict[str, Any], fabric: Fabric, used: set[str]) -> JobSpec:
    key = f"jobs.{e['name']}"
    unknown = set(e) - _EXPLICIT_KEYS
    if unknown:
        raise WorkloadError(f"{key}: unknown keys {sorted(unknown)}")
    try:
        coll = Collective(e.get("collective"))
    except ValueError:
        raise WorkloadError(f"{key}.collective: choose from "
                            f"{[c.value for c in Collective]}, got {e.get('collective')!r}") from None
    if "groups" in e:
        groups = e["groups"]
        if not isinstance(groups, list) or not all(isinstance(g, list) for g in groups):
            raise WorkloadError(f"{key}.groups: must be a list of host lists")
    elif isinstance(e.get("hosts"), list):
        groups = [e["hosts"]]
    else:
        raise WorkloadError(f"{key}.hosts: must be a list of host names")
    try:
        used.update(leaves_of(fabric, [h for g in groups for h in g]))
    except WorkloadError as err:
        raise WorkloadError(f"{key}.hosts: {err}") from None
    size = e.get("size_bytes")
    if isinstance(size, bool) or not isinstance(size, (int, float)) or size < 1:
        raise WorkloadError(f"{key}.size_bytes: must be a positive number, got {size!r}")
    scale = e.get("scale_bytes", 1.0)
    if not isinstance(scale, (int, float)) or not scale > 0:
        raise WorkloadError(f"{key}.scale_bytes: must be a positive number, got {scale!r}")
    iterations = e.get("iterations", 1)
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise WorkloadError(f"{key}.iterations: must be a positive integer, got {iterations!r}")
    start_s = e.get("start_s", 0.0)
    compute_s = e.get("compute_s", 0.0)
    for k2, v in (("start_s", start_s), ("compute_s", compute_s)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise WorkloadError(f"{key}.{k2}: must be a number >= 0, got {v!r}")
    return JobSpec(name=e["name"], collective=coll, groups=[list(g) for g in groups],
                   size_bytes=max(1, int(round(size * scale))), iterations=iterations,
                   start_s=float(start_s), compute_s=float(compute_s))

"""SimAI / ASTRA-sim 1.0 workload text files in, as JobSpecs.

Pure code. The format (what SimAI's AICB writes and ASTRA-sim 1.0 reads):

    HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 1 pp: 1 vpp: 8 ga: 1 ...
    2
    attn  -1 556000 ALLREDUCE 16777216 1000 NONE 0 2000 ALLREDUCE_DP 8388608 100
    mlp   -1 ...

line 1: the parallelism kind and `key: value` pairs; line 2: the number of layers; then one line
per layer of 12 columns: name, a reserved -1, forward compute time, forward comm type, forward
comm size (bytes), input-gradient compute time, its comm type and size, weight-gradient
compute time, its comm type and size, and the weight update time. Times are in ns (SimAI;
ASTRA-sim's cycles at 1 GHz).

Groups from the header (Megatron's rank order, tensor fastest): tp = model_parallel_NPU_group,
pp, dp = all_gpus / (tp x pp); rank = stage x (dp x tp) + replica x tp + t.

    all_gpus 8, tp 2, pp 1 (dp 4): TP groups [[0, 1], [2, 3], [4, 5], [6, 7]],
                                   DP groups [[0, 2, 4, 6], [1, 3, 5, 7]]
    ep 2 splits each DP group into EP groups of 2 consecutive members: [[0, 2], [4, 6], ...],
    and _DP_EP is the DP group across them: [[0, 4], [2, 6], [1, 5], [3, 7]]

A comm type is ALLREDUCE, ALLGATHER, REDUCESCATTER or ALLTOALL, optionally with a group suffix
_TP, _DP, _EP or _DP_EP; without one, forward and input-gradient comms run in the TP groups
and weight-gradient comms in the DP groups (ASTRA-sim's hybrid transformer); NONE sends
nothing. Every comm becomes one JobSpec over all groups of its kind, starting when the
iteration's compute and earlier comms (at their non-blocking time) have run: forward through
the layers, then backward (input gradient, weight gradient) in reverse. Pipeline stages run
every layer's comms in their own groups at once (the file does not say which layers a stage
holds). Errors are SimaiError naming the file and line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from traffic import files
from traffic.collectives import Collective, JobSpec, ideal_cct_s

KINDS = {"ALLREDUCE": Collective.ALLREDUCE, "ALLGATHER": Collective.ALLGATHER,
         "REDUCESCATTER": Collective.REDUCE_SCATTER, "ALLTOALL": Collective.ALLTOALL}
SUFFIXES = ("_DP_EP", "_TP", "_DP", "_EP")
HEADER_KINDS = ("DATA", "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA", "HYBRID_TRANSFORMER",
                "HYBRID_TRANSFORMER_FWD_IN_BCKWD", "HYBRID_DLRM", "HYBRID_DLRM_ENHANCED")
MAX_LAYERS = 100_000
MAX_GPUS = 65_536
MAX_BYTES = 2 ** 40
MAX_NS = 86_400 * 10 ** 9
_NAME_BAD = re.compile(r"[^A-Za-z0-9._-]")


class SimaiError(ValueError):
    """A workload file we cannot read; the message names the file and line."""


@dataclass(frozen=True)
class Parallelism:
    """The header's degrees; `groups(kind)` lists each group's ranks."""

    tp: int
    pp: int
    ep: int
    gpus: int

    @property
    def dp(self) -> int:
        return self.gpus // (self.tp * self.pp)

    def rank(self, stage: int, replica: int, t: int) -> int:
        return stage * self.dp * self.tp + replica * self.tp + t

    def groups(self, kind: str) -> list[list[int]]:
        tp, pp, dp, ep = self.tp, self.pp, self.dp, self.ep
        if kind == "TP":
            return [[self.rank(s, d, t) for t in range(tp)] for s in range(pp)
                    for d in range(dp)]
        if kind == "DP":
            return [[self.rank(s, d, t) for d in range(dp)] for s in range(pp)
                    for t in range(tp)]
        if kind == "EP":
            return [[self.rank(s, d, t) for d in range(e, e + ep)] for s in range(pp)
                    for t in range(tp) for e in range(0, dp, ep)]
        return [[self.rank(s, d, t) for d in range(i, dp, ep)] for s in range(pp)
                for t in range(tp) for i in range(ep)]                       # DP_EP


def _header(line: str, where: str) -> tuple[str, Parallelism]:
    parts = line.split()
    if not parts or parts[0] not in HEADER_KINDS:
        raise SimaiError(f"{where}: expected a parallelism kind ({', '.join(HEADER_KINDS)}) "
                         f"first, got {parts[0][:40] if parts else 'nothing'!r}")
    keys: dict[str, int] = {}
    rest = parts[1:]
    if len(rest) % 2:
        raise SimaiError(f"{where}: expected `key: value` pairs after {parts[0]}")
    for k, v in zip(rest[::2], rest[1::2]):
        if not k.endswith(":"):
            raise SimaiError(f"{where}: expected `key: value` pairs, got {k[:40]!r}")
        try:
            keys[k[:-1]] = int(v)
        except ValueError:
            raise SimaiError(f"{where}: {k[:-1]} must be an integer, got {v[:40]!r}") from None
    gpus = keys.get("all_gpus")
    tp, pp, ep = keys.get("model_parallel_NPU_group", 1), keys.get("pp", 1), keys.get("ep", 1)
    if gpus is None or not 1 <= gpus <= MAX_GPUS:
        raise SimaiError(f"{where}: all_gpus must be given, from 1 to {MAX_GPUS:,}")
    for name, v in (("model_parallel_NPU_group", tp), ("pp", pp), ("ep", ep)):
        if v < 1:
            raise SimaiError(f"{where}: {name} must be at least 1, got {v}")
    if gpus % (tp * pp):
        raise SimaiError(f"{where}: all_gpus {gpus} is not a multiple of "
                         f"model_parallel_NPU_group x pp = {tp * pp}")
    par = Parallelism(tp, pp, ep, gpus)
    if par.dp % ep:
        raise SimaiError(f"{where}: ep {ep} does not divide the data-parallel degree "
                         f"{par.dp} (all_gpus / (model_parallel_NPU_group x pp))")
    return parts[0], par


def _comm(kind: str, phase: str, where: str) -> tuple[Collective, str] | None:
    if kind == "NONE":
        return None
    for suffix in SUFFIXES:
        if kind.endswith(suffix) and kind[:-len(suffix)] in KINDS:
            return KINDS[kind[:-len(suffix)]], suffix[1:]
    if kind in KINDS:
        return KINDS[kind], "DP" if phase == "wg" else "TP"
    raise SimaiError(f"{where}: unknown comm type {kind[:40]!r}; choose from NONE, "
                     f"{', '.join(KINDS)} (optionally with {', '.join(SUFFIXES)})")


def _num(v: str, what: str, where: str, hi: int) -> int:
    try:
        x = int(v)
    except ValueError:
        raise SimaiError(f"{where}: {what} must be an integer, got {v[:40]!r}") from None
    if not 0 <= x <= hi:
        raise SimaiError(f"{where}: {what} must be from 0 to {hi:,}, got {x}")
    return x


@dataclass
class Layer:
    name: str
    line: int
    compute_ns: dict[str, int]             # fwd, ig, wg
    comm: dict[str, tuple[Collective, str, int] | None]
    update_ns: int


def read_workload(path: str | Path) -> tuple[Parallelism, list[Layer]]:
    """Parse a workload file; SimaiError (file:line: ...) on bad input."""
    p = Path(path)
    try:
        lines = files.read_text(p).splitlines()
    except files.InputFileError as e:
        raise SimaiError(str(e)) from None
    if len(lines) < 2:
        raise SimaiError(f"{p}: expected a header line and a layer count (truncated?)")
    _, par = _header(lines[0], f"{p}:1")
    count = _num(lines[1].strip(), "the layer count", f"{p}:2", MAX_LAYERS)
    body = [(n, ln) for n, ln in enumerate(lines[2:], start=3) if ln.strip()]
    if len(body) != count:
        raise SimaiError(f"{p}:2: says {count} layers, the file has {len(body)} (truncated?)")
    layers = []
    for n, ln in body:
        where = f"{p}:{n}"
        c = ln.split()
        if len(c) != 12:
            raise SimaiError(f"{where}: expected 12 columns (name, -1, then compute, comm "
                             "type, comm size for fwd, ig and wg, and the update time), got "
                             f"{len(c)}")
        compute, comm = {}, {}
        for i, phase in enumerate(("fwd", "ig", "wg")):
            compute[phase] = _num(c[2 + 3 * i], f"{phase} compute time", where, MAX_NS)
            kind = _comm(c[3 + 3 * i], phase, where)
            size = _num(c[4 + 3 * i], f"{phase} comm size", where, MAX_BYTES)
            comm[phase] = None if kind is None or size == 0 else (*kind, size)
        layers.append(Layer(c[0], n, compute, comm, _num(c[11], "update time", where, MAX_NS)))
    return par, layers


def job_specs(path: str | Path, hosts: list[str], host_link_mbps: float,
              ns: float = 1e-9) -> list[JobSpec]:
    """The workload's comms of one iteration as JobSpecs on `hosts` (rank r -> hosts[r])."""
    p = Path(path)
    par, layers = read_workload(p)
    if par.gpus > len(hosts):
        raise SimaiError(f"{p}:1: all_gpus {par.gpus} is more than the fabric's "
                         f"{len(hosts)} hosts")
    specs: list[JobSpec] = []
    t = 0.0
    order = ([(ly, "fwd") for ly in layers]
             + [(ly, ph) for ly in reversed(layers) for ph in ("ig", "wg")])
    for ly, phase in order:
        t += ly.compute_ns[phase] * ns
        c = ly.comm[phase]
        if c is None:
            continue
        kind, group, size = c
        groups = [[hosts[r] for r in g] for g in par.groups(group) if len(g) > 1]
        if not groups:
            continue                     # groups of one rank send nothing
        if size < len(groups[0]):
            raise SimaiError(f"{p}:{ly.line}: {phase} comm size {size} is smaller than its "
                             f"group ({len(groups[0])} ranks)")
        name = f"l{len(specs)}-" + _NAME_BAD.sub("_", ly.name)[:40] + f"-{phase}"
        spec = JobSpec(name, kind, groups, size, start_s=t)
        specs.append(spec)
        t += ideal_cct_s(spec, host_link_mbps)
    return specs

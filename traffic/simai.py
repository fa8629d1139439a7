"""SimAI / AICB / ASTRA-sim 1.0 workload text files in, as JobSpecs on streams: pure code.

The format (what AICB writes, SimAI and ASTRA-sim 1.0 read; their `Workload.cc` is the
reference for every rule here):

    HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 1 pp: 1 ... all_gpus: 8
    2
    attn  -1 556000 ALLREDUCE 16777216 1000 NONE 0 2000 ALLREDUCE_DP 8388608 100

line 1: the parallelism kind, then header fields: `key: value` pairs (model_parallel_NPU_group,
ep, pp, vpp, ga, all_gpus, DLRM_LAST_BOTTOM_LAYER), `checkpoints: N l1 .. lN` and
`checkpoint_initiates: N l1 .. lN` lists, `pp_comm N` (with or without a colon), and
ASTRA-sim 1.0's bare forms `HYBRID_DLRM 4` (the last bottom layer) and `HYBRID_TRANSFORMER 4`
(the model-parallel group); other `key: value` pairs are ignored, as SimAI ignores them.
line 2: the number of layers; then one line per layer of 12 columns: name, a reserved -1,
then compute time, comm type and comm size (bytes) for the forward pass, the input gradient
and the weight gradient, then the update time; HYBRID_CUSTOMIZED adds a 13th column, the
layer's own kind. Times are cycles of ASTRA-sim's and SimAI's clock (CLOCK_PERIOD 1 ns:
1 GHz).

Groups (Megatron order, tensor fastest): tp = model_parallel_NPU_group, pp, dp = all_gpus /
(tp x pp), ep splits each DP group (see `Parallelism.groups`). A comm type is ALLREDUCE,
ALLGATHER, REDUCESCATTER, ALLTOALL or ALLREDUCEALLTOALL (an all-reduce, then an all-to-all
on the same stream), with an optional _TP, _DP, _EP or _DP_EP suffix; without one the kind
decides, as ASTRA-sim 1.0's involved dimensions do: the transformer kinds put forward and
input-gradient comms in TP groups and weight-gradient comms in DP groups; DATA, MICRO and
DLRM put weight-gradient comms over all ranks (and DLRM's first layer all of its comms);
MODEL and DISTRIBUTED_INFERENCE forward and input-gradient comms over all ranks;
HYBRID_DATA_MODEL model comms in groups of `dim0` consecutive ranks (topology dimension 0)
and data comms across them, HYBRID_MODEL_DATA the other way round. NONE and BROADCAST
(which SimAI reads as no comm) send nothing; neither does a comm smaller than its group (an
AICB placeholder of 1 byte): each is counted in `Notes.skipped`.

Which comms a pass issues, in what order, and which ones the compute waits for follow each
kind's `iterate_*` in Workload.cc (traffic/simai_passes.py, with `job_specs`). Every group kind is one stream.
With pp > 1 and pp_comm bytes, a forward pipeline send (stage i -> i+1, the compute waits)
follows the forward pass and a backward one (reverse) the backward pass; pp > 1 without
pp_comm sends none, as SimAI (which warns of a format mismatch and adds no pipeline time),
with a warning. A transformer header without model_parallel_NPU_group is read as 1, with a
warning that counts the model-parallel collectives so left out. vpp and ga are read and not
modelled. Errors are SimaiError naming the file and line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from traffic import files
from traffic.collectives import Collective

KINDS = {"ALLREDUCE": (Collective.ALLREDUCE,), "ALLGATHER": (Collective.ALLGATHER,),
         "REDUCESCATTER": (Collective.REDUCE_SCATTER,), "ALLTOALL": (Collective.ALLTOALL,),
         "ALLREDUCEALLTOALL": (Collective.ALLREDUCE, Collective.ALLTOALL)}
NO_TRAFFIC = ("NONE", "BROADCAST")
SUFFIXES = ("_DP_EP", "_TP", "_DP", "_EP")
HEADER_KINDS = ("DATA", "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA", "HYBRID_TRANSFORMER",
                "HYBRID_TRANSFORMER_FWD_IN_BCKWD", "HYBRID_DLRM", "HYBRID_DLRM_ENHANCED",
                "HYBRID_CUSTOMIZED", "MICRO", "DISTRIBUTED_INFERENCE")
TRANSFORMERS = ("HYBRID_TRANSFORMER", "HYBRID_TRANSFORMER_FWD_IN_BCKWD")
DLRMS = ("HYBRID_DLRM", "HYBRID_DLRM_ENHANCED")
INT_KEYS = {"model_parallel_NPU_group": "tp", "ep": "ep", "pp": "pp", "vpp": "vpp", "ga": "ga",
            "all_gpus": "gpus", "DLRM_LAST_BOTTOM_LAYER": "last_bottom", "pp_comm": "pp_comm"}
LIST_KEYS = {"checkpoints": "checkpoints", "checkpoint_initiates": "initiates"}
MAX_LAYERS = 100_000
MAX_GPUS = 65_536
MAX_BYTES = 2 ** 40
MAX_NS = 86_400 * 10 ** 9
#: ASTRA-sim's and SimAI's CLOCK_PERIOD (ns): a cycle of the files' compute times.
CYCLE_S = 1e-9
_INT = re.compile(r"-?\d+")


class SimaiError(ValueError):
    """A workload file we cannot read; the message names the file and line."""


@dataclass(frozen=True)
class Parallelism:
    """The degrees; `groups(kind)` lists each group's ranks. dim0: topology dimension 0 (the
    HYBRID_DATA_MODEL / HYBRID_MODEL_DATA split)."""

    tp: int
    pp: int
    ep: int
    gpus: int
    dim0: int = 1

    @property
    def dp(self) -> int:
        return self.gpus // (self.tp * self.pp)

    def rank(self, stage: int, replica: int, t: int) -> int:
        return stage * self.dp * self.tp + replica * self.tp + t

    def groups(self, kind: str) -> list[list[int]]:
        tp, pp, dp, ep = self.tp, self.pp, self.dp, self.ep
        if kind == "ALL":
            return [list(range(self.gpus))]
        if kind in ("DIM0", "DIM0X"):
            d, n = self.dim0, self.gpus
            return ([list(range(i, i + d)) for i in range(0, n, d)] if kind == "DIM0"
                    else [list(range(i, n, d)) for i in range(d)])
        if kind == "PP":
            return [[self.rank(s, d, t) for s in range(pp)] for d in range(dp)
                    for t in range(tp)]
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


@dataclass
class Header:
    """Line 1: the kind and the fields read from it (None: not given)."""

    kind: str
    ints: dict[str, int] = field(default_factory=dict)
    lists: dict[str, list[int]] = field(default_factory=dict)


@dataclass
class Layer:
    name: str
    line: int
    compute_ns: dict[str, int]                 # fwd, ig, wg (cycles = ns)
    comm: dict[str, tuple[str, str | None, int]]  # phase -> (type, group or None, bytes)
    update_ns: int
    kind: str | None = None                    # HYBRID_CUSTOMIZED: the layer's own kind


@dataclass
class Workload:
    header: Header
    par: Parallelism
    layers: list[Layer]
    path: Path
    #: layers the count says but the file lacks: SimAI reads them as empty (no compute, no
    #: comm), and so do we (AICB's L65B-M1-C05 says 839 and lists 33)
    missing: int = 0


def _int(v: str, what: str, where: str, lo: int = 0, hi: int = MAX_BYTES) -> int:
    if not _INT.fullmatch(v):
        raise SimaiError(f"{where}: {what} must be an integer, got {v[:40]!r}")
    x = int(v)
    if not lo <= x <= hi:
        raise SimaiError(f"{where}: {what} must be from {lo:,} to {hi:,}, got {x:,}")
    return x


def _header(line: str, where: str) -> Header:
    toks = line.split()
    if not toks or toks[0] not in HEADER_KINDS:
        raise SimaiError(f"{where}: expected a parallelism kind ({', '.join(HEADER_KINDS)}) "
                         f"first, got {toks[0][:40] if toks else 'nothing'!r}")
    h = Header(toks[0])
    i = 1
    if len(toks) > 1 and _INT.fullmatch(toks[1]):           # ASTRA-sim 1.0's bare number
        key = "last_bottom" if h.kind in DLRMS else "tp" if h.kind in TRANSFORMERS else None
        if key is None:
            raise SimaiError(f"{where}: a bare number after {h.kind} means nothing to it "
                             "(only HYBRID_DLRM's last bottom layer, HYBRID_TRANSFORMER's "
                             "model-parallel group)")
        h.ints[key] = _int(toks[1], key, where, 0, MAX_LAYERS)
        i = 2
    while i < len(toks):
        key = toks[i].rstrip(":")
        if i + 1 >= len(toks):
            raise SimaiError(f"{where}: {toks[i][:40]!r} has no value (truncated header?)")
        if key in LIST_KEYS:
            n = _int(toks[i + 1], key, where, 0, MAX_LAYERS)
            vals = toks[i + 2:i + 2 + n]
            if len(vals) < n:
                raise SimaiError(f"{where}: {key}: says {n} layers, lists {len(vals)}")
            h.lists[LIST_KEYS[key]] = [_int(v, key, where, 0, MAX_LAYERS) for v in vals]
            i += 2 + n
        elif key in INT_KEYS:
            h.ints[INT_KEYS[key]] = _int(toks[i + 1], key, where, 0, MAX_BYTES)
            i += 2
        elif toks[i].endswith(":"):
            i += 2                                            # a field SimAI does not read
        else:
            raise SimaiError(f"{where}: expected `key: value` fields after {h.kind}, got "
                             f"{toks[i][:40]!r}")
    return h


def _parallelism(h: Header, all_gpus: int | None, dim0: int, where: str) -> Parallelism:
    if h.ints.get("gpus", 1) < 1:
        raise SimaiError(f"{where}: all_gpus {h.ints['gpus']} in the header; give 1 to "
                         f"{MAX_GPUS:,} GPUs there, or drop it and give jobs_from.all_gpus")
    gpus = h.ints.get("gpus") or all_gpus
    if gpus is None or not 1 <= gpus <= MAX_GPUS:
        raise SimaiError(f"{where}: the header has no all_gpus: give jobs_from.all_gpus "
                         f"(1 to {MAX_GPUS:,}), or a fabric with the GPUs as hosts")
    tp, pp, ep = h.ints.get("tp") or 1, h.ints.get("pp") or 1, h.ints.get("ep") or 1
    if gpus % (tp * pp):
        raise SimaiError(f"{where}: all_gpus {gpus} is not a multiple of "
                         f"model_parallel_NPU_group x pp = {tp * pp}")
    par = Parallelism(tp, pp, ep, gpus, dim0 if gpus % dim0 == 0 else 1)
    if par.dp % ep:
        raise SimaiError(f"{where}: ep {ep} does not divide the data-parallel degree "
                         f"{par.dp} (all_gpus / (model_parallel_NPU_group x pp))")
    return par


def _comm(kind: str, where: str) -> tuple[str, str | None]:
    """(type, explicit group or None) of a comm column."""
    if kind in NO_TRAFFIC:
        return kind, None
    for suffix in SUFFIXES:
        if kind.endswith(suffix) and kind[:-len(suffix)] in KINDS:
            return kind[:-len(suffix)], suffix[1:]
    if kind in KINDS:
        return kind, None
    raise SimaiError(f"{where}: unknown comm type {kind[:40]!r}; choose from NONE, BROADCAST, "
                     f"{', '.join(KINDS)} (optionally with {', '.join(SUFFIXES)})")


def _layer(c: list[str], n: int, where: str, customized: bool) -> Layer:
    want = 13 if customized else 12
    if len(c) != want:
        raise SimaiError(f"{where}: expected {want} columns (name, -1, then compute, comm "
                         "type, comm size for fwd, ig and wg, and the update time"
                         + (", then the layer's kind" if customized else "")
                         + f"), got {len(c)}")
    compute, comm = {}, {}
    for i, phase in enumerate(("fwd", "ig", "wg")):
        compute[phase] = _int(c[2 + 3 * i], f"{phase} compute time", where, 0, MAX_NS)
        comm[phase] = (*_comm(c[3 + 3 * i], where),
                       _int(c[4 + 3 * i], f"{phase} comm size", where, 0, MAX_BYTES))
    kind = None
    if customized:
        kind = c[12]
        if kind not in HEADER_KINDS or kind == "HYBRID_CUSTOMIZED":
            raise SimaiError(f"{where}: a HYBRID_CUSTOMIZED layer's kind must be one of "
                             f"{', '.join(k for k in HEADER_KINDS if k != 'HYBRID_CUSTOMIZED')}"
                             f", got {kind[:40]!r}")
    return Layer(c[0], n, compute, comm, _int(c[11], "update time", where, 0, MAX_NS), kind)


def default_dim0(gpus: int, per_leaf: int) -> int:
    """Topology dimension 0 when the config gives none: the hosts of one leaf when they split
    the GPUs into groups of more than one, else the largest divisor of all_gpus up to its
    square root (8 GPUs: 2)."""
    if 1 < per_leaf < gpus and gpus % per_leaf == 0:
        return per_leaf
    return max([d for d in range(2, int(gpus ** 0.5) + 1) if gpus % d == 0], default=1)


def read_workload(path: str | Path, all_gpus: int | None = None,
                  dim0: int = 1) -> Workload:
    """Parse a workload file; SimaiError (file:line: ...) on bad input. `all_gpus`: the GPU
    count when the header has none; `dim0`: topology dimension 0's size."""
    p = Path(path)
    try:
        lines = files.read_text(p).splitlines()
    except files.InputFileError as e:
        raise SimaiError(str(e)) from None
    if len(lines) < 2:
        raise SimaiError(f"{p}: expected a header line and a layer count (truncated?)")
    h = _header(lines[0], f"{p}:1")
    par = _parallelism(h, all_gpus, dim0, f"{p}:1")
    count = _int(lines[1].strip(), "the layer count", f"{p}:2", 0, MAX_LAYERS)
    body = [(n, ln.split()) for n, ln in enumerate(lines[2:], start=3) if ln.strip()]
    if not body and count:
        raise SimaiError(f"{p}:2: says {count} layers, the file has none (truncated?)")
    layers = [_layer(c, n, f"{p}:{n}", h.kind == "HYBRID_CUSTOMIZED")
              for n, c in body[:count]]          # like SimAI, lines past the count are unread
    return Workload(h, par, layers, p, missing=count - len(layers))

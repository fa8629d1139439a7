"""One training pass of a SimAI / ASTRA-sim 1.0 workload, kind by kind: pure code.

Each function follows its kind's `Workload::iterate_*` of SimAI's and ASTRA-sim 1.0's
Workload.cc for one pass: which comms are issued, in what order, and which the compute waits
for (a blocking comm, or an earlier non-blocking one it joins later):

* DATA: forward compute; backward from the last layer: wg compute, wg comm (non-blocking),
  ig compute (not for layer 0).
* MODEL: per layer fwd compute, fwd comm (blocking); backward: ig compute, ig comm
  (non-blocking, not layer 0), wg compute, wait for the ig comm. No wg comm.
* HYBRID_DATA_MODEL, HYBRID_MODEL_DATA, HYBRID_CUSTOMIZED: as MODEL, plus a non-blocking wg
  comm after the wg compute.
* HYBRID_TRANSFORMER: the ig comm blocks (every layer); then wg compute, wg comm.
* HYBRID_TRANSFORMER_FWD_IN_BCKWD: as HYBRID_TRANSFORMER; at a layer listed in
  checkpoint_initiates the forward pass is first recomputed from the checkpoint at or below it
  (fwd compute and blocking fwd comm of each layer up to the initiating one).
* HYBRID_DLRM(_ENHANCED): forward: fwd compute, an ALLTOALL fwd comm non-blocking; the last
  bottom layer waits for layer 0's. Backward: wg compute, wg comm; at layer last_bottom + 1
  layer 0's ig comm is issued; HYBRID_DLRM's layer 0 waits for it.
* MICRO: every layer's wg comm, at once (SimAI re-issues layer 0's only; AICB's micro tests
  and Chakra's converter mean every layer's); compute is not read.
* DISTRIBUTED_INFERENCE: forward only, blocking fwd comms.
"""
from __future__ import annotations

import re
from pathlib import Path

from traffic.collectives import Collective, JobSpec
from traffic.simai import (DLRMS, KINDS, TRANSFORMERS, CYCLE_S, Layer, SimaiError,
                           Workload, read_workload)
from traffic.streams import Control, Notes

_NAME_BAD = re.compile(r"[^A-Za-z0-9._-]")
#: the group each phase's bare comm type uses, per kind (ASTRA-sim 1.0's involved dimensions)
_DEFAULT = {"DATA": (None, None, "ALL"), "MICRO": (None, None, "ALL"),
            "HYBRID_DLRM": ("ALL", "ALL", "ALL"), "HYBRID_DLRM_ENHANCED": ("ALL", "ALL", "ALL"),
            "MODEL": ("ALL", "ALL", None), "DISTRIBUTED_INFERENCE": ("ALL", "ALL", None),
            "HYBRID_DATA_MODEL": ("DIM0", "DIM0", "DIM0X"),
            "HYBRID_MODEL_DATA": ("DIM0X", "DIM0X", "DIM0"),
            "HYBRID_TRANSFORMER": ("TP", "TP", "DP"),
            "HYBRID_TRANSFORMER_FWD_IN_BCKWD": ("TP", "TP", "DP")}
_PHASES = ("fwd", "ig", "wg")


class _Pass:
    """The program of one pass: compute, issue and wait, as the kind's iterate_* does."""

    def __init__(self, wl: Workload, hosts: list[str], notes: Notes):
        self.wl, self.hosts, self.notes = wl, hosts, notes
        self.ctl = Control()
        self.issued: dict[tuple[int, str], str | None] = {}
        self.alone = 0          # collectives left out: their TP groups are of one rank
        self._groups: dict[str, list[list[str]]] = {}
        if wl.missing:
            notes.skip("layers the header counts but the file lacks (read as empty)",
                       wl.missing)

    def groups(self, kind: str) -> list[list[str]]:
        """The hosts of each group of `kind` with more than one rank (shared lists)."""
        if kind not in self._groups:
            self._groups[kind] = [[self.hosts[r] for r in g]
                                  for g in self.wl.par.groups(kind) if len(g) > 1]
        return self._groups[kind]

    def compute(self, layer: Layer, phase: str) -> None:
        self.ctl.compute(layer.compute_ns[phase] * CYCLE_S)

    def issue(self, i: int, phase: str) -> str | None:
        """Issue layer i's `phase` comm; its last job's name (None: no traffic)."""
        ly = self.wl.layers[i]
        kind, group, size = ly.comm[phase]
        name = None
        if kind in ("NONE", "BROADCAST") or size == 0:
            if kind == "BROADCAST" or (kind != "NONE" and size == 0):
                self.notes.skip(f"{kind} (SimAI sends none)" if kind == "BROADCAST"
                                else f"{kind} of 0 bytes")
            self.issued[i, phase] = None
            return None
        group = group or self._default(ly, i, phase)
        groups = self.groups(group) if group != "NONE" else []
        if group == "NONE":
            self.notes.skip(f"{kind} in a phase {self.wl.header.kind} does not involve")
        elif not groups:
            self.notes.skip(f"{kind} in groups of one rank ({group})")
            self.alone += len(KINDS[kind]) if group == "TP" else 0
        elif size < len(groups[0]):
            self.notes.skip("placeholder smaller than its group")
        else:
            for coll in KINDS[kind]:
                label = _NAME_BAD.sub("_", ly.name)[:40]
                spec = JobSpec(f"c{len(self.ctl.specs)}-{label}-{phase}", coll, groups, size)
                name = self.ctl.issue(spec, group)
                self.notes.collectives += 1
        self.issued[i, phase] = name
        return name

    def _default(self, ly: Layer, i: int, phase: str) -> str:
        kind = ly.kind or self.wl.header.kind
        if kind in DLRMS and i > 0:
            kind = "DATA"                       # only DLRM's first layer is model-parallel
        group = _DEFAULT[kind][_PHASES.index(phase)]
        if group is None:                       # a dimension the kind never involves
            return "NONE"
        return group

    def wait(self, i: int, phase: str) -> None:
        self.ctl.wait(self.issued.get((i, phase)))

    def blocking(self, i: int, phase: str) -> None:
        self.ctl.wait(self.issue(i, phase))

    def forward(self, i: int) -> None:
        self.compute(self.wl.layers[i], "fwd")
        self.blocking(i, "fwd")


def _data(p: _Pass, n: int) -> None:
    for i in range(n):
        p.compute(p.wl.layers[i], "fwd")
    for i in reversed(range(n)):
        p.compute(p.wl.layers[i], "wg")
        p.issue(i, "wg")
        if i:
            p.compute(p.wl.layers[i], "ig")


def _model(p: _Pass, n: int, wg_comm: bool) -> None:
    for i in range(n):
        p.forward(i)
    for i in reversed(range(n)):
        p.compute(p.wl.layers[i], "ig")
        if i:
            p.issue(i, "ig")
        p.compute(p.wl.layers[i], "wg")
        if wg_comm:
            p.issue(i, "wg")
        p.wait(i, "ig")


def _transformer(p: _Pass, n: int) -> None:
    for i in range(n):
        p.forward(i)
    _pipeline(p, backward=False)
    _transformer_backward(p, n)
    _pipeline(p, backward=True)


def _transformer_backward(p: _Pass, n: int) -> None:
    checkpoints = set(p.wl.header.lists.get("checkpoints", []))
    initiates = set(p.wl.header.lists.get("initiates", []))
    if p.wl.header.kind != "HYBRID_TRANSFORMER_FWD_IN_BCKWD":
        initiates = set()
    i, initiated, steps = n - 1, False, 0
    while i >= 0:
        steps += 1
        if steps > 4 * n + 4:
            raise SimaiError(f"{p.wl.path}:1: checkpoints and checkpoint_initiates make the "
                             "backward pass loop")
        if i in initiates and not initiated:
            i = _recompute(p, i, checkpoints, initiates, n)
            initiated = True
            continue
        p.compute(p.wl.layers[i], "ig")
        p.blocking(i, "ig")
        initiated = False
        p.compute(p.wl.layers[i], "wg")
        p.issue(i, "wg")
        i -= 1


def _recompute(p: _Pass, i: int, checkpoints: set[int], initiates: set[int], n: int) -> int:
    """Forward_In_BackPass: from the checkpoint at or below layer i up to the next layer
    that initiates one; returns that layer."""
    c = i
    while c >= 0 and c not in checkpoints:
        c -= 1
    if c < 0:
        raise SimaiError(f"{p.wl.path}:1: layer {i} initiates a recomputation but no layer "
                         "at or below it is a checkpoint")
    while True:
        p.forward(c)
        c += 1
        if c >= n:
            raise SimaiError(f"{p.wl.path}:1: the recomputation from a checkpoint runs past "
                             "the last layer (no checkpoint_initiates above it)")
        if c in initiates:
            return c


def _dlrm(p: _Pass, n: int) -> None:
    last_bottom = p.wl.header.ints.get("last_bottom", 0)
    for i in range(n):
        p.compute(p.wl.layers[i], "fwd")
        if p.wl.layers[i].comm["fwd"][0] == "ALLTOALL":
            p.issue(i, "fwd")
        elif i == last_bottom:
            p.wait(0, "fwd")
    for i in reversed(range(n)):
        p.compute(p.wl.layers[i], "wg")
        p.issue(i, "wg")
        if p.wl.header.kind == "HYBRID_DLRM" and i == 0:
            p.wait(0, "ig")
        if i:
            p.compute(p.wl.layers[i], "ig")
            if i == last_bottom + 1:
                p.issue(0, "ig")


def _micro(p: _Pass, n: int) -> None:
    for i in range(n):
        p.issue(i, "wg")


def _inference(p: _Pass, n: int) -> None:
    for i in range(n):
        p.forward(i)


def _pipeline(p: _Pass, backward: bool) -> None:
    """pp > 1: activations (forward) or their gradients (backward) between stages."""
    par, size = p.wl.par, p.wl.header.ints.get("pp_comm", 0)
    if par.pp < 2 or not size:
        return
    groups = [[p.hosts[r] for r in (reversed(g) if backward else g)] for g in par.groups("PP")]
    name = p.ctl.issue(JobSpec(f"c{len(p.ctl.specs)}-pp-{'bwd' if backward else 'fwd'}",
                               Collective.PIPELINE, groups, size), "PP")
    p.notes.collectives += 1
    if not backward:
        p.ctl.wait(name)


def run(wl: Workload, hosts: list[str], notes: Notes | None = None) -> list[JobSpec]:
    """The pass's JobSpecs; `notes` gets the skipped comms and the pass's tail."""
    notes = notes if notes is not None else Notes("simai", "cycles of 1 ns")
    p = _Pass(wl, hosts, notes)
    n, kind = len(wl.layers), wl.header.kind
    if kind == "DATA":
        _data(p, n)
    elif kind in ("MODEL",):
        _model(p, n, wg_comm=False)
    elif kind in ("HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA", "HYBRID_CUSTOMIZED"):
        _model(p, n, wg_comm=True)
    elif kind in TRANSFORMERS:
        _transformer(p, n)
    elif kind in DLRMS:
        _dlrm(p, n)
    elif kind == "MICRO":
        _micro(p, n)
    else:
        _inference(p, n)
    notes.tail = dict(p.ctl.terms)
    _assumed(p)
    return p.ctl.specs


def _assumed(p: _Pass) -> None:
    """Warn of what the header left us to assume: no pp_comm with pp > 1 (no pipeline
    traffic, as SimAI), no model_parallel_NPU_group in a transformer kind or in a file whose
    comms use TP groups (1)."""
    h, where = p.wl.header, f"{p.wl.path}:1"
    if p.wl.par.pp > 1 and not h.ints.get("pp_comm"):
        p.notes.warn(f"{where}: pp {p.wl.par.pp} but no pp_comm: pipeline traffic left out, "
                     "as SimAI does; give pp_comm BYTES (what one stage sends the next) to "
                     "send it")
    if not h.ints.get("tp") and (h.kind in TRANSFORMERS or p.alone):
        given = "no model_parallel_NPU_group" if "tp" not in h.ints else \
            "model_parallel_NPU_group 0"
        p.notes.warn(f"{where}: {given} in the {h.kind} header: assumed 1, so {p.alone} "
                     "model-parallel (TP) collectives were left out; give "
                     "model_parallel_NPU_group: N")


def job_specs(path: str | Path, hosts: list[str], host_link_mbps: float,
              all_gpus: int | None = None, dim0: int = 1, notes=None,
              comm_scale: float = 1.0, dim0_given: bool = False):
    """The workload's comms of one iteration as JobSpecs on streams, rank r -> hosts[r];
    `notes` (traffic.streams.Notes) gets the comms skipped and the iteration's tail.
    `comm_scale` multiplies every comm's bytes (SimAI's comm_scale; rounded down). An
    `all_gpus` the header overrides, or a `dim0` the user gave (`dim0_given`) that does not
    divide the GPUs, is a SimaiError (either would be ignored)."""
    wl = read_workload(path, all_gpus if all_gpus is not None else len(hosts), dim0)
    if all_gpus is not None and wl.par.gpus != all_gpus:
        raise SimaiError(f"{wl.path}:1: the header says all_gpus {wl.par.gpus}, so all_gpus "
                         f"{all_gpus} would be ignored; drop it or give {wl.par.gpus}")
    if dim0_given and wl.par.dim0 != dim0:
        raise SimaiError(f"{wl.path}:1: first_dim_npus {dim0} does not divide all_gpus "
                         f"{wl.par.gpus}; give a divisor of it (e.g. one server's GPUs)")
    if comm_scale != 1.0:
        for ly in wl.layers:
            ly.comm = {ph: (k, g, int(b * comm_scale)) for ph, (k, g, b) in ly.comm.items()}
    if wl.par.gpus > len(hosts):
        raise SimaiError(f"{wl.path}:1: all_gpus {wl.par.gpus} is more than the fabric's "
                         f"{len(hosts)} hosts")
    return run(wl, hosts, notes)

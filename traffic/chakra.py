"""Chakra execution traces in (MLCommons Chakra, the `.et` files ASTRA-sim reads) as JobSpecs.

Pure code. A trace is one file per rank, `<name>.<rank>.et`: a GlobalMetadata message, then
Node messages, each preceded by its length as a varint (protobuf's delimited form). We read
the subset of the public schema (chakra/schema/protobuf/et_def.proto, package ChakraProtoMsg)
that the network needs, declared here with the `protobuf` package (no generated code):

    Node: id 1, name 2, type 3 (NodeType), ctrl_deps 4, data_deps 5, start_time_micros 6,
          duration_micros 7, attr 10 (AttributeProto: name 1, and one value among
          int32 7, int64 9, uint32 11, uint64 13, sint32 15, sint64 17, bool 27, string 29)
    NodeType: COMP_NODE 4, COMM_SEND_NODE 5, COMM_RECV_NODE 6, COMM_COLL_NODE 7 (others kept
          as plain dependencies: METADATA 1, MEM_LOAD 2, MEM_STORE 3)
    attrs: comm_type (CollectiveCommType: ALL_REDUCE 0, ALL_GATHER 2, ALL_TO_ALL 6,
          REDUCE_SCATTER 7), comm_size (bytes), pg_name (a process group; empty: every rank),
          comm_src, comm_dst, comm_tag (send/recv)

Mapping (traffic/chakra_jobs.py `job_specs`): rank r runs on hosts[r] (default h{r+1}). Each
rank's DAG (data and control dependencies) is scheduled alone: a node starts when its
dependencies have ended and lasts duration_micros (a communication node with no duration: its
collective's time on a non-blocking fabric). The k-th collective of a process group on every
member rank is one collective: a JobSpec (all-reduce, all-gather, reduce-scatter or all-to-all
over the group's hosts in rank order, comm_size bytes) that starts when its last member
reaches it. A send matched with its receive (src, dst, tag, in order) is a point-to-point
JobSpec. So the network sees the trace's communication at the times its compute lets it start;
what the network then does to later compute is not fed back (each JobSpec is one iteration).

Chakra's JSON form, `<name>.<rank>.json` (what its feeder's json_node.cpp reads:
{"workload_graph": [{"Id", "Name", "NodeType", "data_deps", "runtime" (us, as
duration_micros), and for communication nodes "comm_type", "comm_size", "comm_src",
"comm_dst", "comm_tag"}, ...]}), is read into the same nodes; as the feeder, it takes data
dependencies only (no ctrlDeps) and no pg_name (every collective spans every rank). Record k
of a JSON trace is its k-th node. Chakra's older execution-graph files (`.eg`, before 0.0.4)
are refused by name.

Errors are ChakraError with one line naming the file and the record (0 = GlobalMetadata).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from traffic import files
from traffic.collectives import Collective

#: CollectiveCommType values we model, and the ones we know but do not.
COLLECTIVES = {0: Collective.ALLREDUCE, 2: Collective.ALLGATHER, 6: Collective.ALLTOALL,
               7: Collective.REDUCE_SCATTER}
UNMODELLED = {1: "REDUCE", 3: "GATHER", 4: "SCATTER", 5: "BROADCAST",
              8: "REDUCE_SCATTER_BLOCK", 9: "BARRIER"}
METADATA, COMP, SEND, RECV, COLL = 1, 4, 5, 6, 7
#: Bounds: ranks per trace, nodes per file, bytes per record (a node is ~100 B).
MAX_RANKS = 65_536
MAX_NODES = 1_000_000
MAX_RECORD_BYTES = 1 << 20
MAX_COMM_BYTES = 2 ** 40
#: One node's duration_micros: at most a day (the config's bound on any one time).
MAX_DURATION_US = 86_400 * 10 ** 6
_FILE_RE = re.compile(r"(.+)\.(\d+)\.(et|json)")
#: the JSON form's communication fields (the feeder reads them on SEND, RECV and COLL nodes)
_JSON_COMM = ("comm_type", "comm_size", "comm_src", "comm_dst", "comm_tag")
#: Chakra's older schema: what to say of a folder of its files
OLD_SCHEMA = ("Chakra's older execution-graph schema (before 0.0.4), which this does not "
              "read; convert the traces they came from to .et with a current chakra_converter "
              "(chakra_converter PyTorch --input TRACE.json --output NAME)")


class ChakraError(ValueError):
    """A trace we cannot read or map; the message names the file and record."""


# -- the schema subset -------------------------------------------------------------------------
def _schema():
    """Message classes (GlobalMetadata, Node, AttributeProto) of the subset we read."""
    fd = descriptor_pb2.FileDescriptorProto(name="mlfabric_chakra_subset.proto",
                                            package="ChakraProtoMsg", syntax="proto3")
    T = descriptor_pb2.FieldDescriptorProto
    enum = fd.enum_type.add(name="NodeType")
    for i, n in enumerate(("INVALID_NODE", "METADATA_NODE", "MEM_LOAD_NODE", "MEM_STORE_NODE",
                           "COMP_NODE", "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE")):
        enum.value.add(name=n, number=i)
    attr = fd.message_type.add(name="AttributeProto")
    attr.oneof_decl.add(name="value")
    attr.field.add(name="name", number=1, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL)
    attr.field.add(name="doc_string", number=2, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL)
    for name, number, kind in (("double_val", 3, T.TYPE_DOUBLE), ("int32_val", 7, T.TYPE_INT32),
                               ("int64_val", 9, T.TYPE_INT64), ("uint32_val", 11, T.TYPE_UINT32),
                               ("uint64_val", 13, T.TYPE_UINT64),
                               ("sint32_val", 15, T.TYPE_SINT32),
                               ("sint64_val", 17, T.TYPE_SINT64), ("bool_val", 27, T.TYPE_BOOL),
                               ("string_val", 29, T.TYPE_STRING)):
        attr.field.add(name=name, number=number, type=kind, label=T.LABEL_OPTIONAL,
                       oneof_index=0)
    meta = fd.message_type.add(name="GlobalMetadata")
    meta.field.add(name="version", number=1, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL)
    meta.field.add(name="attr", number=2, type=T.TYPE_MESSAGE, label=T.LABEL_REPEATED,
                   type_name=".ChakraProtoMsg.AttributeProto")
    io = fd.message_type.add(name="IOInfo")
    for name, number in (("values", 1), ("shapes", 2), ("types", 3)):
        io.field.add(name=name, number=number, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL)
    node = fd.message_type.add(name="Node")
    for name, number, kind, label in (
            ("id", 1, T.TYPE_UINT64, T.LABEL_OPTIONAL),
            ("name", 2, T.TYPE_STRING, T.LABEL_OPTIONAL),
            ("ctrl_deps", 4, T.TYPE_UINT64, T.LABEL_REPEATED),
            ("data_deps", 5, T.TYPE_UINT64, T.LABEL_REPEATED),
            ("start_time_micros", 6, T.TYPE_UINT64, T.LABEL_OPTIONAL),
            ("duration_micros", 7, T.TYPE_UINT64, T.LABEL_OPTIONAL)):
        node.field.add(name=name, number=number, type=kind, label=label)
    node.field.add(name="type", number=3, type=T.TYPE_ENUM, label=T.LABEL_OPTIONAL,
                   type_name=".ChakraProtoMsg.NodeType")
    node.field.add(name="attr", number=10, type=T.TYPE_MESSAGE, label=T.LABEL_REPEATED,
                   type_name=".ChakraProtoMsg.AttributeProto")
    node.field.add(name="inputs", number=8, type=T.TYPE_MESSAGE, label=T.LABEL_OPTIONAL,
                   type_name=".ChakraProtoMsg.IOInfo")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    get = message_factory.GetMessageClass
    return (get(pool.FindMessageTypeByName("ChakraProtoMsg.GlobalMetadata")),
            get(pool.FindMessageTypeByName("ChakraProtoMsg.Node")),
            get(pool.FindMessageTypeByName("ChakraProtoMsg.AttributeProto")))


GlobalMetadata, NodeMsg, AttributeProto = _schema()


# -- records -----------------------------------------------------------------------------------
def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, next position) of the varint at pos; ValueError when it runs off the end."""
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError
        b = data[pos]
        value |= (b & 0x7F) << shift
        pos += 1
        if not b & 0x80:
            return value, pos
        shift += 7


def records(path: Path) -> list[bytes]:
    """The length-prefixed records of a file (record 0 is the GlobalMetadata)."""
    try:
        data = files.read_bytes(path)
    except files.InputFileError as e:
        raise ChakraError(str(e)) from None
    out, pos = [], 0
    while pos < len(data):
        try:
            n, start = _varint(data, pos)
        except ValueError:
            raise ChakraError(f"{path}: record {len(out)}: truncated length prefix") from None
        if n > MAX_RECORD_BYTES:
            raise ChakraError(f"{path}: record {len(out)}: {n:,} bytes; at most "
                              f"{MAX_RECORD_BYTES:,} (not a Chakra trace?)")
        if start + n > len(data):
            raise ChakraError(f"{path}: record {len(out)}: truncated ({len(data) - start} of "
                              f"{n} bytes)")
        out.append(data[start:start + n])
        pos = start + n
        if len(out) > MAX_NODES + 1:
            raise ChakraError(f"{path}: more than {MAX_NODES:,} nodes")
    if not out:
        raise ChakraError(f"{path}: empty (no GlobalMetadata record)")
    return out


@dataclass
class Node:
    """What we keep of one Chakra node (times in seconds)."""

    id: int
    name: str
    type: int
    deps: tuple[int, ...]
    duration_s: float
    record: int
    attrs: dict[str, int | str | bool | float] = field(default_factory=dict)
    inputs: str = ""             # inputs.values (a METADATA node's process groups)
    ctrl: tuple[int, ...] = ()   # the control dependencies among deps

    def comm(self, key: str, default=None):
        return self.attrs.get(key, default)


def _attrs(msg) -> dict:
    out = {}
    for a in msg.attr:
        which = a.WhichOneof("value")
        if which is not None:
            out[a.name] = getattr(a, which)
    return out


def read_trace(path: str | Path) -> list[Node]:
    """One rank's nodes, in file order; ChakraError (file: record k: ...) on bad input."""
    p = Path(path)
    recs = records(p)
    try:
        GlobalMetadata.FromString(recs[0])
    except DecodeError:
        raise ChakraError(f"{p}: record 0: not a Chakra GlobalMetadata message; if it is an "
                          "older Chakra schema (before 0.0.4, often named .eg), convert it "
                          "again with a current chakra_converter") from None
    nodes = []
    for k, rec in enumerate(recs[1:], start=1):
        try:
            m = NodeMsg.FromString(rec)
        except DecodeError:
            raise ChakraError(f"{p}: record {k}: not a Chakra Node message") from None
        if m.duration_micros > MAX_DURATION_US:
            raise ChakraError(f"{p}: record {k}: node {m.id} lasts {m.duration_micros:,} us "
                              f"(duration_micros); at most {MAX_DURATION_US:,} (a day)")
        nodes.append(Node(m.id, m.name, int(m.type), tuple(m.data_deps) + tuple(m.ctrl_deps),
                          m.duration_micros / 1e6, k, _attrs(m),
                          m.inputs.values if m.type == METADATA else "",
                          tuple(m.ctrl_deps)))
    return nodes


def _json_int(p: Path, k: int, node: dict, key: str, hi: int, default: int | None = None
              ) -> int:
    v = node.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= hi:
        raise ChakraError(f"{p}: record {k}: {key} must be an integer from 0 to {hi:,}, got "
                          f"{str(v)[:40]!r}")
    return v


def _json_node(p: Path, k: int, node) -> Node:
    """Record k (the k-th node) of a JSON trace, as the feeder's JSONNode reads it."""
    if not isinstance(node, dict):
        raise ChakraError(f"{p}: record {k}: a node must be a JSON object")
    nid = _json_int(p, k, node, "Id", 2 ** 64 - 1)
    kind = _json_int(p, k, node, "NodeType", COLL)
    runtime = _json_int(p, k, node, "runtime", MAX_DURATION_US, 0)
    deps = node.get("data_deps", [])
    if not isinstance(deps, list) or not all(isinstance(d, int) and not isinstance(d, bool)
                                             for d in deps):
        raise ChakraError(f"{p}: record {k}: data_deps must be a list of node ids")
    name = node.get("Name", "")
    attrs = ({key: _json_int(p, k, node, key, MAX_COMM_BYTES) for key in _JSON_COMM
              if key in node} if kind in (SEND, RECV, COLL) else {})
    return Node(nid, name if isinstance(name, str) else "", kind, tuple(deps), runtime / 1e6,
                k, attrs)


def read_json_trace(path: str | Path) -> list[Node]:
    """One rank's nodes from Chakra's JSON form ({"workload_graph": [...]}); ChakraError
    (file: record k: ...) on bad input."""
    p = Path(path)
    try:
        doc = json.loads(files.read_text(p))
    except files.InputFileError as e:
        raise ChakraError(str(e)) from None
    except (ValueError, RecursionError):
        doc = None
    graph = doc.get("workload_graph") if isinstance(doc, dict) else None
    if not isinstance(graph, list):
        raise ChakraError(f"{p}: not a Chakra JSON trace: expected one JSON document "
                          '{"workload_graph": [nodes]} (chakra_jsonizer\'s output is a view, '
                          "not a trace: give the .et it was made from)")
    if len(graph) > MAX_NODES:
        raise ChakraError(f"{p}: more than {MAX_NODES:,} nodes")
    return [_json_node(p, k, n) for k, n in enumerate(graph, start=1)]


def _none_found(d: Path) -> ChakraError:
    """The error for a folder without traces: an older schema's `.eg` files named as such."""
    old = sorted(f for f in d.iterdir() if f.name.endswith(".eg"))
    if old:
        return ChakraError(f"{d}: {len(old)} .eg file{'s' * (len(old) > 1)} ({old[0].name}"
                           f"{', ...' * (len(old) > 1)}) and no .et: {OLD_SCHEMA}")
    return ChakraError(f"{d}: no <name>.<rank>.et (or Chakra JSON <name>.<rank>.json) files")


def read_traces(folder: str | Path) -> dict[int, tuple[Path, list[Node]]]:
    """Every `<name>.<rank>.et` of a folder (without any: every `<name>.<rank>.json`,
    Chakra's JSON form): rank -> (file, nodes); ranks must be 0..n-1."""
    d = Path(folder)
    if d.name.endswith(".eg") and d.is_file():
        raise ChakraError(f"{d}: {OLD_SCHEMA}")
    if not d.is_dir():
        raise ChakraError(f"{d}: no such folder of Chakra traces (<name>.<rank>.et)")
    forms: dict[str, dict[int, Path]] = {"et": {}, "json": {}}
    for f in sorted(d.iterdir()):
        m = _FILE_RE.fullmatch(f.name)
        if m:
            found = forms[m.group(3)]
            if int(m.group(2)) in found:
                raise ChakraError(f"{f}: a second trace of rank {m.group(2)}")
            found[int(m.group(2))] = f
    found = forms["et"] or forms["json"]
    if not found:
        raise _none_found(d)
    if len(found) > MAX_RANKS or sorted(found) != list(range(len(found))):
        raise ChakraError(f"{d}: ranks must be 0..n-1 (n <= {MAX_RANKS:,}), found "
                          f"{sorted(found)[:5]}...")
    return {r: (f, read_json_trace(f) if f.suffix == ".json" else read_trace(f))
            for r, f in sorted(found.items())}

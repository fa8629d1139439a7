"""A Chakra trace writer for tests and fixtures (moved from traffic/chakra.py: production only
reads traces)."""
from __future__ import annotations

from pathlib import Path

from traffic.chakra import AttributeProto, GlobalMetadata, NodeMsg


def write_trace(path: str | Path, nodes: list[dict], version: str = "0.0.4") -> None:
    """Write a trace in the same format (fixtures and tests): each node a dict of id, name,
    type, data_deps, ctrl_deps, duration_micros and attrs {name: int | str | bool}."""
    out = bytearray()

    def put(msg) -> None:
        body = msg.SerializeToString()
        n = len(body)
        while True:
            b = n & 0x7F
            n >>= 7
            out.append(b | (0x80 if n else 0))
            if not n:
                break
        out.extend(body)
    put(GlobalMetadata(version=version))
    for d in nodes:
        attrs = []
        for k, v in d.get("attrs", {}).items():
            kind = ("bool_val" if isinstance(v, bool) else "int64_val" if isinstance(v, int)
                    else "string_val")
            attrs.append(AttributeProto(name=k, **{kind: v}))
        put(NodeMsg(id=d["id"], name=d.get("name", ""), type=d["type"],
                    data_deps=d.get("data_deps", []), ctrl_deps=d.get("ctrl_deps", []),
                    duration_micros=d.get("duration_micros", 0), attr=attrs))
    Path(path).write_bytes(bytes(out))

"""The fabric model's directed graph: networkx.DiGraph's interface for what the model uses
(nodes, edges and their attribute dicts, in insertion order), held in plain dicts.

The model runs no graph algorithm (paths come from the Clos structure, testbed/fabric.py),
so it keeps networkx out of every command: importing networkx took ~60 ms, 12% of a
floodns-sized `predict`. `to_networkx()` copies it into a networkx.DiGraph for analysis with
networkx's algorithms.

Order is networkx's: nodes as first added, edges node by node, each node's as added; the
fabric's link ids follow it (testbed/fabric.py's `links`).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import networkx

Attrs = dict[str, Any]


class NodeView:
    """`g.nodes`: iterate names, `g.nodes[n]` (the attribute dict), `g.nodes(data=...)`."""

    def __init__(self, nodes: dict[str, Attrs]) -> None:
        self._nodes = nodes

    def __getitem__(self, n: str) -> Attrs:
        return self._nodes[n]

    def __iter__(self) -> Iterator[str]:
        return iter(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, n: object) -> bool:
        return n in self._nodes

    def __call__(self, data: bool | str = False, default: Any = None) -> Iterable:
        """Names; (name, attrs) with data=True; (name, attrs.get(data, default)) for a key."""
        if data is False:
            return iter(self._nodes)
        if data is True:
            return iter(self._nodes.items())
        return ((n, d.get(data, default)) for n, d in self._nodes.items())


class EdgeView:
    """`g.edges`: iterate (u, v), `g.edges[u, v]` (the attribute dict), `g.edges(data=...)`."""

    def __init__(self, succ: dict[str, dict[str, Attrs]]) -> None:
        self._succ = succ

    def __getitem__(self, uv: tuple[str, str]) -> Attrs:
        u, v = uv
        return self._succ[u][v]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return ((u, v) for u, nbrs in self._succ.items() for v in nbrs)

    def __len__(self) -> int:
        return sum(map(len, self._succ.values()))

    def __contains__(self, uv: object) -> bool:
        u, v = uv                                              # type: ignore[misc]
        return v in self._succ.get(u, ())

    def __call__(self, data: bool | str = False, default: Any = None) -> Iterable:
        """(u, v); (u, v, attrs) with data=True; (u, v, attrs.get(data, default)) for a key."""
        if data is False:
            return iter(self)
        if data is True:
            return ((u, v, d) for u, nbrs in self._succ.items() for v, d in nbrs.items())
        return ((u, v, d.get(data, default)) for u, nbrs in self._succ.items()
                for v, d in nbrs.items())


class DiGraph:
    """Nodes and directed edges with attribute dicts; `graph` holds the graph's own."""

    def __init__(self, **attrs: Any) -> None:
        self.graph: Attrs = dict(attrs)
        self._node: dict[str, Attrs] = {}
        self._succ: dict[str, dict[str, Attrs]] = {}
        self._pred: dict[str, dict[str, Attrs]] = {}

    def add_node(self, n: str, **attrs: Any) -> None:
        """Add n, or update its attributes."""
        if n in self._node:
            self._node[n].update(attrs)
            return
        self._node[n] = attrs
        self._succ[n], self._pred[n] = {}, {}

    def add_edge(self, u: str, v: str, **attrs: Any) -> None:
        """Add u -> v (and either node not there yet), or update its attributes."""
        for n in (u, v):
            if n not in self._node:
                self.add_node(n)
        d = self._succ[u].get(v)
        if d is None:
            d = self._succ[u][v] = self._pred[v][u] = {}
        d.update(attrs)

    def add_edges_from(self, edges: Iterable[tuple]) -> None:
        """Add each (u, v) or (u, v, attrs), in order."""
        for u, v, *attrs in edges:
            self.add_edge(u, v, **(attrs[0] if attrs else {}))

    @property
    def nodes(self) -> NodeView:
        return NodeView(self._node)

    @property
    def edges(self) -> EdgeView:
        return EdgeView(self._succ)

    @property
    def succ(self) -> dict[str, dict[str, Attrs]]:
        """u -> {v: the attrs of u -> v}: read it, add edges by add_edge."""
        return self._succ

    def successors(self, n: str) -> Iterator[str]:
        return iter(self._succ[n])

    def predecessors(self, n: str) -> Iterator[str]:
        return iter(self._pred[n])

    def out_degree(self, n: str) -> int:
        return len(self._succ[n])

    def has_node(self, n: str) -> bool:
        return n in self._node

    def has_edge(self, u: str, v: str) -> bool:
        return v in self._succ.get(u, ())

    def __contains__(self, n: object) -> bool:
        return n in self._node

    def __iter__(self) -> Iterator[str]:
        return iter(self._node)

    def __len__(self) -> int:
        return len(self._node)

    def to_networkx(self) -> networkx.DiGraph:
        """A copy as a networkx.DiGraph (same order and attributes), for its algorithms."""
        import networkx as nx                      # only here: ~60 ms to import
        g = nx.DiGraph(**self.graph)
        g.add_nodes_from(self._node.items())
        g.add_edges_from(self.edges(data=True))
        return g

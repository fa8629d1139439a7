"""testbed/graph.py's DiGraph against networkx.DiGraph: the same calls show the same nodes,
edges, attributes and order (the fabric's link ids follow that order); a predict imports no
networkx."""
import random
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

from testbed.fabric import build_fabric
from testbed.graph import DiGraph

from .fabric_digest import SPECS

ROOT = Path(__file__).resolve().parents[3]


def shown(g, pred=list) -> dict:
    """Everything the fabric model reads of a graph, in order (predecessors: pred of them)."""
    nodes = list(g.nodes)
    return {
        "graph": dict(g.graph), "len": len(g), "nodes": nodes,
        "node_data": [(n, dict(d)) for n, d in g.nodes(data=True)],
        "node_key": list(g.nodes(data="k", default=-1)),
        "edges": list(g.edges), "n_edges": len(g.edges),
        "edge_data": [(u, v, dict(d)) for u, v, d in g.edges(data=True)],
        "edge_key": list(g.edges(data="w")),
        "succ": [(u, [(v, dict(d)) for v, d in g.succ[u].items()]) for u in nodes],
        "around": [(list(g.successors(n)), pred(g.predecessors(n)), g.out_degree(n))
                   for n in nodes],
        "lookups": [(g.nodes[n], g.has_node(n), n in g, n in g.nodes) for n in nodes],
        "pairs": [(g.has_edge(u, v), (u, v) in g.edges) for u in nodes for v in nodes],
    }


def random_calls(seed: int) -> list[tuple]:
    """add_node / add_edge / add_edges_from with attribute updates, over 12 names."""
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(12)]
    calls: list[tuple] = []
    for _ in range(60):
        kind = rng.choice(["node", "edge", "edge", "edges"])
        attrs = {rng.choice("kwz"): rng.randint(0, 9) for _ in range(rng.randint(0, 2))}
        if kind == "node":
            calls.append(("add_node", (rng.choice(names),), attrs))
        elif kind == "edge":
            calls.append(("add_edge", tuple(rng.sample(names, 2)), attrs))
        else:
            edges = [(*rng.sample(names, 2), *([attrs] if rng.random() < 0.5 else []))
                     for _ in range(rng.randint(1, 4))]
            calls.append(("add_edges_from", (edges,), {}))
    return calls


@pytest.mark.parametrize("seed", range(30))
def test_the_same_calls_show_what_networkx_shows(seed):
    ours, theirs = DiGraph(hosts=0), nx.DiGraph(hosts=0)
    for name, args, attrs in random_calls(seed):
        getattr(ours, name)(*args, **attrs)
        getattr(theirs, name)(*args, **attrs)
    assert shown(ours) == shown(theirs)
    some = next(iter(ours.edges))
    ours.edges[some]["w"] = theirs.edges[some]["w"] = "changed"     # attrs are shared dicts
    assert shown(ours) == shown(theirs)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_to_networkx_is_a_copy_of_every_fabric_in_order(name):
    g = build_fabric(SPECS[name]).graph
    copy = g.to_networkx()
    assert isinstance(copy, nx.DiGraph)
    assert shown(copy, pred=sorted) == shown(g, pred=sorted)   # the copy's preds: edge order
    u, v = next(iter(copy.edges))
    copy.edges[u, v]["live"] = "changed"
    assert g.edges[u, v]["live"] in (True, False)


def test_a_predict_imports_no_networkx(tmp_path):
    """networkx's import was 12% of a floodns-sized predict; the fabric model needs none."""
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "experiments", "predict",
                        "experiments/configs/quickstart.yaml", "--no-plots",
                        "--out", str(tmp_path / "out")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    imported = [line.rsplit("|", 1)[-1].strip() for line in p.stderr.splitlines()
                if line.startswith("import time:")]
    assert "numpy" in imported and "testbed.fabric" in imported      # the check can see
    assert not [m for m in imported if m.split(".")[0] == "networkx"]

"""The layers, from the top: experiments/ > routing/ > traffic/ > testbed/. A module imports
only its own layer and the ones below (function-level imports included), the pure core imports
no Mininet at module level, and imports form no cycle (function-level ones included)."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ["testbed", "traffic", "routing", "experiments"]     # bottom to top


def modules() -> dict[str, Path]:
    out = {}
    for layer in LAYERS:
        for p in sorted((ROOT / layer).rglob("*.py")):
            parts = list(p.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = p
    return out


def imports(name: str, path: Path, top_level_only: bool) -> set[str]:
    """Project modules `name` imports (relative imports resolved)."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else ast.walk(tree)
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for n in nodes:
        if isinstance(n, ast.Import):
            found.update(a.name for a in n.names)
        elif isinstance(n, ast.ImportFrom):
            base = n.module or ""
            if n.level:
                up = pkg.split(".")[:len(pkg.split(".")) - (n.level - 1)]
                base = ".".join(up + ([n.module] if n.module else []))
            found.add(base)
            found.update(f"{base}.{a.name}" for a in n.names)
    return {m for m in found if m.split(".")[0] in LAYERS}


MODULES = modules()


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_imports_a_layer_above_its_own(name):
    mine = LAYERS.index(name.split(".")[0])
    above = sorted(m for m in imports(name, MODULES[name], False)
                   if LAYERS.index(m.split(".")[0]) > mine)
    assert not above, f"{name} imports {above}"


def import_graph(top_level_only: bool) -> nx.DiGraph:
    """Module -> the project modules it imports (a package's own __init__ not counted)."""
    g = nx.DiGraph()
    for name, path in MODULES.items():
        for m in imports(name, path, top_level_only):
            target = m if m in MODULES else m.rsplit(".", 1)[0]
            if target in MODULES and target != name and not name.startswith(target + "."):
                g.add_edge(name, target)
    return g


#: circles allowed for now: none (the last, runner <-> program_run, went with the one run
#: path: experiments/routing_run.py and job_kinds.py)
ALLOWED_CYCLES: list[set[str]] = []


def test_module_level_imports_form_no_cycle():
    cycles = list(nx.simple_cycles(import_graph(True)))
    assert not cycles, cycles[:3]


def test_no_imports_form_a_cycle_function_level_ones_included():
    """Inside a package as well as between layers: an import inside a function that closes
    a circle hides a module that belongs below both."""
    cycles = [c for c in nx.simple_cycles(import_graph(False))
              if set(c) not in ALLOWED_CYCLES]
    assert not cycles, sorted(cycles, key=len)[:5]


def test_each_allowed_cycle_still_exists():
    """An allowance outlives its circle by no commit: once it is gone, empty ALLOWED_CYCLES."""
    found = [set(c) for c in nx.simple_cycles(import_graph(False))]
    stale = [c for c in ALLOWED_CYCLES if c not in found]
    assert not stale, f"{stale}: no longer a circle; remove it from ALLOWED_CYCLES"


def test_the_cycle_test_can_fail():
    g = import_graph(False)
    g.add_edge("testbed.fabric", "experiments.config")
    assert any(set(c) not in ALLOWED_CYCLES for c in nx.simple_cycles(g))


@pytest.mark.parametrize("layer", LAYERS[:3] + ["experiments.config"])
def test_each_layer_of_the_pure_core_imports_alone_without_mininet(layer):
    """In a fresh interpreter: the layer's modules import, and Mininet is not loaded."""
    names = [m for m in MODULES if m == layer or m.startswith(layer + ".")
             if not any(x in m for x in (".net", ".shells", ".capture", ".monitor",
                                         "benchmarks"))]
    code = ("import importlib, sys\n"
            f"for m in {names!r}: importlib.import_module(m)\n"
            "assert 'mininet' not in sys.modules, 'mininet loaded'\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]


def test_every_production_module_is_under_600_lines_and_every_function_under_80():
    """The house's size rules (issue 42), over testbed/, traffic/, routing/ and experiments/
    (benchmarks included)."""
    long_modules, long_functions = [], []
    for name, path in MODULES.items():
        text = path.read_text()
        if text.count("\n") > 600:
            long_modules.append(name)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and node.end_lineno - node.lineno + 1 > 80:
                long_functions.append(f"{name}.{node.name}")
    assert not long_modules and not long_functions, (long_modules, long_functions)

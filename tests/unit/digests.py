"""Digests of results with wall-clock figures left out, for tests that prove a refactor
changed nothing (test_routing_entry: predict's output; test_run_steps: run's records)."""
from __future__ import annotations

from typing import Any


def scrubbed(o: Any, drop: set[str]) -> Any:
    """`o` (parsed JSON) without the keys in `drop`, at any depth."""
    if isinstance(o, dict):
        return {k: scrubbed(v, drop) for k, v in o.items() if k not in drop}
    if isinstance(o, list):
        return [scrubbed(v, drop) for v in o]
    return o

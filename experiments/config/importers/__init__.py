"""Workload importers (`jobs_from`): one module per format, and this registry (as the topology
kinds' testbed/topologies KINDS, or routing/registry.py for strategies). A format owns its
keys and bounds (`Param`), how its files are read and how they become JobSpecs; the config
schema's `jobs_from` keys are checked against it (tests/unit/experiments/test_schema.py).

A new format is one module with a `Format` subclass and one line below.
"""
from __future__ import annotations

from .base import Format, JobsOf, Param
from .chakra import Chakra
from .floodns import Floodns
from .simai import Simai

FORMATS: dict[str, Format] = {f.name: f for f in (Floodns(), Chakra(), Simai())}
#: every key of jobs_from, over all formats
JOBS_FROM_KEYS = {k for f in FORMATS.values() for k in f.keys}
__all__ = ["FORMATS", "JOBS_FROM_KEYS", "Format", "JobsOf", "Param"]

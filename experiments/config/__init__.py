"""Step 1 of a run: read and validate the experiment YAML into typed records.

Pure code. Every problem is a ConfigError whose message is one line that names the key and
the fix, e.g. `jobs[0].hosts: unknown host 'h99' (this fabric has h1..h16)`; the CLI prints it
and exits 2 before anything is built or written. Every number has a bound this machine can
honour (limits.py, tabled in docs/configuration.md); values are quoted by at most a short
prefix (`quote`). `Experiment.resolved()` is the config with every default filled in, saved
beside the results as config.yaml, which loads again to the same experiment.

The package, in the order a document goes through it:

    yamlio (the safe loader) -> parse: fabric -> jobs (or imports: jobs_from, one format of
    importers/) -> strategies -> emulation -> timing -> events  =>  records (Experiment,
    EmulationConfig, Event)

with limits (every bound), keys (every section's keys) and readers (typed values, one-line
errors) below them all, and bounds (what `predict --util-bin-s` may ask) beside.
"""
from ..routing_entry import run_dir_name  # noqa: F401  (experiments/outdir.py imports it here)
from .bounds import check_util_bin_s, duration_upper_bound_s  # noqa: F401
from .events import apply_event  # noqa: F401
from .fabric import host_pairs, unreachable  # noqa: F401
from .keys import (EMULATION_KEYS, EVENT_KINDS, EXPLICIT_JOB_KEYS, FABRIC_KEYS,  # noqa: F401
                   JOBS_FROM_KEYS, MODEL_JOB_KEYS, PATTERN_JOB_KEYS, PROGRAM_JOB_KEYS,
                   TCP_CCS, TOP_KEYS)
from .limits import *  # noqa: F401,F403  (the whole table, as config.MAX_...)
from .parse import load, parse  # noqa: F401
from .readers import QUOTE_CHARS, ConfigError, quote  # noqa: F401
from .records import EmulationConfig, Event, Experiment  # noqa: F401
from .timing import events_horizon_s, ideal_iteration_s, iteration_timeout_s  # noqa: F401
from .yamlio import config_text, read_yaml, yaml_value  # noqa: F401

"""Every bound of a config, in one table (each tabled in docs/configuration.md with its reason).

The fabric's own bounds are its topology kind's (testbed/topologies/), imported here so that
the table is whole.
"""
from __future__ import annotations

import os

from routing.path_blocks import MAX_PATH_LINK_IDS  # noqa: F401
from testbed.shaping import MAX_BURST_FRAMES, MAX_MTU_BYTES  # noqa: F401
from testbed.topologies.base import (MAX_HOSTS, MAX_HOSTS_PER_LEAF, MAX_RATE_MBPS, # noqa: F401
                                     MIN_RATE_MBPS)
from testbed.topologies.clos3 import (MAX_AGGS_PER_POD, MAX_CORES_PER_PLANE, MAX_PODS, # noqa: F401
                                      MAX_LEAVES_PER_POD)
from testbed.topologies.fat_tree import MAX_FAT_TREE_K  # noqa: F401
from testbed.topologies.leaf_spine import MAX_LEAVES, MAX_SPINES  # noqa: F401
from traffic.collectives import SOURCE_PORT_SPAN  # noqa: F401


DEFAULT_WINDOW_FRAMES = 16


#: A config file larger than this is refused unread: the paper's configs are < 1 kB, a resolved
#: paper-scale config.yaml (every host listed) 12-23 kB, and the largest experiment the limits
#: allow (22,768 connections, so at most 45,536 hosts in jobs) resolves to well under 1 MB.
MAX_CONFIG_BYTES = 1_000_000


#: Mappings and lists nested deeper than this are refused (a config needs 5 levels).
MAX_DEPTH = 32


#: The fabric's bounds are its topology kind's (testbed/topologies/: leaf_spine.MAX_SPINES,
#: MAX_LEAVES; clos3.MAX_PODS, ...; base.MAX_HOSTS, MAX_HOSTS_PER_LEAF and the link rates).
#: One job's collective size: 1 TiB (GPT-3 175B's fp32 gradient is 700 GB).
MAX_SIZE_BYTES = 2 ** 40


#: Iterations per job: the predictor takes ~10 us per transfer per iteration.
MAX_ITERATIONS = 10_000


#: Any one time in the YAML (start_s, compute_s, at_s, iteration_timeout_s): 1 day. The
#: iteration timeout also reaches the agents' socket timeouts, which overflow past 24.8 days.
MAX_SECONDS = 86_400.0


#: The whole experiment, even on a non-blocking fabric (each job's start_s + iterations x
#: (ideal CCT + compute_s)): 1 week. Below 2^20 s the model's clock still resolves 1e-9 s.
MAX_DURATION_S = 7 * 86_400.0


MAX_SEED = 2 ** 32 - 1
#: Subflows per connection (`subflows`): NCCL opens at most 64 sockets per connection
#: (NCCL_NSOCKS_PERTHREAD x NCCL_SOCKET_NTHREADS).
MAX_SUBFLOWS = 64
#: `split_piece_bytes` (split: adaptive): below 16 KiB the agents' work per piece (a header,
#: a checksum, a hand-off between threads, tens of us) nears the piece's time on a 1 Gbit/s
#: link (131 us); above 1 GiB the split is no longer adaptive at any size a collective sends.
MIN_PIECE_BYTES = 16 * 1024
MAX_PIECE_BYTES = 1 << 30
PIECE_WHY = "an agent's per-piece cost below, no adaptation above"


#: Per-link drop-tail queue (frames): 10,000 x 64,000 B = 640 MB, still a C int for the
#: window clamp (window_frames <= queue_packets).
MAX_QUEUE_PACKETS = 10_000


#: Largest `solver_time_limit_s` (seconds per ilp / mmf solve).
MAX_SOLVER_S = 3_600.0


#: Jobs and events per experiment; every event rebuilds the fabric and re-solves every
#: routing (up to ~1.5 s per rebuild at the largest fabric). Jobs: job j listens on port
#: 5001 + j, below the source ports (20000..); the predictor carries 10,000 streamed
#: 4-rank all-reduces (240,000 transfers) in 5.5 s of prediction and 2.5 s of planning.
MAX_JOBS = 10_000


MAX_EVENTS = 100


#: Data-parallel copies of a model job (at most 62,500 hosts / 48 GPUs per copy = 1,302).
MAX_DP = 1_024


#: Multiplier of a model's gradient bytes (the result must still be <= MAX_SIZE_BYTES).
MAX_SCALE_BYTES = 1_000.0


#: The memory a prediction may take (plans, the predictor's state, results): two thirds of
#: this machine class's 24 GB (2 cores). A config's need is estimated before anything is
#: planned (experiments/config/jobs.py predict_bytes): transfers per iteration x
#: BYTES_HELD_PER_TRANSFER (plan arrays and results), + BYTES_PER_TRANSFER less that for each
#: transfer of the jobs that may be in flight at once (the predictor's state; every job,
#: unless streams queue them), + connections x BYTES_PER_CONNECTION (an object, its route and
#: its links' row). Each is a whole `predict` command's peak RSS per item, measured in
#: docs/interop.md ("SimAI's 9,216-GPU example"; a job in flight: "The bound").
MAX_PREDICT_BYTES = 16 * 2 ** 30
BYTES_PER_TRANSFER = 600
BYTES_HELD_PER_TRANSFER = 90
BYTES_PER_CONNECTION = 1_000


#: Transfers over all iterations: ~27 min per routing at the predictor's ~11 us per transfer on
#: paper-scale fabrics, room for SimAI's whole 9,216-GPU file as flows (130 M); ~110 us per
#: transfer with 384-rank rings on a 9,216-NIC clos3, up to ~2.5 ms where rings of several
#: sizes overlap there (each event batch re-fills 7,000-18,000 flows in flight for ~1
#: completion; docs/interop.md).
MAX_TRANSFER_RUNS = 150_000_000


#: predict --util-bin-s: at least 1 ms, and at most this many bins x links (12 B each in the
#: predictor, one CSV row per used link and bin), counted over a duration no prediction of the
#: config can exceed (`duration_upper_bound_s`).
MIN_UTIL_BIN_S = 0.001


MAX_UTIL_CELLS = 20_000_000


#: run's default iteration timeout: 20 x the slowest ideal CCT + 30 s (experiments/runner.py).
TIMEOUT_FACTOR, TIMEOUT_SLACK_S = 20.0, 30.0


#: Program jobs (traffic/programs.py): arguments per argv and characters per argument (a
#: command line the kernel takes: ARG_MAX is 2 MiB in all, 128 KiB per string).
MAX_ARGV = 256
MAX_ARG_CHARS = 4096
#: Extra environment variables per program job.
MAX_ENV = 64
#: Program jobs per config: each gets its own rendezvous port (traffic/programs.py).
MAX_PROGRAMS = 64
#: demand: measured counts every ordered pair of the jobs' hosts at its source leaf: a rule
#: each, written in one bundle per leaf (about 10,000 rules take ~1 s to install here).
MAX_LEARNED_PAIRS = 10_000
#: Steps (or iterations) the controller learns over before it plans.
MAX_LEARN_STEPS = 1_000


#: ovs-vswitchd instances one machine's fabric may be spread over (emulation.switch_processes),
#: per core this process may run on: each forwards on one thread, busy only while its pods'
#: traffic flows, so two per core leave a core's worth idle at most (4 on the 2-core machines
#: the fidelity benchmark ran on).
SWITCH_PROCESSES_PER_CORE = 2


def max_switch_processes() -> int:
    """emulation.switch_processes' bound on this machine: SWITCH_PROCESSES_PER_CORE x the
    cores this process may use (its CPU affinity, so a taskset or a container counts)."""
    return SWITCH_PROCESSES_PER_CORE * len(os.sched_getaffinity(0))

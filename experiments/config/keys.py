"""The keys each section of a config may hold.
"""
from __future__ import annotations

from testbed import topologies

from .importers import JOBS_FROM_KEYS  # noqa: F401  (each format's keys: importers/)


TOP_KEYS = {"name", "seed", "fabric", "jobs", "routing", "emulation", "events",
            "jobs_from", "semantics", "replay_log", "solver_time_limit_s", "subflows",
            "demand", "learn_steps", "learn_s",
            "split", "split_piece_bytes", "machines"}


MACHINE_KEYS = {"name", "address", "user", "ovs_rundir"}


EVENT_KINDS = ("fail_spine", "restore_spine", "fail_switch", "restore_switch", "fail_link",
               "restore_link")


#: Every key a fabric section of some topology kind may hold (testbed/topologies/).
FABRIC_KEYS = set().union(*(k.keys for k in topologies.KINDS.values()))


EXPLICIT_JOB_KEYS = {"name", "collective", "hosts", "groups", "size_bytes", "iterations",
                     "compute_s", "start_s", "subflows", "split", "split_piece_bytes", "pxn",
                     "algorithm"}


MODEL_JOB_KEYS = {"name", "model", "dp", "placement", "iterations", "compute_s",
                  "start_s", "scale_bytes", "subflows", "split", "split_piece_bytes", "pxn",
                  "algorithm"}


PATTERN_JOB_KEYS = {"name", "pattern", "hosts", "stride", "p_leaf", "p_pod", "hotspots",
                    "flows_per_host", "seed", "size_bytes", "iterations", "compute_s", "start_s",
                    "subflows", "split", "split_piece_bytes", "pxn", "algorithm"}


PROGRAM_JOB_KEYS = {"name", "program", "hosts", "placement", "ranks", "env", "timeout_s",
                    "cwd", "start_s", "traffic"}


EMULATION_KEYS = {"datapath", "port_type", "tcp_cc", "mtu_bytes", "queue_packets",
                  "link_scheduler", "window_frames", "switch_burst_frames",
                  "iteration_timeout_s", "capture", "switch_processes"}


TCP_CCS = ("cubic", "bbr", "reno")


# -- other tools' inputs (issue 13): floodns traffic folders, replayed routes, semantics ------
# jobs_from's keys: each format's own (experiments/config/importers), JOBS_FROM_KEYS above

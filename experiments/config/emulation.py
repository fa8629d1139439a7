"""The `emulation` section: how `run` builds and shapes the fabric; defaults are
testbed/settings.py's EmulationSettings.
"""
from __future__ import annotations

from typing import Any

from testbed.fabric import Fabric
from testbed.shaping import (MAX_BURST_FRAMES, MAX_MTU_BYTES, SCHEDULERS, SWITCH_BURST_FRAMES,
                             auto_mtu_bytes)
from testbed.taps import PORT_TYPES

from .limits import DEFAULT_WINDOW_FRAMES, MAX_QUEUE_PACKETS, max_switch_processes
from .keys import EMULATION_KEYS, TCP_CCS
from .readers import ConfigError, quote, _check_keys, _int, _num, _choice
from .records import EmulationConfig


def _capture(c: Any, fabric: Fabric) -> bool | tuple[str, str]:
    """emulation.capture: true, false, or [switch, neighbour] (the switch's port to it)."""
    if isinstance(c, bool):
        return c
    if (isinstance(c, list) and len(c) == 2 and all(isinstance(x, str) for x in c)
            and fabric.is_switch(c[0]) and fabric.graph.has_edge(c[0], c[1])):
        return (c[0], c[1])
    raise ConfigError(f"emulation.capture: expected true, false or [switch, neighbour] "
                      f"joined by a link of this fabric, e.g. [agg1, core1] or [leaf1, h1], "
                      f"got {quote(c)}")


def _emulation(d: dict, fabric: Fabric) -> EmulationConfig:
    d = _check_keys(d, EMULATION_KEYS, "emulation")
    e = EmulationConfig()
    e.datapath = _choice(d, "datapath", "emulation", ("auto", "kernel", "user"), e.datapath)
    e.port_type = _choice(d, "port_type", "emulation", PORT_TYPES, e.port_type)
    e.tcp_cc = _choice(d, "tcp_cc", "emulation", TCP_CCS, e.tcp_cc,
                       " (dctcp is not in this kernel)")
    slowest = min(fabric.spec.rates_mbps().values())
    if d.get("mtu_bytes", "auto") == "auto":
        e.mtu_bytes, e.mtu_auto = auto_mtu_bytes(slowest), True
    else:
        e.mtu_bytes = _int(d, "mtu_bytes", "emulation", e.mtu_bytes, minimum=576,
                           maximum=MAX_MTU_BYTES, why="or auto")
        e.mtu_auto = False
    e.queue_packets = _int(d, "queue_packets", "emulation", e.queue_packets, minimum=2,
                           maximum=MAX_QUEUE_PACKETS)
    e.link_scheduler = _choice(d, "link_scheduler", "emulation", SCHEDULERS, e.link_scheduler)
    if d.get("window_frames", "auto") == "auto":
        # bounded under fair queuing; in one FIFO the ACKs wait behind up to a window of
        # data, and a bounded window then starves its own flow (ILP +7.5% at 5 Mbit/s)
        bound = min(DEFAULT_WINDOW_FRAMES, e.queue_packets)
        e.window_frames = bound if e.link_scheduler == "fair" and bound >= 4 else 0
    else:
        e.window_frames = _int(d, "window_frames", "emulation", 0, minimum=0,
                               maximum=MAX_QUEUE_PACKETS)
    if 0 < e.window_frames < 4 or e.window_frames > e.queue_packets:
        raise ConfigError(f"emulation.window_frames: auto, 0 (no bound) or 4..queue_packets "
                          f"({e.queue_packets}), so that a window fits its queue")
    e.switch_burst_frames = _int(d, "switch_burst_frames", "emulation",
                                 min(SWITCH_BURST_FRAMES, e.queue_packets), minimum=1,
                                 maximum=min(MAX_BURST_FRAMES, e.queue_packets),
                                 why="and at most queue_packets: a burst must fit its queue")
    if "capture" in d:
        e.capture = _capture(d["capture"], fabric)
    if d.get("iteration_timeout_s") is not None:
        e.iteration_timeout_s = _num(d, "iteration_timeout_s", "emulation")
    e.switch_processes = _switch_processes(d, e, fabric)
    return e


def _switch_processes(d: dict, e: EmulationConfig, fabric: Fabric) -> int:
    """emulation.switch_processes: 1 to two per core of this machine, at most one per pod
    (or leaf)."""
    units = len(fabric.leaf_groups)
    what = "pods" if fabric.has_pods else "leaves"
    cap = max_switch_processes()
    why = (f"pods are not split, and this fabric has {units} {what}" if units <= cap else
           f"two per core, and this machine gives mlfabric {cap // 2} "
           f"core{'s' if cap > 2 else ''}")
    n = _int(d, "switch_processes", "emulation", 1, minimum=1, maximum=min(cap, units),
             why=why)
    if n > 1 and e.port_type == "tap":
        raise ConfigError("emulation.switch_processes: tap ports need one ovs-vswitchd; use "
                          "port_type: system, or switch_processes: 1")
    if n > 1 and e.capture is not False:
        raise ConfigError("emulation.capture: not with switch_processes > 1 (the port may be "
                          "in another process's namespace); use capture: false")
    return n

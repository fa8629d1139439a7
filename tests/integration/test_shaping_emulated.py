"""The link schedulers on a live fabric: the fair one gives each flow its own HTB leaf."""
from __future__ import annotations

import re
import subprocess

import pytest

from experiments.calibrate import _agents, pair_rules
from routing.rules import base_rules
from testbed.fabric import FabricSpec, build_fabric
from testbed.installer import install
from testbed.net import EmulatedFabric, EmulationSettings
from testbed.shaping import BUCKETS, SWITCH_BURST_FRAMES

from .helpers import NOTHING, leftovers


def class_bytes(dev: str) -> dict[str, int]:
    """Bytes sent per HTB class of `dev` (classes that sent nothing left out)."""
    out = subprocess.run(["tc", "-s", "class", "show", "dev", dev], capture_output=True,
                         text=True, check=True).stdout
    sent = {}
    for block in out.split("class htb ")[1:]:
        classid = block.split()[0]
        m = re.search(r"Sent (\d+) bytes", block)
        if m and int(m.group(1)) > 0:
            sent[classid] = int(m.group(1))
    return sent


@pytest.mark.parametrize("scheduler", ["fair", "fifo"])
def test_two_flows_on_one_link(tmp_path, scheduler):
    """h1->h3 and h2->h4 both cross leaf1->spine1 (one spine): under fair each has its own
    leaf class and both get close to half the link; under fifo they share one queue."""
    fabric = build_fabric(FabricSpec(1, 2, 2, 10, 10))
    pairs = [("h1", "h3"), ("h2", "h4")]
    size = 1_000_000
    with EmulatedFabric(fabric, f"itest-{scheduler}",
                        EmulationSettings(mtu_bytes=9000, queue_packets=100,
                                          scheduler=scheduler)) as emu:
        install(base_rules(fabric) + pair_rules(fabric, pairs, "spine1"), tmp_path / "rules")
        rates = _agents(emu, pairs, size, "cubic", 1, tmp_path / "logs")
        emu.wait_until_drained(timeout_s=10)
        assert emu.queued_packets() == 0
        uplink = f"leaf1-eth{fabric.port('leaf1', 'spine1')}"
        sent = class_bytes(uplink)
    leaves = {k: v for k, v in sent.items() if k != "5:1" and v >= size}
    if scheduler == "fair":
        # two leaves of the 64, one per flow (consecutive source ports), each the whole flow
        assert len(leaves) == 2 and sent["5:1"] >= 2 * size and BUCKETS >= 2
        assert min(rates) > 0.4 * 10, rates              # each about half of 10 Mbit/s
    else:
        assert leaves == {} and sent["5:1"] >= 2 * size  # one queue for both
    assert sum(rates) < 10.5                              # the link's rate holds
    assert leftovers() == NOTHING


def test_switch_egress_bursts_four_frames_and_host_egress_one():
    """As built: every HTB class of a switch port holds SWITCH_BURST_FRAMES frames of burst,
    every class of a host's port one frame (tc prints them rounded to its clock: 1%)."""
    fabric = build_fabric(FabricSpec(1, 2, 2, 10, 10))
    frame = 9000 + 14
    with EmulatedFabric(fabric, "itest-burst", EmulationSettings(mtu_bytes=9000)) as emu:
        up = f"leaf1-eth{fabric.port('leaf1', 'spine1')}"
        switch = subprocess.run(["tc", "class", "show", "dev", up], capture_output=True,
                                text=True, check=True).stdout
        host = emu.popen("h1", ["tc", "class", "show", "dev", "h1-eth0"],
                         stdout=subprocess.PIPE, text=True).communicate(timeout=10)[0]
    bursts = lambda out: [int(b) for b in re.findall(r"\bc?burst (\d+)b", out)]  # noqa: E731
    assert len(bursts(switch)) == 2 * (BUCKETS + 2) == len(bursts(host))
    assert all(abs(b - SWITCH_BURST_FRAMES * frame) <= 0.01 * frame * SWITCH_BURST_FRAMES
               for b in bursts(switch)), bursts(switch)[:4]
    assert all(abs(b - frame) <= 0.01 * frame for b in bursts(host)), bursts(host)[:4]
    assert leftovers() == NOTHING

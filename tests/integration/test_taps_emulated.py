"""Tap switch ports on a live fabric (testbed/taps.py): each switch port is a tap of the same
OpenFlow number, joined to its veth by the run's nftables table; the veth keeps its shaper and
carries the traffic; `port_type: system` still puts the veths themselves into OVS; teardown
leaves neither taps nor the table."""
from __future__ import annotations

import subprocess

import pytest

from experiments.calibrate import _agents, pair_rules
from routing.rules import base_rules
from testbed.fabric import FabricSpec, build_fabric
from testbed.installer import install
from testbed.net import EmulatedFabric, EmulationSettings
from testbed.taps import nft_table, tap_name

from .helpers import NOTHING, leftovers, nft_tables
from .test_shaping_emulated import class_bytes


def _ofports(bridge: str) -> dict[str, tuple[int, str]]:
    """{interface: (OpenFlow port, type)} of one bridge, from the OVS database."""
    out = subprocess.run(["ovs-vsctl", "--format=csv", "--no-headings", "--columns=name,ofport,"
                          "type", "find", "Interface", f"name!={bridge}"],
                         capture_output=True, text=True, check=True).stdout
    ports = subprocess.run(["ovs-vsctl", "list-ifaces", bridge], capture_output=True,
                           text=True, check=True).stdout.split()
    rows = [line.split(",") for line in out.splitlines()]
    return {n.strip('"'): (int(p), t.strip('"')) for n, p, t in rows if n.strip('"') in ports}


@pytest.mark.parametrize("port_type", ["tap", "system"])
def test_ports_carry_the_flow_through_the_veths_shaper(tmp_path, port_type):
    fabric = build_fabric(FabricSpec(1, 2, 2, 10, 10))
    pairs, size = [("h1", "h3")], 1_000_000
    run_id = f"itest-ports-{port_type}"
    with EmulatedFabric(fabric, run_id, EmulationSettings(mtu_bytes=9000,
                                                          port_type=port_type)) as emu:
        assert emu.port_type == port_type
        for sw in fabric.switches:
            want = {i: fabric.port(sw, n) for s, n in fabric.links if s == sw
                    for i in [fabric.intf(s, n)]}
            got = _ofports(sw)
            if port_type == "tap":
                assert got == {tap_name(i): (p, "tap") for i, p in want.items()}
            else:
                assert got == {i: (p, "") for i, p in want.items()}
        assert nft_tables() == ([nft_table(run_id)] if port_type == "tap" else [])
        install(base_rules(fabric) + pair_rules(fabric, pairs, "spine1"), tmp_path / "rules")
        rates = _agents(emu, pairs, size, "cubic", 1, tmp_path / "logs")
        uplink = f"leaf1-eth{fabric.port('leaf1', 'spine1')}"
        down = f"spine1-eth{fabric.port('spine1', 'leaf2')}"
        sent = [sum(class_bytes(dev).values()) for dev in (uplink, down)]
    assert 0.9 * 10 < rates[0] < 10.5, rates        # the HTB's 10 Mbit/s, nearly all of it
    assert all(b >= size for b in sent), sent       # through both switches' shapers
    assert leftovers() == NOTHING


def _link_down(bridge: str, port: str) -> bool:
    out = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "dump-ports-desc", bridge],
                         capture_output=True, text=True, check=True).stdout
    block = out.split(f"({port}):")[1].split("\n ")[0:6]
    return "LINK_DOWN" in " ".join(block)


def test_a_failed_link_is_down_on_the_taps_that_ovs_sees():
    """A select group's bucket watches its port: with taps, the port OVS sees is the tap, so a
    failed link must take the taps down with the veths (and bring them back up)."""
    fabric = build_fabric(FabricSpec(2, 2, 2, 10, 10))
    with EmulatedFabric(fabric, "itest-tap-fail", EmulationSettings(port_type="tap")) as emu:
        ends = {sw: tap_name(fabric.intf(sw, nbr))
                for sw, nbr in (("leaf1", "spine1"), ("spine1", "leaf1"))}
        assert not any(_link_down(sw, t) for sw, t in ends.items())
        emu.set_link("leaf1", "spine1", up=False)
        assert all(_link_down(sw, t) for sw, t in ends.items())
        other = tap_name(fabric.intf("leaf1", "spine2"))
        assert not _link_down("leaf1", other)
        emu.set_link("leaf1", "spine1", up=True)
        assert not any(_link_down(sw, t) for sw, t in ends.items())
    assert leftovers() == NOTHING

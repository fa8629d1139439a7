"""Tap switch ports (testbed/taps.py): names, the nftables rules that join each tap to its veth,
the config key, the record that cleans them up, and the monitor's tap counters."""
import json
import re
from types import SimpleNamespace

import pytest

from experiments.config import parse
from testbed.fabric import FabricSpec, build_fabric
from testbed import topologies
from testbed.topologies import fat_tree_spec
from testbed.monitor import Sample, advice, parse_proc_net_dev_tx, summarize
import testbed.registry as registry
import testbed.taps as taps
from testbed import ovs
from testbed.registry import RunRecord
from testbed.taps import PORT_TYPES, nft_ruleset, nft_table, tap_name

IFNAMSIZ = 15


def _fabrics():
    yield build_fabric(FabricSpec(spines=4, leaves=4, hosts_per_leaf=4, host_link_mbps=5,
                                  spine_link_mbps=5))
    yield build_fabric(FabricSpec(spines=4, leaves=8, hosts_per_leaf=8, host_link_mbps=2,
                                  spine_link_mbps=4))
    yield build_fabric(fat_tree_spec(8, 2, 2))


@pytest.mark.parametrize("fabric", list(_fabrics()), ids=lambda f: topologies.title(f))
def test_every_switch_port_gets_its_own_tap_name_that_linux_accepts(fabric):
    veths = fabric.switch_interfaces
    names = [tap_name(v) for v in veths]
    assert len(set(names)) == len(names) == len(veths)
    assert not set(names) & set(veths)
    assert all(len(n) <= IFNAMSIZ and n.count("-tap") == 1 for n in names)
    # the tap keeps the switch and the OpenFlow port number of its veth
    assert all(n.replace("-tap", "-eth") == v for n, v in zip(names, veths))


@pytest.mark.parametrize("bad", ["h1", "leaf1-eth", "leaf1-ethx", "-eth1", "eth0"])
def test_a_name_that_is_not_a_switch_port_is_refused(bad):
    with pytest.raises(ValueError):
        tap_name(bad)


def _chains(text: str) -> dict[str, tuple[str, str]]:
    """{chain: (hook device, fwd target)} from an nft_ruleset."""
    found = re.findall(r'chain (\S+) \{\n\s+type filter hook ingress device "([^"]+)" '
                       r'priority 0; policy accept;\n\s+fwd to "([^"]+)"\n\s+\}', text)
    return {c: (dev, dst) for c, dev, dst in found}


def test_the_ruleset_forwards_each_veth_to_its_tap_and_back():
    veths = ["leaf1-eth1", "leaf1-eth5", "spine1-eth1"]
    text = nft_ruleset("mlfabric_1_2", [(v, tap_name(v)) for v in veths])
    assert text.startswith("table netdev mlfabric_1_2 {\n") and text.endswith("}\n")
    chains = _chains(text)
    assert len(chains) == 2 * len(veths) == text.count("chain ")
    for v in veths:
        t = tap_name(v)
        assert chains[v] == (v, t) and chains[t] == (t, v)
    for dev in veths + [tap_name(v) for v in veths]:    # one ingress hook per device
        assert text.count(f'hook ingress device "{dev}" ') == 1


def test_table_name_is_an_nft_identifier():
    assert nft_table("4242-1764641400") == "mlfabric_4242_1764641400"
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", nft_table("cal-1-2"))


def test_port_type_is_system_by_default_and_tap_on_request():
    base = {"name": "t", "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 2,
                                    "host_link_mbps": 5, "spine_link_mbps": 5},
            "jobs": [{"name": "r", "collective": "allreduce", "hosts": ["h1", "h3"],
                      "size_bytes": 100000}], "routing": ["ecmp"]}
    assert PORT_TYPES[0] == "system"
    assert parse(base).emulation.port_type == "system"
    exp = parse({**base, "emulation": {"port_type": "tap"}})
    assert exp.emulation.port_type == "tap"
    assert exp.emulation.resolved()["port_type"] == "tap"
    assert parse(exp.resolved()).emulation.port_type == "tap"     # loads again


def test_a_record_written_before_tap_ports_loads_with_no_tables(tmp_path):
    old = {"run_id": "1-2", "owner": {}, "bridges": ["leaf1"], "interfaces": ["leaf1-eth1"],
           "pids": []}
    path = tmp_path / "1-2.json"
    path.write_text(json.dumps(old))
    assert RunRecord.load(path).nft_tables == []


NET_DEV = """\
Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
leaf1-tap1: 500 5    0    0    0     0          0         0   9000000 150 0 7 0 0 0 0
leaf1-eth1: 1200000  100    0    0    0     0          0         0   5 1 0 0 0 0 0 0
"""


def test_tap_counters_are_bytes_and_drops_on_transmit():
    assert parse_proc_net_dev_tx(NET_DEV) == {"leaf1-tap1": (9_000_000, 7),
                                              "leaf1-eth1": (5, 0)}


def _samples():
    return [Sample(0.25 * i, (40.0, 40.0), 0.0, 50.0, 50.0, 0.0, 0.0, 0, 0, 80.0)
            for i in range(4)]


def test_with_taps_the_queues_are_not_seen_and_say_so():
    out = summarize(_samples(), 0.25, 1.0, port_type="tap")
    assert out["ok"] and out["vswitchd_rx_mean_mbps"] == 80.0
    assert out["vswitchd_rx_wait_ms"] is None
    assert out["vswitchd_rx_queued_max_bytes"] is None
    assert summarize(_samples(), 0.25, 1.0)["vswitchd_rx_wait_ms"] == 0.0


def test_drops_in_a_taps_ring_flag_the_run_and_name_the_taps():
    out = summarize(_samples(), 0.25, 1.0, rx_drops=3, port_type="tap")
    assert not out["ok"] and out["cause"] == "dropped"
    text = " ".join(advice(out, 1280, 64000, 16))
    assert "tap ports dropped 3 packets" in text and "ring" in text


def test_a_table_nft_cannot_remove_stays_in_the_record(monkeypatch, tmp_path):
    """nft missing (or failing) at teardown: the table is reported left and the record kept,
    for `clean`; a table that is already gone counts as removed."""
    def no_nft(cmd, **kw):
        if cmd[0] == "nft":
            raise ovs.TestbedError("nft is not installed; run `make setup` first")
        return SimpleNamespace(returncode=0, stdout="", stderr="")
    monkeypatch.setattr(registry, "STATE_DIR", tmp_path)
    monkeypatch.setattr(taps, "run", no_nft)
    monkeypatch.setattr(registry, "run", no_nft)
    monkeypatch.setattr(registry, "bridge_tags", lambda: {})
    rec = RunRecord("1-2", nft_tables=["mlfabric_1_2"])
    rec.save()
    assert registry.remove_record(rec)["left"] == ["nft table mlfabric_1_2"]
    assert rec.path.exists()
    gone = SimpleNamespace(returncode=1, stdout="",
                           stderr="Error: Could not process rule: No such file or directory")
    monkeypatch.setattr(taps, "run", lambda cmd, **kw: gone)
    assert registry.remove_record(rec)["left"] == [] and not rec.path.exists()

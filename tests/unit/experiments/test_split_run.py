"""experiments/split_run.py without machines: each switch's commands go to the machine that
holds it (Split.rules_for's partition), a crossing link to both ends' machines, agents' times
onto the runner's clock (traffic/driver.py). No ssh, no root."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from experiments.split_run import SplitEmulation
from testbed.fabric import FabricSpec, build_fabric
from testbed.split import split_fabric
from traffic.driver import _AgentProc


class FakeChannel:
    def __init__(self, index: int):
        self.index, self.calls = index, []

    def call(self, req: dict, timeout_s: float = 0) -> dict:
        self.calls.append(req)
        return {"ok": True, "text": f"dump of {req.get('switch')} on {self.index}"}


def emulation():
    f = build_fabric(FabricSpec(spines=4, leaves=4, hosts_per_leaf=2, host_link_mbps=10,
                                spine_link_mbps=10))
    emu = SplitEmulation.__new__(SplitEmulation)
    emu.split = split_fabric(f, 2)
    emu.owner, emu.fabric = emu.split.owner, f
    emu.channels = [FakeChannel(0), FakeChannel(1)]
    return emu


def test_bundles_go_to_the_machine_that_holds_the_switch():
    emu = emulation()
    texts = {sw: f"bundle of {sw}" for sw in emu.fabric.switches}
    emu.apply_bundles(texts, "install")
    for k, c in enumerate(emu.channels):
        [req] = c.calls
        assert req["op"] == "bundles" and req["label"] == "install"
        assert req["texts"] == emu.split.rules_for(k, texts)
    assert emu.dump_flows("spine2") == f"dump of spine2 on {emu.owner['spine2']}"


def test_a_crossing_link_is_set_on_both_machines_a_local_one_on_its_own():
    emu = emulation()
    t = emu.split.tunnels[0]
    emu.set_link(t.lower, t.upper, False)
    assert [len(c.calls) for c in emu.channels] == [1, 1]
    local = next((u, v) for u, v in emu.fabric.links if emu.fabric.is_switch(u)
                 and emu.fabric.is_switch(v) and emu.owner[u] == emu.owner[v] == 1)
    emu.set_link(*local, True)
    assert [len(c.calls) for c in emu.channels] == [1, 2]
    assert emu.channels[1].calls[-1] == {"op": "set_link", "u": local[0], "v": local[1],
                                         "up": True}


def test_agents_times_move_onto_the_runners_clock():
    proc = SimpleNamespace(clock_offset_s=100.0)
    agent = _AgentProc("j", "h1", proc)
    ev = agent.on_runner_clock({"event": "done", "start_s": 105.0,
                                "recv": [[1, 106.0, 107.5, 10]]})
    assert ev["start_s"] == 5.0 and ev["recv"] == [[1, 6.0, 7.5, 10]]
    same = _AgentProc("j", "h1", SimpleNamespace())     # one machine: unchanged
    assert same.on_runner_clock({"event": "done", "start_s": 3.0, "recv": []})["start_s"] == 3.0


def test_the_monitor_verdict_is_the_worst_machines(tmp_path):
    from experiments.split_run import SplitMonitor
    emu = emulation()
    for c, name in zip(emu.channels, ("a", "b")):
        c.m = SimpleNamespace(name=name)
    mon = SplitMonitor(emu)
    mon.results = [{"summary": {"ok": True, "forwarding_max_pct": 40.0}, "csv": "a\n"},
                   {"summary": {"ok": False, "forwarding_max_pct": 20.0}, "csv": "b\n"}]
    s = mon.summary()
    assert s["ok"] is False and s["forwarding_max_pct"] == 20.0
    assert [m["name"] for m in s["machines"]] == ["a", "b"]
    mon.write_csv(tmp_path / "cpu_samples.csv")
    assert (tmp_path / "cpu_samples.csv").read_text() == "b\n"
    assert (tmp_path / "cpu_samples-a.csv").read_text() == "a\n"


def test_a_run_over_machines_named_by_dns_is_refused_before_anything_is_built():
    from experiments.config import ConfigError, parse
    from experiments.runner import check_splittable
    doc = {"name": "x", "routing": ["ilp"],
           "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 2, "host_link_mbps": 10,
                      "spine_link_mbps": 10},
           "jobs": [{"name": "r", "collective": "allreduce", "size_bytes": 100000,
                     "hosts": ["h1", "h3"]}],
           "emulation": {"mtu_bytes": 8950}}
    ok = parse({**doc, "machines": [{"name": "a", "address": "192.168.251.1"},
                                    {"name": "b", "address": "192.168.251.2"}]})
    check_splittable(ok)
    named = parse({**doc, "machines": [{"name": "a", "address": "192.168.251.1"},
                                       {"name": "b", "address": "b.example.org"}]})
    with pytest.raises(ConfigError, match=r"^machines\[1\]\.address: 'b\.example\.org' is a name"):
        check_splittable(named)

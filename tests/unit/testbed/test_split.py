"""testbed/split.py: pods whole on machines, only top-tier links cross, one tunnel per such
link with the fabric's ports, rates and the VXLAN-reduced MTU."""
import pytest

from testbed.fabric import FabricSpec, build_fabric
from testbed.topologies import fat_tree_spec
from testbed.split import (VNI_BASE, VXLAN_OVERHEAD_BYTES, SplitError, check_mtu, split_fabric,
                           tunnel_commands)


def leaf_spine(leaves=8, spines=4, hosts=8):
    return build_fabric(FabricSpec(spines=spines, leaves=leaves, hosts_per_leaf=hosts,
                                   host_link_mbps=10, spine_link_mbps=20))


def clos3(**kw):
    base = dict(topology="clos3", pods=3, leaves_per_pod=2, aggs_per_pod=2, cores_per_plane=3,
                hosts_per_leaf=2, host_link_mbps=10, leaf_agg_mbps=10, agg_core_mbps=5)
    return build_fabric(FabricSpec(**{**base, **kw}))


FABRICS = {"leaf-spine 8x4": leaf_spine, "fat-tree k=4": lambda: build_fabric(
    fat_tree_spec(4, 10, 10)), "fat-tree k=8": lambda: build_fabric(fat_tree_spec(8, 10, 10)),
    "clos3 3 pods": clos3}


@pytest.mark.parametrize("name", sorted(FABRICS))
@pytest.mark.parametrize("machines", [1, 2, 3])
def test_every_node_on_one_machine_and_only_top_tier_links_cross(name, machines):
    f = FABRICS[name]()
    s = split_fabric(f, machines)
    assert sorted(n for m in s.machines for n in m.switches) == sorted(f.switches)
    assert sorted(n for m in s.machines for n in m.hosts) == sorted(f.hosts)
    crossing = {(t.lower, t.upper) for t in s.tunnels}
    for u, v in f.links:
        if s.machine_of(u) != s.machine_of(v):
            assert {f.role(u), f.role(v)} in ({"leaf", "spine"}, {"agg", "core"}), (u, v)
            assert f.link_key(u, v) in crossing
    assert len(crossing) == len(s.tunnels)          # one tunnel per crossing link
    if machines == 1:
        assert s.tunnels == ()


@pytest.mark.parametrize("name", sorted(FABRICS))
def test_hosts_balanced_to_one_pod_and_switches_to_one(name):
    f = FABRICS[name]()
    s = split_fabric(f, 3)
    hosts = [len(m.hosts) for m in s.machines]
    per_pod = f.spec.hosts_per_leaf * (f.spec.leaves_per_pod if f.tiers == 3 else 1)
    assert max(hosts) - min(hosts) <= per_pod
    switches = [len(m.switches) for m in s.machines]   # the top tier evens them out as it can
    per_pod = f.spec.leaves_per_pod + f.spec.aggs_per_pod if f.tiers == 3 else 1
    assert max(switches) - min(switches) <= per_pod


def test_pods_stay_whole():
    f = build_fabric(fat_tree_spec(8, 10, 10))
    s = split_fabric(f, 3)
    assert [m.pods for m in s.machines] == [(1, 2, 3), (4, 5, 6), (7, 8)]
    machine_of_pod = {p: m.index for m in s.machines for p in m.pods}
    for x in f.leaves + f.aggs + f.hosts:
        assert s.machine_of(x) == machine_of_pod[f.pod_of(x)], x


def test_fat_tree_k4_on_two_machines_tunnels():
    f = build_fabric(fat_tree_spec(4, 10, 40))
    s = split_fabric(f, 2, underlay_ips=["10.9.0.1", "10.9.0.2"], underlay_mtu_bytes=9000)
    # 4 cores, two per machine; each core has 4 agg links, 2 from the other machine's pods
    assert [len([x for x in m.switches if x.startswith("core")]) for m in s.machines] == [2, 2]
    assert len(s.tunnels) == 4 * 2
    assert [t.vni for t in s.tunnels] == list(range(VNI_BASE, VNI_BASE + 8))
    for t in s.tunnels:
        assert f.role(t.lower) == "agg" and f.role(t.upper) == "core"
        assert (t.lower_port, t.upper_port) == (f.port(t.lower, t.upper), f.port(t.upper, t.lower))
        assert t.rate_mbps == 40 and t.mtu_bytes == 9000 - VXLAN_OVERHEAD_BYTES
        assert t.lower_machine != t.upper_machine
    # each machine ends 8 tunnels at 40 Mbit/s, plus the outer headers
    out = s.machines[0].underlay_out_mbps
    assert 8 * 40 < out < 8 * 40 * 1.01


def test_leaf_spine_cut_into_leaf_runs():
    f = leaf_spine(leaves=8, spines=4)
    s = split_fabric(f, 2)
    assert [m.pods for m in s.machines] == [(1, 2, 3, 4), (5, 6, 7, 8)]
    assert [len(m.hosts) for m in s.machines] == [32, 32]
    # 2 spines per machine; each spine's links from the other machine's 4 leaves cross
    assert len(s.tunnels) == 4 * 4
    assert all(f.role(t.lower) == "leaf" and f.role(t.upper) == "spine" for t in s.tunnels)


def test_failed_links_still_get_a_tunnel_marked_down():
    f = build_fabric(FabricSpec(spines=2, leaves=2, hosts_per_leaf=1, host_link_mbps=10,
                                spine_link_mbps=10, failed_links=(("leaf2", "spine1"),)))
    s = split_fabric(f, 2)
    down = [t for t in s.tunnels if not t.live]
    assert [(t.lower, t.upper) for t in down] == [("leaf2", "spine1")]
    cmds = tunnel_commands(s, s.machine_of("leaf2"), "eth1")
    assert ["ip", "link", "set", "dev", down[0].ifname, "down"] in cmds


def test_tunnel_commands_use_model_ports_and_peer_addresses():
    f = build_fabric(fat_tree_spec(4, 10, 10))
    s = split_fabric(f, 2, underlay_ips=["192.0.2.1", "192.0.2.2"], underlay_mtu_bytes=1500)
    t = s.tunnels[0]
    cmds = tunnel_commands(s, t.lower_machine, "ens5")
    add = next(c for c in cmds if c[:4] == ["ip", "link", "add", t.ifname])
    assert add[add.index("id") + 1] == str(t.vni)
    assert add[add.index("remote") + 1] == s.machines[t.upper_machine].underlay_ip
    assert add[add.index("local") + 1] == s.machines[t.lower_machine].underlay_ip
    assert f"ofport_request={t.lower_port}" in next(c for c in cmds if c[0] == "ovs-vsctl"
                                                    and t.ifname in c)
    assert ["ip", "link", "set", "dev", t.ifname, "mtu", "1450", "up"] in cmds
    assert all(len(x.ifname) < 16 for x in s.tunnels)


def test_rules_for_machine_partition_the_switches():
    f = build_fabric(fat_tree_spec(4, 10, 10))
    s = split_fabric(f, 2)
    rules = {sw: [sw] for sw in f.switches}
    parts = [s.rules_for(m, rules) for m in range(2)]
    assert sorted(parts[0]) + sorted(parts[1]) and set(parts[0]) | set(parts[1]) == set(rules)
    assert not set(parts[0]) & set(parts[1])


def test_mtu_check():
    s = split_fabric(build_fabric(fat_tree_spec(4, 10, 10)), 2, underlay_mtu_bytes=9000)
    check_mtu(s, 8950)
    with pytest.raises(SplitError, match="emulation.mtu_bytes: 9000 .* at most 8950"):
        check_mtu(s, 9000)
    check_mtu(split_fabric(build_fabric(fat_tree_spec(4, 10, 10)), 1), 64000)  # no tunnels


@pytest.mark.parametrize("kw, field", [
    (dict(machines=0), "machines"), (dict(machines=5), "machines"),
    (dict(machines=2, underlay_ips=["a"]), "underlay_ips"),
    (dict(machines=2, underlay_ips=["a", "a"]), "underlay_ips"),
    (dict(machines=2, underlay_mtu_bytes=1000), "underlay_mtu_bytes"),
    (dict(machines=2, underlay_mtu_bytes=70000), "underlay_mtu_bytes"),
    (dict(machines=2, vni_base=0), "vni_base"),
    (dict(machines=2, vni_base=(1 << 24) - 2), "vni_base"),
])
def test_bad_input_names_the_field(kw, field):
    with pytest.raises(SplitError, match=f"^{field}: "):
        split_fabric(build_fabric(fat_tree_spec(4, 10, 10)), **kw)


def test_pure():
    import subprocess
    import sys
    code = "import sys, testbed.split; sys.exit('mininet' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_as_dict_names_both_endpoints():
    f = build_fabric(fat_tree_spec(4, 10, 10))
    s = split_fabric(f, 2, underlay_ips=["192.0.2.1", "192.0.2.2"])
    doc = s.as_dict()
    t = doc["tunnels"][0]
    assert t["endpoints"] == [doc["machines"][m]["underlay_ip"] for m in t["machines"]]
    assert doc["inner_mtu_bytes"] == 8950 and len(doc["tunnels"]) == len(s.tunnels)


def test_carried_is_forwarding_times_n_bounded_by_the_underlay():
    from testbed.split import carried
    one = carried(1, 1536, 10_000, 8950)
    assert one.carried_mbps == 1536 and one.bound == "forwarding"
    four = carried(4, 1536, 10_000, 8950)
    assert four.carried_mbps == 4 * 1536 and four.bound == "forwarding"
    slow = carried(4, 1536, 1000, 8950)           # 1 Gbit/s NICs, every byte crossing
    assert slow.bound == "underlay"
    assert slow.carried_mbps == pytest.approx(4 * 1000 * 8964 / 9014)   # 50 B a frame
    half = carried(4, 1536, 1000, 8950, crossing_fraction=0.5)    # twice, up to forwarding
    assert half.underlay_mbps == pytest.approx(2 * slow.carried_mbps)
    assert half.carried_mbps == 4 * 1536 and half.bound == "forwarding"
    with pytest.raises(SplitError):
        carried(0, 1, 1, 9000)


def test_tunnel_commands_into_the_switch_processs_namespace():
    """A split run's part: the device is made beside the underlay, moved into the namespace
    of the machine's own ovs-vswitchd, set up there, attached through that process's db."""
    f = build_fabric(fat_tree_spec(4, 10, 10))
    s = split_fabric(f, 2, underlay_ips=["192.0.2.1", "192.0.2.2"], underlay_mtu_bytes=9000)
    t = s.tunnels[0]
    vsctl = ("ovs-vsctl", "--db=unix:/run/x/db.sock")
    cmds = tunnel_commands(s, t.lower_machine, "ul0", "mlfXp1", vsctl)
    mine = [c for c in cmds if t.ifname in c]
    assert mine[0][:4] == ["ip", "link", "add", t.ifname] and mine[0][-2:] == ["dev", "ul0"]
    assert mine[1] == ["ip", "link", "set", "dev", t.ifname, "netns", "mlfXp1"]
    assert mine[2] == ["ip", "-n", "mlfXp1", "link", "set", "dev", t.ifname, "mtu", "8950",
                       "up"]
    assert mine[3][:3] == [*vsctl, "add-port"]

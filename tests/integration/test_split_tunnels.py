"""testbed/split.py's tunnel commands on the real kernel: two namespaces of this test's own
stand in for two machines, a veth pair for the underlay. Every `ip` command split_fabric gives
one machine is run in its namespace; then each tunnel carries a ping at the tunnel's MTU with
DF set (the 50-byte VXLAN overhead is right), and nothing is left behind. ~5 s."""
import subprocess

import pytest

from testbed.fabric import build_fabric
from testbed.topologies import fat_tree_spec
from testbed.split import split_fabric, tunnel_commands

NS = ("mfsplt0", "mfsplt1")
UNDERLAY = ("192.168.252.1", "192.168.252.2")


def sh(*args: str, ns: str | None = None) -> subprocess.CompletedProcess:
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


@pytest.fixture
def machines():
    for ns in NS:
        sh("ip", "netns", "del", ns)
    try:
        for ns in NS:
            assert sh("ip", "netns", "add", ns).returncode == 0
        assert sh("ip", "link", "add", "mfsp0", "netns", NS[0], "mtu", "1500", "type", "veth",
                  "peer", "name", "mfsp1", "netns", NS[1]).returncode == 0
        for i, ns in enumerate(NS):
            sh("ip", "link", "set", f"mfsp{i}", "mtu", "1500", "up", ns=ns)
            sh("ip", "addr", "add", f"{UNDERLAY[i]}/30", "dev", f"mfsp{i}", ns=ns)
        yield
    finally:
        for ns in NS:
            sh("ip", "netns", "del", ns)


def test_tunnels_come_up_and_carry_their_mtu(machines):
    f = build_fabric(fat_tree_spec(4, 10, 10))
    s = split_fabric(f, 2, underlay_ips=list(UNDERLAY), underlay_mtu_bytes=1500)
    tunnels = s.tunnels[:3]
    for m in (0, 1):
        for cmd in tunnel_commands(s, m, f"mfsp{m}"):
            if cmd[0] == "ip" and any(t.ifname in cmd for t in tunnels):
                r = sh(*cmd, ns=NS[m])
                assert r.returncode == 0, (cmd, r.stderr)
    for k, t in enumerate(tunnels):   # overlay addresses of the test's own, one /30 each
        for m in (0, 1):
            sh("ip", "addr", "add", f"10.254.{k}.{m + 1}/30", "dev", t.ifname, ns=NS[m])
        mtu = sh("cat", f"/sys/class/net/{t.ifname}/mtu", ns=NS[0]).stdout.strip()
        assert mtu == "1450"
        payload = str(t.mtu_bytes - 28)   # IPv4 20 + ICMP 8: one full-MTU frame, DF set
        r = sh("ping", "-c", "2", "-i", "0.2", "-W", "2", "-M", "do", "-s", payload,
               f"10.254.{k}.2", ns=NS[0])
        assert r.returncode == 0, r.stdout + r.stderr
        too_big = sh("ping", "-c", "1", "-W", "1", "-M", "do", "-s", str(int(payload) + 1),
                     f"10.254.{k}.2", ns=NS[0])
        assert too_big.returncode != 0

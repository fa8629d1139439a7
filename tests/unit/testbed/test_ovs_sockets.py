"""ovs-vswitchd's packet sockets: `ss` and /proc/net/packet parsing, the drop count between two
readings, the buffer check, and a run flagged (with advice) when the emulator dropped packets."""
import pytest

import testbed.ovs as ovs
from testbed.monitor import (Sample, advice, parse_proc_net_dev, parse_proc_net_packet,
                             socket_drops, summarize)
from testbed.ovs import PacketSocket, parse_ss_packet

# `ss -0 -m -p -e -n -H` on this machine with one netdev bridge and one port (mft0), plus a
# packet socket of another process (tcpdump) that must not count
SS = """\
p_raw 0      0      [0]:*    * users:(("ovs-vswitchd",pid=2508,fd=204)) ino:57624 sk:1
\tver:0 cpy_thresh:0 flags( 0 ) skmem:(r0,rb212992,t0,tb8388608,f0,w0,o0,bl0,d0)
p_raw 0      0        *:mft0 * users:(("ovs-vswitchd",pid=2508,fd=43)) ino:2190301 sk:26
\tver:0 cpy_thresh:0 flags( running auxdata ) skmem:(r4608,rb8388608,t0,tb8388608,f0,w0,o176,bl0,d7)
p_raw 0      0        *:mft0 * users:(("tcpdump",pid=3001,fd=3)) ino:2190999 sk:27
\tver:0 cpy_thresh:0 flags( running ) skmem:(r0,rb212992,t0,tb212992,f0,w0,o0,bl0,d99)
"""

PROC = """\
sk               RefCnt Type Proto  Iface R Rmem   User   Inode
0000000077adedd1 2      3    0000   0     0 0      0      57624
0000000051b49331 3      3    0003   887   1 4608   0      2190301
"""


def test_ss_records_span_two_lines_and_other_processes_are_left_out():
    socks = parse_ss_packet(SS)
    assert socks == [PacketSocket("*", 57624, 0, 212992, 8388608, 0),
                     PacketSocket("mft0", 2190301, 4608, 8388608, 8388608, 7)]
    assert parse_ss_packet(SS, pid=2508) == socks
    assert parse_ss_packet(SS, pid=1) == []
    assert parse_ss_packet("") == []


def test_send_buffer_is_the_send_sockets(monkeypatch):
    monkeypatch.setattr(ovs, "vswitchd_packet_sockets", lambda: parse_ss_packet(SS))
    assert ovs.ovs_send_buffer_bytes() == 8388608


def test_proc_net_packet_gives_bytes_queued_by_inode():
    assert parse_proc_net_packet(PROC) == {57624: 0, 2190301: 4608}


def test_drops_count_only_sockets_seen_twice():
    before = [PacketSocket("a", 1, 0, 1, 1, 5), PacketSocket("b", 2, 0, 1, 1, 0)]
    after = [PacketSocket("a", 1, 0, 1, 1, 9), PacketSocket("c", 3, 0, 1, 1, 50)]
    assert socket_drops(before, after) == 4
    assert socket_drops(before, before) == 0


@pytest.mark.parametrize("wmem, rmem, fails", [(8 << 20, 8 << 20, None),
                                               (212992, 8 << 20, "wmem_default"),
                                               (8 << 20, 212992, "rmem_default")])
def test_buffer_check_names_the_sysctl_and_the_fix(monkeypatch, wmem, rmem, fails):
    monkeypatch.setattr(ovs, "ovs_send_buffer_bytes", lambda: None)
    monkeypatch.setattr(ovs, "sysctl_bytes",
                        {"wmem_default": wmem, "rmem_default": rmem}.__getitem__)
    if fails is None:
        assert ovs.check_socket_buffers() == wmem
        return
    with pytest.raises(ovs.TestbedError, match="make setup") as e:
        ovs.check_socket_buffers()
    assert (fails == "rmem_default") == ("rmem_default" in str(e.value))


def quiet(queued=0):
    return Sample(0.0, (40.0, 40.0), 0.0, 50.0, 50.0, 0.0, 0.0, queued, queued)


def test_a_run_whose_sockets_dropped_is_flagged_with_the_cause():
    clean = summarize([quiet(100), quiet(300)], 0.25, 0.5, rx_drops=0, rcvbuf_bytes=8 << 20)
    assert clean["ok"] and clean["cause"] is None
    assert clean["vswitchd_rx_queued_max_bytes"] == 300
    assert clean["vswitchd_rx_queued_mean_bytes"] == 200
    dropped = summarize([quiet()] * 20, 0.25, 5.0, rx_drops=22, rcvbuf_bytes=212992)
    assert not dropped["ok"] and dropped["cause"] == "dropped"
    assert dropped["vswitchd_rx_drops"] == 22
    assert not summarize([], 0.25, 0.0, rx_drops=1)["ok"]


def test_advice_for_drops_names_them_the_buffer_and_the_rate_cut():
    small = summarize([quiet()] * 20, 0.25, 5.0, rx_drops=22, rcvbuf_bytes=212992)
    text = "\n".join(advice(small, 1280, 64000, 16))
    assert "dropped 22 packets" in text and "0.2 MiB" in text and "make setup" in text
    assert "lower every link rate" in text
    large = summarize([quiet()] * 20, 0.25, 5.0, rx_drops=3, rcvbuf_bytes=8 << 20)
    text = "\n".join(advice(large, 1280, 64000, 16))
    assert "dropped 3 packets" in text and "make setup" not in text


DEV = """\
Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:  397896     976    0    0    0     0          0         0   397896     976    0    0    0     0       0          0
leaf1-eth1: 1200000  100    0    0    0     0          0         0   5 1 0 0 0 0 0 0
"""


def test_proc_net_dev_gives_bytes_received_by_interface():
    assert parse_proc_net_dev(DEV) == {"lo": 397896, "leaf1-eth1": 1200000}


def test_wait_is_bytes_queued_over_the_arrival_rate():
    # 1 MB queued on average while 80 Mbit/s (10 MB/s) arrive: 100 ms of waiting
    s = [Sample(0.0, (40.0, 40.0), 0.0, 50.0, 50.0, 0.0, 0.0, q, q, 80.0)
         for q in (500_000, 1_500_000)]
    out = summarize(s, 0.25, 0.5)
    assert out["vswitchd_rx_mean_mbps"] == 80.0
    assert out["vswitchd_rx_wait_ms"] == pytest.approx(100.0)
    assert summarize([quiet(1000)], 0.25, 0.25)["vswitchd_rx_wait_ms"] is None   # no traffic

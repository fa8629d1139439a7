"""Link shaping as data: the tc lines of both schedulers, the MTU rule, the backlog parser."""
from __future__ import annotations

import re

import pytest

from testbed.net import backlog_packets
from testbed.shaping import BUCKETS, Shaping, auto_mtu_bytes, bucket_of, tc_batch


def test_fifo_is_one_shaped_drop_tail_queue():
    lines = tc_batch("leaf1-eth5", Shaping(20.0, 9000, 100, "fifo"))
    assert lines[0] == "qdisc replace dev leaf1-eth5 root handle 5: htb default 1"
    assert "rate 20mbit" in lines[1] and "quantum 9014" in lines[1]
    assert lines[2].endswith("pfifo limit 100")
    assert len(lines) == 3


def test_fair_has_one_leaf_per_bucket_and_a_source_port_hash():
    s = Shaping(5.0, 9000, 50, "fair")
    lines = tc_batch("h1-eth0", s)
    leaves = [ln for ln in lines if ln.startswith("class add") and "parent 5:1 " in ln]
    assert len(leaves) == BUCKETS + 1                    # + the class of the ACK streams
    # each leaf is guaranteed an equal share of the link, may borrow all of it, equal quanta
    for ln in leaves:
        assert f"rate {5000 / (BUCKETS + 1):.3f}kbit ceil 5mbit" in ln and "quantum 9014" in ln
    assert sum(ln.endswith("pfifo limit 50") for ln in lines) == BUCKETS + 1
    # ports below 16384 (listen ports: the ACK streams) first, to their own class
    acks = next(ln for ln in lines if "prio 1" in ln)
    assert "match u32 0x00000000 0xc0000000 at 20 flowid 5:2" in acks
    # the hash takes the low bits of the TCP source port (high half of the word at IP+20)
    link = next(ln for ln in lines if "hashkey" in ln)
    mask = int(re.search(r"hashkey mask (0x[0-9a-f]+) at 20", link).group(1), 16)
    assert mask == (BUCKETS - 1) << 16
    buckets = [ln for ln in lines if " ht 3:" in ln]
    assert len(buckets) == BUCKETS
    assert buckets[bucket_of(20001)].endswith(f"flowid 5:{0x100 + bucket_of(20001):x}")
    # consecutive source ports (mlfabric's connections) never share a bucket
    assert len({bucket_of(20000 + i) for i in range(BUCKETS)}) == BUCKETS
    # every burst holds one frame (HTB must pass a whole frame), not more, at slow rates
    big = tc_batch("x", Shaping(60.0, 64000, 20, "fair"))
    assert set(re.findall(r"burst (\d+)", " ".join(big))) == {"64014"}
    # and at least 1 ms of the link at fast ones (HTB's timer resolution)
    assert Shaping(1000.0, 1500, 20).burst_bytes == 125_000
    # a switch's egress: burst_frames frames in the parent and every leaf class
    deep = tc_batch("x", Shaping(60.0, 64000, 20, "fair", burst_frames=4))
    assert set(re.findall(r"c?burst (\d+)", " ".join(deep))) == {str(4 * 64014)}
    assert Shaping(1000.0, 1500, 20, burst_frames=4).burst_bytes == 125_000


def test_unknown_scheduler_is_refused():
    with pytest.raises(ValueError, match="scheduler"):
        tc_batch("x", Shaping(5.0, 9000, 100, "sfq"))


@pytest.mark.parametrize("rate, mtu", [(1, 9000), (5, 9000), (10, 12000), (20, 25000),
                                       (40, 50000), (60, 64000), (1000, 64000)])
def test_auto_mtu_is_about_ten_ms_of_the_link(rate, mtu):
    assert auto_mtu_bytes(rate) == mtu


def test_backlog_counts_only_the_fabric_roots():
    out = """qdisc htb 5: dev leaf1-eth5 root refcnt 3 r2q 10 default 0x100 direct_packets_stat 0
 Sent 3149354 bytes 367 pkt (dropped 0, overlimits 706 requeues 0)
 backlog 27042b 3p requeues 0
qdisc pfifo 120: dev leaf1-eth5 parent 5:120 limit 100p
 Sent 3148928 bytes 362 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 27042b 3p requeues 0
qdisc pfifo_fast 0: dev eth0 root refcnt 2 bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1
 Sent 547263 bytes 5083 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 1514b 1p requeues 0
qdisc htb 5: dev leaf1-eth6 root refcnt 3 r2q 10 default 0x100 direct_packets_stat 0
 Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
"""
    assert backlog_packets(out, {"leaf1-eth5", "leaf1-eth6"}) == 3
    assert backlog_packets(out, {"leaf1-eth6"}) == 0

"""Scale bounds: the source-port bound is `run`'s (one TCP source port per connection), not
`predict`'s; the transfer bound is the predictor's, counted before anything is planned."""
from __future__ import annotations

import pytest

from experiments.config import ConfigError, parse
from experiments.config.limits import SOURCE_PORT_SPAN
from experiments.runner import check_emulable

#: 4 leaves x 40 hosts: an all-to-all over all 160 hosts opens 160 x 159 = 25,440 connections,
#: more than the 22,768 source ports runs may use
BIG_A2A = {"name": "a2a", "routing": ["ecmp"],
           "fabric": {"spines": 2, "leaves": 4, "hosts_per_leaf": 40,
                      "host_link_mbps": 100, "spine_link_mbps": 100},
           "jobs": [{"name": "x", "collective": "alltoall",
                     "hosts": [f"h{i}" for i in range(1, 161)], "size_bytes": 160 * 1000}]}


def test_more_connections_than_source_ports_parse_for_predict_and_are_refused_by_run():
    exp = parse(BIG_A2A)
    conns = sum(len(p.connections) for p in exp.plans())
    assert conns == 160 * 159 > SOURCE_PORT_SPAN // 2
    with pytest.raises(ConfigError, match=r"^routing: 1 routings x 25440 connections exceed "
                                          r"the 22768 source ports .*`predict` has no such"):
        check_emulable(exp)


def test_repetitions_of_a_prediction_shift_ports_past_the_emulation_bound():
    """predict --repeat: each repetition shifts every source port (ECMP's hash); the model
    needs no room between runs, and 5-tuples stay unique."""
    from traffic.collectives import with_port_offset
    plans = parse(BIG_A2A).plans()
    shifted = with_port_offset(plans, 12_345, emulated=False)
    ports = [c.src_port for p in shifted for c in p.connections]
    assert ports[0] == 20_000 + 12_345 and max(ports) <= 65_535
    keys = {(c.src, c.dst, c.src_port, c.dst_port) for p in shifted for c in p.connections}
    assert len(keys) == len(ports)
    with pytest.raises(ValueError, match="leave no room to shift source ports"):
        with_port_offset(plans, 12_345)

"""split: adaptive: a transfer's K subflows share its bytes as they go (each takes the next
piece when it is free). The DAG's pools, the config keys, the model on a hand case, and the
agents' piece protocol over loopback."""
from __future__ import annotations

import socket
import threading

import pytest

from experiments.config import ConfigError, parse
from testbed.fabric import FabricSpec, build_fabric
from traffic.agent import Agent, AgentError, Plan, _pool_part_done
from traffic.collectives import ADAPTIVE_UNSENT_BYTES, Collective, JobSpec, plan_jobs
from traffic.driver import agent_plans
from traffic.predictor import predict

S = 3_000_000          # bytes of the transfer split over two subflows
MBPS = 100.0


def hand_case(split: str, piece: int = 1 << 20):
    """h1 -> h4 in 2 subflows, part 0 via spine1, part 1 via spine2, while h2 -> h5 and
    h3 -> h6 also cross spine2 (they last longer)::

            spine1        spine2
               \\   A1 B1 B2 |    leaf1 -> spine2 carries 3 flows: 33.3 Mbit/s each;
          A0    \\ _________/      h1's uplink leaves A0 the other 66.7
              leaf1          leaf2
             h1 h2 h3       h4 h5 h6
    """
    f = build_fabric(FabricSpec(2, 2, 3, MBPS, MBPS))
    a = JobSpec("a", Collective.FLOWS, [["h1", "h4"]], S, subflows=2, split=split,
                split_piece_bytes=piece)
    b = JobSpec("b", Collective.FLOWS, [["h2", "h5"], ["h3", "h6"]], 10 * S)
    plans = plan_jobs([a, b])
    spine_of = {c.conn_id: ("spine1" if c.conn_id == 0 else "spine2")
                for p in plans for c in p.connections}
    return plans, predict(f, plans, spine_of)


def test_adaptive_parts_share_one_pool_per_transfer():
    plan, = plan_jobs([JobSpec("r", Collective.ALLREDUCE, [["h1", "h2", "h3"]], 3_000_000,
                               subflows=4, split="adaptive")])
    even, = plan_jobs([JobSpec("r", Collective.ALLREDUCE, [["h1", "h2", "h3"]], 3_000_000,
                               subflows=4)])
    assert all(t.pool == -1 for t in even.transfers)
    for t in plan.transfers:
        first = plan.transfers[t.pool]
        assert t.pool == t.tid - t.tid % 4 and first.pool == first.tid
        assert (t.deps, t.step) == (first.deps, first.step)
    assert [(t.conn_id, t.size_bytes, t.deps) for t in plan.transfers] == \
        [(t.conn_id, t.size_bytes, t.deps) for t in even.transfers]


@pytest.mark.parametrize("piece", [65536, 1 << 20])
def test_adaptive_moves_bytes_in_proportion_to_the_rates(piece):
    """Hand computed: A0 runs at 66.7 and A1 at 33.3 Mbit/s. Even parts: A1's S/2 at 33.3 sets
    the time, 1.5 x S / 100 Mbit/s. Adaptive: the shared bytes, S less each part's tail (half
    a piece and the unsent allowance), drain at 100 Mbit/s, 2/3 of them via spine1; then each
    part sends its tail at its own rate, and A1's (at 33.3) ends the transfer."""
    tail = piece / 2 + ADAPTIVE_UNSENT_BYTES
    shared = S - 2 * tail
    want_s = shared * 8 / (MBPS * 1e6) + tail * 8 / (MBPS / 3 * 1e6)
    _, even = hand_case("even")
    plans, adaptive = hand_case("adaptive", piece)
    assert even.jobs["a"].cct_s[0] == pytest.approx(1.5 * S * 8 / (MBPS * 1e6), rel=1e-9)
    assert adaptive.jobs["a"].cct_s[0] == pytest.approx(want_s, rel=1e-9)
    carried = adaptive.jobs["a"].transfer_bytes
    assert carried.tolist() == pytest.approx([shared * 2 / 3 + tail, shared / 3 + tail],
                                             rel=1e-9)
    assert even.jobs["a"].transfer_bytes.tolist() == [S / 2, S / 2]
    # the background flows saw A1 leave spine2 sooner: they end no later than with even parts
    assert adaptive.jobs["b"].cct_s[0] <= even.jobs["b"].cct_s[0] + 1e-9


def test_a_pool_of_at_most_k_half_pieces_is_the_even_split():
    """S = 3 MB in 2 parts with 4 MiB pieces: both pieces are taken at once, as even parts."""
    _, even = hand_case("even")
    _, adaptive = hand_case("adaptive", 4 << 20)
    assert adaptive.jobs["a"].cct_s == even.jobs["a"].cct_s


def test_adaptive_on_equal_paths_is_the_even_split():
    f = build_fabric(FabricSpec(2, 2, 2, MBPS, MBPS))
    ccts = []
    for split in ("even", "adaptive"):
        plans = plan_jobs([JobSpec("r", Collective.ALLREDUCE, [["h1", "h3"]], S, subflows=2,
                                   split=split)])
        spine_of = {c.conn_id: f"spine{1 + c.conn_id % 2}" for c in plans[0].connections}
        ccts.append(predict(f, plans, spine_of).jobs["r"].cct_s)
    assert ccts[1] == pytest.approx(ccts[0], rel=1e-9)


BASE = {"name": "t", "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 2,
                                "host_link_mbps": 10, "spine_link_mbps": 10},
        "routing": ["ecmp"]}
JOB = {"name": "r", "collective": "allreduce", "hosts": ["h1", "h2"], "size_bytes": 2_000_000}


def test_config_keys_per_job_top_level_and_the_resolved_config():
    exp = parse({**BASE, "subflows": 4, "split": "adaptive", "split_piece_bytes": 65536,
                 "jobs": [JOB, {**JOB, "name": "s", "hosts": ["h3", "h4"], "split": "even"}]})
    assert [(j.split, j.split_piece_bytes) for j in exp.jobs] == [("adaptive", 65536),
                                                                  ("even", 65536)]
    res = exp.resolved()
    assert res["jobs"][0]["split"] == "adaptive" and "split" not in res["jobs"][1]
    assert parse(res).resolved() == res


@pytest.mark.parametrize("doc, names", [
    ({"split": "packet"}, "config.split: unknown 'packet'; choose from even, adaptive"),
    ({"split_piece_bytes": 1000}, "config.split_piece_bytes: must be from 16,384"),
    ({"jobs": [{**JOB, "split_piece_bytes": 2 ** 31}]}, "jobs[0].split_piece_bytes"),
    ({"jobs": [{**JOB, "split": 1}]}, "jobs[0].split")])
def test_bad_split_keys(doc, names):
    with pytest.raises(ConfigError, match=names.replace("[", r"\[").replace("]", r"\]")
                       .replace(".", r"\.").replace("(", r"\(")):
        parse({**BASE, "jobs": [JOB], **doc})


def _free_port(ip: str) -> int:
    with socket.socket() as s:
        s.bind((ip, 0))
        return s.getsockname()[1]


class _LoopbackFabric:
    """What agent_plans asks of a fabric: each host's address (here on loopback)."""

    def ip_of(self, host: str) -> str:
        return f"127.0.0.{host[1:]}"


def test_agents_split_adaptively_over_loopback_and_verify_every_piece():
    """Two real agents over loopback TCP, 3 subflows, 64 KiB pieces: every part ends with an
    empty piece, the parts of each transfer carry exactly its bytes (however the subflows
    shared them), and every byte verifies."""
    spec = JobSpec("r", Collective.ALLREDUCE, [["h1", "h2"]], 1_500_000, subflows=3,
                   split="adaptive", split_piece_bytes=64 * 1024)
    plan, = plan_jobs([spec])
    docs = agent_plans(_LoopbackFabric(), plan, seed=3, tcp_cc="cubic", timeout_s=30.0)
    ports = {h: _free_port(d["ip"]) for h, d in docs.items()}
    src = {c.conn_id: _free_port(_LoopbackFabric().ip_of(c.src)) for c in plan.connections}
    for h, d in docs.items():
        d["listen_port"] = ports[h]
        for c in d["outgoing"]:
            c["dst_port"], c["src_port"] = ports["h2" if h == "h1" else "h1"], src[c["conn_id"]]
        for c in d["incoming"]:
            c["src_port"] = src[c["conn_id"]]
    agents = [Agent(Plan(**d)) for d in docs.values()]
    out: dict[int, dict] = {}
    socks = [a.listen() for a in agents]
    _together([lambda a=a, s=s: a.connect(s) for a, s in zip(agents, socks)])
    _together([lambda i=i, a=a: out.update({i: a.iterate(0)}) for i, a in enumerate(agents)])
    recv = [r for ev in out.values() for r in ev["recv"]]
    assert len(recv) == len(plan.transfers) and all(ev["verified"] for ev in out.values())
    carried = {tid: n for tid, _, _, n in recv}
    for pool in {t.pool for t in plan.transfers}:
        parts = [t for t in plan.transfers if t.pool == pool]
        assert sum(carried[t.tid] for t in parts) == sum(t.size_bytes for t in parts)
    assert sum(ev["bytes_received"] for ev in out.values()) == plan.bytes_per_iteration()
    tcp = {cid: c for ev in out.values() for cid, c in ev["tcp"].items()}   # per connection
    assert sorted(map(int, tcp)) == [c.conn_id for c in plan.connections]
    for a in agents:
        for s in (*a.out_socks.values(), *a.in_socks.values()):
            s.close()


def _together(calls) -> None:
    errors = []

    def run(c):
        try:
            c()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=run, args=(c,)) for c in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors


def test_parts_that_do_not_add_up_to_their_transfer_fail():
    pools = {0: [2, 0]}
    r = {"pool": 0, "pool_bytes": 100}
    lock = threading.Lock()
    _pool_part_done(pools, r, 60, lock)
    with pytest.raises(AgentError, match="its parts carried 99 B, expected 100 B"):
        _pool_part_done(pools, r, 39, lock)

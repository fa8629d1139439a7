"""Ring all-reduce chunking and dependencies, and the agents' wire format."""
import zlib

import pytest

from traffic.collectives import Collective, JobSpec, plan_jobs, split_bytes
from traffic.wire import HEADER, MAGIC, ExpectedCrc, header, payload_crc, payload_pieces


@pytest.mark.parametrize("total, parts", [(10, 3), (4_000_000, 4), (7, 7), (1_000_003, 8)])
def test_split_bytes_is_exact_and_even(total, parts):
    chunks = split_bytes(total, parts)
    assert sum(chunks) == total and len(chunks) == parts
    assert max(chunks) - min(chunks) <= 1


def test_ring_allreduce_moves_2_n_minus_1_chunks_per_rank():
    n, size = 4, 1_000_001
    plan = plan_jobs([JobSpec("r", Collective.ALLREDUCE, [["h1", "h5", "h9", "h13"]], size)])[0]
    assert len(plan.connections) == n
    assert [(c.src, c.dst) for c in plan.connections] == [
        ("h1", "h5"), ("h5", "h9"), ("h9", "h13"), ("h13", "h1")]
    assert len(plan.transfers) == 2 * (n - 1) * n
    # each rank sends every chunk exactly twice over the whole collective except one
    per_conn = {}
    for t in plan.transfers:
        per_conn[t.conn_id] = per_conn.get(t.conn_id, 0) + t.size_bytes
    assert all(abs(b - 2 * (n - 1) * size / n) <= 2 * (n - 1) for b in per_conn.values())


def test_ring_step_waits_for_the_predecessors_previous_chunk():
    plan = plan_jobs([JobSpec("r", Collective.ALLREDUCE, [["h1", "h2", "h3"]], 300)])[0]
    by_tid = {t.tid: t for t in plan.transfers}
    conn_src = {c.conn_id: c.src for c in plan.connections}
    conn_dst = {c.conn_id: c.dst for c in plan.connections}
    for t in plan.transfers:
        if t.step == 0:
            assert t.deps == ()
            continue
        (dep,) = t.deps
        d = by_tid[dep]
        assert d.step == t.step - 1
        assert conn_dst[d.conn_id] == conn_src[t.conn_id]  # received by the sender


@pytest.mark.parametrize("collective", [Collective.ALLREDUCE, Collective.ALLGATHER,
                                        Collective.REDUCE_SCATTER])
def test_rings_of_one_job_number_their_transfers_one_after_another(collective):
    """Three rings of 3, 2 and 4 ranks in one job: tids 0..N-1 in ring order, and every
    dependency stays within its own ring (a wrong offset per ring would cross them)."""
    rings = [["h1", "h2", "h3"], ["h4", "h5"], ["h6", "h7", "h8", "h9"]]
    plan = plan_jobs([JobSpec("r", collective, rings, 1_200)])[0]
    tids = [t.tid for t in plan.transfers]
    assert tids == list(range(len(tids)))
    ring_of = {c.conn_id: k for k, ring in enumerate(rings) for c in plan.connections
               if c.src in ring}
    by_tid = {t.tid: t for t in plan.transfers}
    for t in plan.transfers:
        assert all(ring_of[by_tid[d].conn_id] == ring_of[t.conn_id] for d in t.deps)
    per_ring = [sum(1 for t in plan.transfers if ring_of[t.conn_id] == k) for k in range(3)]
    steps = 2 if collective is Collective.ALLREDUCE else 1
    assert per_ring == [steps * (len(r) - 1) * len(r) for r in rings]


def test_payload_is_deterministic_and_sized():
    a = b"".join(payload_pieces(1, 0, 2, 7, 200_000))
    b = b"".join(payload_pieces(1, 0, 2, 7, 200_000))
    c = b"".join(payload_pieces(1, 0, 3, 7, 200_000))
    assert len(a) == 200_000 and a == b and a != c
    assert payload_crc(1, 0, 2, 7, 200_000) == zlib.crc32(a)


def test_header_round_trips():
    h = header(2, 5, 9, 1234, 0xDEADBEEF)
    assert HEADER.unpack(h) == (MAGIC, 2, 5, 9, 1234, 0xDEADBEEF)


@pytest.mark.parametrize("size", [0, 1, 65_535, 65_536, 300_001, 4_000_000])
def test_expected_crc_piece_by_piece_is_the_payloads(size):
    """The receiver's running expectation ends at payload_crc whatever the recv sizes."""
    want = payload_crc(7, 2, 3, 11, size)
    steps = ExpectedCrc(7, 2, 3, 11, size)
    for n in range(0, size, 262_144 - 1000):   # receives that cut pieces anywhere
        steps.advance(n)
    assert steps.advance(size) == want
    assert ExpectedCrc(7, 2, 3, 11, size).advance(size) == want
    other = ExpectedCrc(7, 2, 4, 11, size).advance(size)   # another iteration's payload
    assert other != want or size == 0

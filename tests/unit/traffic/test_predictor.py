"""The flow-level predictor against closed forms (each within 0.1%) and max-min's definition."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.fabric import FabricSpec, build_fabric
from traffic.collectives import (Collective, Connection, JobPlan, JobSpec, Transfer,
                                 ideal_cct_s, plan_jobs)
from traffic.metrics import FairnessVector, fairness_vector, job_efficiency, network_efficiency
from traffic import waterfill
from traffic.predictor import PredictorError, ideal, max_min_rates, predict

REL = 1e-3  # every closed form within 0.1%


def close(a: float, b: float) -> bool:
    return abs(a - b) <= REL * abs(b)


def fabric(spines=1, leaves=2, hosts=1, host_mbps=1000.0, spine_mbps=100.0, **kw):
    return build_fabric(FabricSpec(spines, leaves, hosts, host_mbps, spine_mbps, **kw))


def one_spine(plans, spine="spine1"):
    return {c.conn_id: spine for p in plans for c in p.connections}


def h(i: int) -> str:
    return f"h{i}"


# ---- the water-filling kernel -------------------------------------------------------------
INF = np.inf


def test_kernel_one_flow_one_link():
    r = max_min_rates(np.array([[0, 1]]), np.array([40.0, INF]))
    assert r.tolist() == [40.0]


def test_kernel_two_flows_share_bottleneck():
    # link 0 (cap 100) shared; flow 1 also crosses link 1 (cap 1000)
    r = max_min_rates(np.array([[0, 2], [0, 1]]), np.array([100.0, 1000.0, INF]))
    assert np.allclose(r, [50.0, 50.0])


def test_kernel_parking_lot():
    """Classic parking lot: one long flow over n links, one short flow per link: all get C/2."""
    n, cap = 5, 10.0
    long_flow = list(range(n))
    rows = [long_flow] + [[i] + [n] * (n - 1) for i in range(n)]
    r = max_min_rates(np.array(rows), np.array([cap] * n + [INF]))
    assert np.allclose(r, cap / 2)


def test_kernel_parking_lot_unequal():
    """Link 0 (cap 10): flows A, B; link 1 (cap 4): A, C, D. Max-min: A=C=D=4/3, B=10-4/3."""
    rows = np.array([[0, 1], [0, 2], [1, 2], [1, 2]])
    r = max_min_rates(rows, np.array([10.0, 4.0, INF]))
    assert np.allclose(r, [4 / 3, 10 - 4 / 3, 4 / 3, 4 / 3])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 8).flatmap(lambda n_links: st.tuples(
    st.lists(st.floats(1.0, 100.0), min_size=n_links, max_size=n_links),
    st.lists(st.lists(st.integers(0, n_links - 1), min_size=1, max_size=3),
             min_size=1, max_size=12))))
def test_kernel_is_max_min(case):
    """Feasible, and every flow has a saturated link on which no flow gets more than it."""
    caps, flows = case
    n = len(caps)
    rows = np.array([sorted(set(f)) + [n] * (3 - len(set(f))) for f in flows])
    cap = np.array(caps + [INF])
    r = max_min_rates(rows, cap)
    load = np.bincount(rows.ravel(), weights=np.repeat(r, 3), minlength=n + 1)[:n]
    assert np.all(load <= cap[:n] * (1 + 1e-9))
    for f, links in enumerate(rows):
        ok = False
        for link in links:
            if link == n:
                continue
            users = [g for g in range(len(rows)) if link in rows[g]]
            if load[link] >= cap[link] * (1 - 1e-9) and r[f] >= max(r[users]) * (1 - 1e-9):
                ok = True
        assert ok, (f, r, rows, caps)


def full_recompute_rates(flow_links, capacity_mbps, rel_tol=1e-9):
    """max_min_rates before it touched only the links that change (commit 12ab310): every
    round recomputes every link's share and scans every unfrozen flow."""
    n_flows = flow_links.shape[0]
    rates = np.zeros(n_flows)
    if n_flows == 0:
        return rates
    n_links = capacity_mbps.shape[0]
    remaining = np.array(capacity_mbps, dtype=float)
    count = np.bincount(flow_links.ravel(), minlength=n_links).astype(float)
    idx = np.arange(n_flows)
    fl = flow_links
    share = np.empty(n_links)
    while idx.size:
        share.fill(np.inf)
        np.divide(remaining, count, out=share, where=count > 0)
        m = share.min()
        if not np.isfinite(m):
            raise PredictorError("a flow crosses no link of finite capacity")
        hit = (share <= m * (1.0 + rel_tol))[fl].any(axis=1)
        rates[idx[hit]] = m
        dec = np.bincount(fl[hit].ravel(), minlength=n_links)
        remaining -= dec * m
        np.maximum(remaining, 0.0, out=remaining)
        count -= dec
        keep = ~hit
        fl = fl[keep]
        idx = idx[keep]
    return rates


@pytest.mark.parametrize("seed", range(200))
def test_kernel_bit_for_bit_as_the_full_recomputation(seed):
    """Same rates, bit for bit, as recomputing every link each round: random paths of 2-6 links
    over 5-300 links (a few unused, a pad link, sometimes a zero-capacity link or a link a flow
    crosses twice), capacities from a few values (many equal shares, ties within rel_tol) or
    continuous."""
    rng = np.random.default_rng(seed)
    n_links = int(rng.integers(5, 300))
    if seed % 2:
        cap = rng.choice([10.0, 25.0, 40.0, 100.0, 100.0 * (1 + 1e-10)], n_links)
    else:
        cap = rng.uniform(1.0, 100.0, n_links)
    if seed % 7 == 0:
        cap[0] = 0.0
    cap = np.append(cap, INF)
    width = int(rng.integers(2, 7))
    n_flows = int(rng.integers(1, 400))
    rows = np.full((n_flows, width), n_links)
    for f in range(n_flows):
        k = int(rng.integers(1, width + 1))
        rows[f, :k] = rng.choice(n_links, k, replace=False)
        if seed % 5 == 0 and k >= 2 and f % 3 == 0:
            rows[f, 1] = rows[f, 0]           # a link crossed twice (counts twice)
    got = max_min_rates(rows, cap)
    want = full_recompute_rates(rows, cap)
    assert got.tobytes() == want.tobytes()
    # the rounds from the heap (the kernel moves there once its scans cost as much)
    heaped = np.zeros(n_flows)
    assert waterfill.fill_with(rows.astype(np.int64), cap, 1e-9, heaped, waterfill.NO_WEIGHTS,
                               *waterfill.scratch(cap.size), True) == waterfill.OK
    assert heaped.tobytes() == want.tobytes()
    # weighted (sprayed) flows: the same rates whichever way the rounds find their links
    w = rng.choice([0.25, 0.5, 1.0, 1 / 3], rows.shape)
    scan, heap = np.zeros(n_flows), np.zeros(n_flows)
    for out, first in ((scan, False), (heap, True)):
        waterfill.fill_with(rows.astype(np.int64), cap, 1e-9, out, w,
                            *waterfill.scratch(cap.size), first)
    assert heap.tobytes() == scan.tobytes()


@pytest.mark.parametrize("values", [[100.0], [25.0, INF, 100.0], list(range(1, 9)),
                                    list(range(1, 10)), [5.0, float("nan")]])
def test_cap_order_ascends_by_buckets_or_by_argsort(values):
    """The flows' order by own cap: a counting sort over at most CAP_BUCKETS distinct caps
    (flows in index order within a cap), numba's argsort past that or with a nan; weighted
    flows always argsort (their ties' order would reach the links' float counts)."""
    rng = np.random.default_rng(len(values))
    own = rng.choice(np.array(values, dtype=float), 500)
    for unweighted in (True, False):
        order = waterfill._cap_order(own, unweighted)
        assert sorted(order.tolist()) == list(range(own.size))
        got = own[order]
        assert got.tobytes() == np.sort(own).tobytes()  # ascending, a nan last
        if unweighted and len(values) <= waterfill.CAP_BUCKETS and values[-1] == values[-1]:
            for v in values:                           # buckets: index order within a cap
                assert np.all(np.diff(order[got == v]) > 0)


def test_kernel_with_reused_scratch_as_with_its_own():
    """One per-link scratch reused over 60 random cases (the predictor's way) gives the same
    rates, bit for bit, as scratch made per call, and comes back as it went in."""
    rng = np.random.default_rng(7)
    scratch = waterfill.scratch(301)
    for _ in range(60):
        n_links = int(rng.integers(5, 300))
        cap = np.append(rng.choice([10.0, 25.0, 40.0, 100.0], n_links), INF)
        cap = np.append(cap, np.full(300 - n_links, 5.0))    # unused links, same scratch
        rows = np.full((int(rng.integers(1, 300)), 4), n_links)
        for f in range(rows.shape[0]):
            k = int(rng.integers(1, 5))
            rows[f, :k] = rng.choice(n_links, k, replace=False)
        assert max_min_rates(rows, cap, scratch=scratch).tobytes() == \
            max_min_rates(rows, cap).tobytes()
        assert not scratch[0].any() and not scratch[1].any() and (scratch[2] == -1).all()


def test_kernel_flow_with_only_infinite_links_is_an_error():
    with pytest.raises(PredictorError, match="no link of finite capacity"):
        max_min_rates(np.array([[0, 1], [1, 1]]), np.array([5.0, INF]))


# ---- whole predictions --------------------------------------------------------------------
def p2p(name, src, dst, size, **kw) -> JobSpec:
    return JobSpec(name, Collective.PIPELINE, [[src, dst]], size, **kw)


def test_one_flow_one_link():
    fab = fabric(host_mbps=1000.0, spine_mbps=100.0)
    S = 10_000_000
    plans = plan_jobs([p2p("a", h(1), h(2), S)])
    pr = predict(fab, plans, one_spine(plans))
    assert close(pr.jobs["a"].cct_s[0], S * 8 / 100e6)
    assert close(pr.jobs["a"].fct_mean_s[0], S * 8 / 100e6)
    # and the link it crossed was saturated the whole time, the idle one never used
    u = pr.link_utilization()
    assert close(u[("leaf1", "spine1")]["mean"], 1.0)
    assert ("spine1", "leaf1") not in u


def test_goodput_factor_scales_capacity():
    fab = fabric()
    plans = plan_jobs([p2p("a", h(1), h(2), 1_000_000)])
    base = predict(fab, plans, one_spine(plans)).jobs["a"].cct_s[0]
    slow = predict(fab, plans, one_spine(plans), goodput_factor=0.8).jobs["a"].cct_s[0]
    assert close(slow, base / 0.8)


def test_two_flows_share_bottleneck_then_speed_up():
    """Two flows on one 100 Mbit/s uplink: 50 each until the small one ends, then 100."""
    fab = fabric(hosts=2)                                  # h1,h2 on leaf1; h3,h4 on leaf2
    s1, s2 = 2_000_000, 6_000_000
    plans = plan_jobs([p2p("a", h(1), h(3), s1), p2p("b", h(2), h(4), s2)])
    pr = predict(fab, plans, one_spine(plans))
    assert close(pr.jobs["a"].cct_s[0], s1 * 8 / 50e6)
    assert close(pr.jobs["b"].cct_s[0], (s1 + s2) * 8 / 100e6)
    assert pr.event_batches == 3                           # start, a ends, b ends


def test_simultaneous_events_are_batched():
    fab = fabric(spines=1, leaves=2, hosts=4)
    specs = [p2p(f"j{i}", h(1 + i), h(5 + i), 1_000_000) for i in range(4)]
    plans = plan_jobs(specs)
    pr = predict(fab, plans, one_spine(plans))
    assert pr.event_batches == 2                           # all start together, all end together
    for i in range(4):
        assert close(pr.jobs[f"j{i}"].cct_s[0], 4 * 1_000_000 * 8 / 100e6)


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_ring_allreduce_nonblocking_closed_form(n):
    """Ranks on n leaves, flow i on its own spine: 2(n-1)/n x S / B exactly, = ideal()."""
    B = 1000.0
    fab = fabric(spines=n, leaves=n, hosts=1, host_mbps=B, spine_mbps=B)
    S = 8_000_000 * n
    plans = plan_jobs([JobSpec("r", Collective.ALLREDUCE, [[h(i + 1) for i in range(n)]], S)])
    spread = {c.conn_id: f"spine{k + 1}" for k, c in enumerate(plans[0].connections)}
    want = 2 * (n - 1) / n * S * 8 / (B * 1e6)
    assert close(predict(fab, plans, spread).jobs["r"].cct_s[0], want)
    assert close(ideal(fab, plans).jobs["r"].cct_s[0], want)
    assert close(ideal_cct_s(plans[0].spec, B), want)


@pytest.mark.parametrize("n", [2, 4, 6])
def test_rings_forced_through_one_spine_link_take_n_times_longer(n):
    """n rings over n leaves (leaf i holds rank i of every ring, so n flows go leaf i ->
    leaf i+1 in every step). Spread over n spines: ideal. All through spine1: each directed
    leaf->spine1 link carries n flows, so each step (and the whole all-reduce) takes n times
    longer: 2(n-1) x S / B."""
    B = 1000.0
    fab = fabric(spines=n, leaves=n, hosts=n, host_mbps=B, spine_mbps=B)
    rings = [[h(i * n + r + 1) for i in range(n)] for r in range(n)]   # ring r: slot r+1 of each leaf
    S = 4_000_000 * n
    plans = plan_jobs([JobSpec("r", Collective.ALLREDUCE, rings, S)])
    conns = plans[0].connections
    spread = {c.conn_id: f"spine{(k // n) + 1}" for k, c in enumerate(conns)}  # ring r -> spine r
    fast = predict(fab, plans, spread).jobs["r"].cct_s[0]
    slow = predict(fab, plans, one_spine(plans)).jobs["r"].cct_s[0]
    assert close(fast, 2 * (n - 1) / n * S * 8 / (B * 1e6))
    assert close(slow, n * fast)
    assert close(slow, 2 * (n - 1) * S * 8 / (B * 1e6))
    # every step's FCT is n times longer too
    assert close(float(np.max(predict(fab, plans, one_spine(plans)).jobs["r"].fct_max_s)),
                 n * S / n * 8 / (B * 1e6))


def test_one_slow_link_paces_the_whole_ring():
    """One half-rate uplink: that flow runs back to back, so the ring takes 2x as long."""
    n, B = 4, 1000.0
    fab = fabric(spines=1, leaves=n, hosts=1, host_mbps=B, spine_mbps=B)
    fab.graph.edges["leaf1", "spine1"]["capacity_mbps"] = B / 2
    S = 4_000_000
    plans = plan_jobs([JobSpec("r", Collective.ALLREDUCE, [[h(i + 1) for i in range(n)]], S)])
    cct = predict(fab, plans, one_spine(plans)).jobs["r"].cct_s[0]
    assert close(cct, 2 * (n - 1) * (S / n) * 8 / (B / 2 * 1e6))


@pytest.mark.parametrize("coll", [Collective.ALLGATHER, Collective.REDUCE_SCATTER,
                                  Collective.ALLTOALL, Collective.PIPELINE])
def test_other_collectives_match_closed_forms(coll):
    n, B = 4, 1000.0
    fab = fabric(spines=4, leaves=4, hosts=1, host_mbps=B, spine_mbps=B)
    S = 4_000_000
    spec = JobSpec("j", coll, [[h(i + 1) for i in range(n)]], S)
    plans = plan_jobs([spec])
    want = {Collective.ALLGATHER: (n - 1) / n, Collective.REDUCE_SCATTER: (n - 1) / n,
            Collective.ALLTOALL: (n - 1) / n, Collective.PIPELINE: n - 1}[coll] * S * 8 / (B * 1e6)
    assert close(ideal(fab, plans).jobs["j"].cct_s[0], want)
    assert close(ideal_cct_s(spec, B), want)


def test_connection_is_one_byte_stream():
    """Two transfers on one connection with no deps still run one after the other."""
    fab = fabric()
    conn = Connection(0, "a", h(1), h(2), 20000, 5001)
    spec = JobSpec("a", Collective.PIPELINE, [[h(1), h(2)]], 1)
    plan = JobPlan(spec, 0, [conn], [Transfer(0, 0, 1_000_000, 0), Transfer(1, 0, 3_000_000, 0)])
    pr = predict(fab, [plan], {0: "spine1"}, keep_fcts=True)
    assert close(pr.jobs["a"].cct_s[0], 4_000_000 * 8 / 100e6)
    assert close(float(pr.jobs["a"].fct_s[0, 1]), 3_000_000 * 8 / 100e6)


def test_iterations_compute_and_start_times():
    fab = fabric()
    S = 1_000_000
    plans = plan_jobs([p2p("a", h(1), h(2), S, iterations=3, compute_s=0.5, start_s=0.25)])
    job = predict(fab, plans, one_spine(plans)).jobs["a"]
    t = S * 8 / 100e6
    assert len(job.cct_s) == 3 and all(close(c, t) for c in job.cct_s)
    assert close(job.iteration_start_s[0], 0.25)
    assert close(job.iteration_start_s[2], 0.25 + 2 * (t + 0.5))


def test_jobs_overlap_only_while_both_run():
    """Job b starts when a is half done: a slows to 50 for the overlap."""
    fab = fabric(hosts=2)
    S = 1_000_000
    t = S * 8 / 100e6
    plans = plan_jobs([p2p("a", h(1), h(3), S), p2p("b", h(2), h(4), S, start_s=t / 2)])
    pr = predict(fab, plans, one_spine(plans))
    # a: half at 100, the other half at 50 -> t/2 + t = 1.5 t
    assert close(pr.jobs["a"].cct_s[0], 1.5 * t)
    # b: at 50 for t (half its bytes), then alone: t/2 more
    assert close(pr.jobs["b"].cct_s[0], 1.5 * t)


def test_missing_or_failed_route_is_a_typed_error():
    fab = fabric(spines=2, failed_spines=("spine2",))
    plans = plan_jobs([p2p("a", h(1), h(2), 1000)])
    with pytest.raises(PredictorError, match="no route"):
        predict(fab, plans, {})
    with pytest.raises(PredictorError, match="spine2"):
        predict(fab, plans, one_spine(plans, "spine2"))


def test_zero_capacity_stalls_with_a_typed_error():
    fab = fabric()
    fab.graph.edges["leaf1", "spine1"]["capacity_mbps"] = 0.0
    plans = plan_jobs([p2p("a", h(1), h(2), 1000)])
    with pytest.raises(PredictorError, match="stalled"):
        predict(fab, plans, one_spine(plans))


def test_utilization_series_conserves_bytes():
    fab = fabric(hosts=2)
    plans = plan_jobs([p2p("a", h(1), h(3), 2_000_000), p2p("b", h(2), h(4), 6_000_000)])
    pr = predict(fab, plans, one_spine(plans), util_bin_s=0.05)
    i = pr.links.index(("leaf1", "spine1"))
    carried_bits = float(pr.link_util_series[:, i].sum()) * 0.05 * 100e6
    assert close(carried_bits, 8_000_000 * 8)
    assert close(float(pr.link_max_util[i]), 1.0)


# -- comparing fairness vectors (moved from traffic/metrics.py: only this test uses them) --
def _lex(a: tuple[float, ...], b: tuple[float, ...], rel_tol: float) -> int:
    for x, y in zip(a, b):
        if abs(x - y) > rel_tol * max(abs(x), abs(y), 1e-12):
            return 1 if x > y else -1
    return 0


def compare_fairness(a: FairnessVector, b: FairnessVector, rel_tol: float = 1e-3) -> int:
    """+1 if a is fairer (lexicographically larger: layer 1, then layer 2), -1 if b is, 0 if
    equal within rel_tol. Both should come from the same workload; vectors of different
    lengths are compared on their common prefix only."""
    c = _lex(a.layer1, b.layer1, rel_tol)
    if c:
        return c
    for ra, rb in zip(a.layer2, b.layer2):
        c = _lex(ra, rb, rel_tol)
        if c:
            return c
    return 0


def test_metrics_efficiency_and_fairness():
    """Spread routing is efficiency 1; all-through-one-spine is 1/n and loses the comparison."""
    n, B = 4, 1000.0
    fab = fabric(spines=n, leaves=n + 1, hosts=n, host_mbps=B, spine_mbps=B)
    rings = [[h(i * n + r + 1) for i in range(n)] for r in range(n)]
    q_hosts = [h(n * n + 1), h(n * n + 2)]                 # both on the extra leaf
    plans = plan_jobs([JobSpec("r", Collective.ALLREDUCE, rings, 4_000_000),
                       JobSpec("q", Collective.PIPELINE, [q_hosts], 1_000_000)])
    conns = plans[0].connections
    spread = {c.conn_id: f"spine{(k // n) + 1}" for k, c in enumerate(conns)}
    spread.update({c.conn_id: None for c in plans[1].connections})
    packed = {c.conn_id: "spine1" for c in conns}
    packed.update({c.conn_id: None for c in plans[1].connections})
    ide = ideal(fab, plans)
    good, bad = predict(fab, plans, spread), predict(fab, plans, packed)
    assert close(job_efficiency(good, ide)["r"], 1.0)
    assert close(job_efficiency(bad, ide)["r"], 1 / n)
    assert close(job_efficiency(bad, ide)["q"], 1.0)
    assert close(network_efficiency(bad, ide), (1 / n + 1.0) / 2)
    fg, fb = fairness_vector(good, ide), fairness_vector(bad, ide)
    assert fb.jobs[0] == "r" and close(fb.layer1[0], 1 / n)
    assert close(min(fb.layer2[0]), 1 / n)              # packed flows run at B/n
    assert compare_fairness(fg, fb) == 1 and compare_fairness(fb, fg) == -1
    assert compare_fairness(fg, fg) == 0


# ---- routes that change while jobs run (the controller's epochs and events) ---------------
class ScriptedRouter:
    """Routes by script: per job start/finish and per fabric event, as a controller would."""

    def __init__(self, on_start, on_finish=None, events=()):
        self.on_start, self.on_finish, self.events = on_start, on_finish or {}, list(events)
        self.calls: list[tuple] = []
        self.routes: dict[int, str | None] = {}

    def jobs_started(self, jobs, t):
        self.calls.append(("start", tuple(sorted(jobs)), t))
        for j in jobs:
            self.routes.update(self.on_start.get(j, {}))
        return dict(self.routes)

    def job_finished(self, job, t):
        self.calls.append(("finish", job, t))
        self.routes.update(self.on_finish.get(job, {}))
        return dict(self.routes)

    def event_times(self):
        return [t for t, _, _ in self.events]

    def fire(self, k, t):
        self.calls.append(("event", k, t))
        _, fab, routes = self.events[k]
        self.routes.update(routes)
        return fab, dict(self.routes)


def test_router_moves_a_flow_in_flight_when_another_job_finishes():
    """a and b share spine1 until a short job c ends; the controller then moves b to spine2.
    b: 50 Mbit/s until c ends at t_c, then alone on spine2 at 100."""
    fab = fabric(spines=2, hosts=3)                        # h1..h3 on leaf1, h4..h6 on leaf2
    S = 2_000_000
    plans = plan_jobs([p2p("a", h(1), h(4), S), p2p("b", h(2), h(5), S),
                       p2p("c", h(3), h(6), 500_000)])
    cid = {p.name: p.connections[0].conn_id for p in plans}
    r = ScriptedRouter(on_start={"a": {cid["a"]: "spine1"}, "b": {cid["b"]: "spine1"},
                                 "c": {cid["c"]: "spine2"}},
                       on_finish={"c": {cid["b"]: "spine2"}})
    pr = predict(fab, plans, None, router=r)
    t_c = 500_000 * 8 / 100e6                              # c alone on spine2
    left = S - 50e6 / 8 * t_c                              # b's bytes after c ends
    assert close(pr.jobs["c"].cct_s[0], t_c)
    assert close(pr.jobs["b"].cct_s[0], t_c + left * 8 / 100e6)
    assert close(pr.jobs["a"].cct_s[0], t_c + left * 8 / 100e6)   # a alone on spine1 too
    # one call for the jobs that start together; finishes one by one, in time order
    assert r.calls[0] == ("start", ("a", "b", "c"), 0.0)
    assert [c[:2] for c in r.calls[1:]] == [("finish", "c"), ("finish", "a"), ("finish", "b")]
    # with the plan fixed (no router) b would share all the way: 2S at 100
    fixed = predict(fab, plans, {cid["a"]: "spine1", cid["b"]: "spine1", cid["c"]: "spine2"})
    assert close(fixed.jobs["b"].cct_s[0], 2 * S * 8 / 100e6)


def test_router_event_fails_a_spine_and_reroutes():
    """a on spine1, b on spine2, 100 Mbit/s each; spine2 fails at t and the controller moves
    b onto spine1, where both then get 50. A flow left on the dead spine is a typed error."""
    fab = fabric(spines=2)
    S = 1_000_000
    plans = plan_jobs([p2p("a", h(1), h(2), S), p2p("b", h(1), h(2), S, start_s=0.0)])
    ca, cb = (p.connections[0].conn_id for p in plans)
    failed = build_fabric(FabricSpec(2, 2, 1, 1000.0, 100.0, failed_spines=("spine2",)))
    t = 0.02
    r = ScriptedRouter(on_start={"a": {ca: "spine1"}, "b": {cb: "spine2"}},
                       events=[(t, failed, {cb: "spine1"})])
    pr = predict(fab, plans, None, router=r)
    # both at 100 (separate spines, 1000 Mbit/s host link shared: 500 each > 100) until t,
    # then both on spine1 at 50 each
    left = S - 100e6 / 8 * t
    assert close(pr.jobs["a"].cct_s[0], t + 2 * left * 8 / 100e6)
    assert ("event", 0, t) in [(c[0], c[1], round(c[2], 9)) for c in r.calls]
    bad = ScriptedRouter(on_start={"a": {ca: "spine1"}, "b": {cb: "spine2"}},
                         events=[(t, failed, {})])
    with pytest.raises(PredictorError, match="spine2"):
        predict(fab, plans, None, router=bad)


def test_router_must_route_every_active_flow():
    fab = fabric(spines=2)
    plans = plan_jobs([p2p("a", h(1), h(2), 1000)])
    with pytest.raises(PredictorError, match="no spine"):
        predict(fab, plans, None, router=ScriptedRouter(on_start={}))


def test_events_after_the_last_job_do_not_stretch_the_makespan():
    fab = fabric(spines=2)
    plans = plan_jobs([p2p("a", h(1), h(2), 1_000_000)])
    ca = plans[0].connections[0].conn_id
    failed = build_fabric(FabricSpec(2, 2, 1, 1000.0, 100.0, failed_spines=("spine2",)))
    r = ScriptedRouter(on_start={"a": {ca: "spine1"}}, events=[(100.0, failed, {})])
    pr = predict(fab, plans, None, router=r)
    assert close(pr.makespan_s, 1_000_000 * 8 / 100e6)


# ---- three tiers: routes are switch paths --------------------------------------------------
def test_three_tier_paths_share_exactly_the_links_they_have_in_common():
    from testbed.topologies import fat_tree_spec
    fab = build_fabric(fat_tree_spec(4, 100.0, 10.0))
    S = 1_000_000
    # h1, h2 on leaf1 (pod 1) send to h5, h6 on leaf3 (pod 2)
    plans = plan_jobs([p2p("a", h(1), h(5), S), p2p("b", h(2), h(6), S)])
    paths = fab.switch_paths("leaf1", "leaf3")
    conns = [c for p in plans for c in p.connections]
    same = predict(fab, plans, {c.conn_id: paths[0] for c in conns})
    plane_apart = predict(fab, plans, {conns[0].conn_id: paths[0], conns[1].conn_id: paths[-1]})
    # one core path shared: 5 Mbit/s each; different planes: the full 10 each
    assert same.jobs["a"].cct_s[0] == pytest.approx(S * 8 / 5e6, rel=1e-9)
    assert plane_apart.jobs["a"].cct_s[0] == pytest.approx(S * 8 / 10e6, rel=1e-9)
    # same plane, other core: only leaf1->agg1 and agg->leaf3 are shared, again 5 each
    assert paths[0][1] == paths[1][1] and paths[0][2] != paths[1][2]
    split = predict(fab, plans, {conns[0].conn_id: paths[0], conns[1].conn_id: paths[1]})
    assert split.jobs["a"].cct_s[0] == pytest.approx(S * 8 / 5e6, rel=1e-9)


def test_three_tier_route_that_is_not_a_live_path_is_refused():
    from testbed.topologies import fat_tree_spec
    fab = build_fabric(fat_tree_spec(4, 100.0, 10.0, failed_switches=("core1",)))
    plans = plan_jobs([p2p("a", h(1), h(5), 1000)])
    cid = plans[0].connections[0].conn_id
    with pytest.raises(PredictorError, match="core1"):
        predict(fab, plans, {cid: ("leaf1", "agg1", "core1", "agg3", "leaf3")})

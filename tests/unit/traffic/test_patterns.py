"""Hedera's traffic patterns, placement kinds and the non-blocking reference (issue 12)."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from experiments.config import ConfigError, parse
from testbed.fabric import build_fabric
from testbed.topologies import fat_tree_spec
from traffic.collectives import Collective, JobSpec, WorkloadError, ideal_cct_s, plan_jobs
from traffic.models import place
from traffic.patterns import pattern_pairs
from traffic.predictor import ideal

FT4 = build_fabric(fat_tree_spec(4, 10.0, 10.0))
HOSTS = FT4.hosts


def _is_permutation(pairs):
    return (sorted(s for s, _ in pairs) == sorted(HOSTS)
            and sorted(d for _, d in pairs) == sorted(HOSTS)
            and all(s != d for s, d in pairs))


@pytest.mark.parametrize("i", [1, 2, 4, 8, 15])
def test_stride_is_a_permutation_x_to_x_plus_i(i):
    pairs = pattern_pairs(FT4, HOSTS, "stride", 0, stride_hosts=i)
    assert _is_permutation(pairs)
    assert all(int(d[1:]) - 1 == (int(s[1:]) - 1 + i) % 16 for s, d in pairs)


def test_stride_4_leaves_every_pod_and_stride_2_every_leaf():
    assert all(FT4.pod_of(FT4.leaf_of(s)) != FT4.pod_of(FT4.leaf_of(d))
               for s, d in pattern_pairs(FT4, HOSTS, "stride", 0, stride_hosts=4))
    assert all(FT4.leaf_of(s) != FT4.leaf_of(d)
               for s, d in pattern_pairs(FT4, HOSTS, "stride", 0, stride_hosts=2))


@pytest.mark.parametrize("seed", range(20))
def test_random_bijective_is_a_derangement_and_seeded(seed):
    pairs = pattern_pairs(FT4, HOSTS, "random-bijective", seed)
    assert _is_permutation(pairs)
    assert pairs == pattern_pairs(FT4, HOSTS, "random-bijective", seed)


def test_seeds_give_different_patterns():
    draws = {tuple(pattern_pairs(FT4, HOSTS, "random", s)) for s in range(10)}
    assert len(draws) == 10


def test_random_never_sends_to_itself_and_every_host_sends_once():
    for seed in range(20):
        pairs = pattern_pairs(FT4, HOSTS, "random", seed)
        assert [s for s, _ in pairs] == HOSTS and all(s != d for s, d in pairs)


@pytest.mark.parametrize("p_leaf, p_pod", [(0.2, 0.3), (0.5, 0.3), (0.0, 1.0), (1.0, 0.0)])
def test_staggered_probabilities_converge(p_leaf, p_pod):
    scopes = Counter()
    for seed in range(400):
        for s, d in pattern_pairs(FT4, HOSTS, "staggered", seed, p_leaf=p_leaf, p_pod=p_pod):
            assert s != d
            scopes["leaf" if FT4.leaf_of(s) == FT4.leaf_of(d) else
                   "pod" if FT4.pod_of(FT4.leaf_of(s)) == FT4.pod_of(FT4.leaf_of(d))
                   else "other"] += 1
    n = sum(scopes.values())            # 6,400 draws: 3 sigma < 0.019 for any p
    assert abs(scopes["leaf"] / n - p_leaf) < 0.025
    assert abs(scopes["pod"] / n - p_pod) < 0.025
    assert abs(scopes["other"] / n - (1 - p_leaf - p_pod)) < 0.025


@pytest.mark.parametrize("hot", [1, 2, 3])
def test_hotspot_shape(hot):
    pairs = pattern_pairs(FT4, HOSTS, "hotspot", 5, hotspots=hot)
    receivers = Counter(d for _, d in pairs)
    assert len(receivers) == hot                               # only the hot hosts receive
    senders = [s for s, _ in pairs]
    assert len(senders) == len(set(senders))                   # one flow per sender
    assert len(pairs) == 16 - hot + (hot if hot > 1 else 0)    # hot hosts: a ring among them
    with pytest.raises(WorkloadError, match="hotspots"):
        pattern_pairs(FT4, HOSTS, "hotspot", 5, hotspots=16)


# -- placement -------------------------------------------------------------------------------
@pytest.mark.parametrize("placement", ["random-tors", "fragmented", "packed"])
def test_placement_never_reuses_a_host_and_is_seeded(placement):
    for seed in range(10):
        used: set[str] = set()
        rng = random.Random(seed)
        a = place(FT4, 6, placement, rng, used)
        b = place(FT4, 5, placement, rng, used)
        assert len(set(a)) == 6 and len(set(b)) == 5 and not set(a) & set(b)
        assert set(a) | set(b) <= used
        again = place(FT4, 6, placement, random.Random(seed), set())
        assert again == a
    with pytest.raises(WorkloadError, match="free"):
        place(FT4, 17, placement, random.Random(0), set())


def test_packed_fills_leaves_in_order_and_fragmented_shares_leaves():
    used: set[str] = set()
    assert place(FT4, 3, "packed", random.Random(0), used) == ["h1", "h2", "h3"]
    assert place(FT4, 2, "packed", random.Random(0), used) == ["h4", "h5"]
    shared = 0
    for seed in range(50):
        used = set()
        rng = random.Random(seed)
        a = {FT4.leaf_of(h) for h in place(FT4, 4, "fragmented", rng, used)}
        b = {FT4.leaf_of(h) for h in place(FT4, 4, "fragmented", rng, used)}
        shared += bool(a & b)
    assert shared > 25                    # two 4-host jobs on 8 leaves of 2: usually meet


def test_random_tors_reserves_whole_leaves():
    used: set[str] = set()
    a = place(FT4, 3, "random-tors", random.Random(1), used)       # 2 leaves, 1 host spare
    assert len(used) == 4 and set(a) < used


# -- config and the non-blocking reference ----------------------------------------------------
def _config(job: dict, routing=("ecmp", "nonblocking")) -> dict:
    return {"name": "p", "seed": 3, "routing": list(routing), "jobs": [job],
            "fabric": {"topology": "fat-tree", "k": 4, "host_link_mbps": 10,
                       "fabric_link_mbps": 10}}


PATTERN_JOBS = [
    {"pattern": "stride", "stride": 1}, {"pattern": "stride", "stride": 8},
    {"pattern": "staggered", "p_leaf": 0.5, "p_pod": 0.3}, {"pattern": "random"},
    {"pattern": "random-bijective"}, {"pattern": "hotspot", "hotspots": 2},
]


@pytest.mark.parametrize("job", PATTERN_JOBS, ids=lambda j: j["pattern"] + str(j.get("stride", "")))
def test_nonblocking_reference_is_the_host_link_model(job):
    exp = parse(_config({"name": "j", "size_bytes": 1_000_000, **job}))
    spec = exp.jobs[0]
    assert spec.collective is Collective.FLOWS and len(spec.groups) >= 15
    plans = plan_jobs(exp.jobs)
    nb = ideal(exp.fabric, plans).jobs["j"].mean_cct_s
    bound = ideal_cct_s(spec, 10.0)                 # busiest host link's bytes / rate
    assert nb >= bound * (1 - 1e-9)
    if job["pattern"] in ("stride", "random-bijective"):
        assert nb == pytest.approx(1_000_000 * 8 / 10e6, rel=1e-9)   # a permutation: S / B


def test_predicted_nonblocking_run_and_fraction(tmp_path):
    from experiments.predict import predict_experiment
    exp = parse(_config({"name": "j", "pattern": "stride", "stride": 4, "size_bytes": 500_000},
                        routing=("ecmp", "ilp", "nonblocking")))
    res = predict_experiment(exp, tmp_path, log=lambda s: None)
    runs = {r["routing"]: r for r in res["runs"]}
    assert runs["nonblocking"]["nonblocking_fraction"] == 1.0
    assert runs["nonblocking"]["throughput_mbps"] == pytest.approx(16 * 10.0)
    assert runs["ilp"]["nonblocking_fraction"] == pytest.approx(1.0)   # stride 4 fits k=4
    assert runs["ecmp"]["nonblocking_fraction"] < 1.0
    assert runs["nonblocking"]["max_link_flows"] == 1


@pytest.mark.parametrize("job, msg", [
    ({"pattern": "stride"}, r"jobs\[0\]\.stride: missing"),
    ({"pattern": "random", "stride": 2}, r"jobs\[0\]\.stride: only for pattern: stride"),
    ({"pattern": "staggered", "p_leaf": 0.7, "p_pod": 0.5}, r"jobs\[0\]\.p_pod: .*> 1"),
    ({"pattern": "staggered", "p_leaf": 1.5}, r"jobs\[0\]\.p_leaf: must be"),
    ({"pattern": "zigzag"}, r"jobs\[0\]\.pattern"),
    ({"pattern": "stride", "stride": 16}, r"jobs\[0\]\.stride: must be"),
    ({"pattern": "hotspot", "hotspots": 0}, r"jobs\[0\]\.hotspots: must be"),
    ({"pattern": "random", "hosts": ["h1"]}, r"jobs\[0\]\.hosts: a pattern needs at least 2"),
])
def test_pattern_errors_name_the_key(job, msg):
    with pytest.raises(ConfigError, match=msg):
        parse(_config({"name": "j", "size_bytes": 1000, **job}))


def test_nonblocking_is_not_host_enforced():
    with pytest.raises(ConfigError, match="nonblocking"):
        parse(_config({"name": "j", "pattern": "random", "size_bytes": 1000},
                      routing=("nonblocking@host",)))


def test_pattern_job_resolves_to_flows_that_load_again():
    exp = parse(_config({"name": "j", "pattern": "random", "size_bytes": 1000}))
    again = parse(exp.resolved())
    assert again.jobs[0].groups == exp.jobs[0].groups
    assert again.resolved() == exp.resolved()


def test_flows_job_may_repeat_a_host_but_other_collectives_may_not():
    JobSpec("f", Collective.FLOWS, [["h1", "h2"], ["h2", "h1"]], 10)
    cfg = _config({"name": "j", "collective": "alltoall", "groups": [["h1", "h2"], ["h2", "h3"]],
                   "size_bytes": 1000})
    with pytest.raises(ConfigError, match="listed twice"):
        parse(cfg)


def test_model_job_placements_in_config():
    cfg = {"name": "m", "seed": 1, "routing": ["ecmp"],
           "fabric": {"topology": "clos3", "pods": 4, "leaves_per_pod": 4, "aggs_per_pod": 2,
                      "cores_per_plane": 2, "hosts_per_leaf": 16, "host_link_mbps": 100,
                      "leaf_agg_mbps": 100, "agg_core_mbps": 50},
           "jobs": [{"name": "a", "model": "gpt3-175b", "dp": 2, "placement": "fragmented"},
                    {"name": "b", "model": "bloom-176b", "dp": 2, "placement": "fragmented"}]}
    exp = parse(cfg)
    a, b = ({exp.fabric.leaf_of(h) for h in j.hosts} for j in exp.jobs)
    assert a & b                                     # 128 + 96 of 256 hosts: they meet
    cfg["jobs"][0]["placement"] = "packed"
    assert parse(cfg).jobs[0].hosts[:3] == ["h1", "h65", "h2"]   # rings across the 2 copies


@pytest.mark.parametrize("x", [2, 3, 4])
def test_randx_sends_x_flows_to_distinct_hosts(x):
    pairs = pattern_pairs(FT4, HOSTS, "random", 9, flows_per_host=x)
    per = Counter(s for s, _ in pairs)
    assert set(per.values()) == {x} and len(per) == 16
    assert len(set(pairs)) == len(pairs) and all(s != d for s, d in pairs)

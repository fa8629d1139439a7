"""fabric.topology: fat-tree and clos3 keys, failures and events, and their round trip."""
import copy

import numpy as np
import pytest
import yaml

from experiments.config import ConfigError, parse

FAT = {"name": "ft", "fabric": {"topology": "fat-tree", "k": 4, "host_link_mbps": 10,
                                "fabric_link_mbps": 10},
       "jobs": [{"name": "r", "collective": "allreduce", "hosts": ["h1", "h5", "h9", "h13"],
                 "size_bytes": 1000000, "iterations": 2}],
       "routing": ["ecmp", "greedy"]}
CLOS = {"name": "c3", "fabric": {"topology": "clos3", "pods": 2, "leaves_per_pod": 2,
                                 "aggs_per_pod": 2, "cores_per_plane": 2, "hosts_per_leaf": 2,
                                 "host_link_mbps": 10, "leaf_agg_mbps": 10, "agg_core_mbps": 5},
        "jobs": [{"name": "r", "collective": "allreduce", "hosts": ["h1", "h3", "h5", "h7"],
                  "size_bytes": 1000000}],
        "routing": ["ecmp"]}


def with_fabric(doc, **kw):
    d = copy.deepcopy(doc)
    d["fabric"].update(kw)
    return d


@pytest.mark.parametrize("doc", [FAT, CLOS], ids=["fat-tree", "clos3"])
def test_three_tier_configs_build_and_reload(doc):
    exp = parse(doc)
    again = parse(yaml.safe_load(yaml.safe_dump(exp.resolved())))
    assert again.resolved() == exp.resolved()
    assert again.fabric.spec == exp.fabric.spec


def test_fat_tree_sizes_and_failures():
    exp = parse(with_fabric(FAT, failed_switches=["core2"], failed_links=[["agg1", "leaf2"]]))
    f = exp.fabric
    assert (len(f.hosts), len(f.switches)) == (16, 20)
    assert f.spec.failed_links == (("leaf2", "agg1"),)          # canonical: lower tier first
    assert not f.is_live("agg1", "core2") and not f.is_live("leaf2", "agg1")


def test_events_on_any_switch_and_link():
    doc = copy.deepcopy(FAT)
    doc["events"] = [{"at_s": 0.5, "fail_switch": "core1"},
                     {"at_s": 0.5, "fail_link": ["core2", "agg1"]},
                     {"at_s": 1.0, "restore_link": ["agg1", "core2"]},
                     {"at_s": 1.5, "restore_switch": "core1"}]
    exp = parse(doc)
    assert [e.target for e in exp.events] == [("core1",), ("agg1", "core2"), ("agg1", "core2"),
                                              ("core1",)]


@pytest.mark.parametrize("change, match", [
    (dict(k=5), "fabric.k: a fat-tree needs an even k"),
    (dict(k=66), "fabric.k"),
    (dict(k=50), r"fabric.k: must be from 2 to 48"),
    (dict(spines=4), "fabric.spines: unknown key"),
    (dict(failed_switches=["leaf1"]), "agg or core"),
    (dict(failed_links=[["leaf1", "core1"]]), "not a link between two switches"),
    (dict(failed_links=[["leaf1"]]), "fabric.failed_links"),
    (dict(topology="torus"), "fabric.topology: unknown 'torus'"),
])
def test_bad_three_tier_fabrics_are_one_line_errors(change, match):
    with pytest.raises(ConfigError, match=match) as e:
        parse(with_fabric(FAT, **change))
    assert "\n" not in str(e.value)


def test_a_link_event_must_name_a_link():
    doc = copy.deepcopy(CLOS)
    doc["events"] = [{"at_s": 0.1, "fail_link": ["leaf1", "core1"]}]
    with pytest.raises(ConfigError, match=r"events\[0\].fail_link: expected a link"):
        parse(doc)


def test_leaf_spine_takes_failed_switches_as_spines():
    doc = {"name": "ls", "fabric": {"spines": 3, "leaves": 2, "hosts_per_leaf": 1,
                                    "host_link_mbps": 10, "spine_link_mbps": 10,
                                    "failed_switches": ["spine2"]},
           "jobs": [{"name": "p", "collective": "pipeline", "hosts": ["h1", "h2"],
                     "size_bytes": 1000}],
           "routing": ["ecmp"], "events": [{"at_s": 0.01, "fail_switch": "spine1"}]}
    exp = parse(doc)
    assert exp.fabric.spec.failed_spines == ("spine2",)
    assert exp.events[0].target == ("spine1",)


def test_clos3_leaves_in_all_are_bounded_before_anything_is_built():
    # 256 x 256 leaves passed validate and asked predict for a 32 GiB leaf-pair table
    big = with_fabric(CLOS, pods=256, leaves_per_pod=256, aggs_per_pod=1, cores_per_plane=1,
                      hosts_per_leaf=1)
    with pytest.raises(ConfigError, match=r"fabric.leaves_per_pod: 65,536 leaves exceed 16,384"):
        parse(big)
    assert parse(with_fabric(CLOS, pods=2, leaves_per_pod=8)).fabric.leaves[-1] == "leaf16"


def test_a_random_patterns_flows_are_counted_before_they_are_drawn():
    # k=48, 1,000 flows per host: 27.6 M flows drawn for 35 s and 4.5 GB before the size
    # check refused them; the count is now checked first
    doc = with_fabric(FAT, k=24)
    doc["jobs"] = [{"name": "f", "pattern": "random", "flows_per_host": 3455,
                    "size_bytes": 1000}]
    with pytest.raises(ConfigError, match=r"jobs\[0\].flows_per_host: 3,456 hosts x 3,455 = "
                                          r"11,940,480 flows pass the 16 GiB"):
        parse(doc)
    doc["jobs"][0]["flows_per_host"] = 2
    assert len(parse(doc).jobs[0].groups) == 3456 * 2


def test_an_isolated_leaf_names_the_failure_key_the_section_gave():
    # a rail-optimized fabric keeps its spines as failed_spines: the message named that key,
    # which the kind refuses as unknown
    rail = {"name": "r", "routing": ["ecmp"],
            "fabric": {"topology": "rail-optimized", "nics_per_server": 2,
                       "servers_per_group": 2, "spines_per_group": 2, "host_link_mbps": 10,
                       "spine_link_mbps": 10, "failed_switches": ["spine1", "spine2"]},
            "jobs": [{"name": "a", "collective": "allreduce", "hosts": ["h1", "h2"],
                      "size_bytes": 1000}]}
    with pytest.raises(ConfigError, match=r"^fabric.failed_switches: the failures isolate leaf1"):
        parse(rail)


@pytest.mark.parametrize("fabric", [
    {"topology": "leaf-spine", "spines": 3, "leaves": 4, "hosts_per_leaf": 1,
     "host_link_mbps": 10, "spine_link_mbps": 10},
    FAT["fabric"],
    {**CLOS["fabric"], "pods": 3, "aggs_per_pod": 3},
    {**CLOS["fabric"], "pods": 3, "aggs_per_pod": 3, "planes": 2},
    {"topology": "rail-optimized", "nics_per_server": 2, "servers_per_group": 2,
     "spines_per_group": 3, "groups": 2, "cores_per_plane": 2, "host_link_mbps": 10,
     "spine_link_mbps": 10, "core_link_mbps": 10}],
    ids=lambda f: f["topology"] + (f"-{f['planes']}-planes" if "planes" in f else ""))
def test_the_path_table_estimate_is_the_tables_size_on_an_intact_fabric(fabric):
    """Every leaf pair in every plane's table (routing/planes.py routes each plane on its
    own fabric): the estimate with each pair held by every plane is their total size."""
    from routing.path_blocks import pair_blocks, path_link_ids
    doc = {"name": "t", "fabric": fabric, "routing": ["ecmp"],
           "jobs": [{"name": "a", "collective": "allreduce", "hosts": ["h1", "h2"],
                     "size_bytes": 1000}]}
    f = parse(doc).fabric
    pairs = [(a, b) for a in f.leaves for b in f.leaves if a != b]
    L, index = len(f.leaves), {x: i for i, x in enumerate(f.leaves)}
    q = np.array([index[a] * L + index[b] for a, b in pairs], dtype=np.int64)
    held = 0
    for plane in range(1, f.planes + 1):
        blocks = pair_blocks(f.plane_fabric(plane)).select(f.plane_fabric(plane), q)
        held += int((blocks.hops * blocks.width).sum())
    assert len(pairs) >= 12
    assert path_link_ids(f, dict.fromkeys(pairs, f.planes)) == held


def test_the_path_table_is_bounded_before_it_is_built(monkeypatch):
    # the fat-tree k bound (48) was bypassed by the same fabric written as clos3: 64 pods of
    # 32 leaves with 32 x 32 paths a pod pair passed validate, and predict failed on a
    # 2 GiB numpy allocation after 63 s and 10 GB
    big = with_fabric(CLOS, pods=64, leaves_per_pod=32, aggs_per_pod=32, cores_per_plane=32,
                      hosts_per_leaf=32)
    big["jobs"] = [{"name": "p", "pattern": "random-bijective", "size_bytes": 1000}]
    with pytest.raises(ConfigError, match=r"^jobs: the connections join 65,\d{3} leaf pairs "
                                          r"whose shortest paths take 26\d,\d{3},\d{3} link "
                                          r"ids .* at most 128,000,000: .*\(aggs_per_pod, "
                                          r"cores_per_plane: 32 x 32 now\)$"):
        parse(big)
    from experiments.config import fabric as section
    ids = 2 * (4 * 2 * 2) + 2 * (2 * 2)     # 2 leaf pairs across pods (4 hops, 2 x 2
    #                                        paths), 2 in a pod (2 hops, 2 paths)
    monkeypatch.setattr(section, "MAX_PATH_LINK_IDS", ids)
    parse(CLOS)
    monkeypatch.setattr(section, "MAX_PATH_LINK_IDS", ids - 1)
    with pytest.raises(ConfigError, match=r"^jobs: the connections join 4 leaf pairs whose"):
        parse(CLOS)
    # per-packet spraying keeps more per id: the same memory bounds fewer ids
    monkeypatch.setattr(section, "MAX_PATH_LINK_IDS", ids * 2)       # sprayed: 37 ids
    parse(CLOS)
    with pytest.raises(ConfigError, match=r"at most \d+ with spray@packet"):
        parse({**CLOS, "routing": ["spray@packet"]})


def test_a_pair_on_several_planes_counts_once_per_plane_its_connections_may_take(monkeypatch):
    """Each plane routes its flows on its own table: a pair with one connection is in one
    plane's, a pair with several in up to every plane's."""
    from experiments.config import fabric as section
    two = with_fabric(CLOS, planes=2)
    one_each = 2 * (4 * 2 * 2) + 2 * (2 * 2)          # h1 -> h3 -> h5 -> h7 -> h1: 1 each
    monkeypatch.setattr(section, "MAX_PATH_LINK_IDS", one_each)
    parse(two)
    doubled = copy.deepcopy(two)
    doubled["jobs"][0]["subflows"] = 2                  # 2 connections a pair: both planes
    with pytest.raises(ConfigError, match=r"^jobs: the connections join 4 leaf pairs in 2 "
                                          r"planes whose shortest paths take 80 link ids"):
        parse(doubled)

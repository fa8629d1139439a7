"""Fault corpus, configs: every field's bad values, YAML itself, fabrics that cut the jobs apart.
(what every case must show: bad_input.py)."""
from __future__ import annotations

from pathlib import Path

import pytest


from .bad_input import BASE, MARK, MODEL_BASE, assert_refused, cli, dump, tree, with_


# -- the corpus: (id, YAML text, what the one error line must contain) -----------------------
CASES: list[tuple[str, str, str]] = []


def case(cid: str, text_or_doc, expect: str) -> None:
    CASES.append((cid, text_or_doc if isinstance(text_or_doc, str) else dump(text_or_doc),
                  expect))


# shell metacharacters and path traversal in every string field
PAYLOADS = {
    "subst": "$(touch {mark})",
    "semicolon": ";touch {mark}; rm -rf {mark}.x",
    "backticks": "`touch {mark}`",
    "pipe": "x | touch {mark}",
    "traversal": "../../etc/passwd",
    "newline": "x\ntouch {mark}",
    "long": "A" * 200_000,
}
STRING_FIELDS = [
    ("name", "config.name"),
    ("jobs.0.name", "jobs[0].name"),
    ("jobs.0.collective", "jobs[0].collective"),
    ("routing.1", "routing"),
    ("emulation.datapath", "emulation.datapath"),
    ("emulation.port_type", "emulation.port_type"),
    ("emulation.tcp_cc", "emulation.tcp_cc"),
    ("emulation.link_scheduler", "emulation.link_scheduler"),
    ("emulation.mtu_bytes", "emulation.mtu_bytes"),
    ("emulation.window_frames", "emulation.window_frames"),
    ("emulation.switch_burst_frames", "emulation.switch_burst_frames"),
    ("events.0.fail_spine", "events[0].fail_spine"),
]
for pname, payload in PAYLOADS.items():
    for path, key in STRING_FIELDS:
        case(f"str-{path}-{pname}", with_(path, payload), key)
    case(f"str-host-{pname}", with_("jobs.0.hosts", ["h1", payload]), "jobs[0].hosts")
    case(f"str-failed-spine-{pname}", with_("fabric.failed_spines", [payload]),
         "fabric.failed_spines")
    case(f"str-failed-link-{pname}", with_("fabric.failed_links", [["leaf1", payload]]),
         "fabric.failed_links")
    case(f"str-event-link-{pname}", with_("events.2.fail_link", ["leaf1", payload]),
         "events[2].fail_link")
    case(f"str-model-{pname}", with_("jobs.0.model", payload, MODEL_BASE), "jobs[0].model")
    case(f"str-placement-{pname}", with_("jobs.0.placement", payload, MODEL_BASE),
         "jobs[0].placement")
    case(f"str-unknown-key-{pname}", {**BASE, payload: 1}, "config.")
    case(f"str-unknown-fabric-key-{pname}", {**BASE, "fabric": {**BASE["fabric"], payload: 1}},
         "fabric.")

# wrong types
for cid, path, value, key in [
    ("spines-str", "fabric.spines", "four", "fabric.spines"),
    ("spines-float", "fabric.spines", 4.0, "fabric.spines"),
    ("spines-list", "fabric.spines", [4], "fabric.spines"),
    ("spines-bool", "fabric.spines", True, "fabric.spines"),
    ("spines-null", "fabric.spines", None, "fabric.spines"),
    ("rate-str", "fabric.host_link_mbps", "10M", "fabric.host_link_mbps"),
    ("rate-e-notation", "fabric.spine_link_mbps", "1e9", "fabric.spine_link_mbps"),
    ("size-float", "jobs.0.size_bytes", 1.5, "jobs[0].size_bytes"),
    ("size-e-notation", "jobs.0.size_bytes", "1e15", "jobs[0].size_bytes"),
    ("iterations-bool", "jobs.0.iterations", True, "jobs[0].iterations"),
    ("iterations-e-notation", "jobs.0.iterations", "1e9", "jobs[0].iterations"),
    ("hosts-str", "jobs.0.hosts", "h1", "jobs[0].hosts"),
    ("hosts-ints", "jobs.0.hosts", [1, 3], "jobs[0].hosts"),
    ("hosts-empty", "jobs.0.hosts", [], "jobs[0].hosts"),
    ("hosts-nested", "jobs.0.hosts", [["h1"], ["h3"]], "jobs[0].hosts"),
    ("routing-str", "routing", "ecmp", "routing"),
    ("routing-ints", "routing", [1], "routing"),
    ("capture-str", "emulation.capture", "yes", "emulation.capture"),
    ("capture-no-link", "emulation.capture", ["leaf1", "leaf2"], "emulation.capture"),
    ("capture-host-first", "emulation.capture", ["h1", "leaf1"], "emulation.capture"),
    ("capture-unknown", "emulation.capture", ["spine9", "leaf1"], "emulation.capture"),
    ("capture-three", "emulation.capture", ["spine1", "leaf1", "h1"], "emulation.capture"),
    ("timeout-str", "emulation.iteration_timeout_s", "60s", "emulation.iteration_timeout_s"),
    ("seed-str", "seed", "one", "config.seed"),
    ("name-int", "name", 7, "config.name"),
    ("name-empty", "name", "", "config.name"),
    ("event-at-str", "events.0.at_s", "soon", "events[0].at_s"),
    ("event-spine-int", "events.0.fail_spine", 2, "events[0].fail_spine"),
    ("event-not-mapping", "events.0", "fail spine2", "events[0]"),
    ("job-not-mapping", "jobs.0", "ring", "jobs[0]"),
    ("failed-links-flat", "fabric.failed_links", ["leaf1", "spine1"], "fabric.failed_links"),
]:
    case(f"type-{cid}", with_(path, value), key)
case("type-groups-and-hosts", with_("jobs.0.groups", [["h1", "h3"]]), "jobs[0]")
case("type-groups-str", {**BASE, "jobs": [{k: v for k, v in BASE["jobs"][0].items()
                                            if k != "hosts"} | {"groups": "h1"}]},
     "jobs[0].groups")
case("type-groups-flat", {**BASE, "jobs": [{k: v for k, v in BASE["jobs"][0].items()
                                             if k != "hosts"} | {"groups": ["h1", "h3"]}]},
     "jobs[0].groups[0]")
# a group's own problems name `groups` when the job gave groups (they named `hosts`)
case("groups-host-twice", {**BASE, "jobs": [{k: v for k, v in BASE["jobs"][0].items()
                                             if k != "hosts"} | {"groups": [["h1", "h1"]]}]},
     "jobs[0].groups: ")
case("groups-one-host", {**BASE, "jobs": [{k: v for k, v in BASE["jobs"][0].items()
                                           if k != "hosts"} | {"groups": [["h1"]]}]},
     "jobs[0].groups: a ring needs at least 2 hosts")
case("type-dp-float", with_("jobs.0.dp", 2.0, MODEL_BASE), "jobs[0].dp")
case("type-scale-str", with_("jobs.0.scale_bytes", "x", MODEL_BASE), "jobs[0].scale_bytes")

# NaN and infinities in every number
NUMBERS = [
    ("fabric.spines", "fabric.spines"), ("fabric.leaves", "fabric.leaves"),
    ("fabric.hosts_per_leaf", "fabric.hosts_per_leaf"),
    ("fabric.host_link_mbps", "fabric.host_link_mbps"),
    ("fabric.spine_link_mbps", "fabric.spine_link_mbps"),
    ("jobs.0.size_bytes", "jobs[0].size_bytes"), ("jobs.0.iterations", "jobs[0].iterations"),
    ("jobs.0.compute_s", "jobs[0].compute_s"), ("jobs.0.start_s", "jobs[0].start_s"),
    ("seed", "config.seed"), ("emulation.mtu_bytes", "emulation.mtu_bytes"),
    ("emulation.queue_packets", "emulation.queue_packets"),
    ("emulation.window_frames", "emulation.window_frames"),
    ("emulation.switch_burst_frames", "emulation.switch_burst_frames"),
    ("emulation.iteration_timeout_s", "emulation.iteration_timeout_s"),
    ("events.0.at_s", "events[0].at_s"),
]
for path, key in NUMBERS:
    for vid, v in (("nan", float("nan")), ("inf", float("inf")), ("-inf", float("-inf")),
                   ("negative", -1), ("huge", 10 ** 30), ("2^70", 2 ** 70)):
        case(f"num-{path}-{vid}", with_(path, v), key)
for path, key in (("jobs.0.dp", "jobs[0].dp"), ("jobs.0.scale_bytes", "jobs[0].scale_bytes"),
                  ("jobs.0.compute_s", "jobs[0].compute_s")):
    for vid, v in (("nan", float("nan")), ("inf", float("inf")), ("negative", -1),
                   ("huge", 10 ** 30)):
        case(f"num-model-{path}-{vid}", with_(path, v, MODEL_BASE), key)

# limits: accepted types, out of bounds
for cid, path, value, key in [
    ("spines-100000", "fabric.spines", 100_000, "fabric.spines"),
    ("spines-1e9", "fabric.spines", 10 ** 9, "fabric.spines"),
    ("spines-0", "fabric.spines", 0, "fabric.spines"),
    ("leaves-251", "fabric.leaves", 251, "fabric.leaves"),
    ("hosts-per-leaf-251", "fabric.hosts_per_leaf", 251, "fabric.hosts_per_leaf"),
    ("rate-1e7", "fabric.host_link_mbps", 1e7, "fabric.host_link_mbps"),
    ("rate-zero", "fabric.spine_link_mbps", 0, "fabric.spine_link_mbps"),
    ("rate-tiny", "fabric.spine_link_mbps", 1e-300, "fabric.spine_link_mbps"),
    ("size-1e15", "jobs.0.size_bytes", 10 ** 15, "jobs[0].size_bytes"),
    ("size-2^41", "jobs.0.size_bytes", 2 ** 41, "jobs[0].size_bytes"),
    ("size-zero", "jobs.0.size_bytes", 0, "jobs[0].size_bytes"),
    ("iterations-1e9", "jobs.0.iterations", 10 ** 9, "jobs[0].iterations"),
    ("iterations-10001", "jobs.0.iterations", 10_001, "jobs[0].iterations"),
    ("iterations-zero", "jobs.0.iterations", 0, "jobs[0].iterations"),
    ("start-1e9", "jobs.0.start_s", 1e9, "jobs[0].start_s"),
    ("start-day-and-a-second", "jobs.0.start_s", 86_401, "jobs[0].start_s"),
    ("compute-1e9", "jobs.0.compute_s", 1e9, "jobs[0].compute_s"),
    ("timeout-1e10", "emulation.iteration_timeout_s", 1e10, "emulation.iteration_timeout_s"),
    ("timeout-zero", "emulation.iteration_timeout_s", 0, "emulation.iteration_timeout_s"),
    ("timeout-below-ideal", "emulation.iteration_timeout_s", 0.01,
     "emulation.iteration_timeout_s"),
    ("seed-2^32", "seed", 2 ** 32, "config.seed"),
    ("seed-negative", "seed", -1, "config.seed"),
    ("mtu-65000", "emulation.mtu_bytes", 65_000, "emulation.mtu_bytes"),
    ("mtu-100", "emulation.mtu_bytes", 100, "emulation.mtu_bytes"),
    ("queue-10001", "emulation.queue_packets", 10_001, "emulation.queue_packets"),
    ("queue-1", "emulation.queue_packets", 1, "emulation.queue_packets"),
    ("window-20000", "emulation.window_frames", 20_000, "emulation.window_frames"),
    ("window-2", "emulation.window_frames", 2, "emulation.window_frames"),
    ("burst-17", "emulation.switch_burst_frames", 17, "emulation.switch_burst_frames"),
    ("burst-0", "emulation.switch_burst_frames", 0, "emulation.switch_burst_frames"),
    ("at-1e9", "events.0.at_s", 1e9, "events[0].at_s"),
    ("at-after-every-job", "events.2.at_s", 80_000, "events[2].at_s"),
]:
    case(f"limit-{cid}", with_(path, value), key)
# servers (testbed/servers.py, traffic/nccl.py): GPUs per server, NVLink, PXN
SERVERS = {**BASE["fabric"], "gpus_per_server": 2, "nvlink_mbps": 3.6e6}
RAIL = {"topology": "rail-optimized", "nics_per_server": 4, "servers_per_group": 2,
        "spines_per_group": 2, "host_link_mbps": 10, "spine_link_mbps": 10,
        "nvlink_mbps": 3.6e6}
for cid, fabric, key in [
    ("gpus-not-dividing-hosts", {**SERVERS, "gpus_per_server": 3}, "fabric.gpus_per_server"),
    ("gpus-without-nvlink", {**BASE["fabric"], "gpus_per_server": 2}, "fabric.nvlink_mbps"),
    ("nvlink-without-gpus", {**BASE["fabric"], "nvlink_mbps": 3.6e6}, "fabric.nvlink_mbps"),
    ("nvlink-1e9", {**SERVERS, "nvlink_mbps": 1e9}, "fabric.nvlink_mbps"),
    ("nvlink-zero", {**SERVERS, "nvlink_mbps": 0}, "fabric.nvlink_mbps"),
    ("gpus-100", {**SERVERS, "gpus_per_server": 100}, "fabric.gpus_per_server"),
    ("gpus-string", {**SERVERS, "gpus_per_server": "8"}, "fabric.gpus_per_server"),
    ("rail-gpus-not-nics", {**RAIL, "gpus_per_server": 2}, "fabric.gpus_per_server"),
]:
    case(f"servers-{cid}", {**BASE, "fabric": fabric}, key)
# planes (testbed/planes.py): not on fat-trees, at most 4, failures named in their plane
for cid, fabric, key in [
    ("planes-5", {**BASE["fabric"], "planes": 5}, "fabric.planes"),
    ("planes-0", {**BASE["fabric"], "planes": 0}, "fabric.planes"),
    ("planes-string", {**BASE["fabric"], "planes": "two"}, "fabric.planes"),
    ("planes-unknown-spine", {**BASE["fabric"], "planes": 2, "failed_spines": ["spine5"]},
     "fabric.failed_spines"),
    ("planes-rail-groups-unknown-core", {**RAIL, "groups": 2, "cores_per_plane": 1,
                                         "core_link_mbps": 10, "planes": 2,
                                         "failed_switches": ["core99"]},
     "fabric.failed_switches"),
]:
    case(f"servers-{cid}", {**BASE, "fabric": fabric, "events": []}, key)
case("servers-planes-fat-tree", {**BASE, "events": [],
                                 "fabric": {"topology": "fat-tree", "k": 4, "planes": 2,
                                            "host_link_mbps": 10, "fabric_link_mbps": 10}},
     "fabric.planes")
case("servers-pxn-without-servers", with_("jobs.0.pxn", True), "jobs[0].pxn")
case("servers-algorithm-without-servers", with_("jobs.0.algorithm", "hierarchical"),
     "jobs[0].algorithm")
case("servers-algorithm-unknown", {**with_("jobs.0.algorithm", "tree"), "fabric": SERVERS},
     "jobs[0].algorithm")
case("servers-hierarchical-one-gpu-per-server", {**with_("jobs.0.algorithm", "hierarchical"),
                                                 "fabric": SERVERS}, "jobs[0].algorithm")
case("servers-hierarchical-flow", {**with_("jobs.0.algorithm", "hierarchical"),
                                   "fabric": SERVERS, "semantics": {"ring_sync": "flow"},
                                   "jobs": [{**BASE["jobs"][0], "hosts": ["h1", "h2", "h3", "h4"],
                                             "algorithm": "hierarchical"}]},
     "jobs[0].algorithm")
case("servers-pxn-not-bool", {**with_("jobs.0.pxn", "yes"), "fabric": SERVERS}, "jobs[0].pxn")
for cid, path, value, key in [
    ("dp-2000", "jobs.0.dp", 2000, "jobs[0].dp"),
    ("dp-1", "jobs.0.dp", 1, "jobs[0].dp"),
    ("scale-1e6", "jobs.0.scale_bytes", 1e6, "jobs[0].scale_bytes"),
    ("scale-600", "jobs.0.scale_bytes", 600, "jobs[0].scale_bytes"),     # > 2^40 B per ring
    ("dp-too-many-leaves", "jobs.0.dp", 8, "jobs[0].dp: llama2-70b x dp=8 needs"),
]:
    case(f"limit-model-{cid}", with_(path, value, MODEL_BASE), key)
case("limit-week-of-iterations", with_("emulation.iteration_timeout_s", None) | {
    "jobs": [BASE["jobs"][0] | {"size_bytes": 10 ** 9, "iterations": 10_000}]},
    "jobs[0]: ends 8,000,000 s after the start")
case("limit-iterations-x-compute", with_("jobs.0.compute_s", 86_400.0) | {
    "jobs": [BASE["jobs"][0] | {"compute_s": 86_400.0, "iterations": 10}]}, "jobs[0]")
case("limit-too-many-events",
     with_("events", [{"at_s": 0.01 * (i + 1), ("fail_spine" if i % 2 == 0 else
                                                 "restore_spine"): "spine2"}
                      for i in range(101)]), "events")
case("limit-too-many-jobs",
     with_("jobs", [{"name": f"j{i}", "collective": "allreduce", "hosts": ["h1", "h3"],
                     "size_bytes": 100} for i in range(1001)]), "jobs")
case("limit-alltoall-connections",
     {**BASE, "fabric": {**BASE["fabric"], "leaves": 200, "hosts_per_leaf": 200},
      "jobs": [{"name": "a2a", "collective": "alltoall",
                "hosts": [f"h{i}" for i in range(1, 40_001, 200)], "size_bytes": 10 ** 6}],
      "events": []}, "routing")
case("limit-ring-transfers",
     {**BASE, "fabric": {**BASE["fabric"], "leaves": 250, "hosts_per_leaf": 250},
      "jobs": [{"name": "big", "collective": "allreduce",
                "hosts": [f"h{i}" for i in range(1, 10_001)], "size_bytes": 10 ** 6}],
      "routing": ["ecmp"], "events": []}, "jobs[0]")

# unknown names
for cid, path, value, key in [
    ("host", "jobs.0.hosts", ["h1", "h99"], "jobs[0].hosts"),
    ("host-twice", "jobs.0.hosts", ["h1", "h3", "h1"], "jobs[0].hosts"),
    ("collective", "jobs.0.collective", "broadcast", "jobs[0].collective"),
    ("routing", "routing", ["ecmp", "magic"], "routing"),
    ("routing-suffix", "routing", ["ilp@hosts"], "routing"),
    ("routing-twice", "routing", ["ilp", "ilp"], "routing"),
    ("spine", "events.0.fail_spine", "spine9", "events[0].fail_spine"),
    ("failed-spine", "fabric.failed_spines", ["spine9"], "fabric.failed_spines"),
    ("failed-link", "fabric.failed_links", [["leaf9", "spine1"]], "fabric.failed_links"),
    ("tcp-cc", "emulation.tcp_cc", "dctcp", "emulation.tcp_cc"),
    ("scheduler", "emulation.link_scheduler", "sfq", "emulation.link_scheduler"),
    ("datapath", "emulation.datapath", "dpdk", "emulation.datapath"),
    ("job-key", "jobs.0.rank", 3, "jobs[0].rank"),
    ("emulation-key", "emulation.mtu", 1500, "emulation.mtu"),
    ("event-key", "events.0.fail_leaf", "leaf1", "events[0].fail_leaf"),
]:
    case(f"unknown-{cid}", with_(path, value), key)
case("unknown-model", with_("jobs.0.model", "gpt5", MODEL_BASE), "jobs[0].model")

# sections that are not mappings (empty or false are not "the defaults")
for section, value in (("emulation", []), ("emulation", False), ("emulation", 0),
                       ("emulation", ""), ("emulation", "fast"), ("fabric", []),
                       ("fabric", None), ("fabric", False)):
    case(f"section-{section}-{value!r}", with_(section, value), section)
for cid, path, value, key in [
    ("events-mapping", "events", {}, "events"), ("events-false", "events", False, "events"),
    ("events-str", "events", "none", "events"), ("jobs-mapping", "jobs", {}, "jobs"),
    ("jobs-empty", "jobs", [], "jobs"), ("routing-mapping", "routing", {}, "routing"),
    ("failed-spines-mapping", "fabric.failed_spines", {}, "fabric.failed_spines"),
    ("failed-spines-false", "fabric.failed_spines", False, "fabric.failed_spines"),
    ("failed-links-zero", "fabric.failed_links", 0, "fabric.failed_links"),
    # a failure listed twice was taken (the same failure twice in `events` is refused)
    ("failed-spines-twice", "fabric.failed_spines", ["spine1", "spine1"],
     "fabric.failed_spines: 'spine1' is listed twice"),
    ("failed-links-twice", "fabric.failed_links", [["leaf1", "spine1"], ["spine1", "leaf1"]],
     "fabric.failed_links: ['leaf1', 'spine1'] is listed twice"),
    # named `fabric` alone before
    ("failed-spines-isolate", "fabric.failed_spines", ["spine1", "spine2"],
     "fabric.failed_spines: the failures isolate leaf1; keep at least one of its uplinks"),
]:
    case(f"section-{cid}", with_(path, value), key)

# YAML-level: non-string keys, duplicate keys, aliases, syntax errors, sizes
GOOD = dump(BASE)
case("key-int-top", "1: x\n" + GOOD, "bad.yaml:1:1: key 1 is not a string")
case("key-null-top", "~: x\n" + GOOD, "bad.yaml:1:1: key None is not a string")
case("key-bool-fabric", GOOD.replace("fabric:\n", "fabric:\n  true: 1\n"), "key True")
case("key-float-job", GOOD.replace("- name: ring\n", "- name: ring\n  1.5: x\n"),
     "key 1.5")
case("key-date-event", GOOD.replace("- at_s: 0.01\n", "- at_s: 0.01\n  2020-01-01: x\n"),
     "key datetime.date")
case("key-unhashable", GOOD + "? [a, b]\n: 1\n", "bad.yaml:")
case("dup-top", GOOD + "name: again\n", "key name is given twice")
case("dup-fabric", GOOD.replace("  spines: 2\n", "  spines: 2\n  spines: 3\n"),
     "bad.yaml:5:3: key spines is given twice in one mapping (first on line 4)")
case("dup-job", GOOD.replace("  hosts:\n", "  size_bytes: 5\n  hosts:\n"),
     "key size_bytes is given twice")
case("dup-emulation", GOOD.replace("  tcp_cc: cubic\n", "  tcp_cc: cubic\n  tcp_cc: bbr\n"),
     "key tcp_cc is given twice")
case("dup-flow-mapping", "name: t\nfabric: {spines: 1, spines: 2}\n", "key spines is given twice")
laughs = "\n".join(
    ["lol0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    + [f"lol{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 10)]
    + ["name: *l9"])
case("alias-bomb-name", laughs, "bad.yaml:1:7: anchors (&name) are not allowed")
case("alias-bomb-hosts", GOOD.replace("name: t\n", "name: t\nx: &a [h1, h3]\n"), "anchors")
case("alias-plain", "a: &x 1\nname: *x\n", "anchors")
case("alias-undefined", "name: *nothing\n", "aliases (*name) are not allowed")
case("merge-key", "name: t\nfabric:\n  <<: {spines: 2}\n", "merge keys")
case("syntax-unclosed-bracket", "name: t\nfabric: {spines: 2\nrouting: [ecmp]\n",
     "bad.yaml:3:")
case("syntax-bad-indent", "name: t\nfabric:\n  spines: 2\n leaves: 2\n", "bad.yaml:4:")
case("syntax-tab", "name: t\nfabric:\n\tspines: 2\n", "bad.yaml:3:1: not valid YAML")
case("syntax-unclosed-quote", 'name: "t\nfabric: {}\n', "bad.yaml:")
case("syntax-two-documents", "name: a\n---\nname: b\n", "bad.yaml:2:1")
case("syntax-unknown-tag", "name: !python/object:os.system x\n", "bad.yaml:1:7")
case("doc-empty", "", "config: expected a mapping")
case("doc-list", "- a\n- b\n", "config: expected a mapping")
case("doc-scalar", "hello\n", "config: expected a mapping")
case("doc-deep", "name: " + "[" * 200 + "]" * 200 + "\n", "nested more than")
case("doc-huge-int", f"name: t\nseed: {'9' * 5000}\n", "bad.yaml: a value cannot be read")
case("doc-too-big", "# " + "x" * 1_100_000 + "\n" + GOOD, "larger than 1,000,000 bytes")
case("doc-long-key", GOOD + ("k" * 100_000) + ": 1\n", "not valid YAML")
# YAML 1.1's base-60 and leading-zero octal numbers stay text (they were read as 90 and 8)
case("base60-spines", GOOD.replace("  spines: 2\n", "  spines: 1:30\n"),
     "fabric.spines: expected an integer from 1 to 256, got '1:30'")
case("octal-spines", GOOD.replace("  spines: 2\n", "  spines: 010\n"),
     "fabric.spines: expected an integer from 1 to 256, got '010'")
case("base60-float-rate", GOOD.replace("  spine_link_mbps: ", "  spine_link_mbps: 1:30.5 #"),
     "fabric.spine_link_mbps")


# a fabric kind that is not a name; failures that cut the jobs' hosts apart (outside pass:
# validate said ok, run and predict refused late, naming no key)
THREE_TIER = {"name": "t3", "seed": 1,
              "fabric": {"topology": "fat-tree", "k": 4, "host_link_mbps": 10,
                         "fabric_link_mbps": 10},
              "jobs": [{"name": "r", "collective": "allreduce", "hosts": ["h1", "h5"],
                        "size_bytes": 100000}],
              "routing": ["ecmp", "ilp"]}
CORES = ["core1", "core2", "core3", "core4"]
case("type-topology-list", with_("fabric.topology", ["fat-tree"], THREE_TIER), "fabric.topology")
case("type-topology-mapping", with_("fabric.topology", {"a": 1}, THREE_TIER), "fabric.topology")
case("type-topology-int", with_("fabric.topology", 3, THREE_TIER), "fabric.topology")
case("cut-three-tier-failed-switches", with_("fabric.failed_switches", CORES, THREE_TIER),
     "fabric.failed_switches: the failures leave no live path for job r: h1 -> h5")
case("cut-three-tier-failed-links",
     with_("fabric.failed_links", [["agg1", "core1"], ["agg1", "core2"], ["agg2", "core3"],
                                   ["agg2", "core4"]], THREE_TIER), "fabric.failed_links")
case("cut-three-tier-event",
     {**THREE_TIER, "events": [{"at_s": 0.1, "fail_switch": c} for c in CORES]},
     "events (at_s 0.1, fail_switch core4): the fabric then has no live path for job r")
case("cut-leaf-spine-failed-links", with_("fabric.failed_links", [["leaf1", "spine2"],
                                                                   ["leaf2", "spine1"]]),
     "fabric.failed_links: the failures leave no live path for job ring: h1 -> h3")


#: `run`'s bounds only: one TCP source port per connection (`predict` takes the config)
RUN_ONLY = {"limit-alltoall-connections"}


@pytest.mark.parametrize("command, text, expect", [
    pytest.param(command, text, expect, id=f"{cid}-{command}")
    for cid, text, expect in CASES for command in ("predict", "run")
    if command == "run" or cid not in RUN_ONLY])
def test_bad_config_exits_2_with_one_line_and_writes_nothing(sandbox, capsys, command, text,
                                                             expect):
    cfg_dir = sandbox / "cfg"
    cfg_dir.mkdir()
    text = text.replace("{mark}", str(sandbox / MARK))
    (cfg_dir / "bad.yaml").write_text(text)
    out_dir = sandbox / "out"
    before = tree(sandbox)
    pwned_before = Path("/tmp/pwned").exists()
    code, lines, out = cli(capsys, [command, str(cfg_dir / "bad.yaml"), "--out", str(out_dir)])
    assert_refused(code, lines, out, names=expect)
    assert not out_dir.exists()
    assert tree(sandbox) == before                   # nothing written anywhere
    assert not list(sandbox.rglob(f"*{MARK}*"))
    assert Path("/tmp/pwned").exists() == pwned_before


def test_the_corpus_covers_every_kind_of_fault():
    ids = [c[0] for c in CASES]
    assert len(ids) == len(set(ids))
    for kind in ("str-", "type-", "num-", "limit-", "unknown-", "section-", "key-", "dup-",
                 "alias-", "syntax-", "doc-", "cut-"):
        assert any(i.startswith(kind) for i in ids), kind
    assert len(CASES) >= 250


@pytest.mark.parametrize("text, expect", [c[1:] for c in CASES[::7]], ids=[c[0] for c in
                                                                           CASES[::7]])
def test_bad_config_is_refused_by_calibrate_too(sandbox, capsys, text, expect):
    (sandbox / "bad.yaml").write_text(text.replace("{mark}", str(sandbox / MARK)))
    before = tree(sandbox)
    code, lines, out = cli(capsys, ["calibrate", str(sandbox / "bad.yaml"), "--out",
                                    str(sandbox / "out")])
    assert_refused(code, lines, out, names=expect)
    assert tree(sandbox) == before


@pytest.mark.parametrize("name", ["$(touch {mark}).yaml", "`touch {mark}`", ";touch {mark}",
                                  "../../etc/passwd", "", "/proc/self/mem", "x\ny.yaml"])
def test_a_config_path_that_is_not_a_config_file(sandbox, capsys, name):
    name = name.replace("{mark}", str(sandbox / MARK))
    code, lines, out = cli(capsys, ["predict", name, "--out", str(sandbox / "out")])
    assert_refused(code, lines, out, names="")
    assert not (sandbox / "out").exists() and not list(sandbox.rglob(f"*{MARK}*"))

"""Routing entries are parsed once into records (experiments/routing_entry.py), and what
`predict` writes did not move when the string splitting gave way to them."""
import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from ..digests import scrubbed

from experiments.config import ConfigError, load, parse
from experiments.predict import predict_experiment
from experiments.routing_entry import NONBLOCKING, RoutingEntry, parse_entries
from routing import STRATEGIES

CONFIGS = Path(__file__).resolve().parents[3] / "experiments" / "configs"


@pytest.mark.parametrize("entry, strategy, enforcement, flags, routed_by, enforced_by", [
    ("ilp", "ilp", "switch", {"places_flows", "paths_given"}, "ilp", "switch"),
    ("ilp@host", "ilp", "host", {"host_enforced", "fixed", "paths_given"}, "ilp", "host"),
    ("ecmp", "ecmp", "switch", {"hashed"}, "ecmp", "switch-hash"),
    ("nonblocking", "nonblocking", "switch", {"reference"}, "ecmp", "one switch"),
    ("replay", "replay", "switch", {"replayed", "fixed", "paths_given"}, "replay", "switch"),
])
def test_an_entry_parses_into_its_strategy_enforcement_and_kind(entry, strategy, enforcement,
                                                                 flags, routed_by, enforced_by):
    e = RoutingEntry.parse(entry)
    assert (e.name, e.strategy, e.enforcement) == (entry, strategy, enforcement)
    kinds = {"hashed", "host_enforced", "reference", "replayed", "fixed", "places_flows",
             "paths_given"}
    assert {k for k in kinds if getattr(e, k)} == flags
    assert (e.routed_by, e.enforced_by) == (routed_by, enforced_by)
    assert e.run_dir == entry.replace("@", "-at-")


def _old_split(entry: str) -> tuple[str, str]:
    """config.split_routing as it was, the reference the records must agree with."""
    strategy, _, enforcement = entry.partition("@")
    return strategy, enforcement or "switch"


def _every_entry() -> list[str]:
    shipped = {n for p in CONFIGS.glob("*.yaml") for n in load(p).routing}
    return sorted(shipped | set(STRATEGIES) | {f"{s}@host" for s in STRATEGIES if s != "ecmp"}
                  | {NONBLOCKING})


@pytest.mark.parametrize("entry", _every_entry())
def test_each_property_says_what_the_old_string_tests_said(entry):
    e = RoutingEntry.parse(entry)
    strategy, enforcement = _old_split(entry)
    assert (e.strategy, e.enforcement) == (strategy, enforcement)
    assert e.hashed == (strategy == "ecmp")
    assert e.host_enforced == (enforcement == "host")
    assert e.reference == (strategy == "nonblocking")
    assert e.replayed == (strategy == "replay")
    # the runner's old rewrite and checks: nonblocking ran as "ecmp" on its one switch
    routed = "ecmp" if strategy == "nonblocking" else strategy
    assert e.routed_by == routed
    assert e.paths_given == (routed != "ecmp")
    assert e.enforced_by == (enforcement if routed != "ecmp" else
                             "one switch" if entry == "nonblocking" else "switch-hash")
    # predict's old static plan, and the policy's own places_flows (no static plan, not ECMP)
    assert e.fixed == (enforcement == "host" or strategy == "replay")
    assert e.places_flows == (routed != "ecmp" and not e.fixed)


def test_an_experiment_holds_its_entries_parsed_and_its_strings_for_the_yaml():
    exp = load(CONFIGS / "host-enforced.yaml")
    assert exp.routing == ["ecmp", "ilp", "ilp@host"]
    assert exp.routings == parse_entries(exp.routing)
    assert [e.name for e in exp.routings] == exp.routing == exp.resolved()["routing"]
    assert parse(exp.resolved()).routings == exp.routings
    # the runner's one-switch reference: dataclasses.replace keeps the records in step
    assert dataclasses.replace(exp, events=[]).routings == exp.routings


@pytest.mark.parametrize("routing, key", [(["ecmp@host"], "ecmp@host makes no sense"),
                                          (["nonblocking@host"], "no routes"),
                                          (["ilp@hosts"], "suffix must be @host"),
                                          (["spray@"], "'spray@': the suffix must be"),
                                          (["ilp@"], "'ilp@': the suffix must be"),
                                          (["nonblocking@"], "the suffix must be"),
                                          (["greedy@switch"], "the suffix must be"),
                                          (["spray@packet@host"], "the suffix must be"),
                                          (["magic"], "unknown strategy 'magic'")])
def test_bad_entries_are_refused_as_before(routing, key):
    doc = json.loads(json.dumps(load(CONFIGS / "quickstart.yaml").resolved()))
    doc["routing"] = routing
    with pytest.raises(ConfigError, match=key):
        parse(doc)


_TIMING = {"predict_wall_s", "time_s", "time_s_max", "time_s_mean", "solve_time_s", "wall_s"}
#: keys results.json gained after the digests below were written (new figures, nothing moved)
_ADDED = {"link_load_imbalance", "solver", "predict_kernels"}



def _scrub(o):
    return scrubbed(o, _TIMING | _ADDED)


def predicted_digest(config: Path, out: Path) -> str:
    """sha256 of `predict`'s results.json (wall-clock keys left out) and of every CSV it wrote."""
    predict_experiment(load(config), out, log=lambda s: None)
    h = hashlib.sha256(json.dumps(_scrub(json.loads((out / "results.json").read_text())),
                                  sort_keys=True).encode())
    for f in sorted(p for p in out.rglob("*.csv")):
        h.update(str(f.relative_to(out)).encode() + _before_flows(f))
    return h.hexdigest()


def _before_flows(f: Path) -> bytes:
    """A CSV's bytes, links.csv without the `flows` column it gained after the digests."""
    data = f.read_bytes()
    if f.name != "links.csv" or not data.split(b"\r\n", 1)[0].endswith(b",flows"):
        return data
    return b"".join(line.rsplit(b",", 1)[0] + b"\r\n" for line in data.split(b"\r\n")[:-1])


#: written by predicted_digest from the code before the records (commit 12ab310): every kind
#: of entry (ecmp, placed, @host, nonblocking, replay) and the run folders' names
BEFORE = {
    "host-enforced": "00978518a7f580fcc5674b938f86c0458eedb3f37f0dfaa52b78f8d22f23e205",
    "hedera-k4": "cd9d3d899662242d564fea5b984b8479485ed06dd61e9dac05fd616dcf4f2276",
    "floodns-1job-d2": "efe85d34ce382a01f7fcc805b69406fa6b6a5fee5ca0848846e9c704cf0f3d5b",
}


@pytest.mark.parametrize("stem", sorted(BEFORE))
def test_predict_writes_what_it_wrote_before_the_records(stem, tmp_path):
    assert predicted_digest(CONFIGS / f"{stem}.yaml", tmp_path / stem) == BEFORE[stem]

"""`--set key.path=value` and `validate`: values typed by the schema, bad paths in one line."""
from __future__ import annotations

from pathlib import Path

import pytest

from experiments.__main__ import main
from experiments.config import ConfigError, read_yaml
from experiments.overrides import apply_sets, load_with, parse_path, parse_set, set_values

ROOT = Path(__file__).resolve().parents[3]
QUICK = str(ROOT / "experiments" / "configs" / "quickstart.yaml")


def cli(capsys, argv):
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


@pytest.mark.parametrize("key, path", [
    ("seed", ["seed"]),
    ("fabric.spine_link_mbps", ["fabric", "spine_link_mbps"]),
    ("jobs[0].iterations", ["jobs", 0, "iterations"]),
    ("jobs.2.hosts[1]", ["jobs", 2, "hosts", 1]),
    ("events[0].fail_link[1]", ["events", 0, "fail_link", 1]),
])
def test_paths_parse_with_dots_and_indices(key, path):
    assert parse_path(key) == path


def test_values_are_yaml_and_typed_by_the_loader():
    exp = load_with(QUICK, ["fabric.spine_link_mbps=10", "jobs[1].iterations=5",
                            "routing=[ilp]", "seed=7", "emulation.mtu_bytes=1500"])
    assert exp.fabric.spec.spine_link_mbps == 10.0
    assert exp.jobs[1].iterations == 5 and exp.jobs[0].iterations == 3
    assert exp.routing == ["ilp"] and exp.seed == 7
    assert exp.emulation.mtu_bytes == 1500 and not exp.emulation.mtu_auto
    # the saved config holds the changed values
    assert exp.resolved()["fabric"]["spine_link_mbps"] == 10.0


def test_a_missing_section_is_created():
    doc = {k: v for k, v in read_yaml(QUICK).items() if k != "emulation"}
    out = apply_sets(doc, [parse_set("emulation.tcp_cc=bbr")])
    assert out["emulation"] == {"tcp_cc": "bbr"} and "emulation" not in doc


@pytest.mark.parametrize("text, names", [
    ("fabric.spine_mbps=10", "fabric.spine_mbps"),          # unknown key
    ("fabrik.spines=2", "fabrik"),                          # unknown top key
    ("jobs[9].iterations=2", "jobs[9].iterations"),         # past the list's end
    ("name.x=1", "name.x"),                                 # under a scalar
    ("fabric.spines", "fabric.spines"),                     # no value
    ("fabric.spine_link_mbps=[1, ", "fabric.spine_link_mbps"),  # not YAML
])
def test_a_bad_path_is_one_line_naming_the_key_exit_2(capsys, text, names):
    for command in (["validate", QUICK], ["predict", QUICK, "--out", "/nonexistent/never"]):
        code, out, err = cli(capsys, [*command, "--set", text])
        assert code == 2 and len(err) == 1 and names in err[0], err
        assert err[0].startswith("error: ") and out == ""


def test_a_bad_value_is_refused_by_the_loader_naming_the_key(capsys):
    code, _, err = cli(capsys, ["validate", QUICK, "--set", "fabric.spine_link_mbps=fast"])
    assert code == 2 and err == ["error: fabric.spine_link_mbps: expected a number, got 'fast'"]
    code, _, err = cli(capsys, ["validate", QUICK, "--set", "fabric.spine_link_mbps=0"])
    assert code == 2 and "fabric.spine_link_mbps: must be" in err[0]


def test_validate_says_ok_and_whether_run_can_emulate(capsys):
    code, out, err = cli(capsys, ["validate", QUICK])
    assert code == 0 and err == [] and "ok: quickstart" in out and "emulate it: yes" in out
    code, out, _ = cli(capsys, ["validate", QUICK, "--set", "fabric.host_link_mbps=5000",
                                "--set", "fabric.spine_link_mbps=5000"])
    assert code == 0 and "emulate it: no" in out


def test_duplicate_keys_are_an_error_with_line_and_column(tmp_path, capsys):
    cfg = tmp_path / "dup.yaml"
    cfg.write_text("name: d\nfabric:\n  spines: 2\n  leaves: 2\n  spines: 4\n")
    with pytest.raises(ConfigError, match=r"dup.yaml:5:3: key spines is given twice .*line 3"):
        read_yaml(cfg)
    code, _, err = cli(capsys, ["validate", str(cfg)])
    assert code == 2 and len(err) == 1 and "dup.yaml:5:3" in err[0]


def test_set_values_become_columns():
    assert set_values(["fabric.spine_link_mbps=10", "routing=[ecmp, ilp]"]) == {
        "fabric.spine_link_mbps": 10, "routing": ["ecmp", "ilp"]}


def test_repeat_is_bounded(capsys, tmp_path):
    code, _, err = cli(capsys, ["predict", QUICK, "--out", str(tmp_path / "o"),
                                "--repeat", "0"])
    assert code == 2 and err[0].startswith("error: --repeat") and not (tmp_path / "o").exists()

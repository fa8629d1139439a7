"""A fabric section with servers: its resolved form loads again to the same experiment, the
jobs run as NCCL runs them on it, `validate` says why `run` cannot emulate it yet and `run`
refuses before creating anything."""
from __future__ import annotations

from experiments.config import parse

from .bad_input import BASE, cli, dump, refused_early

SERVERS = {**BASE, "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 4,
                              "host_link_mbps": 10, "spine_link_mbps": 10,
                              "gpus_per_server": 2, "nvlink_mbps": 3.6e6},
           "jobs": [{"name": "ring", "collective": "allreduce", "size_bytes": 100000,
                     "hosts": ["h1", "h3", "h5", "h7", "h2", "h4", "h6", "h8"]},
                    {"name": "a2a", "collective": "alltoall", "size_bytes": 100000,
                     "hosts": ["h9"], "pxn": False}],
           "events": [], "emulation": {}}


def doc(**changes) -> dict:
    jobs = [dict(SERVERS["jobs"][0])]
    return {**SERVERS, "jobs": jobs, **changes}


def test_servers_resolve_and_load_again():
    exp = parse(doc())
    ring = exp.jobs[0]
    assert ring.groups == [["h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8"]]
    assert ring.channels == 2 and ring.pxn
    again = parse(exp.resolved())
    assert again.fabric.spec == exp.fabric.spec and again.resolved() == exp.resolved()
    assert again.jobs[0].groups == ring.groups and again.jobs[0].channels == 2


def test_pxn_false_is_written_back():
    d = doc()
    d["jobs"][0]["pxn"] = False
    exp = parse(d)
    assert exp.resolved()["jobs"][0]["pxn"] is False
    assert not parse(exp.resolved()).jobs[0].pxn


def test_hierarchical_is_written_back_and_planned_in_phases():
    d = doc()
    d["jobs"][0]["algorithm"] = "hierarchical"
    exp = parse(d)
    assert exp.resolved()["jobs"][0]["algorithm"] == "hierarchical"
    again = parse(exp.resolved())
    assert again.jobs[0].algorithm == "hierarchical"
    # 4 servers x 2 GPUs: 8 reduce-scatter + 8 rail connections (all-gather reuses the first)
    assert len(again.plans()[0].connections) == 16


def test_run_refuses_what_it_cannot_emulate_before_anything(sandbox, capsys):
    cfg, out = sandbox / "servers.yaml", sandbox / "out"
    cfg.write_text(dump(doc()))                 # NVLink at 3.6 Tbit/s: beyond the shapers
    refused_early(sandbox, capsys, ["run", str(cfg), "--out", str(out)],
                  "fabric.nvlink_mbps", out)
    code, _, stdout = cli(capsys, ["validate", str(cfg)])
    assert code == 0 and "`run` can emulate it: no: fabric.nvlink_mbps" in stdout
    mixed = doc(fabric={**SERVERS["fabric"], "nvlink_mbps": 90})
    mixed["jobs"].append({**SERVERS["jobs"][1], "hosts": ["h1", "h8"]})
    mixed["jobs"][0]["hosts"] = ["h2", "h3", "h4", "h5"]
    cfg.write_text(dump(mixed))
    refused_early(sandbox, capsys, ["run", str(cfg), "--out", str(out)], "pxn", out)
    del mixed["jobs"][1]
    cfg.write_text(dump(mixed))
    code, _, stdout = cli(capsys, ["validate", str(cfg)])
    assert code == 0 and "`run` can emulate it: yes" in stdout


def test_a_simai_file_puts_tensor_parallel_inside_servers():
    from pathlib import Path
    fix = Path(__file__).resolve().parents[2] / "fixtures" / "simai" / "tp2-dp4.txt"
    fabric = {"spines": 2, "leaves": 2, "hosts_per_leaf": 4, "host_link_mbps": 100,
              "spine_link_mbps": 100}
    docs = {g: {"name": "s", "routing": ["ecmp"], "jobs_from": {"simai": str(fix)},
                "fabric": {**fabric, **({"gpus_per_server": 2, "nvlink_mbps": 3.6e6}
                                        if g > 1 else {})}} for g in (1, 2)}
    for g, d in docs.items():
        exp = parse(d)
        # the tensor-parallel groups (model_parallel_NPU_group: 2) are ranks 2i, 2i+1
        tp = [c for p in exp.plans() for c in p.connections if p.spec.groups[0] == ["h1", "h2"]]
        assert len(tp) >= 3 * 4 * 2       # embedding, attention's gather and scatter
        inside = [exp.fabric.same_server(c.src, c.dst) for c in tp]
        assert all(inside) if g == 2 else not any(inside)

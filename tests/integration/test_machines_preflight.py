"""`mlfabric preflight` against machines made of namespaces, each with its own sshd
(tests/integration/machines.py): ready machines pass; an unreachable one and one whose VXLAN
port is taken each give one line and exit 2; nothing is built on any machine. ~5 s."""
from __future__ import annotations

import os
import subprocess
import sys

import yaml

from .helpers import NOTHING, ROOT, leftovers
from .machines import NamespaceMachines, sh

DOC = {"name": "pf", "fabric": {"spines": 2, "leaves": 2, "hosts_per_leaf": 1,
                                "host_link_mbps": 10, "spine_link_mbps": 10},
       "jobs": [{"name": "r", "collective": "allreduce", "hosts": ["h1", "h2"],
                 "size_bytes": 1000000, "iterations": 1}],
       "routing": ["ecmp"]}


def preflight(tmp_path, ms: NamespaceMachines) -> subprocess.CompletedProcess:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({**DOC, "machines": [m.as_dict() for m in ms.specs]}))
    return subprocess.run([sys.executable, "-m", "experiments", "preflight", str(cfg)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **ms.ssh_env()})


def test_ready_machines_pass(tmp_path):
    with NamespaceMachines(2, tmp_path) as ms:
        out = preflight(tmp_path, ms)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count(": ready") == 2
    assert leftovers() == NOTHING


def test_an_unreachable_machine_is_one_line(tmp_path):
    with NamespaceMachines(2, tmp_path, sshd_on=(0,)) as ms:
        out = preflight(tmp_path, ms)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: machines.m1: unreachable over ssh")
    assert leftovers() == NOTHING


def test_a_taken_vxlan_port_is_one_line(tmp_path):
    with NamespaceMachines(2, tmp_path) as ms:
        holder = subprocess.Popen(
            ["ip", "netns", "exec", ms.ns(0), sys.executable, "-c",
             "import socket, time; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
             "s.bind(('0.0.0.0', 4789)); print('bound', flush=True); time.sleep(60)"],
            stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline().strip() == "bound"
            out = preflight(tmp_path, ms)
        finally:
            holder.kill()
            holder.wait(timeout=10)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "machines.m0: UDP port 4789 (VXLAN) is in use" in lines[0]
    assert sh("ip", "netns", "list").stdout.count("mfm") == 0


def test_clean_folds_unreachable_machines_into_one_line(tmp_path):
    doc = {**DOC, "fabric": {**DOC["fabric"], "leaves": 3}}
    with NamespaceMachines(3, tmp_path, sshd_on=(0,)) as ms:
        cfg = tmp_path / "cfg.yaml"
        cfg.write_text(yaml.safe_dump({**doc, "machines": [m.as_dict() for m in ms.specs]}))
        out = subprocess.run([sys.executable, "-m", "experiments", "clean", "--machines",
                              str(cfg)], cwd=ROOT, capture_output=True, text=True, timeout=120,
                             env={**os.environ, **ms.ssh_env()})
    assert out.returncode == 1
    errors = out.stderr.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("error: m1: unreachable over ssh")
    assert errors[0].endswith("(and 1 more: m2)")
    assert leftovers() == NOTHING


def test_clean_on_every_machine(tmp_path):
    """`clean --machines`: clean runs on each machine over ssh (here the same file system, so
    each finds nothing); an unreachable machine is one line and exit 1."""
    with NamespaceMachines(2, tmp_path, sshd_on=(0,)) as ms:
        cfg = tmp_path / "cfg.yaml"
        cfg.write_text(yaml.safe_dump({**DOC, "machines": [m.as_dict() for m in ms.specs]}))
        out = subprocess.run([sys.executable, "-m", "experiments", "clean", "--machines",
                              str(cfg)], cwd=ROOT, capture_output=True, text=True, timeout=120,
                             env={**os.environ, **ms.ssh_env()})
    assert out.returncode == 1
    assert "m0: removed:" in out.stdout
    assert out.stderr.strip().splitlines()[-1].startswith("error: m1: unreachable over ssh")
    assert leftovers() == NOTHING

"""The one thin writer of rule records: one atomic `ovs-ofctl bundle` per switch.

Step 4 of a run (config -> fabric -> routes -> **rules** -> traffic -> measure -> teardown).
Each switch's bundle replaces all its flows and groups in one transaction, so a switch is
never seen half-configured. After the bundles, the datapath's flow cache is purged: the
userspace datapath keeps forwarding by its cached megaflows until the revalidator threads catch
up with the new tables (measured up to ~0.5 s, `ovs-appctl revalidator/wait`), so a flow could
keep its old path that long; a purge (~5 ms) makes the next packet of every flow take the new
rules. The purge drops the per-rule counts the revalidators had not yet pushed (at most one
cycle's worth): path checks can under-count a flow's bytes, never put them on a wrong spine.
The exact files and commands are saved in the run folder, and `dry_run=True` writes them
without touching a switch. A switch in one of the run's own ovs-vswitchd processes
(`emulation.switch_processes`) is reached through its management socket, and each process's
datapath is purged (testbed/instances.py); commands.txt names every switch by its bridge name.
"""
from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path
from typing import Protocol

from .instances import appctl_prefixes, ofctl_target
from .openflow import Rule, bundle_text, by_switch
from .ovs import TestbedError, run

OFCTL = ["ovs-ofctl", "-O", "OpenFlow14"]


class RemoteSwitches(Protocol):
    """Where a split run's switches live (experiments/split_run.py): each call goes to the
    machine that holds the switch, over its part server."""

    def apply_bundles(self, texts: dict[str, str], label: str) -> None: ...

    def dump_flows(self, switch: str) -> str: ...

    def settle(self) -> None: ...


_REMOTE: list[RemoteSwitches] = []


def use_remote(remote: RemoteSwitches | None) -> None:
    """Send every switch command to `remote` (a live split run), or again here (None)."""
    _REMOTE[:] = [remote] if remote is not None else []


def install(rules: list[Rule], out_dir: Path, dry_run: bool = False) -> dict:
    """Write every switch's bundle file under out_dir and apply it; returns counts and time."""
    out_dir.mkdir(parents=True, exist_ok=True)
    commands: list[str] = []
    t0 = time.perf_counter()
    per_switch = by_switch(rules)
    cmds = []
    for switch, srules in sorted(per_switch.items()):
        path = out_dir / f"{switch}.bundle"
        path.write_text(bundle_text(srules))
        cmds.append([*OFCTL, "bundle", ofctl_target(switch), str(path)])
        commands.append(" ".join([*OFCTL, "bundle", switch, str(path)]))
    (out_dir / "commands.txt").write_text("\n".join(commands) + "\n")
    if not dry_run and _REMOTE:
        _REMOTE[0].apply_bundles({sw: bundle_text(r) for sw, r in per_switch.items()}, "install")
    elif not dry_run:
        run_parallel(cmds)
        purge_datapath_flows()
    return {"switches": len(per_switch), "rules": len(rules),
            "install_s": time.perf_counter() - t0, "dry_run": dry_run}


def apply_lines(lines: dict[str, list[str]], out_dir: Path, label: str,
                dry_run: bool = False) -> None:
    """Apply per-switch bundle lines (a diff from openflow.diff_lines), each switch's
    as one atomic bundle; files and commands are kept under out_dir with `label`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cmds = []
    for switch, ls in sorted(lines.items()):
        path = out_dir / f"{label}-{switch}.bundle"
        path.write_text("\n".join(ls) + "\n")
        cmds.append([*OFCTL, "bundle", switch, str(path)])
    with (out_dir / "commands.txt").open("a") as f:
        f.write("".join(" ".join(c) + "\n" for c in cmds))
    cmds = [[*c[:-2], ofctl_target(c[-2]), c[-1]] for c in cmds]
    if not dry_run and cmds and _REMOTE:
        _REMOTE[0].apply_bundles({sw: "\n".join(ls) + "\n" for sw, ls in lines.items()}, label)
    elif not dry_run and cmds:
        run_parallel(cmds)
        purge_datapath_flows()


def settle_flow_stats() -> None:
    """Wait until the revalidators have pushed the datapath's counts into the OpenFlow rules
    (one revalidation cycle, <= ~0.5 s): rule counters lag the traffic until then."""
    if _REMOTE:
        _REMOTE[0].settle()
        return
    for appctl in appctl_prefixes():
        run([*appctl, "revalidator/wait"])


def purge_datapath_flows() -> None:
    """Drop ovs-vswitchd's cached datapath flows, so that new rules apply from the next packet."""
    for appctl in appctl_prefixes():
        run([*appctl, "revalidator/purge"])


def run_parallel(cmds: list[list[str]], timeout_s: float = 30.0) -> None:
    """Run independent commands (one switch each) at once; raise on the first failure."""
    procs = [subprocess.Popen(c, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for c in cmds]
    errors = []
    for c, p in zip(cmds, procs):
        try:
            _, err = p.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            errors.append(f"`{' '.join(c)}` took more than {timeout_s:g} s")
            continue
        if p.returncode != 0:
            errors.append(f"`{' '.join(c)}` failed ({p.returncode}): {err.strip()[:300]}")
    if errors:
        raise TestbedError(errors[0])


_FLOW_RE = re.compile(r"cookie=(0x[0-9a-f]+).*?n_bytes=(\d+)")


def flow_bytes_by_cookie(switch: str) -> dict[int, int]:
    """Bytes counted per rule cookie on `switch` (rules with cookie 0 are left out)."""
    out = (_REMOTE[0].dump_flows(switch) if _REMOTE
           else run([*OFCTL, "dump-flows", ofctl_target(switch)]).stdout)
    return flow_bytes(out)


def flow_bytes(out: str) -> dict[int, int]:
    """`ovs-ofctl dump-flows` output: bytes per rule cookie (cookie 0 left out)."""
    counts: dict[int, int] = {}
    for m in _FLOW_RE.finditer(out):
        cookie = int(m.group(1), 16)
        if cookie:
            counts[cookie] = counts.get(cookie, 0) + int(m.group(2))
    return counts

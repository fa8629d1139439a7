"""The one thin writer of rule records: one atomic `ovs-ofctl bundle` per switch.

Step 4 of a run (config -> fabric -> routes -> **rules** -> traffic -> measure -> teardown).
Each switch's bundle replaces all its flows and groups in one transaction, so a switch is
never seen half-configured. The exact files and commands are saved in the run folder, and
`dry_run=True` writes them without touching a switch.
"""
from __future__ import annotations

import re
import time
from pathlib import Path

from routing.rules import Rule, bundle_text, by_switch

from .ovs import run

OFCTL = ["ovs-ofctl", "-O", "OpenFlow14"]


def install(rules: list[Rule], out_dir: Path, dry_run: bool = False) -> dict:
    """Write every switch's bundle file under out_dir and apply it; returns counts and time."""
    out_dir.mkdir(parents=True, exist_ok=True)
    commands: list[str] = []
    t0 = time.perf_counter()
    per_switch = by_switch(rules)
    for switch, srules in sorted(per_switch.items()):
        path = out_dir / f"{switch}.bundle"
        path.write_text(bundle_text(srules))
        cmd = [*OFCTL, "bundle", switch, str(path)]
        commands.append(" ".join(cmd))
        if not dry_run:
            run(cmd)
    (out_dir / "commands.txt").write_text("\n".join(commands) + "\n")
    return {"switches": len(per_switch), "rules": len(rules),
            "install_s": time.perf_counter() - t0, "dry_run": dry_run}


_FLOW_RE = re.compile(r"cookie=(0x[0-9a-f]+).*?n_bytes=(\d+)")


def flow_bytes_by_cookie(switch: str) -> dict[int, int]:
    """Bytes counted per rule cookie on `switch` (rules with cookie 0 are left out)."""
    out = run([*OFCTL, "dump-flows", switch]).stdout
    counts: dict[int, int] = {}
    for m in _FLOW_RE.finditer(out):
        cookie = int(m.group(1), 16)
        if cookie:
            counts[cookie] = counts.get(cookie, 0) + int(m.group(2))
    return counts

"""The commands about machines (docs/multi-machine.md): `mlfabric preflight CONFIG` and
`mlfabric clean --machines CONFIG`, over ssh to every machine at once; each says one line
per machine, and nothing is built anywhere."""
from __future__ import annotations

import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from testbed import remote

from .config import ConfigError, load


def preflight(config: Path) -> int:
    """Pre-flight every machine of the config (testbed/remote.py): one line per problem and
    exit 2, or one line per ready machine and 0. Nothing is built on any machine."""
    exp = load(config)
    if not exp.machines:
        raise ConfigError("machines: the config names no machines; add machines: "
                          "[{name, address, user}, ...]")
    control = Path(tempfile.mkdtemp(prefix="mlf-ssh-"))   # short: a unix socket's path
    try:
        checkout = str(Path(__file__).resolve().parents[1])    # the same path on each
        problems = remote.preflight_all(exp.machines, checkout, control)
    finally:
        for m in exp.machines:
            remote.close(m, control)
        shutil.rmtree(control, ignore_errors=True)
    for p in problems:
        print(f"error: {p}", file=sys.stderr)
    if problems:
        return 2
    for m in exp.machines:
        print(f"{m.name} ({m.user}@{m.address}): ready")
    return 0


def clean_machines(machines) -> int:
    """`clean` on every machine (the checkout at this one's path, over ssh, all at once);
    one line per machine; 1 when one could not be reached or could not remove everything."""
    checkout = Path(__file__).resolve().parents[1]
    cmd = [str(checkout / ".venv" / "bin" / "python"), "-m", "experiments", "clean"]
    control = Path(tempfile.mkdtemp(prefix="mlf-ssh-"))
    try:
        with ThreadPoolExecutor(max_workers=min(16, len(machines))) as pool:
            outs = list(pool.map(lambda m: remote.run_remote(m, control, cmd, str(checkout)),
                                 machines))
    finally:
        for m in machines:
            remote.close(m, control)
        shutil.rmtree(control, ignore_errors=True)
    for m, (rc, text) in zip(machines, outs):
        if rc == 0:
            print(f"{m.name}: {text}")
    failed = [f"{m.name}: {text}" for m, (rc, text) in zip(machines, outs) if rc != 0]
    if failed:                 # one line, as `run` folds them
        more = (f" (and {len(failed) - 1} more: "
                f"{', '.join(x.split(':')[0] for x in failed[1:])})" if len(failed) > 1 else "")
        print(f"error: {failed[0]}{more}", file=sys.stderr)
    return 1 if failed else 0

"""Integration tests run the real fabric: they need root and a running Open vSwitch.

Without either, every test in this folder is skipped (one reason, shown by `pytest -ra`).
`make test` runs testbed/bootstrap.sh first, which installs and starts what is missing.
"""
import os
import shutil
import subprocess
import warnings

import pytest


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "integration tests need root (run `sudo make test`)"
    if shutil.which("ovs-vsctl") is None or shutil.which("mnexec") is None:
        return "integration tests need Open vSwitch and Mininet (run `sudo make setup`)"
    if subprocess.run(["ovs-vsctl", "--timeout=3", "show"], capture_output=True).returncode:
        return "Open vSwitch is not running (run `sudo make setup`)"
    return None


def pytest_collection_modifyitems(config, items):
    reason = _why_not()
    if reason is None:
        return
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session", autouse=True)
def _no_crashed_runs():
    """Start from a clean machine: what a crashed earlier run left (a record whose owner is
    dead, its bridges and interfaces) is removed, as `mlfabric clean` would, and said in the
    summary. Live runs are left alone. Every test still checks that it leaves nothing itself."""
    if _why_not() is not None:
        yield
        return
    from testbed.registry import clean_all
    removed = clean_all()
    if removed["runs"] or removed["bridges"]:
        warnings.warn(f"removed what crashed runs left before these tests: {removed}",
                      stacklevel=1)
    yield

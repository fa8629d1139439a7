"""Make the repository root importable however pytest is started, and let the tests' Ctrl-C
reach the commands they start."""
import signal
import sys
from pathlib import Path

# A shell without job control starts background commands with SIGINT ignored, and an ignored
# signal stays ignored across exec: a suite run as `make test &` (or under nohup) would start
# every `mlfabric run` the Ctrl-C tests interrupt deaf to SIGINT. A handler (unlike SIG_IGN)
# is reset to the default on exec, so the children get Python's KeyboardInterrupt again.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def pytest_configure(config):
    """Third-party deprecations we cannot act on (PuLP 3.x API, Mininet's distutils use)."""
    for mod in ("pulp", "mininet"):
        config.addinivalue_line("filterwarnings", f"ignore::DeprecationWarning:{mod}.*")

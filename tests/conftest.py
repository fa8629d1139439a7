"""Make the repository root importable however pytest is started."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def pytest_configure(config):
    """Third-party deprecations we cannot act on (PuLP 3.x API, Mininet's distutils use)."""
    for mod in ("pulp", "mininet"):
        config.addinivalue_line("filterwarnings", f"ignore::DeprecationWarning:{mod}.*")

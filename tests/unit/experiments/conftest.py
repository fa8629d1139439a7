"""The fault corpus's fixtures (tests/unit/experiments/bad_input.py) for test_bad_*.py."""
from .bad_input import predicted, sandbox  # noqa: F401

"""The README and docs/ stay a short README beside one page per topic, and say what the code does:
every config key has a row in the configuration reference, every link and every repository path
they name exists, and no page names internal issue numbers or reads as a dated log."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from experiments.config import keys

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").glob("*.md"))
DOCS = [ROOT / "README.md", *PAGES]
EXPECTED = {"configuration", "topologies", "results", "architecture", "emulation", "prediction",
            "scenarios", "interop", "sweeps", "multi-machine", "benchmarks"}


def test_the_readme_is_short_and_every_topic_has_a_page():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250
    assert EXPECTED <= {p.stem for p in PAGES}


def _table_after(text: str, heading: str) -> str:
    """The first key table after the paragraph that starts with `heading`."""
    rest = text[text.index(heading):]
    return rest[rest.index("| key |"):].split("\n\n", 1)[0]


@pytest.mark.parametrize("heading, names", [
    ("Top level:", keys.TOP_KEYS),
    ("Fabric (", keys.FABRIC_KEYS),
    ("Jobs (explicit", keys.EXPLICIT_JOB_KEYS | keys.MODEL_JOB_KEYS | keys.PATTERN_JOB_KEYS),
    ("Program jobs (`program:`", keys.PROGRAM_JOB_KEYS),
    ("Imported jobs (`jobs_from`):", keys.JOBS_FROM_KEYS),
    ("Events (each has", set(keys.EVENT_KINDS) | {"at_s"}),
    ("Emulation (", keys.EMULATION_KEYS),
])
def test_every_config_key_has_a_row_in_the_reference(heading, names):
    table = _table_after((ROOT / "docs" / "configuration.md").read_text(), heading)
    rows = set(re.findall(r"^\| `([a-z_]+)` \|", table, re.M))
    assert rows == set(names), (set(names) - rows, rows - set(names))


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_links_between_pages_resolve(page):
    text = page.read_text()
    for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", text):
        assert (page.parent / target).is_file(), f"{page.name}: link to {target}"


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_repository_paths_named_in_the_docs_exist(page):
    named = re.findall(r"`((?:testbed|traffic|routing|experiments|tests)/[\w./-]+)`",
                       page.read_text())
    missing = [p for p in named if "<" not in p and "*" not in p
               and not (ROOT / p.rstrip("/")).exists()]
    assert not missing, f"{page.name}: {missing}"


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_no_internal_issue_numbers_or_dated_logs(page):
    text = page.read_text()
    assert not re.search(r"\bissues? \d+", text, re.I), page.name
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", text), page.name
    assert "python -m experiments " not in text.replace("(`python -m experiments` works too)", "")

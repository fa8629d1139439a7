"""`predict` on NVLink servers writes exactly what it wrote before the connections became
columns (servers.json.gz was written by servers.py from the code before that change): the
same results.json (CCTs as exact floats, connection rates, fairness) and the same CSVs."""
import json

import pytest

from .servers import digest, docs, read_expected

EXPECTED_DOC = read_expected()
DOCS = docs()


def test_the_baseline_covers_the_server_configs_and_the_matrix():
    assert sorted(EXPECTED_DOC) == sorted(DOCS)
    assert len(DOCS) == 17


@pytest.mark.parametrize("name", sorted(DOCS))
def test_same_results_and_csvs(name):
    want = EXPECTED_DOC[name]
    got = json.loads(json.dumps(digest(DOCS[name])))   # the stored side's JSON round trip
    for w, g in zip(want["results"]["runs"], got["results"]["runs"]):
        assert g["cct_s"] == w["cct_s"], (name, w["routing"])      # exact floats
    assert got["results"] == want["results"], name
    assert got["csv_sha256"] == want["csv_sha256"], name

"""Imported workload files at the real byte limit (traffic/files.py MAX_INPUT_BYTES): a file of
exactly the limit is read whole, one byte more is refused in one line before it is read,
whichever importer names it."""
from __future__ import annotations

import pytest
import yaml

from experiments.__main__ import main
from traffic import files

FABRIC = {"spines": 2, "leaves": 2, "hosts_per_leaf": 4, "host_link_mbps": 100,
          "spine_link_mbps": 100}


def test_a_file_of_exactly_the_limit_is_read_and_one_byte_more_is_not(tmp_path):
    at, over = tmp_path / "at.bin", tmp_path / "over.bin"
    with open(at, "wb") as f:                    # sparse: no disk, the same size to stat
        f.truncate(files.MAX_INPUT_BYTES)
    with open(over, "wb") as f:
        f.truncate(files.MAX_INPUT_BYTES + 1)
    assert len(files.read_bytes(at)) == files.MAX_INPUT_BYTES
    with pytest.raises(files.InputFileError, match=f"{files.MAX_INPUT_BYTES + 1:,} bytes; "
                                                   f"at most {files.MAX_INPUT_BYTES:,}"):
        files.read_bytes(over)


@pytest.mark.parametrize("key", ["simai", "floodns", "comm_groups"])
def test_each_importer_refuses_a_file_one_byte_over_in_one_line(tmp_path, capsys, key):
    big = tmp_path / "job_0-GPT.txt"               # floodns's name for a job file
    with open(big, "wb") as f:
        f.truncate(files.MAX_INPUT_BYTES + 1)
    jobs_from = {key: str(tmp_path if key == "floodns" else big)}
    if key == "comm_groups":
        jobs_from["chakra"] = str(tmp_path)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"name": "big", "fabric": FABRIC, "jobs_from": jobs_from,
                                   "routing": ["ecmp"]}))
    out = tmp_path / "out"
    assert main(["predict", str(cfg), "--out", str(out)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and f"at most {files.MAX_INPUT_BYTES:,}" in err[0], err
    assert not out.exists()

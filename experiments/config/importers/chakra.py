"""`jobs_from: {chakra: FOLDER, comm_groups: JSON}`: Chakra .et traces, one per rank, or
Chakra's JSON form of them (traffic/chakra.py, traffic/chakra_jobs.py), and optionally
ASTRA-sim's communicator groups ({"<pg_name>": [ranks...]})."""
from __future__ import annotations

import json
from pathlib import Path

from testbed.fabric import Fabric
from traffic.collectives import JobSpec
from traffic.streams import Notes, StreamError

from ..readers import ConfigError, _one_line, _shown
from .base import Format, JobsOf, Param


class Chakra(Format):
    name, shape = "chakra", "FOLDER"
    params = (Param("comm_groups", "path"),)

    def read(self, src: dict, doc: dict, base_dir: str | Path | None
             ) -> tuple[dict | None, JobsOf]:
        from traffic import chakra, chakra_jobs     # protobuf: only for Chakra's traces
        path = self.value(src, self.name, base_dir)
        groups = _comm_groups(self.value(src, "comm_groups", base_dir))

        def jobs(fabric: Fabric) -> tuple[list[JobSpec], Notes]:
            notes = Notes("chakra", "us")
            try:
                specs = chakra_jobs.job_specs(chakra.read_traces(path), list(fabric.hosts),
                                              fabric.spec.host_link_mbps, groups, notes)
            except (chakra.ChakraError, StreamError) as e:
                raise ConfigError(f"jobs_from.chakra: {_one_line(e, 300)}") from None
            return specs, notes
        return None, jobs


def _comm_groups(gpath: Path | None) -> dict[str, list[int]] | None:
    """The comm_groups JSON file: pg_name -> ranks (None: no file given)."""
    from traffic import files
    if gpath is None:
        return None
    try:
        groups = json.loads(files.read_text(gpath))
    except files.InputFileError as e:
        raise ConfigError(f"jobs_from.comm_groups: {_one_line(e, 300)}") from None
    except (ValueError, RecursionError) as e:
        raise ConfigError(f"jobs_from.comm_groups: {_shown(gpath)}: cannot be read as "
                          f"JSON ({type(e).__name__})") from None
    if not isinstance(groups, dict) or not all(
            isinstance(v, list) and all(isinstance(r, int) and not isinstance(r, bool)
                                        for r in v) for v in groups.values()):
        raise ConfigError(f"jobs_from.comm_groups: {_shown(gpath)}: expected "
                          '{"<pg_name>": [ranks...]}')
    return {str(k): v for k, v in groups.items()}

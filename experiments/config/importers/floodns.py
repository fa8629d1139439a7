"""`jobs_from: {floodns: FOLDER, iterations: 11, failed_cores: 0}`: a floodns traffic folder
(traffic/floodns.py) and the fabric floodns ran it on (64 leaves x 32 spines x 32 hosts at
100 Gbit/s, the failed_cores highest spines failed), used when there is no `fabric`."""
from __future__ import annotations

from pathlib import Path

from traffic import floodns

from ..limits import MAX_ITERATIONS
from ..readers import ConfigError, _one_line
from .base import Format, JobsOf, Param


class Floodns(Format):
    name, shape = "floodns", "FOLDER"
    params = (Param("iterations", "int", 1, MAX_ITERATIONS, floodns.FLOODNS_ITERATIONS),
              Param("failed_cores", "int", 0, floodns.PAPER_TOPOLOGY.cores - 1, 0))

    def read(self, src: dict, doc: dict, base_dir: str | Path | None
             ) -> tuple[dict | None, JobsOf]:
        if "failed_cores" in src and "fabric" in doc:
            raise ConfigError("jobs_from.failed_cores: only without a fabric section; with "
                              "one, list the failed spines as fabric.failed_spines")
        failed = self.value(src, "failed_cores", base_dir)
        iterations = self.value(src, "iterations", base_dir)
        path = self.value(src, self.name, base_dir)
        try:
            jobs = floodns.job_specs(path, iterations)
            return floodns.PAPER_TOPOLOGY.fabric_section(failed), lambda fabric: (jobs, None)
        except floodns.FloodnsError as e:
            raise ConfigError(f"jobs_from.floodns: {_one_line(e, 300)}") from None

    def resolved(self, src: dict, base_dir: str | Path | None) -> dict:
        """Without failed_cores: the resolved fabric section lists the failed spines."""
        return {k: v for k, v in super().resolved(src, base_dir).items()
                if k != "failed_cores"}

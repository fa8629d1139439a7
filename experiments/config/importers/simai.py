"""`jobs_from: {simai: FILE, all_gpus: N, first_dim_npus: D, comm_scale: X}`: a SimAI / AICB /
ASTRA-sim 1.0 workload (traffic/simai.py, traffic/simai_passes.py); all_gpus when its header
has none (default the fabric's hosts); D: topology dimension 0 of the HYBRID_DATA_MODEL
kinds; X: SimAI's comm_scale."""
from __future__ import annotations

from pathlib import Path

from testbed.fabric import Fabric
from traffic import simai, simai_passes
from traffic.collectives import JobSpec
from traffic.streams import Notes, StreamError

from ..readers import ConfigError, _one_line
from .base import Format, JobsOf, Param


class Simai(Format):
    name, shape = "simai", "FILE"
    params = (Param("all_gpus", "int", 1, simai.MAX_GPUS),
              Param("first_dim_npus", "int", 1, simai.MAX_GPUS),
              Param("comm_scale", "number", 1e-9, 1000.0, 1.0,
                    why="SimAI's comm_scale: a multiplier of every comm's bytes"))

    def read(self, src: dict, doc: dict, base_dir: str | Path | None
             ) -> tuple[dict | None, JobsOf]:
        path = self.value(src, self.name, base_dir)
        gpus = self.value(src, "all_gpus", base_dir)
        dim0 = self.value(src, "first_dim_npus", base_dir)
        scale = self.value(src, "comm_scale", base_dir)

        def jobs(fabric: Fabric) -> tuple[list[JobSpec], Notes]:
            hosts = list(fabric.hosts)
            notes = Notes("simai", "cycles of 1 ns")
            n = gpus or len(hosts)
            # dimension 0 is a server's GPUs (SimAI's gpus_per_server), else a leaf's hosts
            per_leaf = (fabric.spec.gpus_per_server if fabric.spec.has_nvlink else
                        sum(1 for h in hosts if fabric.leaf_of(h) == fabric.leaf_of(hosts[0])))
            try:
                specs = simai_passes.job_specs(path, hosts, fabric.spec.host_link_mbps, gpus,
                                               dim0 or simai.default_dim0(n, per_leaf), notes,
                                               scale, dim0_given=dim0 is not None)
            except (simai.SimaiError, StreamError) as e:
                raise ConfigError(f"jobs_from.simai: {_one_line(e, 300)}") from None
            return specs, notes
        return None, jobs

"""What a workload format is: the key that names its file or folder, its other keys with
their bounds (`Param`), and how its files become JobSpecs (`read`)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testbed.fabric import Fabric
from traffic.collectives import JobSpec
from traffic.streams import Notes

from ..readers import _int, _num, _rel_path, _str

#: fabric -> (the JobSpecs, the importer's notes or None)
JobsOf = Callable[[Fabric], tuple[list[JobSpec], Notes | None]]
WHERE = "jobs_from"


@dataclass(frozen=True)
class Param:
    """One key of a format: an integer or a number in [minimum, maximum], or a path."""
    key: str
    kind: str                          # "int", "number" or "path"
    minimum: float | None = None
    maximum: float | None = None
    default: Any = None                # None: absent stays None
    why: str = ""                      # the bound's reason, in the error


class Format:
    """One workload format of `jobs_from`. Subclasses set `name` (its key, whose value is the
    file or folder), `shape` (FILE or FOLDER, for messages), `params` and `read`."""
    name: str = ""
    shape: str = "FILE"
    params: tuple[Param, ...] = ()

    @property
    def keys(self) -> set[str]:
        """Every key this format takes in `jobs_from`."""
        return {self.name} | {p.key for p in self.params}

    @property
    def path_keys(self) -> set[str]:
        return {self.name} | {p.key for p in self.params if p.kind == "path"}

    def value(self, src: dict, key: str, base_dir: str | Path | None) -> Any:
        """The value of `key` (its Param's kind and bounds; a path beside the config file
        first), or its default when absent."""
        if key == self.name:
            return _rel_path(_str(src, key, WHERE), base_dir)
        p = next(p for p in self.params if p.key == key)
        if key not in src:
            return p.default
        if p.kind == "int":
            return _int(src, key, WHERE, None, minimum=int(p.minimum), maximum=int(p.maximum),
                        why=p.why)
        if p.kind == "number":
            return _num(src, key, WHERE, minimum=p.minimum, maximum=p.maximum, why=p.why)
        return _rel_path(_str(src, key, WHERE), base_dir)

    def read(self, src: dict, doc: dict, base_dir: str | Path | None
             ) -> tuple[dict | None, JobsOf]:
        """(the fabric section the format implies or None, fabric -> its JobSpecs)."""
        raise NotImplementedError

    def resolved(self, src: dict, base_dir: str | Path | None) -> dict:
        """`jobs_from` as the resolved config writes it: absolute paths."""
        return {k: (str(_rel_path(v, base_dir).resolve()) if k in self.path_keys else v)
                for k, v in src.items()}

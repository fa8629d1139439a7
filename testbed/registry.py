"""What a run created on this machine, written down before it is created, so that teardown and
`python -m experiments clean` remove exactly that and nothing else.

One JSON file per live run in STATE_DIR: {"run_id", "owner": {pid, cmdline}, "bridges",
"interfaces", "pids": [{pid, cmdline}]}. Every OVS bridge a run makes also carries
external_ids:mlfabric_run=<run_id> once it exists. Processes are ended by the PIDs recorded, and
only when their command line still matches; `clean` leaves alone any run whose owner (the
process that made it) is still alive.
"""
from __future__ import annotations

import json
import os
import signal
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

from .ovs import run

STATE_DIR = Path(os.environ.get("MLFABRIC_STATE_DIR", "/run/mlfabric"))
EXTERNAL_ID = "mlfabric_run"


@dataclass
class RunRecord:
    run_id: str
    owner: dict = field(default_factory=dict)                  # {"pid", "cmdline"} of the run
    bridges: list[str] = field(default_factory=list)
    interfaces: list[str] = field(default_factory=list)      # root-namespace interface names
    pids: list[dict] = field(default_factory=list)            # {"pid": int, "cmdline": [..]}

    @property
    def path(self) -> Path:
        return STATE_DIR / f"{self.run_id}.json"

    def save(self) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1))
        tmp.replace(self.path)

    def add_pid(self, pid: int, cmdline: list[str] | None = None) -> None:
        """Record a process we started; `cmdline` is the command it runs (the tail of its
        command line: a Mininet popen execs it after `mnexec -da PID`), else read now."""
        if cmdline is None:
            try:
                cmdline = psutil.Process(pid).cmdline()
            except psutil.Error:
                cmdline = []
        self.pids.append({"pid": pid, "cmdline": list(cmdline)})
        self.save()

    @classmethod
    def load(cls, path: Path) -> "RunRecord":
        return cls(**json.loads(path.read_text()))

    def claim(self) -> None:
        """Mark the calling process as this run's owner."""
        self.owner = {"pid": os.getpid(), "cmdline": psutil.Process().cmdline()}

    def owner_alive(self) -> bool:
        return bool(self.owner) and _is_process(self.owner["pid"], self.owner["cmdline"])


def _is_process(pid: int, cmdline: list[str]) -> bool:
    """Is `pid` still the process whose command line ends with `cmdline`?"""
    if not cmdline:
        return False
    try:
        current = psutil.Process(pid).cmdline()
    except psutil.Error:
        return False
    return current[-len(cmdline):] == cmdline


def end_process(pid: int, cmdline: list[str], grace_s: float = 2.0) -> bool:
    """SIGTERM then SIGKILL `pid`, only if it is still the process we started: its command line
    ends with the recorded one (a PID reused by another program is left alone)."""
    if not _is_process(pid, cmdline):
        return False   # gone, reused by another program, or never identified: leave it
    try:
        proc = psutil.Process(pid)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except psutil.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=grace_s)
        return True
    except psutil.Error:
        return False


def bridge_tags() -> dict[str, str | None] | None:
    """Every OVS bridge -> its mlfabric run tag (None: untagged); None if OVS did not answer."""
    out = run(["ovs-vsctl", "--timeout=5", "--format=json", "--columns=name,external_ids",
               "list", "Bridge"], check=False)
    if out.returncode != 0:
        return None
    if not out.stdout.strip():
        return {}
    tags = {}
    for name, ext in json.loads(out.stdout)["data"]:
        ids = dict(ext[1]) if isinstance(ext, list) and ext[0] == "map" else {}
        tags[name] = ids.get(EXTERNAL_ID)
    return tags


def our_bridges(run_id: str | None = None) -> list[str]:
    """OVS bridges tagged by mlfabric (by any run, or by `run_id`)."""
    tags = bridge_tags() or {}
    return [b for b, t in tags.items() if t is not None and (run_id is None or t == run_id)]


def remove_record(record: RunRecord) -> dict:
    """Remove what `record` lists: its processes, its bridges (tagged by this run, or untagged:
    a run only names bridges that did not exist when it started), its interfaces. The record
    is deleted only when nothing of it is left; returns counts and what remains."""
    removed = {"processes": 0, "bridges": 0, "interfaces": 0}
    for entry in reversed(record.pids):
        removed["processes"] += end_process(entry["pid"], entry.get("cmdline", []))
    tags = bridge_tags()
    if tags is not None:
        for br in record.bridges:
            if br in tags and tags[br] in (None, record.run_id):
                run(["ovs-vsctl", "--timeout=10", "--if-exists", "del-br", br], check=False)
                removed["bridges"] += 1
    for intf in record.interfaces:
        if Path(f"/sys/class/net/{intf}").exists():
            run(["ip", "link", "del", intf], check=False)
            removed["interfaces"] += 1
    tags = bridge_tags()
    left = ([] if tags is None else [b for b in record.bridges
                                     if b in tags and tags[b] in (None, record.run_id)])
    left += [i for i in record.interfaces if Path(f"/sys/class/net/{i}").exists()]
    if tags is None:
        left.append("(Open vSwitch did not answer)")
    if not left:
        record.path.unlink(missing_ok=True)
    removed["left"] = left
    return removed


def kept_records() -> list[RunRecord]:
    """Every run record on this machine (live runs, and crashed ones not yet cleaned)."""
    if not STATE_DIR.exists():
        return []
    return [RunRecord.load(p) for p in sorted(STATE_DIR.glob("*.json"))]


def _tag_is_live(tag: str) -> bool:
    path = STATE_DIR / f"{tag}.json"
    return path.exists() and RunRecord.load(path).owner_alive()


def clean_all() -> dict:
    """Remove what crashed runs of this project left: each recorded run whose owner is gone,
    then any tagged bridge whose run is neither recorded nor alive."""
    total = {"runs": 0, "processes": 0, "bridges": 0, "interfaces": 0, "skipped_live_runs": 0,
             "left": []}
    live: set[str] = set()
    recorded: set[str] = set()
    if STATE_DIR.exists():
        for path in sorted(STATE_DIR.glob("*.json")):
            rec = RunRecord.load(path)
            recorded.add(rec.run_id)
            if rec.owner_alive():
                live.add(rec.run_id)
                total["skipped_live_runs"] += 1
                continue
            result = remove_record(rec)
            for k in ("processes", "bridges", "interfaces"):
                total[k] += result[k]
            total["left"] += result["left"]
            total["runs"] += 1
    for br, tag in (bridge_tags() or {}).items():
        # re-checked at the moment of deleting: a run may have started since the scan
        if tag is not None and tag not in live and tag not in recorded and not _tag_is_live(tag):
            run(["ovs-vsctl", "--timeout=10", "--if-exists", "del-br", br], check=False)
            total["bridges"] += 1
    return total

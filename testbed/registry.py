"""What a run created on this machine, written down before it is created, so that teardown and
`python -m experiments clean` remove exactly that and nothing else.

One JSON file per live run in STATE_DIR: {"run_id", "bridges", "interfaces", "pids": [{pid,
cmdline}]}. Every OVS bridge a run makes also carries external_ids:mlfabric_run=<run_id>.
Processes are ended by the PIDs recorded, and only when their command line still matches.
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


def end_process(pid: int, cmdline: list[str], grace_s: float = 2.0) -> bool:
    """SIGTERM then SIGKILL `pid`, only if it is still the process we started: its command line
    ends with the recorded one (a PID reused by another program is left alone)."""
    try:
        proc = psutil.Process(pid)
        current = proc.cmdline()
        if cmdline and current[-len(cmdline):] != cmdline:
            return False
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except psutil.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=grace_s)
        return True
    except psutil.Error:
        return False


def our_bridges(run_id: str | None = None) -> list[str]:
    """OVS bridges tagged by mlfabric (by any run, or by `run_id`)."""
    out = run(["ovs-vsctl", "--timeout=5", "--format=json", "--columns=name,external_ids",
               "list", "Bridge"], check=False)
    if out.returncode != 0 or not out.stdout.strip():
        return []
    names = []
    for name, ext in json.loads(out.stdout)["data"]:
        ids = dict(ext[1]) if isinstance(ext, list) and ext[0] == "map" else {}
        if EXTERNAL_ID in ids and (run_id is None or ids[EXTERNAL_ID] == run_id):
            names.append(name)
    return names


def remove_record(record: RunRecord) -> dict:
    """Remove what `record` lists; returns counts of what was actually removed."""
    removed = {"processes": 0, "bridges": 0, "interfaces": 0}
    for entry in reversed(record.pids):
        removed["processes"] += end_process(entry["pid"], entry.get("cmdline", []))
    tagged = set(our_bridges(record.run_id))
    for br in record.bridges:
        if br in tagged:
            run(["ovs-vsctl", "--timeout=10", "--if-exists", "del-br", br], check=False)
            removed["bridges"] += 1
    for intf in record.interfaces:
        if Path(f"/sys/class/net/{intf}").exists():
            run(["ip", "link", "del", intf], check=False)
            removed["interfaces"] += 1
    record.path.unlink(missing_ok=True)
    return removed


def clean_all() -> dict:
    """Remove what crashed runs of this project left: recorded runs, then any tagged bridge."""
    total = {"runs": 0, "processes": 0, "bridges": 0, "interfaces": 0}
    if STATE_DIR.exists():
        for path in sorted(STATE_DIR.glob("*.json")):
            rec = RunRecord.load(path)
            for k, v in remove_record(rec).items():
                total[k] += v
            total["runs"] += 1
    for br in our_bridges():
        run(["ovs-vsctl", "--timeout=10", "--if-exists", "del-br", br], check=False)
        total["bridges"] += 1
    return total

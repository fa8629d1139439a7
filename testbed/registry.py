"""What a run created on this machine, written down before it is created, so that teardown and
`mlfabric clean` remove exactly that and nothing else.

One JSON file per live run in STATE_DIR: {"run_id", "owner": {pid, started, cmdline},
"bridges", "interfaces", "nft_tables", "pids": [{pid, started, cmdline, stop_signal}],
"netns", "ovs_rundirs"} (the last two: the network namespaces and run directories of the
run's own ovs-vswitchd processes, testbed/instances.py; removed after their processes). Every
OVS bridge a run makes also carries external_ids:mlfabric_run=<run_id> once it exists. A
process is identified by its PID and its start time (`started`, s since the epoch, fixed at
fork: a PID reused by another program has another one, and a child read before its exec is
still the same process); processes are ended by the PIDs recorded, all at once, and only while
that identity holds. `clean` leaves alone any run whose owner (the process that made it) is
still alive. `reserve` checks a new run's names against every record and saves its record under
one exclusive lock, so that two runs started at the same instant cannot both pass the check.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import psutil

from . import taps
from .ovs import TestbedError, run

STATE_DIR = Path(os.environ.get("MLFABRIC_STATE_DIR", "/run/mlfabric"))
EXTERNAL_ID = "mlfabric_run"
#: Two start times closer than this are the same process (the kernel counts in 10 ms ticks).
SAME_START_S = 0.05


class RunClash(TestbedError):
    """Another run (live, or crashed and not yet cleaned) holds names this run needs."""


def identity(pid: int) -> dict | None:
    """{"pid", "started"} of a live process, or None if there is no such process."""
    try:
        return {"pid": pid, "started": psutil.Process(pid).create_time()}
    except psutil.Error:
        return None


@dataclass
class RunRecord:
    run_id: str
    owner: dict = field(default_factory=dict)         # {"pid", "started", "cmdline"} of the run
    bridges: list[str] = field(default_factory=list)
    interfaces: list[str] = field(default_factory=list)      # root-namespace interface names
    nft_tables: list[str] = field(default_factory=list)      # netdev-family tables (taps.py)
    pids: list[dict] = field(default_factory=list)    # {"pid", "started", "cmdline", "stop_signal"}
    netns: list[str] = field(default_factory=list)     # namespaces of the run's OVS processes
    ovs_rundirs: list[str] = field(default_factory=list)   # their run directories (paths)

    @property
    def path(self) -> Path:
        return STATE_DIR / f"{self.run_id}.json"

    def save(self) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1))
        tmp.replace(self.path)

    def add_pid(self, pid: int, cmdline: list[str] | None = None,
                stop_signal: str = "SIGTERM", group: bool = False) -> None:
        """Record a process we started, by PID and start time, right after starting it;
        `cmdline` (what it runs) is kept for reading only. `stop_signal` ends it (SIGHUP for
        Mininet's node shells: an interactive bash ignores SIGTERM); with `group` (a program
        started in a session of its own) the signal goes to its whole process group, so the
        children it forked end with it."""
        ident = identity(pid) or {"pid": pid, "started": None}
        self.pids.append({**ident, "cmdline": list(cmdline or []), "stop_signal": stop_signal,
                          **({"group": True} if group else {})})
        self.save()

    @classmethod
    def load(cls, path: Path) -> "RunRecord":
        """A record as saved; keys this version does not know (a newer mlfabric's) are left
        out, so that its names still count against clashes."""
        doc = json.loads(path.read_text())
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in doc.items() if k in known})

    def claim(self) -> None:
        """Mark the calling process as this run's owner."""
        self.owner = {**identity(os.getpid()), "cmdline": psutil.Process().cmdline()}

    def owner_alive(self) -> bool:
        return bool(self.owner) and live_process(self.owner) is not None

    def describe_owner(self) -> str:
        o = self.owner or {}
        when = (time.strftime("%H:%M:%S", time.localtime(o["started"]))
                if o.get("started") else "?")
        return f"pid {o.get('pid', '?')}, started {when}"


def live_process(entry: dict) -> psutil.Process | None:
    """The process `entry` ({"pid", "started"} or, in older records, {"pid", "cmdline"})
    names, if it still runs; None if it is gone or its PID now belongs to another program."""
    try:
        proc = psutil.Process(entry["pid"])
        if entry.get("started") is not None:
            same = abs(proc.create_time() - entry["started"]) < SAME_START_S
        else:   # records written before start times were kept: the tail of the command
            want = entry.get("cmdline") or []
            same = bool(want) and proc.cmdline()[-len(want):] == want
        return proc if same and proc.status() != psutil.STATUS_ZOMBIE else None
    except psutil.Error:
        return None


def end_processes(entries: list[dict], grace_s: float = 2.0) -> int:
    """Signal every recorded process that still runs (its `stop_signal`, SIGTERM by default)
    at once, wait at most `grace_s` for all of them together, then SIGKILL what is left.
    Returns how many were ended; a PID reused by another program is left alone."""
    procs, groups = [], []
    for e in entries:
        proc = live_process(e)
        if proc is None:
            continue
        sig = getattr(signal, e.get("stop_signal", "SIGTERM"))
        try:
            if e.get("group") and os.getpgid(proc.pid) == proc.pid:
                groups.append(proc.pid)        # it leads its group: its children too
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)
            procs.append(proc)
        except (psutil.Error, ProcessLookupError, PermissionError):
            pass
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    for pgid in groups:                        # what the group leader left behind
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    psutil.wait_procs(alive, timeout=grace_s)
    return len(procs)


@contextmanager
def registry_lock():
    """Exclusive across processes (flock on STATE_DIR/.lock; released if the holder dies)."""
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    with open(STATE_DIR / ".lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def reserve(record: RunRecord, names: set[str]) -> None:
    """Save `record`, owned by the calling process, unless another record holds one of
    `names` (bridge or interface prefixes) or such an OVS bridge exists: then raise RunClash
    naming the run. Check and save happen under one lock."""
    with registry_lock():
        for other in kept_records():
            theirs = set(other.bridges) | {i.rsplit("-", 1)[0] for i in other.interfaces}
            clash = sorted(names & theirs)
            if not clash:
                continue
            if other.owner_alive():
                raise RunClash(f"run {other.run_id} ({other.describe_owner()}) is using "
                               f"{', '.join(clash[:3])}{' ...' if len(clash) > 3 else ''} "
                               "now; wait until it ends")
            raise RunClash(f"run {other.run_id} crashed and left {clash[0]}; "
                           "`mlfabric clean` removes it")
        existing = sorted(b for b in (bridge_tags() or {}) if b in names)
        if existing:
            raise RunClash(f"OVS bridges {existing[:3]} already exist and no mlfabric run "
                           "recorded them; remove them (ovs-vsctl del-br) or rename")
        record.claim()
        record.save()


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
    """Remove what `record` lists: its processes, its nftables tables, its bridges (tagged by
    this run, or untagged: a run only names bridges that did not exist when it started), its
    interfaces. The record is deleted only when nothing of it is left; returns counts and
    what remains."""
    removed = {"processes": end_processes(record.pids), "bridges": 0, "interfaces": 0}
    netns_left = [ns for ns in record.netns if not remove_netns(ns)]
    for d in record.ovs_rundirs:      # after their processes: nothing writes there any more
        shutil.rmtree(d, ignore_errors=True)
    tables_left = [t for t in record.nft_tables if not taps.remove(t)]
    tags = bridge_tags()
    if tags is not None:
        mine = [br for br in record.bridges if br in tags and tags[br] in (None, record.run_id)]
        if mine:   # one ovs-vsctl transaction for all of them
            cmd = ["ovs-vsctl", "--timeout=20"]
            for br in mine:
                cmd += ["--", "--if-exists", "del-br", br]
            run(cmd, check=False)
            removed["bridges"] = len(mine)
    present = [i for i in record.interfaces if Path(f"/sys/class/net/{i}").exists()]
    if present:   # one `ip` for all of them; -force goes on past a peer already gone
        run(["ip", "-force", "-batch", "-"], check=False,
            input_text="".join(f"link del {i}\n" for i in present))
        removed["interfaces"] = len(present)
    tags = bridge_tags()
    left = ([] if tags is None else [b for b in record.bridges
                                     if b in tags and tags[b] in (None, record.run_id)])
    left += [i for i in record.interfaces if Path(f"/sys/class/net/{i}").exists()]
    left += [f"nft table {t}" for t in tables_left]
    left += [f"netns {ns}" for ns in netns_left]
    left += [d for d in record.ovs_rundirs if Path(d).exists()]
    if tags is None:
        left.append("(Open vSwitch did not answer)")
    if not left:
        record.path.unlink(missing_ok=True)
    removed["left"] = left
    return removed


NETNS_DIR = Path("/run/netns")


def remove_netns(name: str) -> bool:
    """Delete network namespace `name` (a run's OVS process's; its processes already ended):
    first its interfaces, in one batch (a veth's far end in the root namespace goes with it
    at once, where the namespace's own teardown is asynchronous), then the namespace.
    True when it is gone."""
    if not (NETNS_DIR / name).exists():
        return True
    links = run(["ip", "-n", name, "-o", "link", "show"], check=False).stdout
    devs = [line.split(":")[1].strip().split("@")[0] for line in links.splitlines()
            if line.count(":") >= 2]
    devs = [d for d in devs if d not in ("lo", "ovs-netdev")]
    if devs:
        run(["ip", "-n", name, "-force", "-batch", "-"], check=False,
            input_text="".join(f"link del {d}\n" for d in devs))
    run(["ip", "netns", "del", name], check=False)
    return not (NETNS_DIR / name).exists()


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
    with registry_lock():   # a run that is saving its record now finishes first
        records = kept_records()
    for rec in records:
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

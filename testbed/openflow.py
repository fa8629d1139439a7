"""OpenFlow rule records and their ovs-ofctl text: what routing emits and the installer writes.

Pure data, below both (routing/rules.py builds the records from a fabric and a plan;
testbed/installer.py writes them, one atomic bundle per switch). A FlowRule is one
`flow add`, a GroupRule one select group hashing ECMP_HASH_FIELDS over its buckets.
"""
from __future__ import annotations

from dataclasses import dataclass

ECMP_HASH_FIELDS = "ip_src,ip_dst,tcp_src,tcp_dst"


@dataclass(frozen=True)
class FlowRule:
    switch: str
    priority: int
    match: str            # ovs-ofctl match syntax, e.g. "ip,nw_dst=10.0.1.1"
    actions: str          # e.g. "output:3"
    cookie: int = 0

    def ofctl(self) -> str:
        return (f"flow add cookie={self.cookie:#x},priority={self.priority},{self.match},"
                f"actions={self.actions}")


@dataclass(frozen=True)
class GroupRule:
    switch: str
    group_id: int
    ports: tuple[int, ...]  # select group: one bucket per output port, watching that port
    hash_basis: int = 0     # selection_method_param: 0 on leaves, the switch's index on aggs

    def ofctl(self, op: str = "add") -> str:
        buckets = ",".join(f"bucket=watch_port:{p},output:{p}" for p in self.ports)
        basis = f",selection_method_param={self.hash_basis}" if self.hash_basis else ""
        return (f"group {op} group_id={self.group_id},type=select,selection_method=hash"
                f"{basis},fields({ECMP_HASH_FIELDS}),{buckets}")


Rule = FlowRule | GroupRule


def rule_key(r: Rule) -> tuple:
    if isinstance(r, GroupRule):
        return ("group", r.switch, r.group_id)
    return ("flow", r.switch, r.priority, r.match)


def diff_lines(old: list[Rule], new: list[Rule]) -> dict[str, list[str]]:
    """Per switch, the bundle lines that turn `old` into `new` and touch nothing else:
    new and changed groups first, then flow deletions and additions, then group deletions.
    Unchanged rules keep their counters."""
    before = {rule_key(r): r for r in old}
    after = {rule_key(r): r for r in new}
    out: dict[str, list[list[str]]] = {}

    def put(switch: str, phase: int, line: str) -> None:
        out.setdefault(switch, [[], [], []])[phase].append(line)

    for k, r in after.items():
        if isinstance(r, GroupRule) and before.get(k) != r:
            put(r.switch, 0, r.ofctl("add" if k not in before else "modify"))
    for k, r in before.items():
        if isinstance(r, FlowRule) and k not in after:
            put(r.switch, 1, f"flow delete_strict priority={r.priority},{r.match}")
    for k, r in after.items():
        if isinstance(r, FlowRule) and before.get(k) != r:
            put(r.switch, 1, r.ofctl())
    for k, r in before.items():
        if isinstance(r, GroupRule) and k not in after:
            put(r.switch, 2, f"group delete group_id={r.group_id}")
    return {sw: a + b + c for sw, (a, b, c) in out.items()}


def by_switch(rules: list[Rule]) -> dict[str, list[Rule]]:
    out: dict[str, list[Rule]] = {}
    for r in rules:
        out.setdefault(r.switch, []).append(r)
    return out


def bundle_text(rules: list[Rule]) -> str:
    """One switch's `ovs-ofctl bundle` file: wipe flows and groups, then groups, then flows."""
    lines = ["flow delete", "group delete group_id=all"]
    lines += [r.ofctl() for r in rules if isinstance(r, GroupRule)]
    lines += [r.ofctl() for r in rules if isinstance(r, FlowRule)]
    return "\n".join(lines) + "\n"

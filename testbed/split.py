"""One fabric over several machines: which machine emulates what, and the VXLAN tunnels between
them (pure: no mininet, no root; the design is in docs/multi-machine.md).

The unit of placement is a pod: in a clos3 / fat-tree a pod (its leaves, aggs and hosts), in a
leaf-spine a group of consecutive leaves with their hosts. Pods never straddle machines, so
host-leaf and leaf-agg links stay inside one machine; only the links to the top tier (leaf to
spine, agg to core) can cross, and each crossing link becomes one VXLAN tunnel::

      machine 0                          machine 1
      core1  core2 ----------------+     core3  core4        top tier spread over machines
        |  \\   (local links)       |       |  /              (switch counts balanced)
      agg1 agg2    agg3 agg4       +-- vx1003 (VNI 1003, one per crossing link)
      leaf1 leaf2  leaf3 leaf4         agg5 agg6 ...         pods placed whole, in order,
      pod 1        pod 2               pod 3                 as many per machine as can be

A tunnel's two ends are Linux `vxlan` devices (point to point: `remote` set, no flooding)
attached to the two switches as OpenFlow ports with the numbers the fabric model gives
(`ofport_request`), so routing's rules need no change: each machine installs the rules of
its own switches. The tunnel device is shaped with HTB like any other port, at the link's rate;
its MTU is the underlay's minus VXLAN's 50 bytes (outer Ethernet 14, IPv4 20, UDP 8, VXLAN 8).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .fabric import Fabric

VXLAN_OVERHEAD_BYTES = 50          # outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN header 8
VXLAN_PORT = 4789                  # IANA's VXLAN UDP port
VNI_BASE = 1000                    # the first tunnel's VNI; one VNI per tunnel, in link order
MAX_VNI = (1 << 24) - 1            # VNIs are 24 bits
MAX_MACHINES = 256
MIN_UNDERLAY_MTU_BYTES = 1280 + VXLAN_OVERHEAD_BYTES   # inner frames no smaller than IPv6's
MAX_UNDERLAY_MTU_BYTES = 65_535


class SplitError(ValueError):
    """A split that cannot be made (one-line message naming the field and the fix)."""


@dataclass(frozen=True)
class Tunnel:
    """One crossing link: `lower` (leaf or agg) on machine `lower_machine`, `upper` (spine or
    core) on `upper_machine`; ports are the OpenFlow ports the fabric model gives each end."""

    vni: int
    lower: str
    upper: str
    lower_machine: int
    upper_machine: int
    lower_port: int
    upper_port: int
    rate_mbps: float
    mtu_bytes: int                 # inner MTU: the underlay's minus VXLAN_OVERHEAD_BYTES
    live: bool = True              # False for a link the fabric has failed (built, then down)

    @property
    def ifname(self) -> str:
        """The vxlan device's name on both machines (at most 10 characters, IFNAMSIZ is 16)."""
        return f"vx{self.vni}"

    def end(self, machine: int) -> tuple[str, int, int]:
        """(switch, OpenFlow port, remote machine) of this tunnel's end on `machine`."""
        if machine == self.lower_machine:
            return self.lower, self.lower_port, self.upper_machine
        if machine == self.upper_machine:
            return self.upper, self.upper_port, self.lower_machine
        raise SplitError(f"tunnel {self.vni} has no end on machine {machine}")


@dataclass(frozen=True)
class Machine:
    """What one machine emulates: its pods (1-based), switches, hosts and tunnel VNIs."""

    index: int
    underlay_ip: str
    pods: tuple[int, ...]
    switches: tuple[str, ...]
    hosts: tuple[str, ...]
    tunnels: tuple[int, ...] = ()
    underlay_out_mbps: float = 0.0  # most VXLAN traffic leaving it (links at full rate, outer
    #                                 headers included), what its underlay NIC must carry


@dataclass(frozen=True)
class Split:
    """A fabric placed on machines; `owner` maps every host and switch to its machine."""

    machines: tuple[Machine, ...]
    tunnels: tuple[Tunnel, ...]
    underlay_mtu_bytes: int
    owner: dict[str, int] = field(compare=False, repr=False)

    @property
    def inner_mtu_bytes(self) -> int:
        return self.underlay_mtu_bytes - VXLAN_OVERHEAD_BYTES

    def machine_of(self, node: str) -> int:
        return self.owner[node]

    def rules_for(self, machine: int, rules_by_switch: dict[str, object]) -> dict[str, object]:
        """The part of per-switch rules (routing/rules.py's output) that `machine` installs."""
        return {sw: r for sw, r in rules_by_switch.items() if self.owner.get(sw) == machine}

    def as_dict(self) -> dict:
        return {
            "underlay_mtu_bytes": self.underlay_mtu_bytes,
            "inner_mtu_bytes": self.inner_mtu_bytes,
            "machines": [{"index": m.index, "underlay_ip": m.underlay_ip, "pods": list(m.pods),
                          "switches": list(m.switches), "hosts": len(m.hosts),
                          "tunnels": len(m.tunnels), "underlay_out_mbps": m.underlay_out_mbps}
                         for m in self.machines],
            "tunnels": [{"vni": t.vni, "ifname": t.ifname, "link": [t.lower, t.upper],
                         "machines": [t.lower_machine, t.upper_machine],
                         "endpoints": [self.machines[t.lower_machine].underlay_ip,
                                       self.machines[t.upper_machine].underlay_ip],
                         "ports": [t.lower_port, t.upper_port], "rate_mbps": t.rate_mbps,
                         "mtu_bytes": t.mtu_bytes, "live": t.live} for t in self.tunnels],
        }


def pods_of(fabric: Fabric) -> list[list[str]]:
    """The placement units, each a list of leaves: the pods, or without pods every leaf alone
    (split_fabric cuts them into runs of consecutive leaves)."""
    return fabric.leaf_groups


def _blocks(n: int, k: int) -> list[range]:
    """n items in k consecutive blocks whose sizes differ by at most one (larger first)."""
    q, r = divmod(n, k)
    out, start = [], 0
    for i in range(k):
        size = q + (1 if i < r else 0)
        out.append(range(start, start + size))
        start += size
    return out


def _check(fabric: Fabric, machines: int, underlay_ips: list[str] | None,
           underlay_mtu_bytes: int, vni_base: int) -> int:
    units = len(pods_of(fabric))
    what = "pods" if fabric.has_pods else "leaves"
    if not 1 <= machines <= min(MAX_MACHINES, units):
        raise SplitError(f"machines: {machines}; choose 1..{min(MAX_MACHINES, units)} (pods "
                         f"are not split, and this fabric has {units} {what})")
    if underlay_ips is not None and (len(underlay_ips) != machines
                                     or len(set(underlay_ips)) != machines):
        raise SplitError(f"underlay_ips: give {machines} distinct addresses, one per machine")
    if not MIN_UNDERLAY_MTU_BYTES <= underlay_mtu_bytes <= MAX_UNDERLAY_MTU_BYTES:
        raise SplitError(f"underlay_mtu_bytes: {underlay_mtu_bytes}; choose "
                         f"{MIN_UNDERLAY_MTU_BYTES}..{MAX_UNDERLAY_MTU_BYTES}")
    if not 1 <= vni_base <= MAX_VNI:
        raise SplitError(f"vni_base: {vni_base}; choose 1..{MAX_VNI}")
    return units


def split_fabric(fabric: Fabric, machines: int, underlay_ips: list[str] | None = None,
                 underlay_mtu_bytes: int = 9000, vni_base: int = VNI_BASE) -> Split:
    """Place `fabric` on `machines` machines: pods whole and in order, hosts balanced to within
    one pod; top-tier switches (spines, cores) then one at a time on the machine with the
    fewest switches (ties: the one with more pods, so fewer links cross; then the lowest
    index). One VXLAN tunnel per link whose ends land on different machines, VNIs from
    `vni_base` in the fabric's link order. `underlay_ips` default to 192.168.100.1.. ."""
    units = _check(fabric, machines, underlay_ips, underlay_mtu_bytes, vni_base)
    ips = underlay_ips or [f"192.168.100.{i + 1}" for i in range(machines)]
    pods = pods_of(fabric)
    owner: dict[str, int] = {}
    machine_pods: list[list[int]] = []
    for m, block in enumerate(_blocks(units, machines)):
        machine_pods.append([p + 1 for p in block])
        for p in block:
            for leaf in pods[p]:
                owner[leaf] = m
                for h in fabric.graph.predecessors(leaf):
                    if fabric.role(h) == "host":
                        owner[h] = m
                for up in fabric.uplinks(leaf):
                    if fabric.role(up) == "agg":
                        owner[up] = m
    count = [sum(1 for n, o in owner.items() if o == m and fabric.is_switch(n))
             for m in range(machines)]
    for sw in fabric.top_switches:
        m = min(range(machines), key=lambda i: (count[i], -len(machine_pods[i]), i))
        owner[sw] = m
        count[m] += 1
    tunnels = _tunnels(fabric, owner, underlay_mtu_bytes - VXLAN_OVERHEAD_BYTES, vni_base)
    return Split(tuple(_machine(fabric, m, ips[m], machine_pods[m], owner, tunnels)
                       for m in range(machines)),
                 tuple(tunnels), underlay_mtu_bytes, owner)


def _tunnels(fabric: Fabric, owner: dict[str, int], inner_mtu: int,
             vni_base: int) -> list[Tunnel]:
    out: list[Tunnel] = []
    for u, v in fabric.links:
        if not (fabric.is_switch(u) and fabric.is_switch(v)) or (u, v) != fabric.link_key(u, v):
            continue
        if owner[u] == owner[v]:
            continue
        vni = vni_base + len(out)
        if not 1 <= vni <= MAX_VNI:
            raise SplitError(f"vni_base: {vni_base} puts VNI {vni} outside 1..{MAX_VNI}")
        out.append(Tunnel(vni, u, v, owner[u], owner[v], fabric.port(u, v), fabric.port(v, u),
                          fabric.capacity_mbps(u, v), inner_mtu, fabric.is_live(u, v)))
    return out


def _machine(fabric: Fabric, m: int, ip: str, pods: list[int], owner: dict[str, int],
             tunnels: list[Tunnel]) -> Machine:
    mine = [t for t in tunnels if m in (t.lower_machine, t.upper_machine)]
    # outer bytes per inner frame: every frame of a full-MTU flow pays the 50-byte header
    out = sum(t.rate_mbps * (t.mtu_bytes + 14 + VXLAN_OVERHEAD_BYTES) / (t.mtu_bytes + 14)
              for t in mine)
    return Machine(m, ip, tuple(pods),
                   tuple(s for s in fabric.switches if owner[s] == m),
                   tuple(h for h in fabric.hosts if owner[h] == m),
                   tuple(t.vni for t in mine), out)


def check_mtu(split: Split, mtu_bytes: int) -> None:
    """Raise SplitError when the fabric's MTU does not fit in the tunnels' inner MTU."""
    if split.tunnels and mtu_bytes > split.inner_mtu_bytes:
        raise SplitError(f"emulation.mtu_bytes: {mtu_bytes} does not fit a VXLAN tunnel over a "
                         f"{split.underlay_mtu_bytes}-byte underlay; use at most "
                         f"{split.inner_mtu_bytes} (or raise the underlay's MTU)")


def tunnel_commands(split: Split, machine: int, underlay_dev: str, netns: str | None = None,
                    vsctl: tuple[str, ...] = ("ovs-vsctl",)) -> list[list[str]]:
    """Argument lists that create `machine`'s tunnel ends (after its bridges exist): a
    point-to-point vxlan device on `underlay_dev`, its MTU, and its OpenFlow port number
    (HTB shaping of the device is testbed/shaping.py's tc_batch, as for any port). With
    `netns` (the namespace of the machine's own ovs-vswitchd, testbed/instances.py) the device
    is made beside the underlay and then moved there: its UDP socket stays in the underlay's
    namespace. `vsctl`: the ovs-vsctl that reaches the switches' database."""
    me = split.machines[machine]
    ip = ["ip", "-n", netns] if netns else ["ip"]
    cmds: list[list[str]] = []
    for t in split.tunnels:
        if machine not in (t.lower_machine, t.upper_machine):
            continue
        switch, port, remote = t.end(machine)
        dev = t.ifname
        cmds.append(["ip", "link", "add", dev, "type", "vxlan", "id", str(t.vni), "local",
                     me.underlay_ip, "remote", split.machines[remote].underlay_ip, "dstport",
                     str(VXLAN_PORT), "dev", underlay_dev])
        if netns:
            cmds.append(["ip", "link", "set", "dev", dev, "netns", netns])
        cmds += [
            [*ip, "link", "set", "dev", dev, "mtu", str(t.mtu_bytes), "up"],
            [*vsctl, "add-port", switch, dev, "--", "set", "Interface", dev,
             f"ofport_request={port}"],
        ]
        if not t.live:
            cmds.append([*ip, "link", "set", "dev", dev, "down"])
    return cmds


@dataclass(frozen=True)
class Carried:
    """What N machines carry faithfully, by the model of docs/multi-machine.md (Mbit/s of host
    traffic): each machine's forwarding ceiling times N, bounded by each machine's underlay."""

    machines: int
    forwarding_mbps: float      # N x the one-machine ceiling
    underlay_mbps: float        # what the underlays let cross, with VXLAN's headers
    carried_mbps: float         # the smaller
    bound: str                  # "forwarding" or "underlay"


def carried(machines: int, ceiling_mbps: float, underlay_mbps: float, mtu_bytes: int,
            crossing_fraction: float = 1.0) -> Carried:
    """The model: host traffic spread evenly over `machines`, each forwarding at most
    `ceiling_mbps` of it (one machine's measured faithful aggregate), each sending
    `crossing_fraction` of its hosts' traffic to other machines over an underlay NIC of
    `underlay_mbps` each way, every frame of `mtu_bytes` paying VXLAN's 50 bytes. One machine
    has no underlay traffic."""
    if not 1 <= machines <= MAX_MACHINES or ceiling_mbps <= 0 or underlay_mbps <= 0:
        raise SplitError("carried: machines 1..256, ceiling_mbps and underlay_mbps > 0")
    if not 0.0 <= crossing_fraction <= 1.0:
        raise SplitError("carried: crossing_fraction within 0..1")
    fwd = machines * ceiling_mbps
    if machines == 1 or crossing_fraction == 0.0:
        return Carried(machines, fwd, float("inf"), fwd, "forwarding")
    overhead = (mtu_bytes + 14 + VXLAN_OVERHEAD_BYTES) / (mtu_bytes + 14)
    under = machines * underlay_mbps / (crossing_fraction * overhead)
    return Carried(machines, fwd, under, min(fwd, under),
                   "forwarding" if fwd <= under else "underlay")

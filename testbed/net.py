"""Turn the fabric model into a running Mininet network of Open vSwitch switches (needs root).

Step 2 of a run (config -> **fabric** -> routes -> rules -> traffic -> measure -> teardown)::

        spine1 ... spineS        OVSSwitch: failMode=secure, no controller, OpenFlow 1.3 (+1.4
          |  \\  /  |             for atomic bundles), explicit DPIDs, userspace datapath where
        leaf1 ... leafL          the kernel has no openvswitch module; every link shaped by
        /  |  \\                  HTB, per-flow fair by default (testbed/shaping.py); jumbo MTU
      h1 .. hH ...               hosts: static ARP, IPv6 off, NIC offloads off (TCP through the
                                 userspace datapath needs real checksums)

`EmulatedFabric` is a context manager: whatever happens inside the `with` (an exception,
Ctrl-C, SIGTERM), `__exit__` stops the agents it was told about, the Mininet hosts, links and
bridges, and deletes the run's registry record; signals arriving during teardown are held
until it has finished (testbed/signals.py), then end the process with their usual code.
"""
from __future__ import annotations

import logging
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from . import instances, taps
from .fabric import TIER, Fabric
from .planes import host_port, plane_table
from .servers import nvlink_mac
from .instances import OvsInstance
from .ovs import (TestbedError, check_socket_buffers, ovs_running, pick_datapath, run,
                  vswitchd_malloc_tuned)
from .registry import EXTERNAL_ID, STATE_DIR, RunRecord, remove_record, reserve
from .settings import EmulationSettings  # noqa: F401  (runs build it; tests import it here)
from .shaping import Shaping, tc_batch
from .signals import deferred
from .split import Split, tunnel_commands

if TYPE_CHECKING:
    from .monitor import CpuMonitor

log = logging.getLogger(__name__)


#: NIC features turned off on host interfaces: with them on, checksum-offloaded TCP segments
#: cross AF_PACKET unfinished and the userspace datapath drops them (ping works, TCP hangs).
HOST_OFFLOADS_OFF = ["tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off"]
OPENFLOW_PROTOCOLS = "OpenFlow13,OpenFlow14"


def backlog_packets(tc_show: str, devices: set[str]) -> int:
    """Packets queued in the root qdiscs of `devices`, from `tc -s qdisc show` output
    (each qdisc's block ends with a line "backlog <size>b <packets>p requeues <n>")."""
    total, current = 0, None
    for line in tc_show.splitlines():
        words = line.split()
        if line.startswith("qdisc "):
            dev = words[words.index("dev") + 1] if "dev" in words else None
            current = dev if dev in devices and "root" in words else None
        elif current and words[:1] == ["backlog"] and len(words) > 2:
            total += int(words[2].rstrip("p"))
            current = None
    return total


def ns_run(node, args: list[str], timeout_s: float = 15.0, input_text: str | None = None) -> str:
    """Run an argument list inside a Mininet node's namespace; raise TestbedError on failure."""
    proc = node.popen(args, stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(input=input_text, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise TestbedError(f"{node.name}: `{' '.join(args)}` took more than {timeout_s:g} s")
    if proc.returncode != 0:
        raise TestbedError(f"{node.name}: `{' '.join(args)}` failed: {err.strip()[:300]}")
    return out


def _netns_opt(tool: str, netns: str | None) -> list[str]:
    """`ip` or `tc`, told to act in network namespace `netns` (None: this one)."""
    return [tool, "-n", netns] if netns else [tool]


def _ns_run_all(jobs: dict, timeout_s: float = 120.0) -> None:
    """Run one argument list in each node's namespace, all at once (they mostly wait on the
    kernel); raise TestbedError naming the first node that failed. None is left running."""
    procs = []
    try:
        for node, args in jobs.items():
            procs.append((node, node.popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, text=True)))
        deadline = time.monotonic() + timeout_s
        for node, p in procs:
            try:
                _, err = p.communicate(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                raise TestbedError(f"{node.name}: host setup took more than {timeout_s:g} s")
            if p.returncode != 0:
                raise TestbedError(f"{node.name}: host setup failed: {err.strip()[:300]}")
    finally:
        for _, p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()


def nvlink_port_mac(f: Fabric, h: str) -> str:
    """The MAC of host h's NVLink port (testbed/servers.py)."""
    node = f.graph.nodes[h]
    return nvlink_mac(node["server"], node["gpu"])


def host_mac(ip: str) -> str:
    """A host's MAC from its IPv4 address (02: locally administered), so that every machine of
    a split fabric knows every host's MAC for its static ARP entries."""
    return "02:00:" + ":".join(f"{int(b):02x}" for b in ip.split("."))


class Part:
    """The part of a split fabric (testbed/split.py) one machine builds: its hosts and
    switches, its local links, and its ends of the VXLAN tunnels on `underlay_dev`."""

    def __init__(self, split: Split, machine: int, underlay_dev: str):
        self.split, self.machine, self.underlay_dev = split, machine, underlay_dev
        me = split.machines[machine]
        self.switches, self.hosts = set(me.switches), set(me.hosts)
        self.tunnels = [t for t in split.tunnels if machine in (t.lower_machine,
                                                                t.upper_machine)]

    def has(self, node: str) -> bool:
        return node in self.switches or node in self.hosts

    def tunnel(self, u: str, v: str):
        """The tunnel that carries link u-v, or None (a local link)."""
        ends = {u, v}
        return next((t for t in self.tunnels if {t.lower, t.upper} == ends), None)


class EmulatedFabric:
    """A live Mininet/OVS copy of `fabric`; use as `with EmulatedFabric(...) as emu:`.
    With `part` (a split run, experiments/part.py) only that machine's part is built, every
    switch in one ovs-vswitchd of the run's own (testbed/instances.py), the tunnels attached."""

    def __init__(self, fabric: Fabric, run_id: str, settings: EmulationSettings | None = None,
                 part: Part | None = None, pxn: bool | None = None):
        self.fabric = fabric
        self.run_id = run_id
        self.settings = settings or EmulationSettings()
        self.part = part
        self.datapath = "unknown"
        self.port_type = "system"       # as built: tap only on the userspace datapath
        self.send_buffer_bytes: int | None = None
        #: servers: GPUs reach other servers' GPUs on other rails through PXN's relay
        self.pxn = bool(fabric.server_of) and (pxn if pxn is not None else True)
        self.malloc_tuned: bool | None = None    # ovs-vswitchd's glibc settings (testbed/ovs.py)
        self.net = None
        self.record = RunRecord(run_id)
        # switch -> its ovs-vswitchd process (0: the machine's; testbed/instances.py)
        if part is not None:     # one process of the run's own, in a namespace of its own
            processes = 2
            self.process_of = {sw: 1 for sw in fabric.switches if sw in part.switches}
        else:
            processes = instances.process_count(fabric, self.settings.switch_processes)
            self.process_of = instances.placement(fabric, processes)
        self.instances = [OvsInstance(run_id, k, STATE_DIR) for k in range(1, processes)]
        self.vswitchd_pids: dict[int, int] = {}     # process index -> its ovs-vswitchd PID

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> "EmulatedFabric":
        if not ovs_running():
            raise TestbedError("Open vSwitch is not running; run `make setup` (it starts it)")
        self.datapath = pick_datapath(self.settings.datapath)
        self.send_buffer_bytes = check_socket_buffers() if self.datapath == "user" else None
        self.malloc_tuned = vswitchd_malloc_tuned() if self.datapath == "user" else None
        if self.datapath == "user":
            self.port_type = self.settings.port_type
            if self.port_type == "tap" and shutil.which("nft") is None:
                raise TestbedError("nft is not installed (tap ports need nftables); run "
                                   "`make setup`, or set emulation.port_type: system")
        # written before anything exists, so that a crash at any point can be cleaned; the
        # name check and the save are one step under the registry's lock (two runs started
        # at the same instant: the second one refuses, naming the first)
        self.record.bridges = self.switches
        self.record.interfaces = ([self.fabric.intf(u, v) for u, v in self.switch_ports]
                                  + self.taps
                                  + [t.ifname for t in (self.part.tunnels if self.part else ())])
        if self.port_type == "tap":
            self.record.nft_tables = [taps.nft_table(self.run_id)]
        if (self.instances or self.part) and self.port_type == "tap":
            raise TestbedError("emulation.switch_processes: tap ports need one ovs-vswitchd; "
                               "use port_type: system")
        for inst in self.instances:
            inst.check_paths([sw for sw, k in self.process_of.items() if k == inst.index])
        self.record.netns = [i.netns for i in self.instances]
        self.record.ovs_rundirs = [str(i.rundir) for i in self.instances]
        reserve(self.record, set(self.record.bridges))
        try:
            self._build()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        # a second Ctrl-C or SIGTERM must not cut the teardown short: held until it is done
        # (every step below is bounded: processes 2 s + 2 s, each command its timeout)
        with deferred():
            net, self.net = self.net, None
            instances.forget()
            try:
                # by the record, never through Mininet's shells (one may be dead): every
                # process by PID, the bridges in one transaction, the veths in one batch
                left = remove_record(self.record)["left"]
                if left:
                    left = remove_record(self.record)["left"]   # once more: a step cut short
                if left:
                    log.warning("teardown left %s; `mlfabric clean` retries", left)
            finally:
                if net is not None:
                    from . import shells
                    shells.release(net)

    # -- build -------------------------------------------------------------------------------
    def _build(self) -> None:
        from mininet.link import Link
        from mininet.log import setLogLevel
        from mininet.net import Mininet
        from mininet.node import OVSSwitch

        from . import shells   # Mininet: imported only when a fabric is built
        setLogLevel("warning")
        f = self.fabric
        for inst in self.instances:     # the run's own ovs-vswitchd processes first
            self.vswitchd_pids[inst.index] = instances.start(inst, self.record.add_pid)
        net = Mininet(controller=None, switch=OVSSwitch, link=Link, build=False,
                      autoSetMacs=False, autoStaticArp=False, waitConnected=False)
        self.net = net
        # each node's shell is recorded as it starts, and signals act during the rest of
        # the build (testbed/shells.py)
        fixed_macs = self.part or f.planes > 1    # a NIC's ports share its MAC (a bond's)
        for h in self.hosts:
            net.addHost(h, cls=shells.RecordedHost, record=self.record, ip=f"{f.ip_of(h)}/8",
                        **({"mac": host_mac(f.ip_of(h))} if fixed_macs else {}))
        for sw in self.switches:
            inst = self.instance_of(sw)
            net.addSwitch(sw, cls=shells.InstanceOVSSwitch if inst else shells.RecordedOVSSwitch,
                          record=self.record, dpid=f.dpid_of(sw), failMode="secure",
                          datapath=self.datapath, protocols=OPENFLOW_PROTOCOLS,
                          **({"db": inst.db} if inst else {}))
        for u, v in f.links:   # each link once: from the host, or from the lower tier
            if self.part and not (self.part.has(u) and self.part.has(v)):
                continue       # a tunnel, or another machine's link
            if f.role(u) == "host":      # its NIC (port 0), NVLink port (1), planes' (2..)
                port = f.port(u, v)
                mac = ({} if port == 0 else {"addr1": nvlink_port_mac(f, u)} if port == 1
                       else {"addr1": host_mac(f.ip_of(u))})
                net.addLink(u, v, port1=port, port2=f.port(v, u), **mac)
            elif f.role(v) != "host" and TIER[f.role(u)] < TIER[f.role(v)]:
                net.addLink(u, v, port1=f.port(u, v), port2=f.port(v, u))
        net.build()
        self._move_ports()
        net.start()
        instances.register({sw: inst for sw in self.switches if (inst := self.instance_of(sw))},
                           self.vswitchd_pids)
        if self.part:
            self._tunnels()
        if self.port_type == "tap":
            self._tap_ports()
        self._configure(net)
        down = {tuple(sorted((u, v))) for u, v in f.links
                if f.role(u) != "host" and f.role(v) != "host" and not f.is_live(u, v)
                and (not self.part or (self.part.has(u) and self.part.has(v)))}
        for u, v in sorted(down):
            self.set_link(u, v, up=False)

    @property
    def switches(self) -> list[str]:
        """The switches built here: every one, or this machine's part's."""
        return [s for s in self.fabric.switches if not self.part or s in self.part.switches]

    @property
    def hosts(self) -> list[str]:
        return [h for h in self.fabric.hosts if not self.part or h in self.part.hosts]

    @property
    def switch_ports(self) -> list[tuple[str, str]]:
        """(switch, neighbour) of every switch port that is a veth here (tunnels: _tunnels)."""
        p = self.part
        return [(u, v) for u, v in self.fabric.switch_ports
                if not p or (p.has(u) and p.has(v))]

    def _tunnels(self) -> None:
        """This machine's ends of the VXLAN tunnels (testbed/split.py tunnel_commands), moved
        into its ovs-vswitchd's namespace and attached with the model's port numbers."""
        inst = self.instances[0]
        for cmd in tunnel_commands(self.part.split, self.part.machine, self.part.underlay_dev,
                                   inst.netns, tuple(inst.vsctl())):
            run(cmd)

    @property
    def other_vswitchds(self) -> list[tuple[int, str]]:
        """(PID, namespace) of the run's own ovs-vswitchd processes (the CPU monitor's)."""
        return [(self.vswitchd_pids[i.index], i.netns) for i in self.instances
                if i.index in self.vswitchd_pids]

    def instance_of(self, switch: str) -> OvsInstance | None:
        """The run's ovs-vswitchd process that runs `switch`; None: the machine's."""
        k = self.process_of.get(switch, 0)
        return self.instances[k - 1] if k else None

    def netns_of(self, intf_owner: str) -> str | None:
        """The network namespace of a switch's ports (None: the root namespace)."""
        inst = self.instance_of(intf_owner)
        return inst.netns if inst else None

    def _ports_by_netns(self) -> dict[str | None, list[tuple[str, str]]]:
        """Every switch port (switch, neighbour), grouped by the namespace it lives in."""
        out: dict[str | None, list[tuple[str, str]]] = {}
        for u, v in self.switch_ports:
            out.setdefault(self.netns_of(u), []).append((u, v))
        return out

    def _move_ports(self) -> None:
        """Move the ports of switches run by the run's own processes into those processes'
        namespaces (one `ip -batch`), then bring them up there (moving takes a device down).
        A link between two processes is then a veth with one end in each namespace."""
        f = self.fabric
        moved = {ns: ports for ns, ports in self._ports_by_netns().items() if ns}
        if not moved:
            return
        run(["ip", "-batch", "-"], input_text="".join(
            f"link set dev {f.intf(u, v)} netns {ns}\n"
            for ns, ports in moved.items() for u, v in ports))
        for ns, ports in moved.items():
            run(["ip", "-n", ns, "-batch", "-"], input_text="".join(
                f"link set dev {f.intf(u, v)} up\n" for u, v in ports))

    def _configure(self, net) -> None:
        """Tag the bridges, set every MTU, shape every port, set up the hosts, in batches: one
        ovs-vsctl, one `ip -batch`, one `tc -batch`, then per host one shell and one
        `ip -batch` of static ARP entries (Mininet's staticArp runs one `arp -s` per host
        pair: 4,032 at 64 hosts). experiments/benchmarks/scale_bench.py has the figures."""
        f = self.fabric
        mtu = str(self.settings.mtu_bytes)
        for ns, ports in self._ports_by_netns().items():   # per ovs-vswitchd process
            inst = self.instance_of(ports[0][0])
            vsctl = inst.vsctl() if inst else ["ovs-vsctl"]
            for sw in sorted({u for u, _ in ports}):
                vsctl += ["--", "set", "Bridge", sw,
                          f"external_ids:{EXTERNAL_ID}={self.run_id}"]
            if self.port_type == "system":
                for u, v in ports:
                    vsctl += ["--", "set", "Interface", f.intf(u, v), f"mtu_request={mtu}"]
            run(vsctl, timeout_s=120)
            run([*_netns_opt("ip", ns), "-batch", "-"], input_text="".join(
                f"link set dev {f.intf(u, v)} mtu {mtu}\n" for u, v in ports))
            batch = [line for u, v in ports
                     for line in tc_batch(f.intf(u, v), self._shaping(
                         f.capacity_mbps(u, v), self.settings.switch_burst_frames))]
            if self.part:       # the tunnels' ends: shaped as any port, at the link's rate
                batch += [line for t in self.part.tunnels
                          for line in tc_batch(t.ifname, self._shaping(
                              t.rate_mbps, self.settings.switch_burst_frames))]
            run([*_netns_opt("tc", ns), "-batch", "-"], input_text="\n".join(batch) + "\n",
                timeout_s=120)
        macs = ({h: host_mac(f.ip_of(h)) for h in f.hosts} if self.part
                else {h: net.get(h).MAC() for h in f.hosts})
        with tempfile.TemporaryDirectory(prefix="mlfabric-hosts-") as tmp:
            scripts = {}
            for h in self.hosts:
                intf = f"{h}-eth0"
                tc_file, arp_file = Path(tmp, f"{h}.tc"), Path(tmp, f"{h}.neigh")
                tc_file.write_text("\n".join(tc_batch(intf, self._shaping(
                    f.capacity_mbps(h, f.leaf_of(h))))) + "\n")
                arp_file.write_text("".join(
                    f"neigh replace {f.ip_of(d)} lladdr {macs[d]} dev {intf} nud permanent\n"
                    for d in f.hosts if d != h))
                scripts[h] = (f"ethtool -K {intf} {' '.join(HOST_OFFLOADS_OFF)} && ip link set "
                              f"dev {intf} mtu {mtu} && sysctl -q -w "
                              f"net.ipv6.conf.all.disable_ipv6=1 && tc -batch {tc_file} && "
                              f"ip -batch {arp_file}")
                if f.server_of:
                    scripts[h] += " && " + self._nvlink_script(h, Path(tmp), mtu)
                if f.planes > 1:
                    scripts[h] += " && " + self._planes_script(h, Path(tmp), mtu, macs)
            _ns_run_all({net.get(h): ["sh", "-c", s] for h, s in scripts.items()})

    def _nvlink_script(self, h: str, tmp: Path, mtu: str) -> str:
        """Host h's NVLink port (eth1): offloads off, its MTU and shaper; its server's peers
        reached through it (a /32 route and a neighbour entry each), and under PXN every GPU
        of another server on another rail through the peer on that GPU's rail, which
        forwards it out of its own NIC (ip_forward, no reverse-path filter)."""
        f, intf = self.fabric, f"{h}-eth1"
        nvs = f"nvs{f.server_of[h] + 1}"
        tc_file, ip_file = tmp / f"{h}.nv.tc", tmp / f"{h}.nv.ip"
        tc_file.write_text("\n".join(tc_batch(intf, self._shaping(f.capacity_mbps(h, nvs))))
                           + "\n")
        peers = [p for p in f.servers[f.server_of[h]] if p != h]
        lines = [f"neigh replace {f.ip_of(p)} lladdr {nvlink_port_mac(f, p)} dev {intf} "
                 "nud permanent\n" for p in peers]
        ip_file.write_text("".join(lines + self._nvlink_routes(h)))
        sysctls = " ".join(f"net.ipv4.conf.{i}.rp_filter=0" for i in
                           ("all", "default", f"{h}-eth0", intf))
        return (f"ethtool -K {intf} {' '.join(HOST_OFFLOADS_OFF)} && ip link set dev {intf} "
                f"mtu {mtu} && tc -batch {tc_file} && sysctl -q -w net.ipv4.ip_forward=1 "
                f"net.ipv4.conf.all.send_redirects=0 {sysctls} && ip -batch {ip_file}")

    def _nvlink_routes(self, h: str, table: int | None = None) -> list[str]:
        """`ip` lines of host h's routes over NVLink (in `table`, default main): a /32 to each
        peer of its server, and under PXN one via the relay to each GPU it relays to."""
        f, intf = self.fabric, f"{h}-eth1"
        t = f" table {table}" if table else ""
        lines = [f"route replace {f.ip_of(p)}/32 dev {intf}{t}\n"
                 for p in f.servers[f.server_of[h]] if p != h]
        if self.pxn:
            lines += [f"route replace {f.ip_of(b)}/32 via {f.ip_of(r)} dev {intf} onlink{t}\n"
                      for b in f.hosts if (r := f.server_map.relay(h, b)) is not None]
        return lines

    def _planes_script(self, h: str, tmp: Path, mtu: str, macs: dict[str, str]) -> str:
        """Host h's ports on planes 2.. (testbed/planes.py): offloads off, MTU and shaper as
        its first port's, every peer's neighbour entry, and table plane_table(p) leaving by
        port p (after the NVLink routes the main table has), which the run's host rules
        (routing/rules.py HostRule) send connections to; no reverse-path filter (a port
        receives what another sent)."""
        f, lines, cmds = self.fabric, [], []
        for p in range(2, f.planes + 1):
            intf, leaf = f"{h}-eth{host_port(p)}", f.leaf_at(h, p)
            tc_file = tmp / f"{h}.p{p}.tc"
            tc_file.write_text("\n".join(tc_batch(intf, self._shaping(f.capacity_mbps(h, leaf))))
                               + "\n")
            cmds.append(f"ethtool -K {intf} {' '.join(HOST_OFFLOADS_OFF)} && ip link set dev "
                        f"{intf} mtu {mtu} && tc -batch {tc_file}")
            lines += [f"neigh replace {f.ip_of(d)} lladdr {macs[d]} dev {intf} nud permanent\n"
                      for d in f.hosts if d != h]
            lines.append(f"route replace 10.0.0.0/8 dev {intf} table {plane_table(p)}\n")
            if f.server_of:     # NVLink first, as in the main table (a host rule of a port
                lines += self._nvlink_routes(h, plane_table(p))   # range sends any GPU's)
        ip_file = tmp / f"{h}.planes.ip"
        ip_file.write_text("".join(lines))
        sysctls = " ".join(f"net.ipv4.conf.{i}.rp_filter=0" for i in
                           ("all", "default", *(f"{h}-eth{host_port(p)}"
                                                for p in range(1, f.planes + 1))))
        return " && ".join(cmds) + f" && sysctl -q -w {sysctls} && ip -batch {ip_file}"

    def set_host_rules(self, lines: dict[str, list[str]]) -> None:
        """Apply `ip` lines (the hosts' plane rules) in each host's namespace, one batch per
        host; TestbedError naming the host when one fails."""
        for h, ls in lines.items():
            ns_run(self.net.get(h), ["ip", "-batch", "-"], input_text="".join(f"{ln}\n"
                                                                              for ln in ls))

    def _tap_ports(self) -> None:
        """Swap every switch port's veth for a tap of the same OpenFlow port number (one
        ovs-vsctl transaction), bring the taps up without IPv6 addresses, and join each tap to
        its veth (one nft transaction). The veths keep their shapers (_configure)."""
        f, mtu = self.fabric, self.settings.mtu_bytes
        vsctl = ["ovs-vsctl"]
        for u, v in f.switch_ports:
            veth = f.intf(u, v)
            tap = taps.tap_name(veth)
            vsctl += ["--", "del-port", u, veth, "--", "add-port", u, tap,
                      "--", "set", "Interface", tap, "type=tap",
                      f"ofport_request={f.port(u, v)}", f"mtu_request={mtu}"]
        run(vsctl, timeout_s=120)
        run(["ip", "-batch", "-"], input_text="".join(
            f"link set dev {t} addrgenmode none mtu {mtu}\nlink set dev {t} up\n"
            for t in self.taps))
        taps.install(self.record.nft_tables[0], list(zip(f.switch_interfaces, self.taps)))

    def cpu_monitor(self) -> "CpuMonitor":
        """The monitor of this emulator's forwarding: ovs-vswitchd's threads (userspace
        datapath, every process of the run) or the kernel's softirq (kernel datapath)."""
        from .monitor import CpuMonitor
        return CpuMonitor(self.taps, others=self.other_vswitchds, datapath=self.datapath)

    @property
    def calibration_datapath(self) -> str:
        """The datapath as calibrations are stored: user (system ports), user+tap, kernel."""
        return f"{self.datapath}+tap" if self.port_type == "tap" else self.datapath

    @property
    def taps(self) -> list[str]:
        """The taps ovs-vswitchd reads and writes, in the order of fabric.switch_interfaces;
        none with system ports."""
        if self.port_type != "tap":
            return []
        return [taps.tap_name(i) for i in self.fabric.switch_interfaces]

    def set_link(self, u: str, v: str, up: bool) -> None:
        """Both ends of the u-v veth pair up or down (both directions fail, as a cut cable),
        and with tap ports both taps too: OVS sees a port's link state on the tap, and a
        select group's bucket watching that port must go dead with the link."""
        tunnel = self.part.tunnel(u, v) if self.part else None
        if tunnel is not None:      # this machine's end; the other machine sets its own
            run(["ip", "-n", self.instances[0].netns, "link", "set", "dev", tunnel.ifname,
                 "up" if up else "down"])
            return
        ends = [(self.fabric.intf(u, v), self.netns_of(u)),
                (self.fabric.intf(v, u), self.netns_of(v))]
        if self.port_type == "tap":
            ends += [(taps.tap_name(i), ns) for i, ns in ends]
        for intf, ns in ends:
            run([*_netns_opt("ip", ns), "link", "set", "dev", intf, "up" if up else "down"])

    def _shaping(self, rate_mbps: float, burst_frames: int = 1) -> Shaping:
        st = self.settings
        return Shaping(rate_mbps, st.mtu_bytes, st.queue_packets, st.scheduler, burst_frames)

    # -- access ------------------------------------------------------------------------------
    def host(self, name: str):
        return self.net.get(name)

    def queued_packets(self) -> int:
        """Packets waiting in the shapers' queues now, over every interface of the fabric."""
        total = 0
        for ns in [None] + [i.netns for i in self.instances]:
            total += backlog_packets(run([*_netns_opt("tc", ns), "-s", "qdisc", "show"]).stdout,
                                     set(self.record.interfaces))
        for h in self.hosts:
            total += backlog_packets(ns_run(self.host(h), ["tc", "-s", "qdisc", "show"]),
                                     {f"{h}-eth0"})
        return total

    def wait_until_drained(self, timeout_s: float = 60.0) -> float:
        """Wait until no shaper holds a queued packet (an earlier test's backlog would share
        the links with the next one); returns the seconds waited."""
        t0 = time.monotonic()
        while self.queued_packets() > 0:
            if time.monotonic() - t0 > timeout_s:
                raise TestbedError(f"the fabric's queues did not drain in {timeout_s:g} s")
            time.sleep(0.2)
        return time.monotonic() - t0

    def popen(self, host: str, cmd: list[str], group: bool = False,
              **kwargs) -> subprocess.Popen:
        """Start `cmd` (an argument list) in `host`'s namespace and record it at once, so that
        teardown, or `clean` after a crash, ends it; signals wait until it is recorded. Its
        stdin is /dev/null unless given. `group`: end its whole process group (Mininet
        starts it in a session of its own), for programs that fork."""
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        with deferred():
            proc = self.host(host).popen(cmd, **kwargs)
            self.record.add_pid(proc.pid, cmd, group=group)
        return proc

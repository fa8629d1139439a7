"""Switch ports as tap devices (`emulation.port_type: tap`, userspace datapath; the default is
`system`): ovs-vswitchd reads and writes each port through a tun file descriptor, and the
kernel joins that tap to the link's veth with two nftables `fwd` rules::

    h1's namespace   |               root namespace                |   ovs-vswitchd
                     |                                             |
    h1-eth0 ===veth=== leaf1-eth1 <--- nft fwd ---- leaf1-tap1 <---- writes (port 1)
    (HTB: h1's       | (HTB: leaf1's    --- nft fwd ---> (its egress) ---> reads
     egress)         |  egress)                                    |

The veth and its shaper are the same as with `system` ports (an AF_PACKET socket per port on
the veth itself); only the way packets reach ovs-vswitchd changes. Why: before every
`recvmmsg` on a `system` port OVS allocates 32 MTU-sized buffers and frees the unused ones,
and its one forwarding thread polls every port on each wake-up, so each port costs the thread
even when idle; a tap port allocates one buffer per packet read (docs/emulation.md, "Datapath options").

Why nftables and not `tc ... action mirred`: ovs-vswitchd deletes the ingress qdisc of every
port it (re)configures (its ingress policing), which took a mirred rule off a tap in testing;
the netdev family's ingress hook is not tc's and OVS leaves it alone. One table per run.
"""
from __future__ import annotations

from .ovs import TestbedError, run

PORT_TYPES = ("system", "tap")


def tap_name(intf: str) -> str:
    """The tap beside a switch's veth: leaf1-eth5 -> leaf1-tap5 (same length, <= 15)."""
    node, sep, port = intf.rpartition("-eth")
    if not sep or not node or not port.isdigit():
        raise ValueError(f"not a switch interface name: {intf!r}")
    return f"{node}-tap{port}"


def nft_table(run_id: str) -> str:
    """The run's nftables table (netdev family): mlfabric_<run id>."""
    return "mlfabric_" + "".join(c if c.isalnum() else "_" for c in run_id)


def nft_ruleset(table: str, pairs: list[tuple[str, str]]) -> str:
    """`nft -f` input: for each (veth, tap), one ingress chain that forwards what arrives on
    the veth to the tap (ovs-vswitchd reads it there) and one that forwards what ovs-vswitchd
    writes to the tap out of the veth (through the veth's shaper)."""
    lines = [f"table netdev {table} {{"]
    for veth, tap in pairs:
        for src, dst in ((veth, tap), (tap, veth)):
            lines += [f"  chain {src} {{",
                      f'    type filter hook ingress device "{src}" priority 0; '
                      "policy accept;",
                      f'    fwd to "{dst}"',
                      "  }"]
    lines.append("}")
    return "\n".join(lines) + "\n"


def install(table: str, pairs: list[tuple[str, str]]) -> None:
    """Create the table joining each (veth, tap) in one nft transaction (all or nothing)."""
    run(["nft", "-f", "-"], input_text=nft_ruleset(table, pairs), timeout_s=120)


def remove(table: str) -> bool:
    """Delete the run's table (its chains go with it). True when it is gone or never was;
    False when nft could not do it (not installed, or another error): the record keeps it."""
    try:
        p = run(["nft", "delete", "table", "netdev", table], check=False)
    except TestbedError:
        return False
    return p.returncode == 0 or "No such file or directory" in p.stderr

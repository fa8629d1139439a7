"""Start one rank of a program in its own UTS and mount namespaces (needs root).

    unshare --uts --mount --propagation private -- python -m testbed.rankns \\
        --hostname h3 --hosts HOSTS_FILE -- ARGV...

Every Mininet host shares the machine's hostname, which resolves to 127.0.0.1, so a
collective library (gloo) that advertises "its own address" by resolving its hostname tells
its peers 127.0.0.1 and the job hangs. Here the rank gets its host's name (`hostname`) and a
hosts file (bind-mounted over /etc/hosts in its private mount namespace, nothing outside
changes) in which that name, and every other host's, resolves to its fabric address. Then the
program replaces this process (same PID, so it is ended by the PID the run recorded).
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys

HOSTS_PATH = "/etc/hosts"


def hosts_file_text(addresses: dict[str, str]) -> str:
    """A hosts file: localhost, then each host name with its fabric address."""
    lines = ["127.0.0.1 localhost"]
    lines += [f"{ip} {name}" for name, ip in addresses.items()]
    return "\n".join(lines) + "\n"


def enter(hostname: str, hosts: str) -> None:
    """In fresh UTS and mount namespaces: set the hostname, bind `hosts` over /etc/hosts."""
    socket.sethostname(hostname)
    subprocess.run(["mount", "--bind", hosts, HOSTS_PATH], check=True,
                   stdin=subprocess.DEVNULL)


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("rankns: usage: --hostname NAME --hosts FILE -- ARGV...", file=sys.stderr)
        return 2
    cut = argv.index("--")
    opts, program = argv[:cut], argv[cut + 1:]
    if len(opts) != 4 or opts[0] != "--hostname" or opts[2] != "--hosts" or not program:
        print("rankns: usage: --hostname NAME --hosts FILE -- ARGV...", file=sys.stderr)
        return 2
    try:
        enter(opts[1], opts[3])
        os.execvp(program[0], program)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"rankns: cannot start {program[0]!r}: {e}", file=sys.stderr)
        return 127
    return 0   # not reached: exec replaced this process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

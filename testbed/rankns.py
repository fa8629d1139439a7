"""Start one rank of a program as the init of its own PID, UTS and mount namespaces (root).

    unshare --pid --fork --kill-child=SIGKILL --mount-proc --uts --mount \\
        --propagation private -- python -m testbed.rankns \\
        --hostname h3 --hosts HOSTS_FILE --env ENV_FILE -- ARGV...

Names: every Mininet host shares the machine's hostname, which resolves to 127.0.0.1, so a
collective library (gloo) that advertises "its own address" by resolving its hostname tells
its peers 127.0.0.1 and the job hangs. Here the rank gets its host's name (`hostname`) and a
hosts file (bind-mounted over /etc/hosts in its private mount namespace, nothing outside
changes) in which that name, and every other host's, resolves to its fabric address.

Processes: this module stays PID 1 of the rank's PID namespace and runs the program as its
child, with the environment of ENV_FILE (JSON), forwarding SIGTERM, SIGINT, SIGHUP and
SIGQUIT to it. When the program exits, so does this init, with the program's exit code
(128 + N for signal N), and the kernel then SIGKILLs everything else in the namespace:
whatever the program forked, in its process group, in a session of its own or daemonized,
ends with it. `--kill-child=SIGKILL` does the same when `unshare` itself is ended (the run's
teardown and `mlfabric clean` end it by its recorded PID and process group).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

HOSTS_PATH = "/etc/hosts"
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
USAGE = "rankns: usage: --hostname NAME --hosts FILE --env FILE -- ARGV..."


def hosts_file_text(addresses: dict[str, str]) -> str:
    """A hosts file: localhost, then each host name with its fabric address."""
    lines = ["127.0.0.1 localhost"]
    lines += [f"{ip} {name}" for name, ip in addresses.items()]
    return "\n".join(lines) + "\n"


def namespace_command(hostname: str, hosts: str, env_file: str, argv: list[str],
                      python: str = sys.executable) -> list[str]:
    """The argument list that starts `argv` as a rank in fresh PID, UTS and mount
    namespaces under this module's init."""
    return ["unshare", "--pid", "--fork", "--kill-child=SIGKILL", "--mount-proc", "--uts",
            "--mount", "--propagation", "private", "--",
            python, "-m", "testbed.rankns", "--hostname", hostname, "--hosts", hosts,
            "--env", env_file, "--", *argv]


def enter(hostname: str, hosts: str) -> None:
    """In fresh UTS and mount namespaces: set the hostname, bind `hosts` over /etc/hosts."""
    socket.sethostname(hostname)
    subprocess.run(["mount", "--bind", hosts, HOSTS_PATH], check=True,
                   stdin=subprocess.DEVNULL)


def exit_code(status: int) -> int:
    """A wait status as a shell reports it: the exit code, or 128 + the signal."""
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


def supervise(program: list[str], env: dict[str, str]) -> int:
    """Run `program` as this init's child, forward signals to it, reap every orphan the
    namespace hands to PID 1, and return the program's exit code once it has exited."""
    child = os.fork()
    if child == 0:
        try:
            os.execvpe(program[0], program, env)
        except OSError as e:
            print(f"rankns: cannot start {program[0]!r}: {e}", file=sys.stderr, flush=True)
        os._exit(127)
    def forward(sig: int, _frame) -> None:
        try:
            os.kill(child, sig)
        except ProcessLookupError:
            pass                      # exited already: waitpid below returns it

    for sig in FORWARDED:
        signal.signal(sig, forward)
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            return exit_code(status)


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print(USAGE, file=sys.stderr)
        return 2
    cut = argv.index("--")
    opts, program = argv[:cut], argv[cut + 1:]
    if len(opts) != 6 or opts[0::2] != ["--hostname", "--hosts", "--env"] or not program:
        print(USAGE, file=sys.stderr)
        return 2
    try:
        with open(opts[5], encoding="utf-8") as f:
            env = json.load(f)
        enter(opts[1], opts[3])
    except (OSError, ValueError, subprocess.CalledProcessError) as e:
        print(f"rankns: cannot set up the rank: {e}", file=sys.stderr)
        return 127
    return supervise(program, env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Machines made of network namespaces on this one (issue 29): each namespace `mfmN` has a veth
to a Linux bridge `mfmbr` in the root namespace (the underlay, jumbo MTU: the coordinator is
192.168.251.254, machine N 192.168.251.N+1) and its own sshd (Debian's openssh-server), with a
host key and an authorized key the harness generates. Commands over ssh run as root in the
machine's namespace, on this machine's file system (the same checkout and OVS version).
Everything it starts it ends by PID; everything it creates it deletes."""
from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from testbed.remote import MachineSpec

BRIDGE, PREFIX, NET = "mfmbr", "mfm", "192.168.251"
COORDINATOR = f"{NET}.254"
SSHD = "/usr/sbin/sshd"
UNDERLAY_MTU = 9000
#: ssh sessions per connection (sshd's default is 10): a split run opens one per agent on the
#: machine, plus its part server's
MAX_SESSIONS = 64


def sh(*args: str, ns: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if check and p.returncode:
        raise RuntimeError(f"`{' '.join(cmd)}` failed: {(p.stderr or p.stdout).strip()[:300]}")
    return p


class NamespaceMachines:
    """`with NamespaceMachines(n, tmp) as ms:` ms.specs are the MachineSpecs; ms.ssh_env()
    the environment that points ssh at the generated key (testbed/remote.py's
    MLFABRIC_SSH_CONFIG). `sshd_on`: the machines that get an sshd (default all)."""

    def __init__(self, n: int, tmp: Path, sshd_on: tuple[int, ...] | None = None):
        self.n, self.tmp = n, tmp
        self.sshd_on = tuple(range(n)) if sshd_on is None else sshd_on
        self.procs: list[subprocess.Popen] = []
        self.key = tmp / "id_ed25519"

    @property
    def specs(self) -> tuple[MachineSpec, ...]:
        return tuple(MachineSpec(f"m{i}", f"{NET}.{i + 1}", "root") for i in range(self.n))

    def ns(self, i: int) -> str:
        return f"{PREFIX}{i}"

    def __enter__(self) -> "NamespaceMachines":
        if shutil.which(SSHD) is None and not Path(SSHD).exists():
            raise RuntimeError("sshd is not installed (testbed/bootstrap.sh installs "
                               "openssh-server)")
        self._remove()
        try:
            self._build()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _build(self) -> None:
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.key))
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.tmp / "host_key"))
        (self.tmp / "authorized_keys").write_text(Path(f"{self.key}.pub").read_text())
        sh("ip", "link", "add", BRIDGE, "mtu", str(UNDERLAY_MTU), "type", "bridge")
        sh("ip", "addr", "add", f"{COORDINATOR}/24", "dev", BRIDGE)
        sh("ip", "link", "set", BRIDGE, "up")
        for i in range(self.n):
            ns, dev = self.ns(i), f"{PREFIX}{i}u"
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "add", dev, "mtu", str(UNDERLAY_MTU), "type", "veth", "peer",
               "name", "ul0", "mtu", str(UNDERLAY_MTU), "netns", ns)
            sh("ip", "link", "set", dev, "master", BRIDGE, "up")
            sh("ip", "link", "set", "lo", "up", ns=ns)
            sh("ip", "link", "set", "ul0", "up", ns=ns)
            sh("ip", "addr", "add", f"{NET}.{i + 1}/24", "dev", "ul0", ns=ns)
            if i in self.sshd_on:
                self._sshd(i)
        for i in self.sshd_on:
            self._wait_port(i)

    def _sshd(self, i: int) -> None:
        cmd = ["ip", "netns", "exec", self.ns(i), SSHD, "-D", "-e", "-f", "/dev/null",
               "-h", str(self.tmp / "host_key"),
               "-o", f"ListenAddress={NET}.{i + 1}", "-o", "PermitRootLogin=prohibit-password",
               "-o", f"AuthorizedKeysFile={self.tmp / 'authorized_keys'}",
               "-o", "StrictModes=no", "-o", "UsePAM=no", "-o", f"MaxSessions={MAX_SESSIONS}",
               "-o", f"PidFile={self.tmp / f'sshd{i}.pid'}"]
        Path("/run/sshd").mkdir(exist_ok=True)      # sshd's privilege separation directory
        self.procs.append(subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                           stdout=subprocess.DEVNULL,
                                           stderr=open(self.tmp / f"sshd{i}.log", "w"),
                                           start_new_session=True))

    def _wait_port(self, i: int, timeout_s: float = 10.0) -> None:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout_s:
            if sh("ss", "-H", "-t", "-l", "-n", "sport = :22", ns=self.ns(i)).stdout.strip():
                return
            time.sleep(0.1)
        raise RuntimeError(f"sshd in {self.ns(i)} did not listen in {timeout_s:g} s")

    def ssh_env(self) -> dict[str, str]:
        """The environment that points ssh at the generated key and an empty known_hosts."""
        cfg = self.tmp / "ssh_config"
        cfg.write_text(f"Host {NET}.*\n  IdentityFile {self.key}\n"
                       f"  UserKnownHostsFile {self.tmp / 'known_hosts'}\n"
                       "  StrictHostKeyChecking accept-new\n")
        return {"MLFABRIC_SSH_CONFIG": str(cfg)}

    def __exit__(self, *exc) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=5)
        self.procs.clear()
        self._remove()

    def _remove(self) -> None:
        for i in range(8):
            sh("ip", "netns", "del", self.ns(i), check=False)
            # a namespace some exiting process still holds outlives its name, and with it
            # the underlay veth: deleting this end removes the pair at once
            sh("ip", "link", "del", f"{PREFIX}{i}u", check=False)
        sh("ip", "link", "del", BRIDGE, check=False)

#!/usr/bin/env bash
# Install and start everything mlfabric needs, idempotently (run as root on Debian 12):
#   1. Debian packages: mininet (for mnexec), openvswitch-switch, iperf3, ethtool, ping,
#      nftables (joins tap switch ports to their veths: testbed/taps.py), openssh-client and
#      openssh-server (machines: over ssh; the tests' namespace machines run their own sshd;
#      mlfabric starts no ssh service, though Debian's package does where services run); gcc,
#      libc6-dev and python3-dev (the model's kernels built ahead of time: traffic/aot.py);
#   2. the virtual environment .venv from requirements.txt, and mlfabric itself in editable mode
#      (the `.venv/bin/mlfabric` command; both re-installed when either file changes);
#   3. Open vSwitch started without systemd (ovs-ctl), when it is not running.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
PACKAGES=(mininet openvswitch-switch iperf3 ethtool iputils-ping iproute2 nftables
          openssh-client openssh-server gcc libc6-dev python3-dev)

if [ "$(id -u)" -ne 0 ]; then
  echo "bootstrap: needs root (it installs Debian packages and starts Open vSwitch); use sudo" >&2
  exit 2
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ! "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  missing+=(python3-venv)
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

stamp=.venv/.requirements.sha256
want="$(cat requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv with $("$PYTHON" --version)"
  "$PYTHON" -m venv .venv
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "bootstrap: installing requirements.txt into .venv"
  .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
  # the project itself, editable: the `mlfabric` command, and benchmarks import the package
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps \
    --no-build-isolation -e .
  echo "$want" > "$stamp"
fi

# ovs-vswitchd sends every packet of the userspace datapath through one AF_PACKET socket whose
# send buffer is net.core.wmem_default when it first sends; packets queued in the ports' HTB
# shapers stay charged to it, and when it is full OVS drops them without counting. Each port's
# receive socket takes net.core.rmem_default when the port is added and drops what arrives
# once it is full. 8 MiB each (not the kernel's 208 KiB) removed both losses (testbed/ovs.py).
read -r SEND_BUFFER RECV_BUFFER < <(.venv/bin/python -m testbed.ovs buffers)
if [ "$(sysctl -n net.core.wmem_default)" -lt "$SEND_BUFFER" ]; then
  echo "bootstrap: net.core.wmem_default -> $SEND_BUFFER (OVS userspace datapath send buffer)"
  sysctl -q -w net.core.wmem_default="$SEND_BUFFER"
fi
if [ "$(sysctl -n net.core.rmem_default)" -lt "$RECV_BUFFER" ]; then
  echo "bootstrap: net.core.rmem_default -> $RECV_BUFFER (OVS userspace datapath port sockets)"
  sysctl -q -w net.core.rmem_default="$RECV_BUFFER"
fi
# ovs-vswitchd's malloc settings (why: VSWITCHD_GLIBC_TUNABLES in testbed/ovs.py)
TUNABLES="$(.venv/bin/python -m testbed.ovs tunables)"
ovs_ctl=/usr/share/openvswitch/scripts/ovs-ctl
if ! ovs-vsctl --timeout=3 show >/dev/null 2>&1; then
  echo "bootstrap: starting Open vSwitch"
  GLIBC_TUNABLES="$TUNABLES" "$ovs_ctl" start --system-id=random >/dev/null 2>&1 || true
else
  why=""
  # (no packet socket yet, e.g. right after a restart: nothing to check; `|| true` for set -e)
  tb="$(ss -0 -m -p 2>/dev/null | grep -A1 '"ovs-vswitchd"' | grep -A1 '\[0\]:\*' | grep -o 'tb[0-9]*' | head -1 | tr -d tb || true)"
  if [ -n "$tb" ] && [ "$tb" -lt "$SEND_BUFFER" ]; then
    why="its packet socket gets the larger send buffer"
  fi
  if ! .venv/bin/python -m testbed.ovs malloc-tuned; then
    why="${why:+$why and }it runs with mlfabric's malloc settings"
  fi
  if [ -n "$why" ]; then
    echo "bootstrap: restarting Open vSwitch so that $why"
    GLIBC_TUNABLES="$TUNABLES" "$ovs_ctl" restart --system-id=random >/dev/null 2>&1 || true
  fi
fi
ovs-vsctl --timeout=10 show >/dev/null || { echo "bootstrap: Open vSwitch did not start" >&2; exit 1; }
# the model's compiled kernels, built once per change of their sources (experiments/warm.py):
# no `predict` waits for numba, and the predictor's load without it (traffic/aot.py); and
# the figure worker's bytecode without docstrings, each module's where it is stale
if ! .venv/bin/python -c 'import sys; from experiments.warm import needs_compile; sys.exit(needs_compile())'; then
  echo "bootstrap: building the model's compiled kernels (numba; about 40 s, once)"
fi
.venv/bin/python -m experiments.warm --if-needed
echo "bootstrap: ready ($(ovs-vsctl --version | head -1), $(.venv/bin/python --version))"

"""The `machines:` section: the machines a fabric is split over (testbed/remote.py,
testbed/split.py). Absent: the one machine `run` is started on."""
from __future__ import annotations

from typing import Any

from testbed.fabric import Fabric
from testbed.remote import NAME_RE, PATH_RE, USER_RE, MachineSpec, check_address
from testbed.split import MAX_MACHINES

from .keys import MACHINE_KEYS
from .readers import ConfigError, _check_keys, quote
from .records import EmulationConfig


def _machines(value: Any, fabric: Fabric, emulation: EmulationConfig) -> tuple[MachineSpec, ...]:
    """Each machine's {name, address, user, ovs_rundir?}, checked; () when absent."""
    if value is None:
        return ()
    units = len(fabric.leaf_groups)
    most = min(MAX_MACHINES, units)
    if not isinstance(value, list) or not 2 <= len(value) <= most:
        raise ConfigError(f"machines: a list of 2..{most} machines (pods are not split, and "
                          f"this fabric has {units}), got {quote(value)}")
    out, seen_names, seen_addr = [], set(), set()
    for i, m in enumerate(value):
        where = f"machines[{i}]"
        if not isinstance(m, dict):
            raise ConfigError(f"{where}: expected {{name, address, user, ovs_rundir?}}, got "
                              f"{quote(m)}")
        m = _check_keys(m, MACHINE_KEYS, where)
        for key in ("name", "address"):
            if key not in m:
                raise ConfigError(f"{where}.{key}: required")
        name, addr, user = m["name"], m["address"], m.get("user", "root")
        rundir = m.get("ovs_rundir")
        if not isinstance(name, str) or not NAME_RE.match(name) or name in seen_names:
            raise ConfigError(f"{where}.name: a unique name of lowercase letters, digits and "
                              f"'-' (at most 32), got {quote(name)}")
        if not isinstance(addr, str) or not check_address(addr) or addr in seen_addr:
            raise ConfigError(f"{where}.address: a unique IP address or DNS name, got "
                              f"{quote(addr)}")
        if not isinstance(user, str) or not USER_RE.match(user):
            raise ConfigError(f"{where}.user: a login name (lowercase, at most 32), got "
                              f"{quote(user)}")
        if rundir is not None and (not isinstance(rundir, str) or not PATH_RE.match(rundir)):
            raise ConfigError(f"{where}.ovs_rundir: an absolute path of letters, digits and "
                              f"'._-/', got {quote(rundir)}")
        seen_names.add(name)
        seen_addr.add(addr)
        out.append(MachineSpec(name, addr, user, rundir))
    if emulation.switch_processes > 1:
        raise ConfigError("machines: not with emulation.switch_processes > 1 yet; use one "
                          "or the other")
    return tuple(out)

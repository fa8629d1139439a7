"""Typed readers of config values: each problem is a ConfigError of one line naming the key
and the fix; values are quoted by at most QUOTE_CHARS characters.
"""
from __future__ import annotations

import math
import re
import reprlib
from pathlib import Path
from typing import Any

from .limits import MAX_SECONDS


class ConfigError(ValueError):
    """Bad experiment input; the message names the key and the fix."""


# -- quoting user values -----------------------------------------------------------------------
_REPR = reprlib.Repr()


_REPR.maxlevel = 2


_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = _REPR.maxfrozenset = 3


_REPR.maxstring = _REPR.maxlong = _REPR.maxother = 40


QUOTE_CHARS = 40


def quote(v: Any) -> str:
    """At most QUOTE_CHARS characters of repr(v), computed without expanding big or deeply
    nested values (reprlib), on one line."""
    try:
        s = _REPR.repr(v)
    except Exception:  # noqa: BLE001 - a value whose repr fails is still quoted by its type
        s = f"<{type(v).__name__}>"
    s = s.replace("\n", " ")
    return s if len(s) <= QUOTE_CHARS else s[:QUOTE_CHARS - 3] + "..."


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.@-]{1,40}")


def _key(k: Any) -> str:
    """A key as it appears in a message: plain names as they are, anything else quoted."""
    return k if isinstance(k, str) and _PLAIN_KEY.fullmatch(k) else quote(k)


def _one_line(s: str, limit: int = 200) -> str:
    s = " ".join(str(s).split())
    return s if len(s) <= limit else s[:limit - 3] + "..."


def _shown(p: Path) -> str:
    s = str(p)
    return s if len(s) <= 200 and s.isprintable() else quote(s)


# -- small typed readers ---------------------------------------------------------------------
def _check_keys(d: Any, allowed: set[str], where: str) -> dict:
    if not isinstance(d, dict):
        raise ConfigError(f"{where}: expected a mapping of keys, got {type(d).__name__}")
    unknown = sorted(k for k in d if k not in allowed)
    if unknown:
        raise ConfigError(f"{where}.{_key(unknown[0])}: unknown key; allowed keys are "
                          f"{', '.join(sorted(allowed))}")
    return d


def _section(d: dict, key: str) -> dict:
    """An optional mapping: absent or null means the defaults; anything else must be one."""
    v = d.get(key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise ConfigError(f"{key}: expected a mapping of keys (or nothing, for the defaults), "
                          f"got {type(v).__name__} {quote(v)}")
    return v


def _int(d: dict, key: str, where: str, default: int | None = None, minimum: int = 1,
         maximum: int = 2 ** 31 - 1, why: str = "") -> int:
    if key not in d:
        if default is None:
            raise ConfigError(f"{where}.{key}: required; give an integer from {minimum:,} to "
                              f"{maximum:,}")
        return default
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{where}.{key}: expected an integer from {minimum:,} to "
                          f"{maximum:,}, got {quote(v)}")
    if not minimum <= v <= maximum:
        raise ConfigError(f"{where}.{key}: must be from {minimum:,} to {maximum:,}"
                          f"{' (' + why + ')' if why else ''}, got {quote(v)}")
    return v


def _num(d: dict, key: str, where: str, default: float | None = None,
         positive: bool = True, maximum: float = MAX_SECONDS, minimum: float = 0.0,
         why: str = "") -> float:
    """A finite number in [minimum, maximum]; with `positive`, also > 0."""
    if key not in d:
        if default is None:
            raise ConfigError(f"{where}.{key}: required; give a number")
        return default
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError(f"{where}.{key}: expected a number, got {quote(v)}")
    try:
        f = float(v)
    except OverflowError:
        f = math.inf
    if not math.isfinite(f):
        raise ConfigError(f"{where}.{key}: expected a finite number, got {quote(v)}")
    low = max(minimum, 0.0)
    if (positive and not f > 0) or f < low or f > maximum:
        span = (f"from {_fmt(low)} to" if low > 0 or not positive else "> 0 and at most")
        raise ConfigError(f"{where}.{key}: must be {span} {_fmt(maximum)}"
                          f"{' (' + why + ')' if why else ''}, got {quote(v)}")
    return f


def _fmt(x: float) -> str:
    """1000000.0 -> '1,000,000'; 0.001 -> '0.001'."""
    return f"{x:,.0f}" if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _name(d: dict, key: str, where: str) -> str:
    """A name that becomes part of file names: letters, digits, '.', '_', '-'."""
    v = _str(d, key, where)
    if not NAME_RE.fullmatch(v):
        raise ConfigError(f"{where}.{key}: {quote(v)} must be 1-64 letters, digits, '.', '_' "
                          "or '-', starting with a letter or digit (it names files of the run)")
    return v


def _str(d: dict, key: str, where: str, default: str | None = None) -> str:
    if key not in d:
        if default is None:
            raise ConfigError(f"{where}.{key}: required; give a string")
        return default
    v = d[key]
    if not isinstance(v, str) or not v:
        raise ConfigError(f"{where}.{key}: expected a non-empty string, got {quote(v)}")
    return v


def _choice(d: dict, key: str, where: str, choices, default: str | None = None,
            hint: str = "") -> str:
    v = _str(d, key, where, default)
    if v not in choices:
        raise ConfigError(f"{where}.{key}: unknown {quote(v)}; choose from "
                          f"{', '.join(choices)}{hint}")
    return v


# -- sections --------------------------------------------------------------------------------
def _name_list(d: dict, key: str, where: str) -> list:
    v = d.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise ConfigError(f"{where}.{key}: expected a list, got {type(v).__name__} {quote(v)}")
    return v


def _rel_path(v: str, base_dir: str | Path | None) -> Path:
    """A relative path is looked up beside the config file first, then from the working
    directory (callers that parse a document without its file give no base_dir)."""
    p = Path(v)
    if p.is_absolute() or base_dir is None or not (Path(base_dir) / p).exists():
        return p
    return Path(base_dir) / p

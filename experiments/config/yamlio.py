"""Reading the YAML itself, safely: no anchors or aliases, no merge keys, no repeated or
non-string keys, bounded size and depth (the same rules for a file and a --set value).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

try:                                  # libyaml, when PyYAML was built with it
    from yaml._yaml import CParser
except ImportError:                   # pragma: no cover - the pure-Python PyYAML
    CParser = None

from .limits import MAX_CONFIG_BYTES, MAX_DEPTH
from .readers import ConfigError, quote, _key, _one_line, _shown


# -- the YAML itself -------------------------------------------------------------------------
class _Refused(yaml.MarkedYAMLError):
    """Valid YAML that a config may not contain (aliases, duplicate or non-string keys)."""


class _Rules:
    """What a config's loader refuses: anchors and aliases (no alias bombs), keys that are
    not strings, keys given twice in one mapping, merge keys, and nesting deeper than
    MAX_DEPTH (checked as the nodes are composed and constructed)."""

    _depth = 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise _Refused(problem="aliases (*name) are not allowed in a config; write the "
                                   "value out", problem_mark=event.start_mark)
        if getattr(event, "anchor", None) is not None:
            raise _Refused(problem="anchors (&name) are not allowed in a config; write the "
                                   "value out", problem_mark=event.start_mark)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(problem=f"nested more than {MAX_DEPTH} levels deep",
                               problem_mark=event.start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first: dict[str, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    raise _Refused(problem="merge keys (<<) are not allowed in a config",
                                   problem_mark=key_node.start_mark)
                key = self.construct_object(key_node, deep=True)
                if not isinstance(key, str):
                    raise _Refused(problem=f"key {quote(key)} is not a string; keys are names "
                                           "like spines or at_s",
                                   problem_mark=key_node.start_mark)
                if key in first:
                    raise _Refused(problem=f"key {_key(key)} is given twice in one mapping "
                                           f"(first on line {first[key].line + 1}); keep one",
                                   problem_mark=key_node.start_mark)
                first[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


def _plain_numbers() -> dict:
    """YAML 1.1's implicit types without its base-60 numbers (`1:30` read as 90) and its
    leading-zero octals (`010` read as 8): such a scalar stays text, so the key's check
    names it. Decimal, 0x, 0b, floats, .inf and .nan read as before."""
    drop = {"tag:yaml.org,2002:int": (r"|[-+]?0[0-7_]+", r"|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+"),
            "tag:yaml.org,2002:float": (r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*",)}
    out = {}
    for first, rules in Resolver.yaml_implicit_resolvers.items():
        kept = []
        for tag, rx in rules:
            if tag in drop:
                pattern = rx.pattern
                for alternative in drop[tag]:     # (tests/unit: 1:30 and 010 stay text)
                    pattern = pattern.replace(alternative, "")
                rx = re.compile(pattern, rx.flags)
            kept.append((tag, rx))
        out[first] = kept
    return out


_IMPLICIT = _plain_numbers()


class _Loader(_Rules, yaml.SafeLoader):
    """SafeLoader under the config's _Rules, all in Python: its errors are the ones shown."""

    yaml_implicit_resolvers = _IMPLICIT


if CParser is not None:
    class _FastLoader(_Rules, Composer, CParser, SafeConstructor, Resolver):
        """_Loader's nodes and data with libyaml's scanner and parser (CParser: its
        events); composed and constructed in Python as _Loader does, so the same rules
        apply at the same nodes."""

        yaml_implicit_resolvers = _IMPLICIT

        def __init__(self, text: str):
            CParser.__init__(self, text)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)


#: What sends a text to _Loader alone: besides non-ASCII and non-printable characters, those
#: around which libyaml accepts what PyYAML refuses (tabs, "|#", flow collections, tags,
#: complex keys: found by fuzzing the two). Block-style YAML, as configs at scale are
#: written (yaml.safe_dump), has none of them.
_PYTHON_ONLY = re.compile(r"[^\n -~]|[{}\[\]|>!%&*?@`]")


def _fast(text: str) -> tuple[bool, Any]:
    """(True, the document) when libyaml reads `text` (block style: no _PYTHON_ONLY
    character) without an error; (False, None) otherwise: then _Loader reads it, and its
    error is the one shown."""
    if CParser is None or _PYTHON_ONLY.search(text):
        return False, None
    loader = _FastLoader(text)
    try:
        return True, loader.get_single_data()
    except Exception:          # noqa: BLE001 - whatever it was, _Loader says it as before
        return False, None
    finally:
        loader.dispose()


def read_yaml(path: str | Path) -> Any:
    """The document of a config file; ConfigError (one line, `file:line:column: ...` for
    YAML problems) when it is missing, too big, not YAML, or uses what a config may not."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{_shown(p)}: no such config file")
    if not p.is_file():        # never opened: a FIFO would block, a device never end
        kind = "a folder" if p.is_dir() else "not a regular file (a FIFO, device or socket)"
        raise ConfigError(f"{_shown(p)}: {kind}; give a YAML config file")
    try:
        with p.open("rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"{_shown(p)}: cannot be read ({_one_line(e.strerror or e)})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{_shown(p)}: larger than {MAX_CONFIG_BYTES:,} bytes; a config is "
                          "a few kB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{_shown(p)}: not UTF-8 text (byte {e.start})") from None
    return yaml_value(text, _shown(p))


def yaml_value(text: str, where: str, marks: bool = True) -> Any:
    """`text` read by the config's loader (no anchors, aliases, merge keys, repeated or
    non-string keys, deep nesting); ConfigError starting with `where` (and, with `marks`,
    `:line:column`) when it cannot be."""
    done, doc = _fast(text)
    if done:
        return doc
    try:
        loader = _Loader(text)      # its reader refuses NUL and other control characters
    except yaml.YAMLError as e:
        raise ConfigError(f"{where}: not valid YAML ({_one_line(e)})") from None
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        at = f"{where}:{mark.line + 1}:{mark.column + 1}" if mark and marks else where
        what = "" if isinstance(e, _Refused) else "not valid YAML: "
        ctx = f" ({_one_line(e.context, 80)})" if e.context and not isinstance(e, _Refused) \
            else ""
        raise ConfigError(f"{at}: {what}{_one_line(e.problem or e)}{ctx}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{where}: not valid YAML ({_one_line(e)})") from None
    except RecursionError:
        raise ConfigError(f"{where}: nested too deeply") from None
    except (ValueError, OverflowError) as e:   # e.g. an integer of more than 4,300 digits
        raise ConfigError(f"{where}: a value cannot be read ({_one_line(e, 80)})") from None
    finally:
        loader.dispose()


def _check_tree(doc: Any) -> None:
    """Keys anywhere must be strings, nesting at most MAX_DEPTH deep (for documents that did
    not come through read_yaml). Each container is visited once, so shared ones cost nothing."""
    stack: list[tuple[Any, str, int]] = [(doc, "", 0)]
    seen: set[int] = set()
    while stack:
        v, where, depth = stack.pop()
        if not isinstance(v, (dict, list)) or id(v) in seen:
            continue
        seen.add(id(v))
        if depth > MAX_DEPTH:
            raise ConfigError(f"{where or 'config'}: nested more than {MAX_DEPTH} levels deep")
        if isinstance(v, dict):
            for k, x in v.items():
                if not isinstance(k, str):
                    raise ConfigError(f"{where or 'config'}: key {quote(k)} is not a string; "
                                      "keys are names like spines or at_s")
                stack.append((x, f"{where}.{_key(k)}" if where else _key(k), depth + 1))
        else:
            for i, x in enumerate(v):
                stack.append((x, f"{where}[{i}]", depth + 1))


#: A string the config's writer may hand to libyaml's emitter: printable ASCII without the
#: characters that make an emitter choose a quoting or folding style (the two emitters then
#: write the same text: checked against each other, tests/unit/experiments/test_yaml_fast.py).
_PLAIN = re.compile(r"[A-Za-z0-9_.:/+ -]{1,60}")


def config_text(doc: Any) -> str:
    """yaml.safe_dump(doc, sort_keys=False): through libyaml's emitter (4x faster on the
    8,192-GPU configs) when `doc` is a mapping whose every key and string is _PLAIN, else
    PyYAML's."""
    if CParser is not None and type(doc) is dict and doc and _plain(doc):
        return yaml.dump(doc, Dumper=yaml.CSafeDumper, sort_keys=False)
    return yaml.safe_dump(doc, sort_keys=False)


def _plain(doc: Any) -> bool:
    """Every dict, list, key and scalar in `doc` one _PLAIN string, an int, a float, a bool
    or None (each container visited once)."""
    stack, seen, match = [doc], set(), _PLAIN.fullmatch
    while stack:
        v = stack.pop()
        if type(v) in (dict, list):
            if id(v) in seen:
                return False              # shared: safe_dump writes an anchor
            seen.add(id(v))
            if type(v) is dict:
                if not all(type(k) is str and match(k) for k in v):
                    return False
                stack.extend(v.values())
            else:
                stack.extend(v)
        elif type(v) is str:
            if not match(v):
                return False
        elif type(v) not in (int, float, bool, type(None)):
            return False
    return True

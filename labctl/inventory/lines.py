"""Where each item of an inventory file is written, and problems said in the inventory's words.

:func:`line_map` walks the composed YAML once and records the 1-based line of every item (and
every mapping key written twice, which YAML would silently collapse); :func:`line_of` finds the
line of an item or of its nearest written ancestor; :func:`item_path` writes a location as
``servers[0].hardware.volumes[1]``. :func:`describe` turns a pydantic error into
``(what is wrong, how to fix it)`` without echoing a credential's input; :func:`one_line` keeps a
message quoting hostile input on one line. Used by :mod:`labctl.inventory.load` (parsing) and
:mod:`labctl.inventory.resolution` (cross-checks).
"""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any

import yaml
from pydantic import BaseModel

from labctl.inventory.model import SUPPORTED_POWER_KINDS, SUPPORTED_STORAGE_KINDS, InventorySpec

Loc = tuple[str | int, ...]

# Fields that hold credential references: their input is never echoed, in case it is a real secret.
_CREDENTIAL_FIELDS = frozenset({"password", "key_file"})


# --- YAML with line numbers -----------------------------------------------------------------------


def line_map(
    node: yaml.Node,
    loc: Loc,
    out: dict[Loc, int],
    dup_keys: list[tuple[Loc, int, int]],
    inside: frozenset[int] = frozenset(),
) -> None:
    """Record the 1-based line of every item; note mapping keys written twice (YAML keeps the last).

    An alias (``*name``) is the very node of its anchor, so an anchor can contain itself: ``inside``
    holds the nodes being walked, and the walk stops where one would repeat.
    """
    if id(node) in inside:
        return
    inside = inside | {id(node)}
    out[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        first_line: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value
            line = key_node.start_mark.line + 1
            if isinstance(key, str) and key in first_line:
                dup_keys.append(((*loc, key), line, first_line[key]))
            first_line.setdefault(key, line)
            line_map(value_node, (*loc, key), out, dup_keys, inside)
            # an error about a key's value points at the key's line, not at the value's first child
            out[(*loc, key)] = line
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            line_map(item, (*loc, i), out, dup_keys, inside)


def line_of(lines: dict[Loc, int], loc: Loc) -> int | None:
    """The line of ``loc``, or of its nearest written ancestor (a missing key has no line)."""
    for n in range(len(loc), -1, -1):
        if loc[:n] in lines:
            return lines[loc[:n]]
    return None


def item_path(loc: Loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


# --- pydantic errors as plain words ---------------------------------------------------------------


def _unwrap(tp: Any) -> Any:
    """From an annotation to the model class it holds (through Optional, tuple, dict, Annotated)."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(tp)[0])
    if origin in (tuple, list):
        return _unwrap(typing.get_args(tp)[0])
    if origin is dict:
        return ("dict", _unwrap(typing.get_args(tp)[1]))
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(tp):
            if arg is not type(None):
                return _unwrap(arg)
    return tp


def _fields_at(loc: Loc) -> list[str]:
    """The keys the spec allows at ``loc`` (for did-you-mean on unknown keys)."""
    current: Any = InventorySpec
    for part in loc:
        if isinstance(current, tuple) and current[0] == "dict":
            current = current[1]
            continue
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return []
        field = current.model_fields.get(part)
        if field is None:
            return []
        current = _unwrap(field.annotation)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


# pydantic error type -> (what the value should be, how to write it)
_EXPECTED: dict[str, tuple[str, str]] = {
    "int_type": ("a whole number", "write digits only, e.g. 4"),
    "int_parsing": ("a whole number", "write digits only, e.g. 4"),
    "int_from_float": ("a whole number", "drop the fraction"),
    "float_type": ("a number", "write e.g. 2.33, without units"),
    "float_parsing": ("a number", "write e.g. 2.33, without units"),
    "bool_type": ("true or false", "write true or false"),
    "bool_parsing": ("true or false", "write true or false"),
    "string_type": ("text", 'quote the value, e.g. "10"'),
    "tuple_type": ("a list", "write [a, b] or one '- item' per line"),
    "list_type": ("a list", "write [a, b] or one '- item' per line"),
    "model_type": ("a mapping", "write key: value lines indented under it, or {key: value}"),
    "model_attributes_type": ("a mapping", "write key: value lines indented under it, or {key: value}"),
    "dict_type": ("a mapping", "write key: value lines indented under it, or {key: value}"),
}


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    if value is None:
        return "nothing (an empty value)"
    return repr(value)


def describe(err: Any, loc: Loc) -> tuple[str, str]:
    """One pydantic error as (what is wrong, how to fix it), in the inventory's own words."""
    kind = err["type"]
    ctx = err.get("ctx") or {}
    field = str(loc[-1]) if loc and isinstance(loc[-1], str) else ""
    secret = field in _CREDENTIAL_FIELDS
    got = "" if secret else f", got {_shown(err.get('input'))}"
    if kind == "extra_forbidden":
        allowed = _fields_at(loc[:-1])
        close = difflib.get_close_matches(field, allowed, n=1)
        fix = f"did you mean {close[0]!r}?" if close else f"allowed keys: {', '.join(allowed)}"
        return f"unknown key {field!r}", fix
    if kind == "missing":
        return f"required key {field!r} is missing", f"add {field}:"
    if secret and kind in ("string_pattern_mismatch", "string_type"):
        return (
            "a credential must be a reference, not a value",
            "write env:VARIABLE_NAME, or secret:KEY for a key in the file that $LABCTL_SECRETS_FILE names",
        )
    if kind in _EXPECTED:
        what, fix = _EXPECTED[kind]
        return f"expected {what}{got}", fix
    if kind == "greater_than" and ctx.get("gt") == 0:
        return f"must be greater than zero{got}", "give a positive figure"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        bound = {
            "greater_than": f"greater than {ctx.get('gt')}",
            "greater_than_equal": f"at least {ctx.get('ge')}",
            "less_than": f"less than {ctx.get('lt')}",
            "less_than_equal": f"at most {ctx.get('le')}",
        }[kind]
        return f"must be {bound}{got}", f"give a value {bound}"
    if kind == "too_short":
        return "must not be empty", f"give at least {ctx.get('min_length', 1)} item(s)"
    if kind in ("enum", "literal_error"):
        if field == "kind" and loc and loc[0] == "storage":
            return (
                f"unsupported storage array kind {_shown(err.get('input'))}",
                f"supported kinds: {', '.join(SUPPORTED_STORAGE_KINDS)}",
            )
        if field == "power":
            return (
                f"unknown power backend {_shown(err.get('input'))}",
                f"use one of: {', '.join(SUPPORTED_POWER_KINDS)} (a new backend is a module in "
                "labctl/lab/power/ and a line in its registry)",
            )
        expected = str(ctx.get("expected", ""))
        choices = [c.strip(" '") for c in expected.replace(" or ", ", ").split(",") if c.strip()]
        close = difflib.get_close_matches(str(err.get("input")), choices, n=1)
        fix = f"did you mean {close[0]!r}?" if close else f"use one of {expected}"
        return f"{field or 'value'} {_shown(err.get('input'))} is not allowed", fix
    message = str(err["msg"])
    return f"{message[0].lower()}{message[1:]}{got}", "see hardware/sim-2007.yaml for a complete example"


def one_line(text: str) -> str:
    """A message quoting hostile input stays one line (repr already escapes; this is the rest)."""
    return text.replace("\r", " ").replace("\n", " ")

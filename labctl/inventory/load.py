"""Load `hardware/*.yaml` into a resolved :class:`Lab`, with errors that name file, line and item.

One run of `labctl inventory validate` reports every problem at once: :func:`read_inventory`
reads the file within the bounds of :mod:`~labctl.inventory.bounds` (size, encoding, nesting,
aliases, machine count: a file beyond them is one line, read no further), parses YAML
(remembering the line of every item), checks what types cannot express
(:mod:`~labctl.inventory.checks`: names, text, numbers, URLs, files, loopback) and type-checks
each item on its own (:mod:`~labctl.inventory.lenient`); :func:`resolve` then expands ranges and
checks what needs the whole lab (duplicates, unknown references, RAID geometry, which
configuration applies), skipping references to items whose own entry already failed.
"""

from __future__ import annotations

import difflib
import hashlib
import ipaddress
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml
from pydantic import BaseModel

from labctl.errors import InventoryError, Problem
from labctl.inventory import bounds, checks, fault_targets, lenient, placement, userfile, vdi_checks
from labctl.inventory.agents import Agents, resolve_agents
from labctl.inventory.model import (
    POWER_ENDPOINT,
    SUPPORTED_POWER_KINDS,
    SUPPORTED_STORAGE_KINDS,
    Configuration,
    Group,
    InventorySpec,
    Lab,
    Machine,
    MachineKind,
    MachineRole,
    Network,
    PowerKind,
    Share,
    StorageArray,
    VCenter,
)
from labctl.inventory.ranges import RangeError, expand_ips, expand_macs, expand_names, normalise_mac
from labctl.inventory.vdi_resolve import (
    STORAGE_URL_SCHEMES,
    VdiResolver,
    pool_groups,
    storage_with_volumes,
    vcenters_with_clusters,
)

Loc = tuple[str | int, ...]

# RAID level -> (rule the disk count must satisfy, how to say it)
_RAID_RULES: dict[int, tuple[typing.Callable[[int], bool], str]] = {
    0: (lambda n: n >= 1, "at least 1 disk"),
    1: (lambda n: n == 2, "exactly 2 disks"),
    5: (lambda n: n >= 3, "at least 3 disks"),
    6: (lambda n: n >= 4, "at least 4 disks"),
    10: (lambda n: n >= 4 and n % 2 == 0, "an even number of disks, at least 4"),
    50: (lambda n: n >= 6 and n % 2 == 0, "an even number of disks, at least 6"),
    60: (lambda n: n >= 8 and n % 2 == 0, "an even number of disks, at least 8"),
}

# Fields that hold credential references: their input is never echoed, in case it is a real secret.
_CREDENTIAL_FIELDS = frozenset({"password", "key_file"})


def default_lab_file() -> Path:
    """The simulated 2007 lab shipped with the project: the embedded default."""
    return Path(__file__).resolve().parents[2] / "hardware" / "sim-2007.yaml"


# --- YAML with line numbers -----------------------------------------------------------------------


def _line_map(
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
            _line_map(value_node, (*loc, key), out, dup_keys, inside)
            # an error about a key's value points at the key's line, not at the value's first child
            out[(*loc, key)] = line
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _line_map(item, (*loc, i), out, dup_keys, inside)


def _line_of(lines: dict[Loc, int], loc: Loc) -> int | None:
    """The line of ``loc``, or of its nearest written ancestor (a missing key has no line)."""
    for n in range(len(loc), -1, -1):
        if loc[:n] in lines:
            return lines[loc[:n]]
    return None


def _path(loc: Loc) -> str:
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


def _describe(err: Any, loc: Loc) -> tuple[str, str]:
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


# --- loading -------------------------------------------------------------------------------------


def display_path(path: str | Path) -> str:
    """A path as messages show it: relative to the working folder when inside it (shorter)."""
    path = Path(path)
    if path.is_absolute():
        try:
            return str(path.relative_to(Path.cwd()))
        except ValueError:
            pass
    return str(path)


@dataclass
class _Parsed:
    spec: InventorySpec
    lines: dict[Loc, int]
    shown: str
    raw: bytes
    problems: list[Problem]  # from the file's own items; resolve adds what needs the whole lab
    broken: frozenset[str]  # names of items that failed their types
    positions: dict[str, list[int]]  # the file's index of each list item the spec kept


def _fatal(shown: str, line: int | None, message: str, fix: str) -> InventoryError:
    return InventoryError([Problem(shown, line, "", message, fix)])


def _read_bytes(path: Path) -> bytes | bounds.Exceeded:
    """The file's bytes, or what is wrong with its size or type (reads at most one byte past the
    bound; a FIFO, a device or a socket is refused before it is read)."""
    try:
        return userfile.read_user_bytes(path, what="inventory", max_bytes=bounds.MAX_FILE_BYTES)
    except userfile.UserFileError as exc:
        if "larger than" in exc.message:
            return bounds.Exceeded(
                None,
                f"the file is larger than {bounds.MAX_FILE_BYTES // 2**20} MB",
                "describe machines with ranges such as name: pc-[001-500]; split the file or check what it holds",
            )
        if exc.message.endswith("is a folder"):
            return bounds.Exceeded(None, "is a folder", "name a .yaml file in it")
        return bounds.Exceeded(None, exc.message, exc.fix)


def _parse(path: str | Path) -> _Parsed:
    """Read within bounds, parse, check and type-check a file; raise only when it cannot be read
    as an inventory at all (missing, too big, not UTF-8, not YAML, beyond the bounds)."""
    p = Path(path)
    shown = display_path(p)
    try:
        got = _read_bytes(p)
    except FileNotFoundError:
        raise _fatal(
            shown,
            None,
            "file not found",
            "check the path, or give no file to use the default simulated lab hardware/sim-2007.yaml",
        ) from None
    except IsADirectoryError:
        raise _fatal(shown, None, "is a folder", "name a .yaml file in it") from None
    except OSError as exc:
        raise _fatal(shown, None, f"cannot read file: {exc.strerror}", "check its permissions") from None
    if isinstance(got, bounds.Exceeded):
        raise _fatal(shown, got.line, got.message, got.fix)
    raw = got
    text = bounds.decode(raw)
    if isinstance(text, bounds.Exceeded):
        raise _fatal(shown, text.line, text.message, text.fix)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: the same YAML, 5x faster
    exceeded = bounds.check_events(text, loader)
    if exceeded is not None:
        raise _fatal(shown, exceeded.line, exceeded.message, exceeded.fix)
    try:
        node = yaml.compose(text, Loader=loader)
        exceeded = bounds.check_aliases(node) if node is not None else None
        if exceeded is not None:
            raise _fatal(shown, exceeded.line, exceeded.message, exceeded.fix)
        lines: dict[Loc, int] = {}
        dup_keys: list[tuple[Loc, int, int]] = []
        if node is not None:  # before constructing: that merges `<<:` keys into the nodes
            _line_map(node, (), lines, dup_keys)
        data = yaml.SafeLoader("").construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context = getattr(exc, "context", None)
        context_mark = getattr(exc, "context_mark", None)
        if context and context_mark is not None and context_mark.line + 1 != line:
            problem += f", {context} at line {context_mark.line + 1}"
        raise _fatal(
            shown,
            line,
            f"YAML syntax error: {_one_line(problem)}",
            "check the indentation, brackets and quoting on this line and the one before",
        ) from None
    if not isinstance(data, dict) or node is None:
        raise _fatal(shown, 1, "the file is not a YAML mapping", "start with `lab:` and `networks:`")
    exceeded = bounds.check_machines(data)
    if exceeded is not None:
        raise _fatal(shown, exceeded.line, exceeded.message, exceeded.fix)
    problems = [
        Problem(
            shown,
            line,
            _path(loc),
            f"key {loc[-1]!r} is written twice",
            f"it is also at line {first}; YAML would silently keep only the last, so remove one",
        )
        for loc, line, first in dup_keys
    ]
    problems += _place(data, p, shown, lines)
    found = checks.screen(data, p.resolve().parent)
    typed = lenient.validate_spec(data)
    found += [
        checks.Finding(lenient.file_loc(f.loc, typed.positions), f.message, f.fix)
        for f in checks.screen_spec(typed.spec)
        if lenient.file_loc(f.loc, typed.positions) not in {g.loc for g in found}
    ]
    problems += [Problem(shown, _line_of(lines, f.loc), _path(f.loc), f.message, f.fix) for f in found]
    seen = {f.loc for f in found}
    for err in typed.errors:
        loc = tuple(err["loc"])
        if loc in seen:
            continue  # already said better by the checks (e.g. inf, where the type only says > 0)
        message, fix = _describe(err, loc)
        problems.append(Problem(shown, _line_of(lines, loc), _path(loc), _one_line(message), fix))
    return _Parsed(typed.spec, lines, shown, raw, problems, frozenset(typed.broken), typed.positions)


def _place(data: dict[str, Any], path: Path, shown: str, lines: dict[Loc, int]) -> list[Problem]:
    """``lab.loopback_block``: rewrite the 127.x addresses in ``data`` onto the block, in place."""
    lab = data.get("lab")
    setting = lab.get("loopback_block") if isinstance(lab, dict) else None
    if setting is None or not isinstance(lab, dict):
        return []
    loc: Loc = ("lab", "loopback_block")
    if lab.get("simulated") is not True:
        return [
            Problem(
                shown,
                _line_of(lines, loc),
                _path(loc),
                "loopback_block places a simulated lab; this lab is not simulated",
                "remove it, or set simulated: true",
            )
        ]
    try:
        block = placement.block_for(path, setting)
    except placement.PlacementError as exc:
        return [Problem(shown, _line_of(lines, loc), _path(loc), str(exc), exc.fix)]
    wide = placement.wide_subnets(data)
    if wide:
        return [
            Problem(
                shown,
                _line_of(lines, ("networks", i, "subnet")),
                _path(("networks", i, "subnet")),
                f"loopback_block cannot place subnet {subnet!r}: it is wider than one block",
                "give the main network a /16 or narrower subnet, the others /24 or narrower",
            )
            for i, subnet in wide
        ]
    if block is not None:
        placement.place(data, block)
        lab["loopback_block"] = block
    return []


def _one_line(text: str) -> str:
    """A message quoting hostile input stays one line (repr already escapes; this is the rest)."""
    return text.replace("\r", " ").replace("\n", " ")


def read_inventory(path: str | Path) -> tuple[InventorySpec, dict[Loc, int], str, bytes]:
    """Parse and type-check a file. Returns the spec, its line map, its display name and raw bytes."""
    parsed = _parse(path)
    if parsed.problems:
        raise InventoryError(sorted(parsed.problems, key=lambda p: p.line or 0))
    return parsed.spec, parsed.lines, parsed.shown, parsed.raw


def _resolved(
    parsed: _Parsed, configuration: str | None, *, every_machine: bool = False
) -> tuple[Lab | None, list[Problem]]:
    """Resolve what parsed, with the file's own problems in front: ``(lab or None, problems)``."""
    problems = list(parsed.problems)
    try:
        lab = resolve(
            parsed.spec,
            parsed.lines,
            parsed.shown,
            parsed.raw,
            configuration,
            every_machine=every_machine,
            broken=parsed.broken,
            positions=parsed.positions,
        )
    except InventoryError as exc:
        problems.extend(p for p in exc.problems if p not in problems)
        return None, problems
    return lab, problems


def load_lab(
    path: str | Path | None = None, configuration: str | None = None, *, every_machine: bool = False
) -> Lab:
    """Load, validate and resolve an inventory file into one configuration of the lab.

    ``every_machine`` keeps machines that only other configurations use (the simulator runs every
    box in the file, as a real lab has them all racked, whichever configuration is active).
    """
    file = Path(path or default_lab_file())
    lab, problems = _resolved(_parse(file), configuration, every_machine=every_machine)
    if problems or lab is None:
        raise InventoryError(sorted(problems, key=lambda p: p.line or 0))
    # absolute, so that whoever reads Lab.source_file (a subprocess, a run folder) can reopen it
    return lab.model_copy(update={"source_file": str(file.resolve())})


def validate_file(path: str | Path | None = None, configuration: str | None = None) -> Lab:
    """Like :func:`load_lab`, but also checks every other configuration the file declares.

    A problem that only shows in the HA configuration (say, a misspelt NAS volume) is found by
    `labctl inventory validate` before a nightly HA run trips over it.
    """
    file = Path(path or default_lab_file())
    parsed = _parse(file)
    problems: list[Problem] = []
    labs: list[Lab] = []
    others = [name for name in parsed.spec.configurations if name != configuration]
    for name in [configuration, *others]:  # the asked-for (or default) configuration first
        lab, found = _resolved(parsed, name)
        problems.extend(p for p in found if p not in problems)
        if lab is not None:
            labs.append(lab)
    if problems or not labs:
        raise InventoryError(sorted(problems, key=lambda p: p.line or 0))
    return labs[0].model_copy(update={"source_file": str(file.resolve())})


class _Collector:
    def __init__(self, file: str, lines: dict[Loc, int]):
        self.file = file
        self.lines = lines
        self.problems: list[Problem] = []
        self.broken: frozenset[str] = frozenset()  # names whose entry failed its types
        self.positions: dict[str, list[int]] = {}  # spec index -> file index, per list section

    def line(self, loc: Loc) -> int | None:
        return _line_of(self.lines, lenient.file_loc(loc, self.positions))

    def add(self, loc: Loc, message: str, fix: str = "") -> None:
        where = lenient.file_loc(loc, self.positions)
        problem = Problem(self.file, _line_of(self.lines, where), _path(where), _one_line(message), fix)
        if problem not in self.problems:
            self.problems.append(problem)


@dataclass
class _Declared:
    """A machine as declared, before configurations are applied."""

    machine: Machine
    loc: Loc  # the spec entry (a range declares many machines at one loc)
    present: bool  # in the configuration being resolved


def _did_you_mean(name: str, known: typing.Iterable[str], otherwise: str) -> str:
    by_lower = {k.lower(): k for k in known}  # 'HA' should suggest 'ha'
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1)
    return f"did you mean {by_lower[close[0]]!r}?" if close else otherwise


def _declare_hint(section: str, known: typing.Iterable[str]) -> str:
    names = ", ".join(known)
    return f"declare it under {section}:" + (f", or use one of: {names}" if names else "")


def resolve(
    spec: InventorySpec,
    lines: dict[Loc, int],
    shown: str,
    raw: bytes,
    configuration: str | None = None,
    *,
    every_machine: bool = False,
    broken: frozenset[str] = frozenset(),
    positions: dict[str, list[int]] | None = None,
) -> Lab:
    """Expand ranges, apply one configuration and check cross-references; raise every problem at once.

    ``broken``: names of items whose own entry failed to type-check (already reported): a
    reference to one of them is not reported again as unknown. ``positions``: the file's index
    of each list item ``spec`` kept (see :func:`labctl.inventory.lenient.file_loc`)."""
    c = _Collector(shown, lines)
    c.broken = broken
    c.positions = positions or {}
    networks = _networks(c, spec)

    config_names = tuple(spec.configurations)
    chosen = configuration or spec.default_configuration or (config_names[0] if config_names else None)
    choices = ", ".join(config_names) or "none declared"
    if configuration and configuration not in spec.configurations and configuration not in broken:
        c.add(
            ("configurations",),
            f"unknown configuration {configuration!r}",
            _did_you_mean(configuration, config_names, f"choose one of: {choices}"),
        )
        chosen = None
    if (
        spec.default_configuration
        and spec.default_configuration not in spec.configurations
        and spec.default_configuration not in broken
    ):
        c.add(
            ("default_configuration",),
            f"unknown configuration {spec.default_configuration!r}",
            _did_you_mean(spec.default_configuration, config_names, f"choose one of: {choices}"),
        )

    misspelt_configuration = False

    def in_config(wanted: tuple[str, ...], loc: Loc) -> bool:
        nonlocal misspelt_configuration
        for name in wanted:
            if name not in spec.configurations and name not in broken:
                misspelt_configuration = True
                c.add(
                    (*loc, "configurations"),
                    f"unknown configuration {name!r}",
                    _did_you_mean(name, config_names, _declare_hint("configurations", config_names)),
                )
        return every_machine or not wanted or chosen in wanted

    declared = _declare_machines(c, spec, networks, in_config)
    vdi = VdiResolver(spec, c.add) if spec.vdi is not None else None
    if vdi is not None:  # desktops are VMs of the lab, in every configuration
        declared.extend(_Declared(m, loc, True) for m, loc in vdi.desktops())
    everywhere: dict[str, Machine] = {}  # every machine of the file, whatever the configuration
    machines: dict[str, Machine] = {}  # those of the chosen configuration
    for d in declared:
        everywhere.setdefault(d.machine.name, d.machine)
        if d.present and d.machine.name not in machines:
            machines[d.machine.name] = d.machine
    _check_duplicates(c, declared)
    for i, net in enumerate(spec.networks):
        if net.wol_relay and net.wol_relay not in everywhere and net.wol_relay not in broken:
            c.add(
                ("networks", i, "wol_relay"),
                f"Wake-on-LAN relay {net.wol_relay!r} is not a machine of this file",
                _did_you_mean(net.wol_relay, everywhere, "name a machine on that subnet with ssh:"),
            )

    vcenters: dict[str, VCenter] = {}
    for i, vc in enumerate(spec.vcenters):
        if vc.name in vcenters:
            c.add(("vcenters", i, "name"), f"duplicate vCenter name {vc.name!r}", "rename one")
        _check_url(c, ("vcenters", i, "url"), vc.url)
        vcenters[vc.name] = vc
    for i, vs in enumerate(spec.vms):
        if vs.vcenter not in vcenters and vs.vcenter not in broken:
            c.add(
                ("vms", i, "vcenter"),
                f"unknown vCenter {vs.vcenter!r}",
                _did_you_mean(vs.vcenter, vcenters, _declare_hint("vcenters", vcenters)),
            )

    storage: dict[str, StorageArray] = {}
    for i, arr in enumerate(spec.storage):
        if arr.name in storage:
            c.add(("storage", i, "name"), f"duplicate storage array name {arr.name!r}", "rename one")
        _check_url(
            c, ("storage", i, "url"), arr.url, STORAGE_URL_SCHEMES.get(arr.kind.value, ("https", "http"))
        )
        storage[arr.name] = arr

    shares: dict[str, Share] = {}
    for i, sh in enumerate(spec.shares):
        loc: Loc = ("shares", i)
        if sh.name in shares:
            c.add((*loc, "name"), f"duplicate share name {sh.name!r}", "rename one")
        host = everywhere.get(sh.server)
        if (host is None and sh.server not in broken) or (
            host is not None and host.kind is not MachineKind.SERVER
        ):
            servers = [m.name for m in everywhere.values() if m.kind is MachineKind.SERVER]
            c.add(
                (*loc, "server"),
                f"share {sh.name!r} is on unknown server {sh.server!r}",
                _did_you_mean(sh.server, servers, "name a server from servers:"),
            )
        if not sh.unc.startswith("\\\\"):
            c.add((*loc, "unc"), f"malformed UNC path {sh.unc!r}", r"write \\server\share")
        shares[sh.name] = sh

    groups = _groups(c, spec, everywhere, machines)
    agents = _agents(c, spec, networks, everywhere, machines)
    # A machine that names a misspelt configuration is missing from the one it meant; what the
    # configuration then lacks is a consequence, not a second problem to report.
    config = _configuration(c, spec, None if misspelt_configuration else chosen, machines, shares)

    vdi_lab = vdi.finish(storage, [*everywhere, *groups]) if vdi is not None else None
    if vdi_lab is not None:
        vcenters = vcenters_with_clusters(vcenters, vdi_lab, c.add)
        storage = storage_with_volumes(storage, vdi_lab)
        groups = {**groups, **pool_groups(vdi_lab)}
    vdi_targets = [*vdi_lab.hosts, *vdi_lab.datastores] if vdi_lab is not None else []
    if spec.vdi is not None:
        endpoints = [
            *(("vCenter", vc.name, vc.url, ("vcenters", i)) for i, vc in enumerate(spec.vcenters)),
            *(("array", arr.name, arr.url, ("storage", i)) for i, arr in enumerate(spec.storage)),
        ]
        name_claims, ip_claims = vdi_checks.vdi_claims(
            spec.vdi, ((d.machine.name, d.machine.ip, d.loc) for d in declared), endpoints
        )
        vdi_checks.check_unique("name", name_claims, c.add)
        vdi_checks.check_unique("ip", ip_claims, c.add)

    for i, fault in enumerate(spec.lab.faults):
        for j, target in enumerate(fault.targets):
            floc: Loc = ("lab", "faults", i, "targets", j)
            try:
                names = expand_names(target)
            except RangeError as exc:
                c.add(floc, str(exc), exc.fix)
                continue
            known = [*everywhere, *storage, *vcenters, *vdi_targets]
            unknown = [n for n in names if n not in known and n not in broken]
            if unknown:
                c.add(
                    floc,
                    f"fault targets unknown item {unknown[0]!r}",
                    _did_you_mean(unknown[0], known, "name a machine, vCenter or storage array"),
                )

    if c.problems:
        raise InventoryError(sorted(c.problems, key=lambda p: p.line or 0))
    lab = Lab(
        name=spec.lab.name,
        description=spec.lab.description,
        source_file=shown,
        time_scale=spec.lab.time_scale,
        simulated=spec.lab.simulated,
        loopback_block=spec.lab.loopback_block if isinstance(spec.lab.loopback_block, int) else None,
        seed=spec.lab.seed,
        twin=spec.lab.twin,
        faults=spec.lab.faults,
        nightly=spec.lab.nightly,
        configuration=config,
        configurations=config_names,
        networks=networks,
        machines=machines,
        groups=groups,
        vcenters=vcenters,
        storage=storage,
        shares=shares,
        switches=spec.switches,
        inventory_sha256=hashlib.sha256(raw).hexdigest(),
        vdi=vdi_lab,
        agents=agents,
    )
    # each fault strikes a thing of its kind (a BMC fault on a client would never fire)
    whole = lab.model_copy(update={"machines": {**everywhere, **machines}})
    kinds = fault_targets.targets_by_kind(whole)
    known = [*everywhere, *storage, *vcenters, *vdi_targets]
    for i, fault in enumerate(spec.lab.faults):
        for j, target in enumerate(fault.targets):
            wrong = fault_targets.target_problem(fault.kind, target, kinds, known)
            if wrong is not None:
                c.add(("lab", "faults", i, "targets", j), *wrong)
    if c.problems:
        raise InventoryError(sorted(c.problems, key=lambda p: p.line or 0))
    return lab


def _agents(
    c: _Collector,
    spec: InventorySpec,
    networks: dict[str, Network],
    everywhere: dict[str, Machine],
    machines: dict[str, Machine],
) -> Agents | None:
    """Resolve ``agents:`` against every machine of the file and mark each machine of this
    configuration with the agent that serves it (in place in ``machines``)."""
    if spec.agents is None:
        return None

    def expand(entry: str) -> list[str]:
        try:
            return expand_names(entry)
        except RangeError as exc:
            raise ValueError(str(exc)) from None

    agents, served_by = resolve_agents(
        spec.agents,
        networks=networks,
        machines={n: (m.kind.value, m.network) for n, m in everywhere.items()},
        expand=expand,
        add=c.add,
    )
    for name, agent in served_by.items():
        if name in machines:
            machines[name] = machines[name].model_copy(update={"agent": agent})
    # an agent's list keeps only the machines of this configuration
    return agents.model_copy(
        update={
            "sites": {
                n: a.model_copy(update={"machines": tuple(m for m in a.machines if m in machines)})
                for n, a in agents.sites.items()
            }
        }
    )


def _networks(c: _Collector, spec: InventorySpec) -> dict[str, Network]:
    networks: dict[str, Network] = {}
    for i, net in enumerate(spec.networks):
        loc: Loc = ("networks", i)
        if net.name in networks:
            c.add((*loc, "name"), f"duplicate network name {net.name!r}", "give each network its own name")
        subnet: ipaddress.IPv4Network | ipaddress.IPv6Network | None
        try:
            subnet = ipaddress.ip_network(net.subnet, strict=False)
        except ValueError:
            c.add((*loc, "subnet"), f"malformed subnet {net.subnet!r}", "write CIDR, e.g. 10.0.0.0/24")
            subnet = None
        try:
            bcast = ipaddress.ip_address(net.broadcast)
            if subnet is not None and bcast not in subnet:
                c.add(
                    (*loc, "broadcast"),
                    f"broadcast {net.broadcast} is outside {net.subnet}",
                    f"use {subnet.broadcast_address}",
                )
        except ValueError:
            c.add((*loc, "broadcast"), f"malformed IP address {net.broadcast!r}", "write e.g. 10.0.0.255")
        networks[net.name] = net
    return networks


def _declare_machines(
    c: _Collector,
    spec: InventorySpec,
    networks: dict[str, Network],
    in_config: typing.Callable[[tuple[str, ...], Loc], bool],
) -> list[_Declared]:
    """Every machine the file declares, ranges expanded, with whether it is in the configuration."""
    out: list[_Declared] = []

    def check_network(name: str, loc: Loc, ips: list[str]) -> None:
        net = networks.get(name)
        if net is None:
            if name in c.broken:
                return
            c.add(
                (*loc, "network"),
                f"unknown network {name!r}",
                _did_you_mean(name, networks, _declare_hint("networks", networks)),
            )
            return
        try:
            subnet = ipaddress.ip_network(net.subnet, strict=False)
        except ValueError:
            return  # reported with the network
        outside = [ip for ip in ips if ipaddress.ip_address(ip) not in subnet]
        if outside:
            c.add(
                (*loc, "ip"),
                f"IP {outside[0]} is outside network {name!r} ({net.subnet})",
                "Wake-on-LAN and the lab's broadcasts would not reach it; fix the address or the network",
            )

    for i, cs in enumerate(spec.clients):
        loc: Loc = ("clients", i)
        try:
            names = expand_names(cs.name)
        except RangeError as exc:
            c.add((*loc, "name"), str(exc), exc.fix)
            continue
        # A bad MAC or IP range still declares its machines (without addresses), so groups that
        # name them do not add a second, misleading "unknown machine" line.
        macs: list[str | None] = [None] * len(names)
        ips: list[str | None] = [None] * len(names)
        try:
            macs = list(expand_macs(cs.mac, len(names)))
        except RangeError as exc:
            c.add((*loc, "mac"), str(exc), exc.fix)
        try:
            ips = list(expand_ips(cs.ip, len(names)))
        except RangeError as exc:
            c.add((*loc, "ip"), str(exc), exc.fix)
        check_network(cs.network, loc, [ip for ip in ips if ip])
        present = in_config(cs.configurations, loc)
        for name, mac, ip in zip(names, macs, ips, strict=True):
            m = Machine(
                name=name,
                kind=MachineKind.CLIENT,
                model=cs.model,
                os=cs.os,
                network=cs.network,
                mac=mac,
                ip=ip,
                ssh=cs.ssh,
                power=cs.power,
                tags=cs.tags,
                client_hardware=cs.hardware,
            )
            out.append(_Declared(m, loc, present))
        if names:
            _check_power_endpoint(c, loc, out[-1].machine)

    for i, ss in enumerate(spec.servers):
        loc = ("servers", i)
        server_mac: str | None = None
        server_ip: str | None = None
        if ss.mac:
            try:
                server_mac = normalise_mac(ss.mac)
            except RangeError as exc:
                c.add((*loc, "mac"), str(exc), exc.fix)
        try:
            server_ip = expand_ips(ss.ip, 1)[0]
        except RangeError as exc:
            c.add((*loc, "ip"), str(exc), exc.fix)
        check_network(ss.network, loc, [server_ip] if server_ip else [])
        if ss.bmc is not None:
            _check_url(c, (*loc, "bmc", "url"), ss.bmc.url)
        if ss.hardware is not None:
            for j, vol in enumerate(ss.hardware.volumes):
                ok, rule = _RAID_RULES[vol.raid]
                if not ok(vol.disks):
                    c.add(
                        (*loc, "hardware", "volumes", j, "disks"),
                        f"RAID {vol.raid} cannot be formed from {vol.disks} disk(s) on volume {vol.name!r}",
                        f"RAID {vol.raid} needs {rule}",
                    )
                if vol.disk_type in ("sas", "sata") and vol.rpm is None and vol.service_time_ms is None:
                    c.add(
                        (*loc, "hardware", "volumes", j),
                        f"rotational volume {vol.name!r} has neither rpm nor service_time_ms",
                        "add rpm: 10000, or service_time_ms:",
                    )
        m = Machine(
            name=ss.name,
            kind=MachineKind.SERVER,
            role=ss.role,
            model=ss.model,
            os=ss.os,
            network=ss.network,
            mac=server_mac,
            ip=server_ip,
            ssh=ss.ssh,
            bmc=ss.bmc,
            ipmi=ss.ipmi,
            power=ss.power,
            tags=ss.tags,
            server_hardware=ss.hardware,
        )
        _check_power_endpoint(c, loc, m)
        out.append(_Declared(m, loc, in_config(ss.configurations, loc)))

    for i, vs in enumerate(spec.vms):
        loc = ("vms", i)
        try:
            names = expand_names(vs.name)
        except RangeError as exc:
            c.add((*loc, "name"), str(exc), exc.fix)
            continue
        vm_ips: list[str | None] = [None] * len(names)
        if vs.ip:
            try:
                vm_ips = list(expand_ips(vs.ip, len(names)))
            except RangeError as exc:
                c.add((*loc, "ip"), str(exc), exc.fix)
        present = in_config(vs.configurations, loc)
        for name, vm_ip in zip(names, vm_ips, strict=True):
            m = Machine(
                name=name,
                kind=MachineKind.VM,
                ip=vm_ip,
                vcenter=vs.vcenter,
                vm_host=vs.host,
                power=vs.power,
                tags=vs.tags,
            )
            out.append(_Declared(m, loc, present))
        if names:
            _check_power_endpoint(c, loc, out[-1].machine)
    return out


def _check_power_endpoint(c: _Collector, loc: Loc, m: Machine) -> None:
    """A machine that names a power backend needing an endpoint (bmc:, ipmi:, vcenter:) gives it.

    Only an explicit ``power:`` is checked: a server without bmc: has always been allowed (it is
    then powered by hand, and a power action on it says so)."""
    if m.power is None:
        return
    if m.power is PowerKind.AGENT:
        c.add(
            (*loc, "power"),
            "power: agent is not written on a machine",
            "write the backend its agent runs (wol-ssh, redfish, ipmi, vcenter); the agent that "
            "serves it comes from the agents: section",
        )
        return
    need = POWER_ENDPOINT.get(m.power)
    if need is not None and getattr(m, need[0]) is None:
        c.add(
            (*loc, "power"),
            f"power: {m.power.value} needs the machine's {need[0]}: endpoint",
            f"add {need[1]}, or choose another power: backend",
        )


def _check_duplicates(c: _Collector, declared: list[_Declared]) -> None:
    """Duplicate names, MACs and IPs across the whole file, whatever the configuration.

    A real lab has every box racked at once, so two boxes may not share an address even if no
    configuration uses both. Overlapping ranges give one line per range, not one per machine.
    """
    for attr, what in (("name", "machine name"), ("mac", "MAC"), ("ip", "IP")):
        first: dict[str, _Declared] = {}
        clashes: dict[Loc, list[tuple[str, _Declared]]] = {}
        for d in declared:
            value = getattr(d.machine, attr)
            if value is None:
                continue
            if value in first:
                clashes.setdefault(d.loc, []).append((value, first[value]))
            else:
                first[value] = d
        for loc, found in clashes.items():
            value, other = found[0]
            where = c.line((*other.loc, attr))
            more = f" and {len(found) - 1} more of this range" if len(found) > 1 else ""
            if attr == "name":
                message = f"duplicate machine name {value!r}{more}"
                fix = f"already declared at line {where}; rename one"
            else:
                owner = next(
                    d.machine.name for d in declared if d.loc == loc and getattr(d.machine, attr) == value
                )
                message = f"duplicate {what} {value} on {owner!r}{more}"
                fix = f"{other.machine.name!r} at line {where} has it too; give each machine its own"
            c.add((*loc, attr), message, fix)


def _groups(
    c: _Collector, spec: InventorySpec, everywhere: dict[str, Machine], machines: dict[str, Machine]
) -> dict[str, Group]:
    """Resolve groups against every machine of the file, keep the members of this configuration.

    A group whose members all belong to another configuration (e.g. `ha-servers` while resolving
    `standalone`) is empty here but not wrong; a group no configuration can fill is.
    """
    groups: dict[str, Group] = {}
    for gname, gs in spec.groups.items():
        loc: Loc = ("groups", gname)
        if gname in everywhere:
            c.add(loc, f"group {gname!r} has the name of a machine", "rename the group")
        found: list[str] = []
        own_problem = False
        for j, entry in enumerate(gs.members):
            try:
                names = expand_names(entry)
            except RangeError as exc:
                c.add((*loc, "members", j), str(exc), exc.fix)
                own_problem = True
                continue
            unknown = [n for n in names if n not in everywhere and n not in c.broken]
            if unknown:
                c.add(
                    (*loc, "members", j),
                    f"group {gname!r} names unknown machine {unknown[0]!r}"
                    + (f" and {len(unknown) - 1} more" if len(unknown) > 1 else ""),
                    _did_you_mean(unknown[0], everywhere, "declare it or remove it from the group"),
                )
                own_problem = True
            found.extend(n for n in names if n in everywhere)
        if gs.tags or gs.kind:
            for m in everywhere.values():
                if gs.kind and m.kind.value != gs.kind:
                    continue
                if all(t in m.tags for t in gs.tags):
                    found.append(m.name)
        # an entry that failed its types may be what the group would have held
        maybe_broken = any(n in c.broken for n in _member_names(gs.members)) or (
            bool(c.broken) and bool(gs.tags or gs.kind)
        )
        if not found and not own_problem and not maybe_broken:
            selector = ", ".join(
                [f"tags {list(gs.tags)}"] * bool(gs.tags) + [f"kind {gs.kind}"] * bool(gs.kind)
            )
            c.add(
                loc,
                f"group {gname!r} is empty" + (f": no machine matches {selector}" if selector else ""),
                "list members: or tags: that match at least one machine",
            )
        members = tuple(dict.fromkeys(n for n in found if n in machines))  # dedupe, keep order
        groups[gname] = Group(name=gname, members=members, description=gs.description)
    return groups


def _configuration(
    c: _Collector,
    spec: InventorySpec,
    chosen: str | None,
    machines: dict[str, Machine],
    shares: dict[str, Share],
) -> Configuration | None:
    if chosen is None or chosen not in spec.configurations:
        return None
    cs = spec.configurations[chosen]
    loc: Loc = ("configurations", chosen)
    for j, s in enumerate(cs.streaming_servers):
        server = machines.get(s)
        if s in c.broken:
            continue
        if server is None or server.role is not MachineRole.STREAMING:
            c.add(
                (*loc, "streaming_servers", j),
                f"{s!r} is not a streaming server in configuration {chosen!r}",
                "name a server with role: streaming that this configuration includes",
            )
    vd = _server_volume(c, machines, (*loc, "vdisk_volume"), cs.vdisk_volume)
    wc = _server_volume(c, machines, (*loc, "write_cache_volume"), cs.write_cache_volume)
    share = None
    if cs.share is not None:
        share = shares.get(cs.share)
        if share is None and cs.share not in c.broken:
            c.add(
                (*loc, "share"),
                f"unknown share {cs.share!r}",
                _did_you_mean(cs.share, shares, _declare_hint("shares", shares)),
            )
    return Configuration(
        name=chosen,
        description=cs.description,
        streaming_servers=cs.streaming_servers,
        vdisk_server=vd[0],
        vdisk_volume=vd[1],
        write_cache_server=wc[0],
        write_cache_volume=wc[1],
        share=share,
    )


def _server_volume(c: _Collector, machines: dict[str, Machine], loc: Loc, ref: str) -> tuple[str, str]:
    server, _, volume = ref.partition(":")
    m = machines.get(server)
    if m is None and server in c.broken:
        return server, volume
    if m is None:
        c.add(
            loc,
            f"unknown server {server!r} in {ref!r}",
            "write server:volume with a server of this configuration",
        )
        return server, volume
    vols = [v.name for v in (m.server_hardware.volumes if m.server_hardware else ())]
    if volume not in vols:
        c.add(
            loc,
            f"server {server!r} has no volume {volume!r}",
            _did_you_mean(
                volume,
                vols,
                f"choose one of: {', '.join(vols)}" if vols else "describe its volumes under hardware:",
            ),
        )
    return server, volume


def _check_url(c: _Collector, loc: Loc, url: str, schemes: tuple[str, ...] = ("https", "http")) -> None:
    try:
        parsed = urlparse(url)
        ok = parsed.scheme in schemes and bool(parsed.hostname)
        _ = parsed.port  # raises on a bad port
    except ValueError:
        ok = False
    if not ok:
        c.add(loc, f"malformed URL {checks.redact_url(url)!r}", f"write {schemes[0]}://host[:port][/path]")


def _member_names(members: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for entry in members:
        try:
            out.extend(expand_names(entry))
        except RangeError:
            out.append(entry)
    return out

"""Load `hardware/*.yaml` into a resolved :class:`Lab`, with errors that name file, line and item.

One run of `labctl inventory validate` reports every problem at once: :func:`read_inventory`
reads the file within the bounds of :mod:`~labctl.inventory.bounds` (size, encoding, nesting,
aliases, machine count: a file beyond them is one line, read no further), parses YAML
(remembering the line of every item), checks what types cannot express
(:mod:`~labctl.inventory.checks`: names, text, numbers, URLs, files, loopback) and type-checks
each item on its own (:mod:`~labctl.inventory.lenient`); :func:`resolve` then expands ranges and
checks what needs the whole lab (duplicates, unknown references, RAID geometry, which
configuration applies), skipping references to items whose own entry already failed.

This module reads and parses (the file is opened through :mod:`~labctl.inventory.userfile`:
regular files only, bounded before reading); :mod:`~labctl.inventory.lines` maps items to lines
and words problems; :mod:`~labctl.inventory.resolution` resolves and cross-checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from labctl.errors import InventoryError, Problem
from labctl.inventory import bounds, checks, lenient, placement, userfile
from labctl.inventory.lines import Loc, describe, item_path, line_map, line_of, one_line
from labctl.inventory.model import InventorySpec, Lab
from labctl.inventory.resolution import resolve

__all__ = ["default_lab_file", "display_path", "load_lab", "read_inventory", "resolve", "validate_file"]


def default_lab_file() -> Path:
    """The simulated 2007 lab shipped with the project: the embedded default."""
    return Path(__file__).resolve().parents[2] / "hardware" / "sim-2007.yaml"


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
            line_map(node, (), lines, dup_keys)
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
            f"YAML syntax error: {one_line(problem)}",
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
            item_path(loc),
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
    problems += [Problem(shown, line_of(lines, f.loc), item_path(f.loc), f.message, f.fix) for f in found]
    seen = {f.loc for f in found}
    for err in typed.errors:
        loc = tuple(err["loc"])
        if loc in seen:
            continue  # already said better by the checks (e.g. inf, where the type only says > 0)
        message, fix = describe(err, loc)
        problems.append(Problem(shown, line_of(lines, loc), item_path(loc), one_line(message), fix))
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
                line_of(lines, loc),
                item_path(loc),
                "loopback_block places a simulated lab; this lab is not simulated",
                "remove it, or set simulated: true",
            )
        ]
    try:
        block = placement.block_for(path, setting)
    except placement.PlacementError as exc:
        return [Problem(shown, line_of(lines, loc), item_path(loc), str(exc), exc.fix)]
    wide = placement.wide_subnets(data)
    if wide:
        return [
            Problem(
                shown,
                line_of(lines, ("networks", i, "subnet")),
                item_path(("networks", i, "subnet")),
                f"loopback_block cannot place subnet {subnet!r}: it is wider than one block",
                "give the main network a /16 or narrower subnet, the others /24 or narrower",
            )
            for i, subnet in wide
        ]
    if block is not None:
        placement.place(data, block)
        lab["loopback_block"] = block
    return []


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

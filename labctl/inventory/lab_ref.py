"""A lab as a person names it on the command line: an inventory file or the lab's name.

    resolve_lab_file("sim-2007")                   # hardware/sim-2007.yaml (its `lab.name` is sim-2007)
    resolve_lab_file("hardware/my-lab.yaml")       # the file itself
    resolve_lab_name("hardware/sim-2007.yaml")     # "sim-2007" (the file's `lab.name`)
    resolve_lab_name("team-lab", known=["team-lab"])  # a name the results store has runs of

Commands that drive a lab need its file; those that read the results store (`runs`, `baseline`)
need its name. Either is accepted everywhere: a name is looked up among the inventories in
``hardware/`` by their ``lab.name`` field (``hardware/<name>.yaml`` first), a file is read for its
``lab.name``. An unknown name is refused in one line that lists the names there are.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from labctl.errors import BadInputError, LabctlError
from labctl.inventory.load import default_lab_file, display_path, read_inventory

HARDWARE_DIR = default_lab_file().parent


def looks_like_file(ref: str) -> bool:
    """Whether ``ref`` is written as a path (a folder in it, or a YAML suffix), not as a lab name."""
    return "/" in ref or "\\" in ref or ref.endswith((".yaml", ".yml")) or ref.startswith(".")


def _name_in(path: Path) -> str | None:
    try:
        return read_inventory(path)[0].lab.name
    except (LabctlError, OSError, AttributeError):
        return None


def lab_files(folder: Path = HARDWARE_DIR) -> dict[str, Path]:
    """Every lab name of the readable inventories in ``folder`` and its file (first one wins)."""
    out: dict[str, Path] = {}
    for path in sorted(folder.glob("*.y*ml")):
        name = _name_in(path)
        if name is not None:
            out.setdefault(name, path)
    return out


def file_of_lab(name: str, folder: Path = HARDWARE_DIR) -> Path | None:
    """The inventory in ``folder`` whose ``lab.name`` is ``name`` (``<name>.yaml`` is tried first)."""
    for suffix in (".yaml", ".yml"):
        guess = folder / f"{name}{suffix}"
        if guess.is_file() and _name_in(guess) == name:
            return guess
    return lab_files(folder).get(name)


def _unknown(ref: str, option: str, extra: Iterable[str] = ()) -> BadInputError:
    names = sorted({*lab_files(), *extra})
    return BadInputError(
        f"{option} {ref!r}: not an inventory file, and no lab of that name in "
        f"{display_path(HARDWARE_DIR)}/ (give an inventory file, or one of: {', '.join(names) or 'none'})"
    )


def resolve_lab_file(
    ref: str | Path | None, *, base: Path | None = None, option: str = "--lab"
) -> Path | None:
    """The inventory file ``ref`` names (None: the default lab). A path is returned as it is (a
    missing file is the loader's one-line problem); a lab name becomes its file in ``hardware/``."""
    if ref is None or str(ref) == "":
        return None
    text = str(ref)
    path = Path(text) if base is None or Path(text).is_absolute() else base / text
    if path.is_file() or looks_like_file(text):
        return path
    found = file_of_lab(text)
    if found is None:
        raise _unknown(text, option)
    return found


def resolve_lab_name(ref: str | None, *, known: Iterable[str] = (), option: str = "--lab") -> str | None:
    """The lab name ``ref`` stands for (None: none given). An inventory file gives its
    ``lab.name``; a name must be one of ``known`` (e.g. the labs the results store has runs of)
    or a lab of ``hardware/``."""
    if ref is None or ref == "":
        return None
    known = list(known)
    path = Path(ref)
    if path.is_file():
        return read_inventory(path)[0].lab.name
    if looks_like_file(ref):
        raise BadInputError(f"{option} {ref}: file not found (give an inventory file or a lab's name)")
    if ref in known or file_of_lab(ref) is not None:
        return ref
    raise _unknown(ref, option, known)

"""The field tables of ``results/README.md``, generated from the run-record models so the README
cannot drift from what labctl writes.

Each table sits between two marker comments in the README::

    <!-- fields: CellSummary -->
    | field | type | meaning |
    ...
    <!-- /fields: CellSummary -->

    python -m labctl.records.docs --write     # regenerate the tables in results/README.md
    python -m labctl.records.docs --check     # exit 1 (and say which) when they differ

Only the tables between markers are generated; the prose around them is written by hand. Every
model reachable from the files of a run folder (:data:`~labctl.records.run_record.RUN_FOLDER_FILES`)
has a table.
"""

from __future__ import annotations

import argparse
import re
import sys
import types
import typing
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from labctl.records import run_record

README = Path(__file__).resolve().parents[2] / "results" / "README.md"
COMMAND = "python -m labctl.records.docs --write"
_BLOCK = re.compile(r"(<!-- fields: (\w+) -->\n)(.*?)(<!-- /fields: \2 -->)", re.S)


def _is_model(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, BaseModel)


def _args(t: Any) -> tuple[Any, ...]:
    return typing.get_args(t)


def _is_union(t: Any) -> bool:
    return typing.get_origin(t) in (typing.Union, types.UnionType)


def type_text(t: Any) -> str:
    """A field's type in JSON words: ``number``, ``text or null``, ``list of Gap``, ``object``."""
    if t is type(None):
        return "null"
    if _is_union(t):
        parts = [type_text(a) for a in _args(t) if a is not type(None)]
        nullable = any(a is type(None) for a in _args(t))
        return " or ".join(parts) + (" or null" if nullable else "")
    origin = typing.get_origin(t)
    if origin in (list, tuple, set, frozenset):
        inner = [a for a in _args(t) if a is not Ellipsis]
        return "list of " + (type_text(inner[0]) if inner else "values")
    if origin is dict:
        key, value = _args(t) or (str, Any)
        return f"object: {type_text(key)} -> {type_text(value)}"
    if isinstance(t, type) and issubclass(t, Enum):
        return "one of " + ", ".join(f"`{m.value}`" for m in t)
    if _is_model(t):
        return f"[{t.__name__}](#{t.__name__.lower()})"
    return {str: "text", float: "number", int: "integer", bool: "true/false", Any: "any"}.get(t, str(t))


def _nested(t: Any) -> list[type[BaseModel]]:
    if _is_model(t):
        return [t]
    return [m for a in _args(t) for m in _nested(a)]


def models() -> list[type[BaseModel]]:
    """Every model of the run folder's files, depth first from each file's model, once each."""
    out: list[type[BaseModel]] = []

    def visit(m: type[BaseModel]) -> None:
        if m in out:
            return
        out.append(m)
        for f in m.model_fields.values():
            for n in _nested(f.annotation):
                visit(n)

    for m in run_record.RUN_FOLDER_FILES.values():
        visit(m)
    return out


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def table(model: type[BaseModel]) -> str:
    """The markdown table of one model's fields."""
    lines = ["| field | type | meaning |", "|---|---|---|"]
    for name, f in model.model_fields.items():
        required = f.is_required()
        meaning = f.description or ""
        if not required and f.default not in (None, "", [], {}) and not callable(f.default_factory):
            default = f.default.value if isinstance(f.default, Enum) else f.default
            default = str(default).lower() if isinstance(default, bool) else default
            meaning += f" (default `{default}`)"
        lines.append(f"| `{name}` | {_cell(type_text(f.annotation))} | {_cell(meaning)} |")
    return "\n".join(lines) + "\n"


def render(text: str) -> str:
    """``text`` with every marked table regenerated."""
    by_name = {m.__name__: m for m in models()}

    def sub(m: re.Match[str]) -> str:
        model = by_name.get(m.group(2))
        body = table(model) if model is not None else m.group(3)
        return m.group(1) + body + m.group(4)

    return _BLOCK.sub(sub, text)


def problems(text: str) -> list[str]:
    """What differs between the README ``text`` and the models: tables out of date, models
    without a table, tables of models that no longer exist."""
    out = []
    by_name = {m.__name__: m for m in models()}
    found = {m.group(2): m.group(3) for m in _BLOCK.finditer(text)}
    for name, body in found.items():
        if name not in by_name:
            out.append(f"a table for {name}, which is not a model of the run record (remove its markers)")
        elif body != table(by_name[name]):
            out.append(f"the table of {name} differs from the model's fields")
    for name in by_name:
        if name not in found:
            out.append(f"no table for {name} (add <!-- fields: {name} --> <!-- /fields: {name} --> markers)")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", action="store_true", help="regenerate the tables in the README")
    p.add_argument("--check", action="store_true", help="exit 1 when the README and the models differ")
    p.add_argument("--readme", type=Path, default=README)
    args = p.parse_args(argv)
    text = args.readme.read_text(encoding="utf-8")
    if args.write:
        new = render(text)
        if new != text:
            args.readme.write_text(new, encoding="utf-8")
        left = problems(new)
    else:
        left = problems(text)
    for line in left:
        print(f"{args.readme}: {line} (run `{COMMAND}`)", file=sys.stderr)
    if not args.write and not args.check:
        sys.stdout.write("".join(f"### {m.__name__}\n\n{table(m)}\n" for m in models()))
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())

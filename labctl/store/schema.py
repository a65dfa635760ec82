"""The store's schema, read from ``schema.sql`` (the one place it is written down, with the meaning
of every column) so both backends create, write and read exactly the same tables."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources

SCHEMA_VERSION = 1  # bump when a column changes meaning; new columns read as NULL in old rows

_CREATE = re.compile(r"CREATE TABLE IF NOT EXISTS (\w+) \((.*?)\n\);", re.S)
_COLUMN = re.compile(r"^\s{4}(\w+)\s+([A-Z][A-Z ]*?[A-Z])(\s+NOT NULL)?\s*,?\s*(--.*)?$")


@dataclass(frozen=True)
class Column:
    name: str
    sql_type: str  # TEXT, INTEGER, DOUBLE PRECISION, BOOLEAN, TIMESTAMP
    nullable: bool
    meaning: str


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


@functools.cache
def ddl() -> str:
    """The whole of ``schema.sql``."""
    return resources.files("labctl.store").joinpath("schema.sql").read_text(encoding="utf-8")


def statements(*, indexes: bool = True) -> list[str]:
    """The DDL's statements (comments dropped), tables first; ``indexes=False`` leaves out the
    CREATE INDEX ones."""
    text = "\n".join(line.split("--", 1)[0] for line in ddl().splitlines())
    out = [s.strip() for s in text.split(";") if s.strip()]
    return [s for s in out if indexes or not s.upper().startswith("CREATE INDEX")]


@functools.cache
def tables() -> dict[str, Table]:
    """Every table of the schema, columns in DDL order."""
    out: dict[str, Table] = {}
    for name, body in _CREATE.findall(ddl()):
        cols = []
        for line in body.splitlines():
            m = _COLUMN.match(line)
            if m and m.group(1) != "PRIMARY":
                meaning = (m.group(4) or "").lstrip("- ").strip()
                cols.append(Column(m.group(1), m.group(2).strip(), not m.group(3), meaning))
        out[name] = Table(name, tuple(cols))
    return out


def table(name: str) -> Table:
    return tables()[name]


# The tables that hold one run's rows (all but baselines), in the order a run is written.
RUN_TABLES = (
    "runs",
    "cells",
    "cell_parameters",
    "verdicts",
    "series_summaries",
    "client_outcomes",
    "group_actions",
    "cell_figures",
    "samples",
)
# Of those, the ones with one set of rows per cell (replaced whole when a cell is written again).
CELL_TABLES = RUN_TABLES[1:-1]

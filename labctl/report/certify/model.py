"""The certification document as data: sections of blocks (text, bullets, tables, figures,
formulas), the verdict and the executive summary. Built from run folders by
:mod:`labctl.report.certify.document`, written out by :mod:`~labctl.report.certify.html` (and from
that HTML by :mod:`~labctl.report.certify.pdf`). Nothing here knows HTML.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum


class Tone(StrEnum):
    """How a value or a verdict reads: its colour in the document."""

    OK = "ok"
    WARN = "warn"
    BAD = "bad"
    BROKEN = "int"  # interrupted, killed, error: not a measurement of the system
    NONE = ""


@dataclass(frozen=True)
class Cell:
    """One table cell: its text and how it reads (``num`` right-aligns)."""

    text: str
    tone: Tone = Tone.NONE
    num: bool = False


def cell(value: str | Cell) -> Cell:
    return value if isinstance(value, Cell) else Cell(value)


@dataclass(frozen=True)
class Text:
    text: str
    note: bool = False  # smaller, for a remark under a table or figure


@dataclass(frozen=True)
class Bullets:
    items: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    caption: str
    head: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    note: str = ""
    small: bool = False  # a long table of reference data (hashes, evidence): smaller type
    mono: tuple[int, ...] = ()  # columns in a fixed-width font (hashes, ids)

    @classmethod
    def of(
        cls,
        caption: str,
        head: Sequence[str],
        rows: Sequence[Sequence[str | Cell]],
        *,
        note: str = "",
        small: bool = False,
        mono: tuple[int, ...] = (),
    ) -> Table:
        """A table from plain strings and :class:`Cell` s."""
        return cls(caption, tuple(head), tuple(tuple(cell(c) for c in r) for r in rows), note, small, mono)


@dataclass(frozen=True)
class Figure:
    svg: str  # an inline SVG element, ids of its own (labctl.report.charts.svg)
    caption: str
    wide: bool = False  # many groups side by side: a landscape page of its own


@dataclass(frozen=True)
class Formula:
    """Sizing arithmetic as the calculators print it: the formula, then the numbers."""

    lines: tuple[str, ...]
    caption: str = ""


@dataclass(frozen=True)
class Callout:
    """A boxed statement: the verdict on the first page."""

    title: str
    text: str
    tone: Tone


Block = Text | Bullets | Table | Figure | Formula | Callout


@dataclass
class Section:
    title: str
    blocks: list[Block] = field(default_factory=list)
    children: list[Section] = field(default_factory=list)

    @property
    def key(self) -> str:
        """An anchor from the title (numbering makes it unique: see :func:`number`)."""
        return re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-") or "section"

    def empty(self) -> bool:
        return not self.blocks and all(c.empty() for c in self.children)


class Status(StrEnum):
    CERTIFIED = "certified"
    OBSERVATIONS = "certified with observations"
    NOT_CERTIFIED = "not certified"

    @property
    def tone(self) -> Tone:
        return {Status.CERTIFIED: Tone.OK, Status.OBSERVATIONS: Tone.WARN}.get(self, Tone.BAD)


@dataclass(frozen=True)
class Verdict:
    status: Status
    headline: str  # one sentence: the status and, when not certified, the first reason
    reasons: tuple[str, ...] = ()  # why it is not certified, one line each
    observations: tuple[str, ...] = ()  # marginal results and remarks that do not fail it


@dataclass
class Document:
    title: str
    subtitle: str
    date: str  # ISO date; the only thing that differs between two certifications of the same runs
    customer: str | None
    verdict: Verdict
    summary: list[Block]  # the executive summary, on the first page after the verdict
    sections: list[Section]
    appendices: list[Section]
    simulated: bool
    runs: tuple[str, ...]


def numbered(doc: Document) -> list[tuple[str, int, Section]]:
    """Every section with its number (``2.1``; appendices ``A``, ``A.1``) and depth, in order."""
    out: list[tuple[str, int, Section]] = []

    def walk(sections: list[Section], prefix: str, depth: int, letters: bool) -> None:
        for i, s in enumerate(s for s in sections if not s.empty()):
            mark = chr(ord("A") + i) if letters else str(i + 1)
            num = f"{prefix}.{mark}" if prefix else mark
            out.append((num, depth, s))
            walk(s.children, num, depth + 1, False)

    walk(doc.sections, "", 1, False)
    walk(doc.appendices, "", 1, True)
    return out

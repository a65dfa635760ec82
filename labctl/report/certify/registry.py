"""Sections per scenario kind: a small registry, so a new kind of run is one module added.

A kind (:class:`Kind`) picks the cells it speaks about and gives, for them: its part of the
method, a results section (tables, the paper-style figures, the criteria matrix), findings in
plain sentences, the one-sentence conclusion of the executive summary, and sizing blocks. Cells
no kind picks are shown by :mod:`~labctl.report.certify.kinds.other` (a table and the criteria
matrix), and they count in the verdict like every cell.

The kinds are in :mod:`labctl.report.certify.kinds`: ``boot_storm``, ``copy_reboot``,
``ha_comparison`` (2007) and ``vdi`` (``vdi_storm``, ``scale_out``, ``write_cache_modes``). A new
kind is a module with a :class:`Kind` subclass and a ``register(...)`` call, named in
:data:`KIND_MODULES`.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from labctl.report.certify.model import Block, Section
from labctl.report.run_view import CellView

if TYPE_CHECKING:
    from labctl.report.certify.inputs import Inputs
    from labctl.report.certify.model import Verdict

# The kinds' modules, in the order their sections appear.
KIND_MODULES = (
    "labctl.report.certify.kinds.boot_storm",
    "labctl.report.certify.kinds.copy_reboot",
    "labctl.report.certify.kinds.ha_comparison",
    "labctl.report.certify.kinds.vdi",
)


@dataclass
class Context:
    """What every kind may read: the runs and the verdict."""

    inputs: Inputs
    verdict: Verdict


class Kind:
    """A kind of cell (a scenario) and its parts of the document. Subclasses override what they have."""

    key = ""  # e.g. "boot_storm"
    title = ""  # e.g. "Boot storm"

    def select(self, cells: Sequence[CellView]) -> list[CellView]:
        """The cells this kind speaks about (default: those whose scenario is :attr:`key`)."""
        return [c for c in cells if c.summary.scenario == self.key]

    def owns(self, c: CellView) -> bool:
        """Whether the cell is this kind's own (a cell nobody owns goes to the "other" section)."""
        return c.summary.scenario == self.key

    def method(self, ctx: Context, cells: Sequence[CellView]) -> list[Block]:
        return []

    def results(self, ctx: Context, cells: Sequence[CellView]) -> Section | None:
        return None

    def findings(self, ctx: Context, cells: Sequence[CellView]) -> list[str]:
        return []

    def conclusion(self, ctx: Context, cells: Sequence[CellView]) -> list[str]:
        """Sentences for the executive summary, one per configuration: what it supports, as measured
        ("this configuration supports N desktops of profile P with storage latency under X ms")."""
        return []

    def sizing(self, ctx: Context, cells: Sequence[CellView]) -> list[Section]:
        return []


_KINDS: list[Kind] = []
_loaded = False


def register(kind: Kind) -> Kind:
    """Add a kind (its module calls this when imported); a second kind with the same key replaces it."""
    for i, k in enumerate(_KINDS):
        if k.key == kind.key:
            _KINDS[i] = kind
            return kind
    _KINDS.append(kind)
    return kind


def kinds() -> list[Kind]:
    """Every registered kind, the built-in modules imported first, in :data:`KIND_MODULES` order."""
    global _loaded
    if not _loaded:
        for name in KIND_MODULES:
            importlib.import_module(name)
        _loaded = True
    order = {m.rsplit(".", 1)[1]: i for i, m in enumerate(KIND_MODULES)}
    return sorted(_KINDS, key=lambda k: order.get(k.key, len(order)))

"""The report's figures (:mod:`labctl.report.figures_storm`, :mod:`~labctl.report.figures_matrix`,
:mod:`~labctl.report.ha_comparison`: the same charts as the figures page, not drawn again) as
sections of the document."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from labctl.report.certify.common import words
from labctl.report.certify.model import Figure, Section, Text
from labctl.report.timelines import Fig
from labctl.report.timelines import Section as FigSection


def figure(f: Fig) -> Figure:
    """A chart of the figures page; its caption's criteria expressions in words."""
    return Figure(f.svg, words(f.caption), f.wide)


def server_title(prefix: str) -> Callable[[str], str]:
    """Titles of the figures page's sections as the document's: ``Boot storm: client experience`` ->
    ``Client experience``; ``Boot storm: pvs-01 (streaming server), ha`` -> ``Server utilisation:
    pvs-01 (streaming server), ha`` (a machine's name keeps its case)."""

    def rename(title: str) -> str:
        rest = title.removeprefix(prefix)
        if rest.startswith("client experience"):
            return rest[:1].upper() + rest[1:]
        return f"Server utilisation: {rest}"  # every other section of the figures page is a server's

    return rename


def sections_as_blocks(sections: Sequence[FigSection], rename: Callable[[str], str]) -> list[Section]:
    """Each figures-page section as a document section: its intro, then its figures."""
    return [Section(rename(s.title), [Text(s.intro), *(figure(f) for f in s.figures)]) for s in sections]

"""The report's figures (:mod:`labctl.report.figures_storm`, :mod:`~labctl.report.figures_matrix`,
:mod:`~labctl.report.ha_comparison`: the same charts as the figures page, not drawn again) as
sections of the document.

The figures page shows every machine the lab sampled; a customer reads only about the configuration
under test. So a server section is kept when the server is part of it (:func:`machines_under_test`),
and a chart with nothing recorded becomes one sentence instead of an empty frame.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from labctl.report.certify.common import words
from labctl.report.certify.inputs import Inputs
from labctl.report.certify.model import Block, Figure, Section, Text
from labctl.report.run_view import CellView
from labctl.report.timelines import Fig
from labctl.report.timelines import Section as FigSection

NOT_RECORDED = ": not recorded in this run."  # the end of the caption of a chart with no line


def figure(f: Fig) -> Figure:
    """A chart of the figures page; its caption's criteria expressions in words."""
    return Figure(f.svg, words(f.caption), f.wide)


def machines_under_test(inputs: Inputs, cells: Sequence[CellView]) -> set[str]:
    """The machines of the configuration under test: those the cells name (streaming server, write-cache
    volume's host, share server), those a criterion judged, and the configuration's roles in the lab as
    each run resolved it. Not: other machines the lab happens to sample (a vCenter's hosts)."""
    names = {value.split("/", 1)[0] for c in cells for value in c.entities.values() if value}
    for c in cells:
        for v in c.verdict.criteria if c.verdict is not None else []:
            names.update(r.entity.split("/", 1)[0] for r in v.series if r.entity)
    for r in inputs.runs:
        for lab in r.labs.values():
            cfg = (lab.data.get("configuration") or {}) if lab is not None else {}
            names.update(cfg.get("streaming_servers") or [])
            names.update(str(cfg[k]) for k in ("vdisk_server", "write_cache_server") if cfg.get(k))
            share = cfg.get("share") or {}
            if share.get("server"):
                names.add(str(share["server"]))
    return names


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


def _server(title: str) -> str | None:
    """The machine a renamed server section is about (``Server utilisation: pvs-01 (...), ha``)."""
    rest = title.removeprefix("Server utilisation: ")
    return None if rest == title else rest.split(" ", 1)[0].split(",", 1)[0]


def _blocks(s: FigSection) -> list[Block]:
    shown = [f for f in s.figures if not f.caption.endswith(NOT_RECORDED)]
    missing = [f.caption.removesuffix(NOT_RECORDED) for f in s.figures if f.caption.endswith(NOT_RECORDED)]
    blocks: list[Block] = [Text(words(s.intro)), *(figure(f) for f in shown)]
    if missing:
        blocks.append(Text(f"Not recorded in these runs, so not shown: {'; '.join(missing)}."))
    return blocks


def sections_as_blocks(
    sections: Sequence[FigSection], rename: Callable[[str], str], under_test: set[str] | None = None
) -> list[Section]:
    """Each figures-page section as a document section: its intro, then its figures (those with
    something recorded). With ``under_test``, a server section about another machine is left out."""
    out = []
    for s in sections:
        title = rename(s.title)
        server = _server(title)
        if under_test is not None and server is not None and server not in under_test:
            continue
        if s.figures and all(f.caption.endswith(NOT_RECORDED) for f in s.figures):
            continue  # nothing of this machine was recorded: no section of empty frames
        out.append(Section(title, _blocks(s)))
    return out

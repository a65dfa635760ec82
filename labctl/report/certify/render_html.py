"""The certification document as one standalone HTML file (inline SVG figures, the style inline, no
external reference), laid out for print: WeasyPrint makes the PDF from this same HTML
(:mod:`labctl.report.certify.pdf`). The style (``style.css`` beside this module) gives the pages
their numbers, the contents their page numbers, landscape pages to wide figures, and keeps
figures and table rows whole and headings with what follows them.
"""

from __future__ import annotations

import html
from importlib import resources

from labctl import __version__
from labctl.report.certify.model import (
    Block,
    Bullets,
    Callout,
    Document,
    Figure,
    Formula,
    Section,
    Table,
    Text,
    numbered,
)

CSS = resources.files("labctl.report.certify").joinpath("style.css").read_text(encoding="utf-8")


def esc(text: str) -> str:
    return html.escape(text, quote=True)


def _table(t: Table) -> str:
    cls = "small" if t.small else ""
    head = "".join(f"<th>{esc(h)}</th>" for h in t.head)
    body = []
    for row in t.rows:
        tds = []
        for i, c in enumerate(row):
            classes = " ".join(
                x
                for x in (
                    c.tone.value and f"t-{c.tone.value}",
                    "num" if c.num else "",
                    "mono" if i in t.mono else "",
                )
                if x
            )
            tds.append(f'<td class="{classes}">{esc(c.text)}</td>' if classes else f"<td>{esc(c.text)}</td>")
        body.append("<tr>" + "".join(tds) + "</tr>")
    note = f'<p class="note">{esc(t.note)}</p>' if t.note else ""
    return (
        f'<div class="table {cls}"><table><caption>{esc(t.caption)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{note}</div>"
    )


def block(b: Block) -> str:
    if isinstance(b, Text):
        return f'<p class="note">{esc(b.text)}</p>' if b.note else f"<p>{esc(b.text)}</p>"
    if isinstance(b, Bullets):
        return "<ul>" + "".join(f"<li>{esc(i)}</li>" for i in b.items) + "</ul>"
    if isinstance(b, Table):
        return _table(b)
    if isinstance(b, Figure):
        cls = ' class="wide"' if b.wide else ""
        return f"<figure{cls}>{b.svg}<figcaption>{esc(b.caption)}</figcaption></figure>"
    if isinstance(b, Formula):
        cap = f"<figcaption>{esc(b.caption)}</figcaption>" if b.caption else ""
        return f'<figure class="formula"><pre>{esc(chr(10).join(b.lines))}</pre>{cap}</figure>'
    if isinstance(b, Callout):
        return (
            f'<div class="verdict t-{b.tone.value}"><p class="status">{esc(b.title)}</p>'
            f"<p>{esc(b.text)}</p></div>"
        )
    raise TypeError(f"not a block: {type(b).__name__}")


KEEP_ROWS = 12  # a table this short stays on the page of its heading


def _blocks(blocks: list[Block]) -> str:
    """A section's blocks; the ``keep`` opened with its heading closes after the leading paragraphs
    and the first figure, formula or short table."""
    out = []
    i = 0
    while i < len(blocks) and isinstance(blocks[i], Text | Bullets):
        out.append(block(blocks[i]))
        i += 1
    if i < len(blocks):
        b = blocks[i]
        if isinstance(b, Figure | Formula | Callout) or (isinstance(b, Table) and len(b.rows) <= KEEP_ROWS):
            out.append(block(b))
            i += 1
    out.append("</div>")
    out.extend(block(b) for b in blocks[i:])
    return "".join(out)


def _anchor(num: str) -> str:
    return "s-" + num.replace(".", "-")


def _sections(doc: Document) -> tuple[str, str]:
    toc = []
    body = []
    index = {id(s): (num, depth) for num, depth, s in numbered(doc)}

    def emit(s: Section) -> None:
        if id(s) not in index:
            return
        num, depth = index[id(s)]
        tag = f"h{min(depth + 1, 5)}"
        appendix = num[0].isalpha()
        shown = f"Appendix {num}" if appendix and depth == 1 else num
        if depth <= 2:
            toc.append(
                f'<li class="l{depth}"><a href="#{_anchor(num)}">'
                f'<span class="n">{esc(shown)}</span> {esc(s.title)}</a></li>'
            )
        first = f' class="chapter{" appendix" if appendix else ""}"' if depth == 1 else ""
        # a heading with only a sentence or two before its subsections stays with the first of them
        lead = " lead" if s.children and all(isinstance(b, Text | Bullets) for b in s.blocks) else ""
        # the heading stays with its introduction and the first figure or table: never alone at a page's foot
        body.append(
            f'<section id="{_anchor(num)}"{first}><div class="keep{lead}"><{tag}><span class="n">{esc(shown)}</span> '
            f"{esc(s.title)}</{tag}>"
        )
        body.append(_blocks(s.blocks))
        for child in s.children:
            emit(child)
        body.append("</section>")

    for s in [*doc.sections, *doc.appendices]:
        emit(s)
    return "".join(toc), "\n".join(body)


def render(doc: Document) -> str:
    """The whole document as an HTML string (UTF-8); the same ``doc`` always gives the same string."""
    toc, body = _sections(doc)
    meta = [("Date", doc.date)]
    if doc.customer:
        meta.insert(0, ("Prepared for", doc.customer))
    meta.append(("Runs", ", ".join(doc.runs)))
    meta.append(("Produced by", f"labctl {__version__}, from the run folders only"))
    meta_rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in meta)
    sim = (
        '<p class="simulated">Measured on a simulated lab: the endpoints were simulators driven by a model of '
        "the hardware, not the hardware itself.</p>"
        if doc.simulated
        else ""
    )
    summary = "".join(block(b) for b in doc.summary)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(doc.title)}</title>"
        f'<meta name="dcterms.created" content="{esc(doc.date)}">'
        f'<meta name="generator" content="labctl {esc(__version__)}">'
        f'<meta name="description" content="{esc(doc.verdict.headline)}">'
        f"<style>{CSS}</style></head><body>\n"
        f'<section class="cover"><p class="kicker">{esc(doc.subtitle)}</p>'
        f'<h1 class="title">{esc(doc.title)}</h1>'
        f'<table class="meta">{meta_rows}</table>{sim}'
        f'<h2 class="summary">Executive summary</h2>{summary}</section>\n'
        f'<nav class="toc"><h2>Contents</h2><ol>{toc}</ol></nav>\n'
        f"<main>\n{body}\n</main>\n"
        "</body></html>\n"
    )

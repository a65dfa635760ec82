"""The certification's PDF, made by WeasyPrint from the same HTML (:mod:`~labctl.report.certify.render_html`).

Why WeasyPrint: a maintained Python library (pinned in ``pyproject.toml`` / ``constraints.txt``)
that implements CSS paged media: page numbers and running headers, a table of contents with page
numbers (``target-counter``), named landscape pages, ``break-inside: avoid``, and the fonts it uses
embedded as subsets. It needs Pango and HarfBuzz from the system (``make install`` installs
Debian's ``libpango-1.0-0 libpangoft2-1.0-0 fonts-dejavu-core`` when they are missing). Its output
has no random ids, and its creation date comes from the HTML's ``dcterms.created``: the same HTML
gives the same bytes.
"""

from __future__ import annotations

import logging
from pathlib import Path

from labctl.errors import LabctlError

INSTALL_HINT = "run `make install` (it installs WeasyPrint and the system's Pango libraries and fonts)"


class PdfToolMissing(LabctlError):
    """WeasyPrint or the system libraries it loads are not installed."""


def write_pdf(html_text: str, target: Path) -> Path:
    """Render ``html_text`` (a whole document, no external references) to ``target``, atomically."""
    try:
        # heavy, and loads Pango through cffi: only when a PDF is asked for
        import weasyprint
    except ImportError as exc:
        raise PdfToolMissing(
            f"cannot make the PDF: WeasyPrint is not installed ({exc}); {INSTALL_HINT}"
        ) from None
    except OSError as exc:  # cffi could not load libpango / libgobject
        raise PdfToolMissing(
            f"cannot make the PDF: a system library is missing ({exc}); {INSTALL_HINT}"
        ) from None
    # WeasyPrint reports CSS it ignores at WARNING: the document's style is fixed, so that is noise
    logging.getLogger("weasyprint").setLevel(logging.ERROR)
    logging.getLogger("fontTools").setLevel(logging.ERROR)
    tmp = target.with_name(target.name + ".tmp")
    weasyprint.HTML(string=html_text, base_url=str(target.parent)).write_pdf(tmp)
    tmp.replace(target)
    return target

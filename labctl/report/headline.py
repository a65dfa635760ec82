"""The response-time index's headline, as VSImax is read: one pure function the terminal, ``labctl
runs``, ``labctl compare``, the figures page and the certificate share, so they say the same words.

``saturated at 412 sessions (baseline 1.20 s); 530 of 630 desktops good`` or ``not saturated up to
630 sessions (baseline 1.20 s); 630 of 630 desktops good``. The numbers are the cell summary's
``response_index`` (:class:`~labctl.records.run_record.ResponseIndex`); nothing is recomputed.

Desktops whose sessions could not be read to the end (their launcher stopped answering) are in no
band and said apart: ``...; 2 of 2 desktops good (100 %); 1 not measured from 312 s (launcher
vsi-01 unreadable)``; when none was rated, ``index not judged: sessions unreadable from 312 s
(launcher vsi-01 unreadable)``. A desktop not measured is never counted good.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from labctl.records.figures import Figure
from labctl.records.run_record import ResponseIndex


@dataclass(frozen=True)
class IndexHeadline:
    """The index's reading, with its words (:attr:`text`) and the numbers behind them."""

    saturated: bool
    sessions: int  # the saturation point when saturated, else the most sessions carried
    baseline_s: float | None
    good: int
    desktops: int  # good + fair + poor
    unmeasured: int = 0  # desktops whose sessions could not be read to the end: in no band
    unmeasured_from_s: float | None = None  # lab s after the storm's start
    unmeasured_why: str = ""  # `launcher vsi-01 unreadable`

    @property
    def good_share(self) -> float | None:
        return self.good / self.desktops if self.desktops else None

    @property
    def load(self) -> str:
        """``saturated at 412 sessions`` / ``not saturated up to 630 sessions``."""
        n = f"{self.sessions} session{'s' if self.sessions != 1 else ''}"
        return f"saturated at {n}" if self.saturated else f"not saturated up to {n}"

    @property
    def good_text(self) -> str:
        """``530 of 630 desktops good (84 %)``; empty when no desktop was rated."""
        if not self.desktops:
            return ""
        pct = 100.0 * self.good / self.desktops
        return f"{self.good} of {self.desktops} desktops good ({pct:.0f} %)"

    @property
    def unmeasured_text(self) -> str:
        """``1 not measured from 312 s (launcher vsi-01 unreadable)``; empty when every desktop was."""
        if not self.unmeasured:
            return ""
        return f"{self.unmeasured} not measured{self._from}"

    @property
    def _from(self) -> str:
        at = f" from {self.unmeasured_from_s:.0f} s" if self.unmeasured_from_s is not None else ""
        return at + (f" ({self.unmeasured_why})" if self.unmeasured_why else "")

    @property
    def text(self) -> str:
        if self.unmeasured and not self.desktops:  # nothing rated: no reading to give
            return f"index not judged: sessions unreadable{self._from}"
        base = f" (baseline {self.baseline_s:.2f} s)" if self.baseline_s is not None else ""
        parts = [p for p in (self.good_text, self.unmeasured_text) if p]
        return f"{self.load}{base}" + "".join(f"; {p}" for p in parts)

    @property
    def short(self) -> str:
        """For a narrow column: ``sat. 412`` / ``ok to 630``, with the good share."""
        head = f"sat. {self.sessions}" if self.saturated else f"ok to {self.sessions}"
        if self.unmeasured and not self.desktops:
            return "not judged"
        share = self.good_share
        lost = f", {self.unmeasured} unmeasured" if self.unmeasured else ""
        return head + (f", {share * 100:.0f} % good" if share is not None else "") + lost


def index_headline(ri: ResponseIndex | None) -> IndexHeadline | None:
    """The headline of a cell's response-time index; None when the cell has none (no operations)."""
    rated = ri.good + ri.fair + ri.poor if ri is not None else 0
    if ri is None or (not ri.points and ri.sessions_max == 0 and not rated and not ri.unmeasured):
        return None
    saturated = ri.saturation_sessions is not None
    sessions = ri.saturation_sessions if ri.saturation_sessions is not None else ri.sessions_max
    return IndexHeadline(
        saturated,
        sessions,
        ri.baseline_s,
        ri.good,
        rated,
        ri.unmeasured,
        ri.unmeasured_from_s,
        ri.unmeasured_why,
    )


def headline_from_figures(figures: Mapping[str, Figure]) -> IndexHeadline | None:
    """The same headline from a cell's key figures (:data:`labctl.records.figures.INDEX_FIGURES`):
    what ``labctl runs`` and ``labctl compare`` have of a stored cell."""
    sessions = figures.get("rt_index sessions")
    saturated = figures.get("rt_index saturated")
    if sessions is None or saturated is None:
        return None
    baseline = figures.get("rt_index baseline_s")
    good = figures.get("desktops_good count")
    rated = figures.get("desktops_rated count")
    unmeasured = figures.get("desktops_unmeasured count")  # stored cells: the count, not its cause
    return IndexHeadline(
        saturated.value >= 1,
        int(sessions.value),
        baseline.value if baseline is not None else None,
        int(good.value) if good is not None else 0,
        int(rated.value) if rated is not None else 0,
        int(unmeasured.value) if unmeasured is not None else 0,
    )


def headline_text(ri: ResponseIndex | None) -> str:
    """:attr:`IndexHeadline.text`, or ``""`` when there is no index."""
    h = index_headline(ri)
    return h.text if h is not None else ""

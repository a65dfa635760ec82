"""The response-time index's headline, as VSImax is read: one pure function the terminal, ``labctl
runs``, ``labctl compare``, the figures page and the certificate share, so they say the same words.

``saturated at 412 sessions (baseline 1.20 s); 530 of 630 desktops good`` or ``not saturated up to
630 sessions (baseline 1.20 s); 630 of 630 desktops good``. The numbers are the cell summary's
``response_index`` (:class:`~labctl.records.run_record.ResponseIndex`); nothing is recomputed.
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
    def text(self) -> str:
        base = f" (baseline {self.baseline_s:.2f} s)" if self.baseline_s is not None else ""
        good = self.good_text
        return f"{self.load}{base}" + (f"; {good}" if good else "")

    @property
    def short(self) -> str:
        """For a narrow column: ``sat. 412`` / ``ok to 630``, with the good share."""
        head = f"sat. {self.sessions}" if self.saturated else f"ok to {self.sessions}"
        share = self.good_share
        return head + (f", {share * 100:.0f} % good" if share is not None else "")


def index_headline(ri: ResponseIndex | None) -> IndexHeadline | None:
    """The headline of a cell's response-time index; None when the cell has none (no operations)."""
    if ri is None or (not ri.points and ri.sessions_max == 0 and not (ri.good + ri.fair + ri.poor)):
        return None
    saturated = ri.saturation_sessions is not None
    sessions = ri.saturation_sessions if ri.saturation_sessions is not None else ri.sessions_max
    return IndexHeadline(saturated, sessions, ri.baseline_s, ri.good, ri.good + ri.fair + ri.poor)


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
    return IndexHeadline(
        saturated.value >= 1,
        int(sessions.value),
        baseline.value if baseline is not None else None,
        int(good.value) if good is not None else 0,
        int(rated.value) if rated is not None else 0,
    )


def headline_text(ri: ResponseIndex | None) -> str:
    """:attr:`IndexHeadline.text`, or ``""`` when there is no index."""
    h = index_headline(ri)
    return h.text if h is not None else ""

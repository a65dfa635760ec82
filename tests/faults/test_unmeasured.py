"""Launchers that stop answering mid-storm: the phase breaks off after a bounded grace, and the
desktops whose sessions they held are *not measured* from then (never counted good); the headline
says so. In-process and fast: the whole-lab case (``labctl sim down`` mid-storm) is
tests/faults/test_vdi.py's."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import pytest

from labctl.clock import LabClock
from labctl.lab.launchers import Poll, SessionEvent, SessionState
from labctl.records.figures import _index_figures
from labctl.records.run_record import CellSummary, ResponseIndex
from labctl.records.samples import Sample
from labctl.report.headline import headline_from_figures, headline_text, index_headline
from labctl.scenarios.breakoff import StaysUnreadable, Unreadable
from labctl.scenarios.vdi_sessions import SessionBook, work


def test_an_endpoint_failing_past_the_grace_breaks_off_naming_it_and_one_read_again_is_forgotten() -> None:
    u = Unreadable("launcher")
    u.saw(100.0, {"vsi-02": "vsi-02 (ssh 127.0.0.1:2222): connect: connection refused"}, ["vsi-01", "vsi-02"])
    u.saw(150.0, {"vsi-02": "still refused"}, ["vsi-01", "vsi-02"])
    u.check(220.0, grace_s=120.0)  # 120 s exactly: still within the grace
    with pytest.raises(StaysUnreadable) as got:
        u.check(221.0, grace_s=120.0)
    assert (
        str(got.value) == "launcher vsi-02 unreadable for 121 lab s (more than 120 s): vsi-02: still refused"
    )
    assert u.describe() == "launcher vsi-02 unreadable"
    u.saw(230.0, {}, ["vsi-01", "vsi-02"])  # it answered again: the clock starts over
    u.check(1000.0, grace_s=120.0)
    assert u.describe() == ""


def _event(sid: str, launcher: str, desktop: str, state: SessionState, ts: float) -> SessionEvent:
    return SessionEvent(launcher, sid, desktop, f"user-{sid}", state, ts)


def test_sessions_on_a_launcher_that_stopped_answering_are_unmeasured_from_its_first_failed_read() -> None:
    book = SessionBook("pool", {})
    book.latest = {
        "s1": _event("s1", "vsi-01", "d-0001", SessionState.ACTIVE, 10.0),
        "s2": _event("s2", "vsi-02", "d-0002", SessionState.ACTIVE, 11.0),
        "s3": _event("s3", "vsi-02", "d-0003", SessionState.ENDED, 12.0),  # ended before: measured
    }
    book.logged_on = {"s1": 10.0, "s2": 11.0, "s3": 11.5}
    book.ended = {"s3": 12.0}
    book.unreadable.saw(300.0, {"vsi-02": "refused"}, ["vsi-01", "vsi-02"])
    assert book.unmeasured() == {"d-0002": 300.0}
    spans = {s.session: s for s in book.spans()}
    assert spans["s2"].end_ts == 300.0  # not counted as carrying load after it went silent
    assert spans["s1"].end_ts is None


@dataclass
class _DeadLaunchers:
    """The Launchers facade as a lab that went down leaves it: every poll an error per launcher."""

    launchers: dict[str, Any] = field(default_factory=lambda: {"vsi-01": None})
    polls: int = 0

    def poll(self) -> Poll:
        self.polls += 1
        return Poll(errors={"vsi-01": "vsi-01 (ssh 127.9.2.1:2222): connect: connection refused"})

    def release(self, session: str) -> None:
        pass


@dataclass
class _Ctx:
    cell_id: str = "vdi_storm-default-100"
    stop: threading.Event = field(default_factory=threading.Event)
    abort: threading.Event = field(default_factory=threading.Event)
    samples: list[Sample] = field(default_factory=list)

    def progress(self, p: object) -> None:
        pass

    def step(self, title: str) -> nullcontext[None]:
        return nullcontext()

    def series(self, **kw: object) -> list[Any]:
        return []

    def record(self, samples: Iterable[Sample]) -> None:
        self.samples.extend(samples)


@dataclass
class _Lab:
    clock: LabClock


def test_the_steady_phase_breaks_off_once_its_launcher_stays_unreadable_past_the_grace() -> None:
    clock = LabClock(scale=3600.0)  # an hour of lab time per wall second
    lab, ctx, launchers = _Lab(clock), _Ctx(), _DeadLaunchers()
    book = SessionBook("pool", {})
    t0 = clock.now()
    with pytest.raises(
        StaysUnreadable, match=r"^launcher vsi-01 unreadable for \d+ lab s .*connection refused"
    ):
        work(lab, ctx, launchers, book, 3600.0, 20.0, "steady", unreadable_s=120.0)  # type: ignore[arg-type]
    # broke off after the grace and a poll, not the hour it was given (lab time, not wall time)
    assert clock.now() - t0 < 600.0
    assert launchers.polls < 30


def _index(**kw: Any) -> ResponseIndex:
    return ResponseIndex(threshold_s=1.0, sessions_max=3, baseline_s=1.2, **kw)


def test_the_headline_never_counts_a_desktop_it_could_not_read_as_good() -> None:
    gone = {"unmeasured_from_s": 312.4, "unmeasured_why": "launcher vsi-01 unreadable"}
    assert headline_text(_index(unmeasured=3, **gone)) == (
        "index not judged: sessions unreadable from 312 s (launcher vsi-01 unreadable)"
    )
    assert headline_text(_index(good=2, unmeasured=1, **gone)) == (
        "not saturated up to 3 sessions (baseline 1.20 s); 2 of 2 desktops good (100 %); "
        "1 not measured from 312 s (launcher vsi-01 unreadable)"
    )
    h = index_headline(_index(good=2, unmeasured=1, **gone))
    assert h is not None and h.short == "ok to 3, 100 % good, 1 unmeasured"
    # every desktop read to the end: the words are the usual ones
    assert (
        headline_text(_index(good=3))
        == "not saturated up to 3 sessions (baseline 1.20 s); 3 of 3 desktops good (100 %)"
    )


def test_a_stored_cell_says_its_unmeasured_desktops_too() -> None:
    """`labctl runs` and `compare` read the headline back from a stored cell's key figures: the
    desktops not measured are among them, so a stored cell never reads as all good either."""
    ri = _index(good=2, unmeasured=1, points=[], unmeasured_from_s=312.4, unmeasured_why="launcher gone")
    summary = CellSummary.model_construct(response_index=ri)
    figures = {f.key: f for f in _index_figures(summary)}
    assert figures["desktops_unmeasured count"].value == 1.0
    h = headline_from_figures(figures)
    assert h is not None and h.unmeasured == 1 and h.good == 2 and h.desktops == 2
    assert h.text.endswith("; 2 of 2 desktops good (100 %); 1 not measured"), h.text

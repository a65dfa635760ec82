"""The logon waterfall in the reports (issue 24): a VDI cell whose launchers timed each logon gets,
on the figures page, the phases' table (n, p50, p95, max; an unmeasured phase in words), the phases
against concurrency and the logons on the storm's timeline beside the array and the hosts; the
certificate gets the same table, those figures and a finding. The run folder is written the way a
run writes it: the phases' samples by labctl.scenarios.vdi_logons through the recorder, the
percentiles in the cell summary by the same module."""

from __future__ import annotations

import html
import json
import random
import re
from pathlib import Path

import pytest

from labctl.criteria import Names
from labctl.recorder import cell_id
from labctl.recorder.atomic import atomic_write_text
from labctl.records.run_record import CellSummary, ClientOutcome, Outcome, Phase, Window
from labctl.report.certify.document import certify
from labctl.report.figures import figures_html
from labctl.scenarios import vdi_logons
from tests.report.certify_text import body_text
from tests.report.synthetic import Synth, Writer, _run
from tests.report.synthetic_vdi import ARRAY, LAB, PHASES, VDI_CRITERIA, _figures, _index, _samples
from tests.report.test_waterfall import NO_BROKER, NO_GPO, logon

N = 12
CELL = cell_id("vdi_storm", "default", N)


def make_run(root: Path) -> Path:
    """A VDI storm of 12 desktops whose logons (tests.report.test_waterfall.logon) start 300 s into
    the storm, 10 s apart, the last two together."""
    run = _run(root, "20261128-090000-vdi_storm-0001", "vdi_storm", "", "2026-11-28T09:00:00.000Z")
    info = json.loads((run.path / "run.json").read_text())
    info["lab"] = LAB["name"]
    atomic_write_text(run.path / "run.json", json.dumps(info))
    run.info = run.info.model_copy(update={"lab": LAB["name"]})
    atomic_write_text(run.path / "inventory.resolved.yaml", json.dumps(LAB))
    w = Writer(run, False, Synth(), 7)
    t0 = w.next_t0()
    ws = [logon(i, t0 + 300 + 10 * min(i, 10)) for i in range(N)]
    samples = _samples(t0, N, 7.5, random.Random(7))
    samples += [s for lg in ws for s in vdi_logons.samples("task-pool", lg)]
    clients = {
        f"d{i}": ClientOutcome(
            name=f"d{i}", role="desktop", outcome="logged_on", login_s=lg.total_s, operations=4
        )
        for i, lg in enumerate(ws)
    }
    summary = CellSummary(
        cell=CELL,
        plan="vdi_storm",
        scenario="vdi_storm",
        configuration=None,
        parameters={"desktops": N},
        outcome=Outcome.PASS,
        window=Window(start_ts_s=t0, end_ts_s=t0 + 1560),
        storm_start_ts_s=t0,
        entities={"pool": "task-pool", "array_1": ARRAY},
        clients=clients,
        phases=[Phase(name=p, start_ts_s=t0 + a, end_ts_s=t0 + b) for p, a, b in PHASES],
        phase_figures=_figures(N, 7.5, t0),
        response_index=_index(N, None, t0),
        extra={"desktops": N, "sessions": N, **vdi_logons.percentiles(ws)},
    )
    w.cell(summary, samples, VDI_CRITERIA, Names({}), t0)
    w.finish()
    return run.path


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("waterfall"))


@pytest.fixture(scope="module")
def page(run: Path) -> str:
    return figures_html(run)


def _rows(table_html: str) -> list[list[str]]:
    out = []
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", table_html, flags=re.S):
        cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr, flags=re.S)
        out.append([html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in cells])
    return out


def _figure(page: str, caption_start: str) -> str:
    """The <figure> whose caption starts with ``caption_start``."""
    for f in re.findall(r"<figure[^>]*>(.*?)</figure>", page, flags=re.S):
        cap = re.search(r"<figcaption>(.*?)</figcaption>", f, flags=re.S)
        if cap and html.unescape(cap.group(1)).startswith(caption_start):
            return f
    raise AssertionError(f"no figure captioned {caption_start!r}")


def test_the_figures_page_tables_the_phases_and_says_what_rdp_cannot_measure(page: str) -> None:
    table = _figure(page, f"{CELL}: the logon waterfall over {N} logons")
    rows = _rows(table)
    assert rows[0] == ["phase", "logons", "p50 s", "p95 s", "max s"]
    by = {r[0]: r[1:] for r in rows[1:]}
    assert list(by) == [
        "brokering",
        "protocol connect",
        "authentication",
        "profile load",
        "group policy",
        "shell ready",
        "first workload operation",
        "unaccounted",
        "total: launch to first operation",
    ]
    assert by["protocol connect"] == ["12", "1.55", "2.04", "2.10"]  # p95 2.045, linear between ranks
    assert by["profile load"] == ["4", "0.70", "0.70", "0.70"]  # measured by four sessions only
    assert by["brokering"] == [f"not measured by rdp: {NO_BROKER}"]  # words, no figure, no zero
    assert by["group policy"] == [f"not measured by rdp: {NO_GPO}"]


def test_the_figures_page_draws_phases_against_concurrency_and_on_the_timeline(page: str) -> None:
    conc = _figure(page, "Each measured phase's median")
    assert f"{CELL}: logon phases, p50" in conc and "sessions logged on when the logon started" in conc
    assert "Logons per bin: 0-1: 2, 2-3: 2, 4-5: 2, 6-7: 2, 8-9: 2, 10: 2." in html.unescape(conc)
    for phase in ("protocol connect", "shell ready", "profile load"):
        assert phase in conc
    assert "brokering" not in conc and "group policy" not in conc  # nothing drawn for the unmeasured
    timeline = _figure(page, "Each logon's phases")
    assert f"{CELL}: logons on the storm's timeline" in html.unescape(timeline)
    for axis in ("array IO/s", "host CPU %", "logon phase, s", "minutes since the storm began"):
        assert axis in timeline, axis
    assert f"{ARRAY} write" in timeline and "esx-01" in timeline


def test_the_certificate_has_the_waterfall_table_figures_and_finding(run: Path, tmp_path: Path) -> None:
    written = certify([run], tmp_path / "out", pdf=False, date="2026-11-28")
    page = written.html.read_text(encoding="utf-8")
    text = body_text(page)
    assert "Logon waterfall: VDI storm, 12 desktops" in text
    table = next(t for t in re.findall(r"<table.*?</table>", page, flags=re.S) if "Logon waterfall of" in t)
    by = {r[0]: r[1:] for r in _rows(table)[1:] if r}
    assert by["protocol connect"][:4] == ["12", "1.55", "2.04", "2.10"]
    assert by["brokering"] == ["-", "-", "-", "-", f"not measured by rdp: {NO_BROKER}"]
    assert by["total: launch to first operation"][0] == "12"
    assert "logons on the storm's timeline" in page and "logon phases, p50" in page
    findings = text[text.rindex("Findings") :]
    assert "12 logons took" in findings and "not measured by rdp: brokering, group policy" in findings


def test_a_storm_of_thousands_is_drawn_as_medians_per_span() -> None:
    """400 logons: the timeline draws each phase's median per span of launches, not 2,800 points."""
    from labctl.report import figures_vdi_waterfall
    from labctl.report.run_view import CellView
    from tests.report.test_waterfall import series_of

    ws = [logon(i % 12, 1000.0 + i) for i in range(400)]
    summary = CellSummary(
        cell="vdi_storm-default-400",
        plan="vdi_storm",
        scenario="vdi_storm",
        parameters={"desktops": 400},
        outcome=Outcome.PASS,
        window=Window(start_ts_s=1000.0, end_ts_s=1500.0),
        extra=dict(vdi_logons.percentiles(ws)),
    )
    c = CellView(summary, None, series_of(ws), {})
    w = figures_vdi_waterfall.of(c)
    assert w is not None and len(w.logons) == 400
    f = figures_vdi_waterfall.on_timeline(c, w, wide=False)
    assert f is not None and "each phase's median over the logons launched in each of 60 spans" in f.caption
    assert "This cell recorded no array and no host series." in f.caption
    assert f.svg.count("<use ") < 400  # lines, not a marker per logon and phase

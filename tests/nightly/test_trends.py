"""The trends page: one chart per key figure across nights, lab faults and regressions marked."""

from __future__ import annotations

import re
from pathlib import Path

from labctl.report.offline import external_references
from labctl.report.trends import TRENDS, Trend, trend_chart, trends_html, write_trends_page
from tests.nightly.nights import cell_id, figures, make_run

QUEUE = next(t for t in TRENDS if t.kind == "disk_queue_len")
BOOT = next(t for t in TRENDS if (t.kind, t.statistic) == ("boot_time_s", "mean"))


def _nights(tmp_path: Path) -> list[tuple]:
    runs = [
        make_run(tmp_path, seed=1, night=1),
        make_run(tmp_path, seed=2, night=2),
        make_run(tmp_path, seed=3, night=3, write_cache_spindles=2),
        make_run(tmp_path, seed=4, night=4, faults={cell_id(100): "never_booted"}),
    ]
    regressed = {
        "nightly": {
            "run_id": runs[2].name,
            "lab": "sim-2007",
            "plan": "boot_storm",
            "verdict": "regression",
            "exit_code": 1,
            "run_outcome": "passed",
            "regressed": {cell_id(100): ["disk_queue_len peak pvs-01/D:"]},
        }
    }
    return [(figures(r), regressed if i == 2 else {}) for i, r in enumerate(runs)]


def _texts(svg: str) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


def test_a_chart_marks_the_regressed_value_and_the_lab_fault(tmp_path: Path) -> None:
    nights = _nights(tmp_path)
    svg = trend_chart(QUEUE, nights, baseline_runs=[nights[0][0].run_id])
    assert svg is not None and svg.startswith("<svg")
    texts = _texts(svg)
    assert "flagged as a regression" in texts and "lab fault (no value)" in texts
    assert "100 pvs-01/D:" in texts and "050 pvs-01/D:" in texts  # cells without what they share
    assert not any(t.startswith("001 ") for t in texts)  # a disk a 1-client storm leaves idle
    boot = trend_chart(BOOT, nights)
    assert boot is not None and "flagged as a regression" not in _texts(boot)  # another figure's flag
    assert trend_chart(Trend("Copy", "copy_s", "mean", "s", ""), nights) is None  # no night has it


def test_the_page_lists_the_nights_newest_first_and_works_offline(tmp_path: Path) -> None:
    nights = _nights(tmp_path)
    current = nights[-1][0].run_id
    page = write_trends_page(tmp_path / "run", nights, current=current, baseline_runs=[nights[0][0].run_id])
    assert page == tmp_path / "run" / "report" / "trends.html"
    html = page.read_text()
    assert external_references(html) == [] and "<script" not in html
    assert html.count("<svg") == sum(1 for t in TRENDS if trend_chart(t, nights) is not None) >= 8
    rows = re.findall(r"<tr class=\"(current)?\"><td>[^<]*</td><td>([^<]*)</td>", html)
    assert [r[1].split(" ")[0] for r in rows] == [f.run_id for f, _ in reversed(nights)]
    assert rows[0][0] == "current" and rows[-1][1].endswith("(baseline)")
    assert "regression (exit 1)" in html and ">lab_fault</td>" in html
    assert "No finished run" in trends_html([])

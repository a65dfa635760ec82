"""The figures page from a synthetic run folder made in the test."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

from labctl.recorder import read_series
from labctl.recorder.cells import read_cell_summaries
from labctl.report.figures import COUNTERS, Cell, _time_lines, figures_html, write_figures_page
from labctl.report.offline import external_references
from tests.report.synthetic import make_run

SIZES = (1, 5, 10, 25, 50, 75, 100)


def _cells(run: Path) -> tuple[list[Cell], dict[str, list]]:
    cells = [Cell(k, v) for k, v in read_cell_summaries(run).items()]
    by_cell: dict[str, list] = {}
    for s in read_series(run):
        by_cell.setdefault(s.cell, []).append(s)
    return cells, by_cell


def test_one_line_per_group_size_from_the_storm_start(tmp_path: Path) -> None:
    run = make_run(tmp_path, group_sizes=SIZES)
    cells, by_cell = _cells(run)
    cells.sort(key=lambda c: c.get("group_size"))
    labelled = [(f"{c.get('group_size')} clients", c) for c in cells]
    for counter in COUNTERS:
        lines, picked = _time_lines(counter, labelled, by_cell)
        assert picked is not None, counter.key
        assert [ln.label for ln in lines] == [f"{n} clients" for n in SIZES]
        for ln in lines:
            assert ln.x[0] == -30.0  # the baseline before the wake, relative to storm_start_ts_s
            assert max(ln.x) <= 360.0
        peaks = [max(ln.y) for ln in lines]
        assert peaks[-1] > peaks[0]  # the paper's trend: bigger groups, higher peaks
    # the NIC chart shows the busier of the two NICs, the disk chart the write-cache volume
    assert _time_lines(COUNTERS[2], labelled, by_cell)[1].entity == "pvs-01/NIC 1"  # type: ignore[union-attr]
    assert _time_lines(COUNTERS[3], labelled, by_cell)[1].entity == "pvs-01/D:"  # type: ignore[union-attr]


def test_page_has_every_figure_a_table_and_no_external_reference(tmp_path: Path) -> None:
    sizes = (1, 50, 100)
    run = make_run(
        tmp_path,
        group_sizes=sizes,
        configurations=("standalone", "ha"),
        matrix=True,
        never_boots=("optiplex-042",),
        copy_paths=("local-local", "remote-remote"),
    )
    path = write_figures_page(run)
    assert path == run / "report" / "figures.html"
    page = path.read_text()
    assert external_references(page) == []
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    titles = re.findall(r"<h2>([^<]+)</h2>", page)
    assert titles == [
        "Results by cell",
        "Boot storm: client experience",
        "Boot storm: server utilisation (ha)",
        "Boot storm: server utilisation (standalone)",
        "Copy/reboot matrix: local-local",
        "Copy/reboot matrix: remote-remote",
    ]
    # 2 "vs group size" + 4 counters x 2 configurations + (3 + 4) x 2 copy paths
    assert page.count("<svg") == 2 + 8 + 14
    for title in (
        "Client boot time",
        "Client session retries",
        "CPU utilisation",
        "Used memory",
        "NIC utilisation (outbound)",
        "Average disk queue length",
        "Rebooting clients: boot time",
        "Copying clients: copy time",
    ):
        assert title in page
    rows = re.findall(r"<tr>(.*?)</tr>", page.split("<tbody>")[1])
    assert len(rows) == 2 * len(sizes) + 8
    # the cells where a client never booted are flagged
    assert page.count('<td class="num bad">99 of 100</td>') == 2


def test_boot_time_trend_is_what_the_summaries_say(tmp_path: Path) -> None:
    run = make_run(tmp_path, group_sizes=SIZES)
    sums = read_cell_summaries(run)
    means = [statistics.fmean(c["boot_time_s"] for c in s["clients"].values()) for s in sums.values()]
    page = figures_html(run)
    # the table shows each cell's mean boot time (one decimal) in cell order
    shown = [
        float(m) for m in re.findall(r'<td class="num">([\d.]+) / [\d.]+</td><td class="num">[\d.]+ / ', page)
    ]
    assert shown == [round(m, 1) for m in means]


def test_empty_run_says_why(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    page = figures_html(tmp_path / "r")
    assert "No figures" in page and "<svg" not in page


def test_an_empty_chart_says_so_and_keeps_its_note() -> None:
    from labctl.report import charts

    for fig in (
        charts.over_time("CPU", [], ylabel="%", note="run 20261121-boot_storm"),
        charts.versus("Boot time", [], xlabel="clients", ylabel="s", note="run 20261121-boot_storm"),
    ):
        text = charts.svg(fig)
        assert "no data recorded" in text and "run 20261121-boot_storm" in text
    drawn = charts.svg(charts.over_time("CPU", [charts.Line("1", [0.0, 5.0], [1.0, 2.0])], ylabel="%"))
    assert "no data recorded" not in drawn

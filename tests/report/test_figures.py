"""The figures page from synthetic typed run folders: a boot storm, the copy/reboot matrix, an HA
comparison, an interrupted cell, a killed run and a gap. Each test asserts what a broken page
would get wrong: numbers from the summary's window (not series.csv's whole span), the entity the
summary names, lines broken at gaps, interrupted cells marked, the paper's figures present."""

from __future__ import annotations

import html
import itertools
import math
import re
import statistics
from pathlib import Path

import numpy as np
import pytest

from labctl.recorder import read_cell_summaries, read_series
from labctl.records import stats
from labctl.report import charts
from labctl.report.counters import CPU, DISK, NIC, pick
from labctl.report.figures import figures_html, write_figures_page
from labctl.report.figures_matrix import _bars
from labctl.report.offline import external_references
from labctl.report.run_view import load_run
from labctl.report.timelines import PRE_STORM_S, lines_for
from tests.report.synthetic import RESTORE_CPU_PCT, WINDOW_S, Synth, make_run

SIZES = (1, 5, 10, 25, 50, 75, 100)


def _rows(page: str) -> dict[str, list[str]]:
    """The results table: cell id -> the text of its cells."""
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    out = {}
    for tr in re.findall(r'<tr class="cell[^"]*">(.*?)</tr>', body):
        tds = [html.unescape(re.sub(r"<[^>]+>", "", td)) for td in re.findall(r"<td[^>]*>(.*?)</td>", tr)]
        out[tds[0]] = tds
    return out


def _heads(page: str) -> list[str]:
    """The table's column headings, words joined by single spaces."""
    head = page.split('<table class="cells">', 1)[1].split("</thead>", 1)[0]
    return [
        " ".join(html.unescape(re.sub(r"<[^>]+>", " ", th)).split())
        for th in re.findall(r"<th[^>]*>(.*?)</th>", head)
    ]


def _col(page: str, row: list[str], head: str) -> str:
    """The cell of ``row`` under the column whose heading starts with ``head``."""
    heads = _heads(page)
    i = next(i for i, h in enumerate(heads) if h == head or h.startswith(head + " "))
    return row[i]


def _reasons(page: str) -> list[str]:
    return [
        html.unescape(r) for r in re.findall(r'<tr class="reason[^"]*"><td[^>]*>&#8627; (.*?)</td>', page)
    ]


@pytest.fixture(scope="module")
def storm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("storm"), group_sizes=SIZES)


def test_one_line_per_group_size_from_the_wake_to_the_window_end(storm: Path) -> None:
    view = load_run(storm)
    labelled = [(f"{c.group_size} clients", c) for c in view.cells]
    for counter in (CPU, NIC, DISK):
        picked = pick(counter, "pvs-01", view.cells)
        assert picked is not None
        lines, notes = lines_for(picked, labelled, charts.colors(len(labelled)))
        assert [ln.label for ln in lines] == [f"{n} clients" for n in SIZES] and notes == []
        for ln in lines:
            assert min(ln.x) == -PRE_STORM_S and max(ln.x) == WINDOW_S  # the restore after it is not drawn
            assert not ln.dashed and not ln.gaps
        peaks = [max(ln.y) for ln in lines]
        assert peaks[-1] > peaks[0]  # the paper's trend: bigger groups, higher peaks
    # the NIC chart shows the busier of the two NICs, the disk chart the write-cache volume the cells name
    assert pick(NIC, "pvs-01", view.cells).entity == "pvs-01/NIC 1"  # type: ignore[union-attr]
    assert pick(DISK, "pvs-01", view.cells).entity == "pvs-01/D:"  # type: ignore[union-attr]


def test_table_numbers_are_the_summarys_over_the_window_not_the_series(storm: Path) -> None:
    page = figures_html(storm)
    rows = _rows(page)
    sums = read_cell_summaries(storm)
    assert list(rows) == list(sums)  # one row per cell, in the order they ran
    for cell, s in sums.items():
        (cpu,) = read_series(storm, cell=cell, entity="pvs-01", metric="cpu_pct")
        m = s.metric("typeperf", "pvs-01", "cpu_pct")
        assert m is not None and m.peak is not None and m.mean is not None
        # series.csv holds the restore's CPU burst after the window; the table must not show it
        assert max(cpu.values) == RESTORE_CPU_PCT > m.peak + 1
        assert _col(page, rows[cell], "CPU %") == f"{m.peak:.0f} / {m.mean:.0f}"
        q = s.metric("typeperf", "pvs-01/D:", "disk_queue_len")
        assert q is not None
        assert _col(page, rows[cell], "write-cache queue") == f"{q.mean:.1f} / {q.peak:.1f}"
        nic = s.metric("typeperf", "pvs-01/NIC 1", "nic_sent_util_pct")
        assert nic is not None and _col(page, rows[cell], "NIC out %") == f"{nic.peak:.0f}"
        boots = s.values("boot_time_s")
        assert _col(page, rows[cell], "boot time s") == f"{statistics.fmean(boots):.1f} / {max(boots):.1f}"
        assert _col(page, rows[cell], "coverage") == "100 %"


def test_status_first_with_the_reason(storm: Path) -> None:
    page = figures_html(storm)
    rows = _rows(page)
    sums = read_cell_summaries(storm)
    for cell, s in sums.items():
        assert _col(page, rows[cell], "status") == s.outcome.value.replace("_", " ")
    bad = [s for s in sums.values() if s.reason]
    assert bad, "the synthetic storm has cells outside their bands"
    assert _reasons(page) == [s.reason for s in bad]


def test_a_gap_breaks_the_line_is_shaded_and_costs_coverage(tmp_path: Path) -> None:
    run = make_run(
        tmp_path, group_sizes=(50, 100), synth=Synth(gaps={"boot_storm-standalone-100": (13.0, 160.0)})
    )
    view = load_run(run)
    cell = next(c for c in view.cells if c.group_size == 100)
    picked = pick(CPU, "pvs-01", view.cells)
    assert picked is not None
    lines, notes = lines_for(picked, [("50", view.cells[0]), ("100", cell)], ["#111", "#222"])
    whole, gappy = lines
    assert whole.gaps == [] and gappy.max_step == 2 * 5.0
    ((a, b),) = gappy.gaps
    assert (a, b) == (10.0, 160.0)  # the last sample before the hole, the first after it
    segments = charts._segments(gappy.x, gappy.y, gappy.max_step)
    assert len(segments) == 2 and segments[0][0][-1] == 10.0 and segments[1][0][0] == 160.0
    assert all(y - x <= gappy.max_step for xs, _ in segments for x, y in itertools.pairwise(xs))
    assert notes == ["100: one gap from 10 to 160 s"]
    page = figures_html(run)
    assert "one gap from 10 to 160 s" in page and "no samples (gap)" in page
    row = _rows(page)["boot_storm-standalone-100"]
    # judged over a 58 % covered window: never a pass, and the reason names the hole
    assert _col(page, row, "status") in ("fail", "no data")
    assert "no sample from t = 10 s to t = 160 s" in _reasons(page)[-1]
    assert _col(page, row, "coverage") == "58 %, gap 150 s"
    assert '<td class="num bad" title="lowest: typeperf/pvs-01' in page
    # the over-time chart is drawn with the line broken: two pieces of path for the 100-client CPU
    fig = charts.over_time("CPU", lines, ylabel="%")
    drawn = [ln for ln in fig.axes[0].get_lines() if ln.get_label() == "100"]
    ys = [float(v) for v in np.asarray(drawn[0].get_ydata(), dtype=float)]
    assert len(drawn) == 1 and any(math.isnan(v) for v in ys)  # a NaN breaks it


def test_an_interrupted_cell_is_marked_in_the_table_the_lines_and_the_points(tmp_path: Path) -> None:
    run = make_run(
        tmp_path, group_sizes=(10, 50), synth=Synth(interrupted={"boot_storm-standalone-050": 150.0})
    )
    view = load_run(run)
    cell = view.cells[1]
    assert cell.interrupted and not cell.whole
    page = figures_html(run)
    row = _rows(page)["boot_storm-standalone-050"]
    assert _col(page, row, "status") == "interrupted"
    assert "interrupted: Ctrl-C" in _reasons(page)[0]
    assert _col(page, row, "clients booted") == "25 of 50"  # the half that had booted
    # its numbers are the summary's over what it measured (the window up to the Ctrl-C)
    m = cell.summary.metric("typeperf", "pvs-01", "cpu_pct")
    assert m is not None and _col(page, row, "CPU %") == f"{m.peak:.0f} / {m.mean:.0f}"
    picked = pick(CPU, "pvs-01", view.cells)
    assert picked is not None
    lines, _ = lines_for(picked, [("10 clients", view.cells[0]), ("50 clients", cell)], ["#111", "#222"])
    assert [ln.dashed for ln in lines] == [False, True]
    assert lines[1].label == "50 clients (interrupted)" and max(lines[1].x) == 150.0
    assert "50 clients (interrupted)" in page and "Dashed: a cell that did not finish its window" in page
    assert "A hollow point is a cell that did not measure a whole window" in page


def test_a_killed_run_still_gives_a_page_with_what_it_measured(tmp_path: Path) -> None:
    run = make_run(tmp_path, group_sizes=(10, 50), synth=Synth(killed="boot_storm-standalone-050"))
    assert '"outcome": "running"' in (run / "run.json").read_text()
    path = write_figures_page(run)
    page = path.read_text()
    assert "No end recorded: the run was killed" in page
    row = _rows(page)["boot_storm-standalone-050"]
    assert _col(page, row, "status") == "interrupted (killed)"
    # never summarised: its numbers come from the recorder's own function over what it recorded
    (cpu,) = read_series(run, cell="boot_storm-standalone-050", entity="pvs-01", metric="cpu_pct")
    whole = stats.series_summary(cpu)
    assert _col(page, row, "CPU %") == f"{whole.peak:.0f} / {whole.mean:.0f}"
    assert '<td class="num prov"' in page and "it never ended (the run was killed)" in page
    view = load_run(run)
    killed = view.cells[1]
    assert killed.provisional and killed.t0 == view.cells[1].burst_ts  # time zero at its wake burst
    picked = pick(CPU, "pvs-01", view.cells)
    assert picked is not None
    (line,) = lines_for(picked, [("50 clients", killed)], ["#222"])[0]
    assert line.dashed and line.label == "50 clients (killed)" and min(line.x) == -PRE_STORM_S


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(
        tmp_path_factory.mktemp("matrix"), group_sizes=(), matrix=True, splits=((25, 25), (50, 50))
    )


def test_matrix_paper_figures_per_split_with_the_four_paths(matrix: Path) -> None:
    page = figures_html(matrix)
    titles = re.findall(r"<h[23] id=\"s\d+\">([^<]+)</h[23]>", page)
    assert titles == [
        "Copy/reboot matrix (standalone): client experience",
        "Copy/reboot 25 copy / 25 reboot (standalone): pvs-01 (streaming server)",
        "Copy/reboot 50 copy / 50 reboot (standalone): pvs-01 (streaming server)",
    ]
    for title in (
        "Rebooting clients: boot time",
        "Rebooting clients: session retries",
        "Copying clients: session retries",
        "Copying clients: 512 MB copy time",
    ):
        assert title in page
    # 4 client-experience charts + 2 splits x (CPU, memory, NIC, queue)
    assert page.count("<svg") == 4 + 2 * 4
    for label in ("local → local", "local → share", "share → local", "share → share"):
        assert page.count(label) >= 6 + 8  # the table's rows + every chart's legend
    # the grouped bars: one bar per path in each split, each the mean of that cell's rebooters
    view = load_run(matrix)
    groups, bars = _bars(view.cells, "boot_time_s", "rebooter")
    assert groups == ["25 copy /\n25 reboot", "50 copy /\n50 reboot"]
    assert [b.label for b in bars] == ["local → local", "local → share", "share → local", "share → share"]
    for b, path in zip(
        bars, ("local_to_local", "local_to_share", "share_to_local", "share_to_share"), strict=True
    ):
        for value, split in zip(b.values, ((25, 25), (50, 50)), strict=True):
            cell = next(c for c in view.cells if c.copy_path == path and c.split == split)
            assert value == pytest.approx(statistics.fmean(cell.summary.values("boot_time_s", "rebooter")))
    # figures 11-14: one line per copy path in each split's counters
    cells = [c for c in view.cells if c.split == (25, 25)]
    picked = pick(DISK, "pvs-01", cells)
    assert picked is not None and picked.entity == "pvs-01/D:"
    lines, _ = lines_for(picked, [(c.copy_path or "", c) for c in cells], ["#1", "#2", "#3", "#4"])
    assert len(lines) == 4
    # copies onto the vDisk (to local) load the write cache more than copies to the share
    peak = {ln.label: max(ln.y) for ln in lines}
    assert peak["local_to_local"] > peak["local_to_share"]
    rows = _rows(page)
    cid = "copy_reboot-standalone-050-050-share_to_local"
    copies = read_cell_summaries(matrix)[cid].values("copy_s", "copier")
    assert _col(page, rows[cid], "copy time s") == f"{statistics.fmean(copies):.0f} / {max(copies):.0f}"
    assert _col(page, rows[cid], "clients booted") == "50 of 50"  # the rebooters


def test_ha_comparison_figures_and_side_by_side(tmp_path: Path) -> None:
    from labctl.report.ha_comparison import side_by_side

    run = make_run(
        tmp_path,
        group_sizes=(25, 100),
        configurations=("standalone", "ha"),
        matrix=True,
        matrix_configurations=("standalone", "ha"),
        copy_paths=("local_to_local",),
        splits=((50, 50),),
        synth=Synth(interrupted={"boot_storm-ha-025": 100.0}),
    )
    table = side_by_side(run)
    # the interrupted HA 25 cell is no fair side: left out
    assert [r.cell for r in table.rows] == ["boot storm 100", "copy/reboot 50x50 local_to_local"]
    sums = read_cell_summaries(run)
    for row, (std, ha) in zip(
        table.rows,
        (
            ("boot_storm-standalone-100", "boot_storm-ha-100"),
            ("copy_reboot-standalone-050-050-local_to_local", "copy_reboot-ha-050-050-local_to_local"),
        ),
        strict=True,
    ):
        for cfg, cell, disk in (("standalone", std, "pvs-01/D:"), ("ha", ha, "nas-01/E:")):
            q = sums[cell].metric("typeperf", disk, "disk_queue_len")  # each side's own write cache
            assert q is not None
            assert row[cfg]["disk_queue_mean"] == q.mean and row[cfg].disk_queue_peak == q.peak
            role = "rebooter" if "copy" in row.cell else None
            assert row[cfg].retries_mean == statistics.fmean(sums[cell].values("retries", role))
    assert (run / "ha_comparison.json").is_file()
    assert (
        (run / "ha_comparison.csv").read_text().splitlines()[0].startswith("cell,boot_time_mean_s_standalone")
    )
    page = figures_html(run)
    titles = re.findall(r"<h[23] id=\"s\d+\">([^<]+)</h[23]>", page)
    # each streaming server and the NAS get their own charts in the HA configuration
    for t in (
        "Boot storm: pvs-01 (streaming server), ha",
        "Boot storm: pvs-02, ha",
        "Boot storm: nas-01 (write cache and vDisks), ha",
        "Copy/reboot 50 copy / 50 reboot (ha): nas-01 (write cache and vDisks)",
        "Standalone vs HA",
    ):
        assert t in titles
    assert titles.index("Boot storm: pvs-02, ha") < titles.index(
        "Boot storm: nas-01 (write cache and vDisks), ha"
    )
    for t in (
        "Boot storm: session retries",
        "Boot storm: write-cache disk queue, mean",
        "Copy/reboot: session retries",
        "Copy/reboot: write-cache disk queue, peak",
    ):
        assert t in page
    assert "ha: nas-01/E:; standalone: pvs-01/D:" in page


def test_page_has_no_external_reference_and_each_chart_its_own_ids(matrix: Path) -> None:
    page = figures_html(matrix)
    assert external_references(page) == []
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    # matplotlib repeats clip-path and hatch ids across figures: one page must not share them
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))
    refs = set(re.findall(r"url\(#([^)]+)\)", page)) | set(re.findall(r'href="#([^"]+)"', page))
    assert refs <= set(ids)


def test_empty_run_says_why(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    page = figures_html(tmp_path / "r")
    assert "No figures" in page and "<svg" not in page


def test_an_empty_chart_says_so_and_keeps_its_note() -> None:
    for fig in (
        charts.over_time("CPU", [], ylabel="%", note="run 20261121-boot_storm"),
        charts.versus("Boot time", [], xlabel="clients", ylabel="s", note="run 20261121-boot_storm"),
        charts.grouped_bars("Boot time", ["a"], [], xlabel="x", ylabel="s", note="run 20261121-boot_storm"),
    ):
        text = charts.svg(fig)
        assert "no data recorded" in text and "run 20261121-boot_storm" in text
    drawn = charts.svg(charts.over_time("CPU", [charts.Line("1", [0.0, 5.0], [1.0, 2.0])], ylabel="%"))
    assert "no data recorded" not in drawn


def test_gap_lanes_when_several_lines_have_gaps() -> None:
    a = charts.Line(
        "a", [0.0, 5.0, 50.0, 55.0], [1.0, 1.0, 2.0, 2.0], "#111", max_step=10.0, gaps=[(5.0, 50.0)]
    )
    b = charts.Line("b", [0.0, 30.0, 35.0], [1.0, 3.0, 3.0], "#222", max_step=10.0, gaps=[(0.0, 30.0)])
    one = charts.over_time("q", [a], ylabel="x")
    assert len(one.axes) == 1  # one line with gaps: shaded on the chart
    two = charts.over_time("q", [a, b], ylabel="x")
    assert len(two.axes) == 2  # several: a lane per line under the chart
    lanes = two.axes[1].collections
    assert len(lanes) == 2


def test_a_run_from_before_the_typed_record_still_gets_a_page(tmp_path: Path) -> None:
    from tests.report.synthetic import make_untyped_run

    run = make_untyped_run(tmp_path, group_sizes=(5, 50))
    page = figures_html(run)
    rows = _rows(page)
    assert list(rows) == ["boot_storm-standalone-005", "boot_storm-standalone-050"]
    old = read_cell_summaries(run)["boot_storm-standalone-050"]  # upgraded from format 1
    boots = old.values("boot_time_s")
    assert old.format == 1 and len(boots) == 50
    assert _col(page, rows["boot_storm-standalone-050"], "boot time s") == (
        f"{statistics.fmean(boots):.1f} / {max(boots):.1f}"
    )
    assert "Boot storm: client experience" in page

"""The figures page of VDI runs (issue 20, one-verdict: the VDI half reported on a par): the
arrays' read and write IOPS and latency drawn from series.csv, the hosts' CPU and memory, the
VDI results columns (never the 2007 ones), the response-time index's headline; and a 2007 storm
on a lab that also has VDI hosts draws no frames for them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from labctl.records.run_record import ResponseIndex
from labctl.report.figures import figures_html
from labctl.report.headline import headline_text, index_headline
from tests.report.synthetic import Synth, make_run
from tests.report.synthetic_vdi import ARRAY, HOSTS, make_vdi_run


@pytest.fixture(scope="module")
def vdi_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    run = make_vdi_run(tmp_path_factory.mktemp("vdi"), saturate_at=80)
    return run, figures_html(run)


def _figure(page: str, title: str) -> str:
    """The SVG of the figure whose title contains ``title``."""
    for svg in re.findall(r"<svg.*?</svg>", page, re.S):
        if title in svg:
            return svg
    raise AssertionError(f"no figure titled {title!r}")


def _lines(svg: str) -> int:
    """Drawn polylines with more than two points (matplotlib's lines are paths 'M ... L ... L')."""
    return sum(1 for d in re.findall(r'<path d="([^"]+)"', svg) if d.count("L") >= 5)


def test_array_iops_and_latency_are_drawn(vdi_page: tuple[Path, str]) -> None:
    _, page = vdi_page
    iops = _figure(page, "vdi_storm-default-100: array IOPS")
    assert f"{ARRAY} write" in iops and f"{ARRAY} read" in iops
    assert _lines(iops) >= 2, "the array IOPS chart is empty"
    latency = _figure(page, "vdi_storm-default-100: array latency")
    assert _lines(latency) >= 1, "the latency chart is empty"
    for phase in ("boot", "login", "steady"):
        assert f">{phase}<" in iops, f"phase {phase} not shaded"


def test_hosts_cpu_and_memory_are_drawn(vdi_page: tuple[Path, str]) -> None:
    _, page = vdi_page
    cpu = _figure(page, "vdi_storm-default-100: host CPU")
    mem = _figure(page, "vdi_storm-default-100: host memory")
    for h in HOSTS:
        assert h in cpu and h in mem
    assert _lines(cpu) >= len(HOSTS) and _lines(mem) >= len(HOSTS)


def test_vdi_columns_not_2007_ones(vdi_page: tuple[Path, str]) -> None:
    run, page = vdi_page
    table = page.split('id="cells"')[1].split("</table>")[0]
    assert "clients booted" not in table and "boot time" not in table
    assert "desktops logged on" in table
    text = " ".join(re.sub(r"<[^>]+>", " ", table).split())
    # 100 desktops and the array: the array is no desktop
    assert "100 of 100" in text and "101" not in text
    assert "sat. 80, 80 % good" in text and "ok to 50, 100 % good" in text
    assert "2012 VDI paper" in page and "2007 streaming paper" not in page
    assert str(run.parent) not in page, "an absolute path in the figures page"


def test_index_headline_in_the_page(vdi_page: tuple[Path, str]) -> None:
    _, page = vdi_page
    assert "saturated at 80 sessions (baseline 0.80 s); 80 of 100 desktops good (80 %)" in page
    assert "not saturated up to 50 sessions (baseline 0.80 s); 50 of 50 desktops good (100 %)" in page


def test_headline_reads_as_vsimax() -> None:
    ri = ResponseIndex(baseline_s=1.2, threshold_s=1.0, saturation_sessions=None, sessions_max=630, good=630)
    assert (
        headline_text(ri)
        == "not saturated up to 630 sessions (baseline 1.20 s); 630 of 630 desktops good (100 %)"
    )
    sat = ri.model_copy(update={"saturation_sessions": 412, "good": 530, "fair": 100})
    h = index_headline(sat)
    assert h is not None and h.saturated and h.sessions == 412
    assert h.text.startswith("saturated at 412 sessions")
    assert headline_text(None) == ""


def test_2007_storm_draws_no_frames_for_idle_vdi_hosts(tmp_path: Path) -> None:
    run = make_run(tmp_path, group_sizes=(1, 5), synth=Synth(vdi_hosts=("vdi-esx-01", "vdi-esx-02")))
    page = figures_html(run)
    titles = re.findall(r"<h[23][^>]*>([^<]*)</h", page)
    assert any("pvs-01" in t for t in titles)
    assert not any("vdi-esx" in t for t in titles), titles
    assert "vdi-esx" not in page

"""The boot-storm certificate's sizing agrees with its verdict (issue 20, one-verdict): it sizes the
group the document certifies on the drives it ran on, never the clients of a failed group or a
rule-of-thumb count the run contradicts; and the figures never draw a limit on the window's mean
across a series of samples."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from labctl.report.certify.document import certify
from labctl.report.figures import figures_html
from tests.report.certify_text import body_text, cover_text
from tests.report.synthetic import Synth, make_run

SIZES = (1, 5, 10, 25, 50, 75, 100)  # 100 fails its write-cache queue; 50 and 75 are marginal


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("sizing")
    run = make_run(root, group_sizes=SIZES, synth=Synth(sizing=True))
    return certify([run], root / "out", pdf=False, date="2026-11-24").html.read_text(encoding="utf-8")


def _sizing(page: str) -> str:
    text = body_text(page)
    return text[text.rindex("6 Sizing") : text.rindex("Appendix A")]


def test_the_certified_group_is_the_one_sized(document: str) -> None:
    cover = cover_text(document)
    certified = re.search(r"(\d+) clients woken at once boot within", cover)
    assert certified, cover
    n = int(certified.group(1))
    assert n == 75
    sizing = _sizing(document)
    assert f"the load certified {n} clients woken at once" in sizing
    per_set = re.search(r"clients per set by the measured figures (\d+)", sizing)
    assert per_set and int(per_set.group(1)) >= n, (
        "the sizing says the set holds fewer clients than it booted"
    )


def test_drives_are_those_the_certified_group_ran_on(document: str) -> None:
    sizing = _sizing(document)
    drives = re.search(r"drives for a boot storm of 75 clients (\d+) in RAID 10", sizing)
    assert drives, sizing
    assert int(drives.group(1)) == 4, "the certificate certifies 4 drives and sizes another count"
    assert "rule of thumb" not in sizing


def test_no_sizing_speaks_of_the_failed_group(document: str) -> None:
    sizing = _sizing(document)
    assert "100 clients" not in sizing


def test_a_limit_on_the_mean_is_not_drawn_across_the_samples(tmp_path: Path) -> None:
    # copy/reboot cells judge the write-cache queue's mean over the window (<= 8)
    run = make_run(tmp_path, group_sizes=(), matrix=True, copy_paths=("local_to_local",), splits=((25, 25),))
    page = html.unescape(figures_html(run))
    assert "(mean)" not in " ".join(re.findall(r"<svg.*?</svg>", page, re.S))
    assert "Not drawn, as it holds the window's average and not each sample" in page
    assert "write-cache disk queue: the window's mean <= 8 (judged 1.4)" in page

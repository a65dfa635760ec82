"""`labctl certify` on synthetic 2007 run folders written the way a run writes them
(:mod:`tests.report.synthetic`: the recorder's typed writers, the interrupted path, a killed run,
gaps, a client that never booted).

What a customer must be able to trust: the first page states the verdict, a failed, interrupted,
unfinished or unmeasured run is "not certified" there and never shown as a pass, a marginal result
is an observation, and certifying the same runs twice gives the same document apart from its date.
"""

from __future__ import annotations

import html
import re
import zlib
from pathlib import Path

import pytest

from labctl.cli import cli
from labctl.cli.common import run_cli
from labctl.errors import EXIT_FAILED, EXIT_OK
from labctl.report.certify.document import build, certify
from labctl.report.certify.inputs import load_runs
from labctl.report.certify.model import Status
from labctl.report.certify.render_html import render
from tests.report.synthetic import Synth, make_run

SMALL = (1, 5, 10)
LAST = "boot_storm-standalone-010"


def cover_text(page: str) -> str:
    """The first page of the HTML (title, verdict, executive summary) as plain text."""
    found = re.search(r'<section class="cover">(.*?)</section>', page, re.S)
    assert found, "the document has no first page (section.cover)"
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", found.group(1))).split())


def body_text(page: str) -> str:
    page = re.sub(r"<style>.*?</style>", " ", page, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def certified(run: Path, out: Path, date: str = "2026-11-24") -> str:
    written = certify([run], out, date=date, pdf=False)
    return written.html.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runs")
    return {
        "passed": make_run(root, run_id="20071105-100000-boot_storm-pass", group_sizes=SMALL),
        # 100 clients and up: the write-cache queue leaves its marginal band (a criterion fails)
        "failed": make_run(root, run_id="20071105-100000-boot_storm-fail", group_sizes=(25, 50, 100, 150)),
        "failed_first": make_run(root, run_id="20071105-100000-boot_storm-ffst", group_sizes=(100, 150)),
        "marginal": make_run(root, run_id="20071105-100000-boot_storm-marg", group_sizes=(25, 50, 75)),
        "interrupted": make_run(
            root,
            run_id="20071105-100000-boot_storm-intr",
            group_sizes=SMALL,
            synth=Synth(interrupted={LAST: 100.0}),
        ),
        "killed": make_run(
            root, run_id="20071105-100000-boot_storm-kill", group_sizes=SMALL, synth=Synth(killed=LAST)
        ),
        "gaps": make_run(
            root,
            run_id="20071105-100000-boot_storm-gaps",
            group_sizes=SMALL,
            synth=Synth(gaps={LAST: (50.0, 200.0)}),
        ),
        "lab_fault": make_run(
            root, run_id="20071105-100000-boot_storm-lfau", group_sizes=SMALL, never_boots=("optiplex-003",)
        ),
    }


@pytest.fixture(scope="module")
def pages(runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("cert")
    return {name: certified(path, out / name) for name, path in runs.items()}


def test_a_passed_run_is_certified_on_its_first_page(pages: dict[str, str]) -> None:
    first = cover_text(pages["passed"])
    assert "CERTIFIED (simulated lab)" in first
    assert "Certified: every cell passed every criterion." in first
    assert "NOT CERTIFIED" not in first
    # the sizing conclusion in one sentence: the largest group, its boot time, the server
    assert re.search(r"10 clients woken at once boot within [\d.]+ s", first), first


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("failed", r"2 of 4 cells did not pass \(2 cells failed a criterion on write-cache disk queue\)"),
        (
            "failed_first",
            r"No boot-storm group passed on pvs-01 \(standalone\): 100 clients failed a criterion",
        ),
        ("interrupted", r"run 20071105-100000-boot_storm-intr was interrupted"),
        ("killed", r"run 20071105-100000-boot_storm-kill did not finish"),
        ("gaps", r"no data to judge on write-cache disk queue: its series had samples over only \d+ %"),
        ("lab_fault", r"lab fault on boot time per client: no value from optiplex-003"),
    ],
)
def test_a_run_that_did_not_pass_says_so_on_its_first_page(
    pages: dict[str, str], name: str, why: str
) -> None:
    first = cover_text(pages[name])
    assert "NOT CERTIFIED (simulated lab)" in first
    assert re.search(why, first), first
    # never a pass: no certified headline, and the conclusion says "measured", not "supports"
    assert "Certified:" not in first and "Certified with observations" not in first
    assert "What the measurements support" not in first
    assert "What was measured:" in first
    assert "<=" not in first and ">=" not in first  # the judge's messages in words: ≤, ≥


def test_the_html_title_and_description_carry_the_failure(pages: dict[str, str]) -> None:
    head = pages["failed"].split("</head>", 1)[0]
    assert re.search(r'<meta name="description" content="Not certified: ', head)


def test_a_failed_cell_is_shown_failed_everywhere_and_the_conclusion_stops_before_it(
    pages: dict[str, str],
) -> None:
    first = cover_text(pages["failed"])
    # supported: the largest group that passed with every smaller one (50), never the failed 100 or 150
    assert re.search(r"50 clients woken at once boot within", first), first
    assert not re.search(r"(100|150) clients woken at once boot within", first)
    body = body_text(pages["failed"])
    assert "Criteria that did not pass" in body
    matrix = pages["failed"].split("Criteria per group size", 1)[1]
    rows = re.findall(r"<tr>(.*?)</tr>", matrix, re.S)
    outcome = {
        body_text(r).split()[0]: body_text(r).split()[-1].lower() for r in rows if re.match(r"\s*<td", r)
    }
    assert outcome.get("100") == "fail" and outcome.get("150") == "fail", outcome


def test_interrupted_and_unfinished_cells_are_named_as_such(pages: dict[str, str]) -> None:
    assert "1 cell was interrupted: the run was stopped during it" in cover_text(pages["interrupted"])
    assert "1 cell never finished (the run was killed during it)" in cover_text(pages["killed"])
    # the interrupted cell is not counted as passed in the runs table of the first page
    rows = re.findall(r"<tr><td>20071105-100000-boot_storm-intr</td>(.*?)</tr>", pages["interrupted"], re.S)
    assert rows, "no row of the interrupted run in the runs table"
    assert body_text(rows[0]).startswith("boot_storm interrupted 2 pass, 1 interrupted"), body_text(rows[0])


def test_marginal_results_are_observations_not_failures_nor_plain_passes(pages: dict[str, str]) -> None:
    first = cover_text(pages["marginal"])
    assert "CERTIFIED WITH OBSERVATIONS (simulated lab)" in first
    assert "Observations (marginal results: outside the pass band, inside the marginal band):" in first
    assert re.search(
        r"boot storm, 75 clients \(standalone\): [^:]+: [\d.]+ \S+, outside the pass band", first
    )
    assert "NOT CERTIFIED" not in first


def test_status_of_the_document_model(runs: dict[str, Path]) -> None:
    status = {name: build(load_runs([p]), date="2026-11-24").verdict.status for name, p in runs.items()}
    assert status == {
        "passed": Status.CERTIFIED,
        "failed": Status.NOT_CERTIFIED,
        "failed_first": Status.NOT_CERTIFIED,
        "marginal": Status.OBSERVATIONS,
        "interrupted": Status.NOT_CERTIFIED,
        "killed": Status.NOT_CERTIFIED,
        "gaps": Status.NOT_CERTIFIED,
        "lab_fault": Status.NOT_CERTIFIED,
    }


def test_one_failed_run_among_passed_runs_fails_the_certification(runs: dict[str, Path]) -> None:
    doc = build(load_runs([runs["passed"], runs["interrupted"]]), date="2026-11-24")
    assert doc.verdict.status is Status.NOT_CERTIFIED
    assert "20071105-100000-boot_storm-intr was interrupted" in doc.verdict.headline


def test_the_same_runs_give_the_same_document_apart_from_its_date(
    runs: dict[str, Path], pages: dict[str, str], tmp_path: Path
) -> None:
    again = certified(runs["failed"], tmp_path / "again")
    assert again == pages["failed"]
    later = certified(runs["failed"], tmp_path / "later", date="2027-01-31")
    assert later != again
    assert later.replace("2027-01-31", "2026-11-24") == again
    # two runs: the same whichever order they are given in? No: the order is the reader's. But the
    # same order twice is the same document, and a different output folder changes nothing.
    two = [runs["passed"], runs["marginal"]]
    a = certify(two, tmp_path / "a", date="2026-11-24", pdf=False).html.read_bytes()
    b = certify(two, tmp_path / "b", date="2026-11-24", pdf=False).html.read_bytes()
    assert a == b


def test_the_document_changes_when_a_run_folder_changes(runs: dict[str, Path], pages: dict[str, str]) -> None:
    """The appendix hashes every file: a reader can tell the numbers came from these exact folders."""
    doc = render(build(load_runs([runs["passed"]]), date="2026-11-24"))
    assert doc == pages["passed"]
    events = runs["passed"] / "events.jsonl"
    original = events.read_bytes()
    try:
        events.write_bytes(original + b"\n")
        changed = render(build(load_runs([runs["passed"]]), date="2026-11-24"))
    finally:
        events.write_bytes(original)
    assert changed != doc


def test_no_python_reprs_or_placeholders_reach_the_reader(pages: dict[str, str]) -> None:
    for name, page in pages.items():
        text = body_text(page)
        for bad in ("None", "nan", "Outcome.", "Status.", "{'", "<object", "Traceback", "result(s)"):
            assert not re.search(rf"(?<![\w-]){re.escape(bad)}", text), f"{name}: {bad!r} in the document"


def test_cli_exit_code_says_not_certified(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--no-pdf", "--date", "2026-11-24"]
    assert run_cli(cli, ["certify", str(runs["passed"]), "--out", str(tmp_path / "ok"), *common]) == EXIT_OK
    assert "verdict: Certified: every cell passed" in capsys.readouterr().out
    bad = run_cli(cli, ["certify", str(runs["killed"]), "--out", str(tmp_path / "bad"), *common])
    assert bad == EXIT_FAILED
    assert (
        "verdict: Not certified: run 20071105-100000-boot_storm-kill did not finish"
        in capsys.readouterr().out
    )
    assert (tmp_path / "bad" / "certification.html").is_file()  # written all the same


def test_server_sections_only_for_the_configuration_under_test_and_no_empty_charts() -> None:
    """The figures page shows every sampled machine (a vCenter's hosts in the 2007 lab too); the
    certification shows the configuration under test, and a chart with nothing recorded as a sentence."""
    from labctl.report.certify.figures import sections_as_blocks, server_title
    from labctl.report.certify.model import Figure, Text
    from labctl.report.timelines import Fig
    from labctl.report.timelines import Section as FigSection

    def chart(what: str, server: str, recorded: bool) -> Fig:
        caption = f"{what} of {server}, %." if recorded else f"{what} of {server}: not recorded in this run."
        return Fig("<svg/>", caption)

    pages = [
        FigSection("Boot storm: client experience", "Boot time.", [chart("Boot time", "clients", True)]),
        FigSection(
            "Boot storm: pvs-01 (streaming server), standalone",
            "Counters.",
            [chart("CPU utilisation", "pvs-01", True), chart("Used memory", "pvs-01", False)],
        ),
        FigSection(
            "Boot storm: esx-vdi-01, standalone", "Counters.", [chart("CPU utilisation", "esx-vdi-01", True)]
        ),
        FigSection(
            "Boot storm: nas-01, standalone", "Counters.", [chart("CPU utilisation", "nas-01", False)]
        ),
    ]
    shown = sections_as_blocks(pages, server_title("Boot storm: "), {"pvs-01", "infra-01", "nas-01"})
    assert [s.title for s in shown] == [
        "Client experience",
        "Server utilisation: pvs-01 (streaming server), standalone",
    ]
    pvs = shown[1].blocks
    assert [type(b) for b in pvs] == [Text, Figure, Text]
    assert pvs[-1].text == "Not recorded in these runs, so not shown: Used memory of pvs-01."  # type: ignore[union-attr]
    # without the machines under test (a kind that does not know them) every recorded server stays
    assert len(sections_as_blocks(pages, server_title("Boot storm: "))) == 3


def _pdf_objects(pdf: bytes) -> bytes:
    """The PDF's bytes with every Flate stream inflated (object streams hide the font dictionaries)."""
    out = [pdf]
    for m in re.finditer(rb"stream\r?\n(.*?)endstream", pdf, re.S):
        try:
            out.append(zlib.decompress(m.group(1)))
        except zlib.error:
            continue
    return b"\n".join(out)


def test_the_pdf_first_page_carries_the_verdict_and_is_reproducible(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    """The PDF as a reader gets it: page 1 says "not certified" and why, pages are numbered, the
    contents have page numbers, the fonts are embedded, and the same runs give the same bytes."""
    import weasyprint

    first = certify([runs["interrupted"]], tmp_path / "a", date="2026-11-24")
    again = certify([runs["interrupted"]], tmp_path / "b", date="2026-11-24")
    assert first.pdf is not None and again.pdf is not None
    pdf = first.pdf.read_bytes()
    assert pdf.startswith(b"%PDF-") and pdf == again.pdf.read_bytes()
    objects = _pdf_objects(pdf)
    assert b"/FontFile2" in objects or b"/FontFile3" in objects, "no embedded font program in the PDF"

    pages = weasyprint.HTML(string=first.html.read_text(encoding="utf-8")).render().pages

    def text(page: object) -> str:
        box = page._page_box  # type: ignore[attr-defined]
        return " ".join(b.text for b in box.descendants() if isinstance(getattr(b, "text", None), str))

    one = " ".join(text(pages[0]).split())
    assert "NOT CERTIFIED (simulated lab)" in one
    assert "run 20071105-100000-boot_storm-intr was interrupted" in one
    assert f"page 1 of {len(pages)}" in one
    contents = " ".join(text(pages[1]).split())
    toc = r"Contents 1 Introduction[ .]+3 2 Configuration under test[ .]+3 "
    assert re.search(toc, contents), contents[:300]

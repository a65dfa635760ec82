"""`labctl certify` of a VDI run reads like the 2012 paper (issue 20, one-verdict): the configuration
(hosts, arrays, pools, launchers; never a launcher's access), the method, the figures, findings in
sentences, the criteria in a person's words, the response-time index's headline, and sizing from
what was measured; the document names the labctl version and the run ids and no absolute path."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from labctl.report.certify.document import certify
from tests.report.certify_text import body_text, cover_text
from tests.report.synthetic_vdi import ARRAY, HOSTS, LAUNCHER_PASSWORD, make_vdi_run

RUN_ID = "20121105-100000-vdi_storm-0001"


@pytest.fixture(scope="module")
def failed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Steady state at 10.4 IOPS per desktop: outside the marginal band of a criterion judged only
    when measured, so the cells fail and the document is not certified."""
    root = tmp_path_factory.mktemp("vdi-fail")
    run = make_vdi_run(root, saturate_at=80, steady_iops=10.4)
    written = certify([run], root / "out", pdf=False, date="2026-11-24")
    return root, written.html.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def passed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("vdi-pass")
    run = make_vdi_run(root, steady_iops=7.5)
    written = certify([run], root / "out", pdf=False, date="2026-11-24")
    return root, written.html.read_text(encoding="utf-8")


def _section(text: str, head: str, until: str) -> str:
    start = text.rindex(head)
    end = text.index(until, start)
    return text[start:end]


def test_configuration_lists_hosts_arrays_pools_and_launchers(passed: tuple[Path, str]) -> None:
    _, page = passed
    text = body_text(page)
    config = _section(text, "2 Configuration under test", "3 Test method")
    for what in ("ESXi hosts", "Storage arrays", "Datastores", "Desktop pools", "Session launchers"):
        assert what in config, what
    assert f"{HOSTS[0]} ... {HOSTS[-1]}" in config and ARRAY in config
    assert "8 × SSD 100 GB in RAID 10" in config and "task-pool" in config and "vsi-01 ... vsi-04" in config
    assert LAUNCHER_PASSWORD not in page and "vsi-launcher" not in page


def test_findings_are_sentences_with_the_measured_numbers(passed: tuple[Path, str]) -> None:
    _, page = passed
    text = body_text(page)
    assert "None generated" not in text
    findings = _section(text, "5 Findings", "6 Sizing")
    assert "all 100 desktops logged on" in findings
    assert (
        f"array {ARRAY} peaked at 1 785 IOPS in the boot storm (17 per desktop; the 2012 paper: 16-18)"
        in findings
    )
    assert "not saturated up to 100 sessions" in findings


def test_criteria_in_words_never_selector_text(failed: tuple[Path, str]) -> None:
    _, page = failed
    method = _section(body_text(page), "3 Test method", "4 Results")
    assert "cpu[" not in method and "*/" not in method and "clients/" not in method
    assert "CPU utilisation of each ESXi host: highest sample in the window" in method
    assert "I/O latency" in method or "latency" in method


def test_a_failing_criterion_is_not_labelled_not_required(failed: tuple[Path, str]) -> None:
    _, page = failed
    text = body_text(page)
    assert "NOT CERTIFIED" in cover_text(page)
    assert "(not required)" not in text
    assert "steady IOPS per desktop (table 7) (judged when measured)" in text
    cover = cover_text(page)
    # the failure is a reason, never an observation
    observations = cover.split("Observations")[1] if "Observations" in cover else ""
    assert "steady IOPS per desktop" not in observations.split("Key findings")[0]
    assert "failed: steady IOPS per desktop (table 7) 10.4 IO/s, outside its pass band" in cover


def test_the_index_headline_is_read_as_vsimax(failed: tuple[Path, str]) -> None:
    _, page = failed
    text = body_text(page)
    assert "saturated at 80 sessions (baseline 0.80 s); 80 of 100 desktops good (80 %)" in text
    assert "not saturated up to 50 sessions" in text


def test_figures_of_arrays_and_hosts_are_in_the_document(passed: tuple[Path, str]) -> None:
    _, page = passed
    results = page[page.index("Results per cell") :]
    assert "array IOPS" in results and "array latency" in results and "host CPU" in results
    assert results.count("<svg") >= 10


def test_sizing_from_the_passing_cells(passed: tuple[Path, str], failed: tuple[Path, str]) -> None:
    text = body_text(passed[1])
    sizing = _section(text, "6 Sizing", "Appendix A")
    found = re.search(r"desktops per array \(the limiting phase: boot\) (\d+)", sizing)
    assert found, sizing
    assert int(found.group(1)) >= 100, "sized fewer desktops than one array carried in a passing cell"
    # a failed cell sizes nothing, and the document says so
    sizing = _section(body_text(failed[1]), "6 Sizing", "Appendix A")
    assert "No VDI cell passed" in sizing


def test_version_run_ids_and_no_absolute_paths(passed: tuple[Path, str]) -> None:
    root, page = passed
    text = body_text(page)
    assert "labctl 0.1.0" in text and RUN_ID in text
    assert str(root) not in page and "/labs/" not in page
    assert "inventory file sim-2007.yaml" in text


def test_the_glossary_speaks_of_desktops_not_of_wake_on_lan(passed: tuple[Path, str]) -> None:
    glossary = body_text(passed[1]).rsplit("Appendix C Glossary", 1)[1]
    assert (
        "desktop pool" in glossary and "saturation point" in glossary and "judged when measured" in glossary
    )
    assert "Wake-on-LAN" not in glossary and "copiers/rebooters" not in glossary

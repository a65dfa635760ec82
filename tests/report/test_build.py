"""End to end: a run's Allure sink writes one result per cell, then `labctl report` builds one
offline HTML file with categories and history, and the figures page; also for a killed run."""

from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from labctl.cli import cli
from labctl.report.build import ReportError, build_report, find_allure, latest_run, resolve_run
from labctl.report.offline import external_references
from tests.report.synthetic import Synth, make_run


def _report_data(html: str) -> dict[str, str]:
    """The files Allure's single-file report embeds (base64 in d("name","...") calls)."""
    out = {}
    for name, b64 in re.findall(r'd\("([^"]+)","([A-Za-z0-9+/=]*)"\)', html):
        try:
            out[name] = base64.b64decode(b64).decode("utf-8", "replace")
        except ValueError:
            continue
    return out


@pytest.mark.slow
def test_sink_results_to_offline_report_with_categories_and_history(tmp_path: Path) -> None:
    results = tmp_path / "results"
    # 5 passes; 50 is marginal (disk queue peak 10 > 8); 90 fails it (47 > 40); 100 has a client
    # that never booted (a lab fault); the 25 cell was interrupted
    run = make_run(
        results,
        group_sizes=(5, 25, 50, 90, 100),
        never_boots=("optiplex-042",),
        synth=Synth(interrupted={"boot_storm-standalone-025": 100.0}),
        allure=True,
    )
    from labctl.report.allure_helpers import write_environment

    write_environment(
        run / "allure-results", {"lab": "sim-2007", "pvs-01 BIOS": "2.7.0", "PVS version": "4.1 SP2"}
    )
    assert (run / "allure-results" / "categories.json").is_file()  # the sink wrote them
    built = build_report(run)
    assert built.allure_index == run / "report" / "index.html"
    assert built.figures == run / "report" / "figures.html"
    assert built.tests == 5 and built.state.startswith("interrupted")
    html = built.allure_index.read_text()
    assert external_references(html) == []
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//(?!localhost|127\.)""", html, re.I)
    assert "googletagmanager" not in html and "Content-Security-Policy" in html
    data = _report_data(html)
    assert data, "no embedded report data found"
    blob = "\n".join(data.values())
    assert "sim-2007" in blob and "4.1 SP2" in blob  # environment
    trs = [json.loads(v) for k, v in data.items() if k.startswith("data/test-results/")]
    by_story = {next(lb["value"] for lb in t["labels"] if lb["name"] == "story"): t for t in trs}
    status = {k: v["status"] for k, v in by_story.items()}
    assert status == {
        "boot_storm-standalone-005": "passed",
        "boot_storm-standalone-025": "broken",
        "boot_storm-standalone-050": "passed",
        "boot_storm-standalone-090": "failed",
        "boot_storm-standalone-100": "broken",
    }
    # marginal is not plain green: tagged, in its own category, never "Flaky" (issue 20); each
    # failure in its own
    assert by_story["boot_storm-standalone-050"]["flaky"] is False
    cats = {k: [c["name"] for c in v.get("categories") or []] for k, v in by_story.items()}
    assert cats["boot_storm-standalone-050"] == ["Marginal"]
    assert cats["boot_storm-standalone-090"] == ["Threshold failures"]
    assert cats["boot_storm-standalone-100"] == ["Lab faults"]
    assert cats["boot_storm-standalone-025"] == ["Interrupted"]
    # the one-line reason first
    assert by_story["boot_storm-standalone-025"]["error"]["message"].startswith("interrupted: Ctrl-C")
    assert {t.get("transition") for t in trs} == {"new"}  # no history yet
    for t in trs:
        labels = {lb["name"]: lb["value"] for lb in t["labels"]}
        assert labels["epic"] == "boot_storm" and labels["feature"] == "boot_storm"
    # history: rebuilding the same run does not count it twice; the next run's build appends
    build_report(run)
    assert len((results / "allure-history.jsonl").read_text().strip().splitlines()) == 1
    run2 = results / "20071106-100000-boot_storm-0002"
    shutil.copytree(run, run2, ignore=shutil.ignore_patterns("report"))
    second = build_report(run2)
    assert len((results / "allure-history.jsonl").read_text().strip().splitlines()) == 2
    assert second.allure_index is not None
    trs2 = [
        json.loads(v)
        for k, v in _report_data(second.allure_index.read_text()).items()
        if k.startswith("data/test-results/")
    ]
    assert trs2 and all(t.get("transition") != "new" for t in trs2)  # seen in the previous run
    fig_html = built.figures.read_text()
    assert fig_html.count("<svg") >= 6 and external_references(fig_html) == []
    # the disk-queue chart shows the band the cells were judged against (from verdicts.json)
    assert "pass &lt;= 8 (peak)" in fig_html
    assert "write-cache disk queue: peak &lt;= 8" in fig_html


@pytest.mark.slow
def test_report_of_a_killed_run_shows_its_last_cell_as_interrupted(tmp_path: Path) -> None:
    results = tmp_path / "results"
    run = make_run(results, group_sizes=(5, 50), synth=Synth(killed="boot_storm-standalone-050"), allure=True)
    before = sorted(p.name for p in (run / "allure-results").iterdir())
    res = CliRunner().invoke(cli, ["report", str(run)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "outcome: running (no end recorded" in res.output
    assert "(2 test results)" in res.output
    assert sorted(p.name for p in (run / "allure-results").iterdir()) == before  # the run folder is as it was
    index = run / "report" / "index.html"
    trs = [
        json.loads(v)
        for k, v in _report_data(index.read_text()).items()
        if k.startswith("data/test-results/")
    ]
    by_story = {next(lb["value"] for lb in t["labels"] if lb["name"] == "story"): t for t in trs}
    assert by_story["boot_storm-standalone-005"]["status"] == "passed"
    killed = by_story["boot_storm-standalone-050"]
    assert (
        killed["status"] == "broken"
        and "the run ended before this cell finished" in killed["error"]["message"]
    )
    assert "interrupted (killed)" in (run / "report" / "figures.html").read_text()


def test_report_command_latest_run_and_figures_only(tmp_path: Path) -> None:
    results = tmp_path / "results"
    newest = make_run(
        results,
        run_id="20071105-090000-boot_storm-aaaa",
        group_sizes=(1, 5),
        started_wall="2026-11-21T06:00:00.000Z",
    )
    make_run(results, run_id="20071105-100000-boot_storm-bbbb", group_sizes=(1,))
    # the one with the later name started earlier: run.json decides, not the name
    assert latest_run(results).name == "20071105-090000-boot_storm-aaaa"
    res = CliRunner().invoke(cli, ["report", "--results-dir", str(results)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert f"run:     {newest}" in res.output
    assert "report:  none (no Allure results" in res.output
    assert (newest / "report" / "figures.html").is_file()
    assert resolve_run("20071105-100000-boot_storm-bbbb", results).name.endswith("bbbb")


def test_missing_allure_names_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LABCTL_ALLURE", raising=False)
    with pytest.raises(
        ReportError, match=r"Allure 3 is not installed in .*node_modules \(run `make install`"
    ):
        find_allure(tmp_path)
    results = tmp_path / "results"
    run = make_run(results, group_sizes=(1,))
    (run / "allure-results").mkdir()
    (run / "allure-results" / "x-result.json").write_text("{}")
    monkeypatch.setenv("LABCTL_ALLURE", str(tmp_path / "no-such-allure"))
    with pytest.raises(ReportError, match="make install"):
        build_report(run)
    # the figures need no Allure: a broken install still leaves them
    assert (run / "report" / "figures.html").is_file()


def test_not_a_run(tmp_path: Path) -> None:
    from labctl.errors import BadInputError

    with pytest.raises(BadInputError, match="no results folder"):
        latest_run(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadInputError, match="no runs yet"):
        latest_run(tmp_path / "empty")
    with pytest.raises(BadInputError, match="not a run folder"):
        resolve_run("20990101-x", tmp_path / "empty")

"""End to end: a plan using the Allure helpers runs under allure-pytest, then `labctl report`
builds one offline HTML file with categories and history, and the figures page."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from labctl.cli import cli
from labctl.report.build import ReportError, build_report, find_allure, latest_run, resolve_run
from labctl.report.offline import external_references
from tests.report.synthetic import make_run

PLAN = textwrap.dedent(
    """
    import pytest
    from labctl.criteria import evaluate, parse_criteria, Names
    from labctl.recorder import RunSeries
    from labctl.recorder.cells import read_cell_summaries
    from labctl.report import allure_helpers as A
    from labctl.report import charts

    RUN = {run!r}
    CRITERIA = parse_criteria({{"criteria": [
        {{"name": "write-cache disk queue", "select": {{"source": "typeperf", "entity": "{{write_cache_disk}}",
          "metric": "disk_queue_len"}}, "statistic": "peak", "unit": "requests",
          "pass": {{"max": "2 * spindles"}}}},
        {{"name": "boot time per client", "select": {{"source": "pvs", "metric": "boot_time_s"}},
          "statistic": "last", "expect": "clients", "unit": "s", "pass": {{"max": 60}}}},
    ]}})

    @pytest.mark.parametrize("cell", sorted(read_cell_summaries(RUN)))
    def test_boot_storm(cell):
        summary = read_cell_summaries(RUN)[cell]
        A.label_cell("boot_storm", "boot storm", cell, group_size=summary["group_size"], window_s=360)
        data = RunSeries(RUN)
        with A.step("wake group"):
            pass
        with A.step("sample window"):
            series = data.series(cell=cell, source="typeperf", metric="cpu_pct")
            A.attach_series(series)
            A.attach_figure(charts.over_time("CPU", [charts.Line(cell, [t - series[0].ts[0] for t in series[0].ts],
                            series[0].values)], ylabel="%"), "CPU utilisation", svg=True)
        A.attach_json(summary, "summary")
        names = Names({{"write_cache_disk": summary["write_cache_disk"], "spindles": 4}})
        t0 = summary["storm_start_ts_s"]
        verdict = evaluate(CRITERIA, data, cell=cell, window=(t0, t0 + 360), names=names,
                           expected={{"clients": sorted(summary["clients"])}})
        verdict.write(RUN)
        A.report_verdict(verdict, data)
        verdict.raise_for_outcome()
    """
)


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
def test_plan_to_offline_report_with_categories_and_history(tmp_path: Path) -> None:
    results = tmp_path / "results"
    run = make_run(results, group_sizes=(5, 50, 100), never_boots=("optiplex-042",))
    plan = tmp_path / "plan" / "test_plan.py"
    plan.parent.mkdir()
    plan.write_text(PLAN.format(run=str(run)))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:labctl",
            f"--alluredir={run / 'allure-results'}",
            str(plan),
        ],
        cwd=plan.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # 5 passes; 50 fails its disk queue (peak 10 > 8); 100 has a client that never booted
    assert "2 failed, 1 passed" in proc.stdout, proc.stdout[-3000:]
    from labctl.report.allure_helpers import write_categories, write_environment

    write_environment(
        run / "allure-results", {"lab": "sim-2007", "pvs-01 BIOS": "2.7.0", "PVS version": "4.1 SP2"}
    )
    write_categories(run / "allure-results")

    built = build_report(run)
    assert built.allure_index == run / "report" / "index.html"
    assert built.figures == run / "report" / "figures.html"
    html = built.allure_index.read_text()
    assert external_references(html) == []
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//(?!localhost|127\.)""", html, re.I)
    assert "googletagmanager" not in html and "Content-Security-Policy" in html
    data = _report_data(html)
    assert data, "no embedded report data found"
    blob = "\n".join(data.values())
    for cat in ("Threshold failures", "Lab faults"):
        assert cat in blob
    assert "sim-2007" in blob and "4.1 SP2" in blob  # environment
    trs = [json.loads(v) for k, v in data.items() if k.startswith("data/test-results/")]
    by_story = {next(lb["value"] for lb in t["labels"] if lb["name"] == "story"): t for t in trs}
    assert set(by_story) == {
        "boot_storm-standalone-005",
        "boot_storm-standalone-050",
        "boot_storm-standalone-100",
    }
    assert by_story["boot_storm-standalone-005"]["status"] == "passed"
    assert by_story["boot_storm-standalone-050"]["status"] == "failed"
    assert by_story["boot_storm-standalone-100"]["status"] == "broken"
    # categories separate a threshold failure from a lab fault
    assert [c["name"] for c in by_story["boot_storm-standalone-050"]["categories"]] == ["Threshold failures"]
    assert [c["name"] for c in by_story["boot_storm-standalone-100"]["categories"]] == ["Lab faults"]
    assert {t.get("transition") for t in trs} == {"new"}  # no history yet
    for t in trs:
        labels = {lb["name"]: lb["value"] for lb in t["labels"]}
        assert labels["epic"] == "boot_storm" and labels["feature"] == "boot storm"
    # history: rebuilding the same run does not count it twice; the next run's build appends
    build_report(run)
    assert len((results / "allure-history.jsonl").read_text().strip().splitlines()) == 1
    run2 = results / "20071106-100000-boot_storm-0002"
    run2.mkdir()
    shutil.copytree(run / "allure-results", run2 / "allure-results")
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
    assert "pass &lt;= 8" in fig_html or "pass <= 8" in fig_html
    assert "write-cache disk queue: peak &lt;= 8 = 2 * spindles" in fig_html
    # the results table trusts the verdict over the summary (the synthetic summary says pass)
    row050 = re.search(r"<tr><td[^>]*>boot_storm-standalone-050</td>.*?</tr>", fig_html)
    assert row050 and '<td class="bad">fail</td>' in row050.group(0)
    row100 = re.search(r"<tr><td[^>]*>boot_storm-standalone-100</td>.*?</tr>", fig_html)
    assert row100 and '<td class="bad">lab_fault</td>' in row100.group(0)


def test_report_command_latest_run_and_figures_only(tmp_path: Path) -> None:
    results = tmp_path / "results"
    make_run(results, run_id="20071105-090000-boot_storm-aaaa", group_sizes=(1,))
    newest = make_run(results, run_id="20071105-100000-boot_storm-bbbb", group_sizes=(1, 5))
    # the older one says it started later: run.json decides, not the name
    assert latest_run(results).name == "20071105-100000-boot_storm-bbbb"
    res = CliRunner().invoke(cli, ["report", "--results-dir", str(results)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert f"run:     {newest}" in res.output
    assert "report:  none (no Allure results" in res.output
    assert (newest / "report" / "figures.html").is_file()
    assert resolve_run("20071105-090000-boot_storm-aaaa", results).name.endswith("aaaa")


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

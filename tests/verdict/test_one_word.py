"""One word per verdict, in every output (issue 20): a cell of each outcome (pass, marginal, fail,
lab fault, no data, interrupted) goes through the real pytest plugin, cell runner and sinks, and
the terminal, junit.xml, the Allure result, the figures page, the results store (DuckDB) and the
certificate all name it with the same word.

The cells are synthesised (a scenario that records a few samples and returns a summary, on a lab
environment without machines): nothing starts a simulator, so the whole module takes seconds.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from labctl.records.run_record import Outcome

ROOT = Path(__file__).resolve().parents[2]

# group size n -> the outcome the synthetic cell comes out with (the interrupted cell runs last:
# an interrupt stops the session)
OUTCOMES = {
    1: Outcome.PASS,
    2: Outcome.MARGINAL,
    3: Outcome.FAIL,
    4: Outcome.LAB_FAULT,
    5: Outcome.NO_DATA,
    6: Outcome.INTERRUPTED,
}
WORD = {o: o.value.replace("_", " ") for o in Outcome}  # the one word a person reads

CONFTEST = """
import pytest

from labctl.clock import LabClock
from labctl.lab.events import Timeline
from labctl.plugin.plan_fixtures import install_interrupts


class Sources:
    def for_plan(self, **_):
        return []  # the synthetic scenario records its own samples


class Sites:  # no site agents: the run's context goes nowhere

    def set_context(self, run_id, cell_id):
        return None


class Session:
    def __init__(self, lab):
        self.lab = lab
        self.clock = LabClock(scale=lab.time_scale)
        self.timeline = Timeline(self.clock)
        self.sources = Sources()
        self.sites = Sites()


class Environment:
    \"\"\"A lab environment without machines: the runner's session, nothing to start or restore.\"\"\"

    def __init__(self, lab):
        self.base_lab = lab
        self.configuration = lab.configuration.name if lab.configuration else None
        self._session = Session(lab)

    def session(self, configuration=None):
        return self._session

    def default_configuration(self):
        return self.configuration


@pytest.fixture(scope="session")
def lab_env(pytestconfig, lab, run_folder):
    install_interrupts(pytestconfig)
    yield Environment(lab)
"""

PLAN = """
import os
import signal

import pytest

from labctl.records.run_record import CellSummary, ClientOutcome, Outcome, Phase, Window
from labctl.records.samples import Sample
from labctl.scenarios.base import Scenario, ScenarioResult

KIND = {1: "pass", 2: "marginal", 3: "fail", 4: "lab_fault", 5: "no_data", 6: "interrupted"}
QUEUE = {"pass": 2.0, "marginal": 12.0, "fail": 40.0, "lab_fault": 2.0, "no_data": None, "interrupted": 2.0}


class Result(ScenarioResult):
    def __init__(self, window, clients):
        self.window = window
        self.clients = clients

    def summary(self, head):
        return CellSummary(
            cell=head.cell, plan=head.plan, scenario=head.scenario, configuration=head.configuration,
            parameters=head.parameters, outcome=Outcome.PASS, window=self.window,
            phases=[Phase(name="window", start_ts_s=self.window.start_ts_s, end_ts_s=self.window.end_ts_s)],
            clients=self.clients,
        )


class Synthetic(Scenario):
    name = "boot_storm"
    title = "boot storm"

    def __init__(self, n):
        self.n = n

    def parameters(self):
        return {"group_size": self.n}

    def run(self, lab, ctx):
        kind = KIND[self.n]
        t0 = lab.clock.now()
        if QUEUE[kind] is not None:
            ctx.record(
                Sample("typeperf", "pvs-01/D:", "disk_queue_len", "requests", t0 + 5 * i, QUEUE[kind])
                for i in range(13)
            )
        clients = {
            f"optiplex-00{i}": ClientOutcome(name=f"optiplex-00{i}", role="storm", outcome="ready", boot_time_s=30.0)
            for i in range(1, 3)
        }
        if kind == "lab_fault":
            clients["optiplex-003"] = ClientOutcome(
                name="optiplex-003", role="storm", outcome="timeout", detail="not ready by the deadline"
            )
        if kind == "interrupted":
            os.kill(os.getpid(), signal.SIGINT)  # the first Ctrl-C: the cell stops gracefully
            ctx.stop.wait(10)
        return Result(Window(start_ts_s=t0, end_ts_s=t0 + 60), clients)


pytestmark = pytest.mark.plan("boot_storm")


def test_boot_storm(group_size, run_cell):
    run_cell(Synthetic(group_size))
"""

PARAMS = """
plan: boot_storm
default_profile: full
profiles:
  full:
    group_sizes: [1, 2, 3, 4, 5, 6]
"""

CRITERIA = """
plan: boot_storm
criteria:
  - name: queue
    select: {source: typeperf, entity: "pvs-01/D:", metric: disk_queue_len}
    statistic: mean
    unit: requests
    pass: {max: 8}
    marginal: {max: 16}
  - name: boot time per client
    select: {result: boot_time_s, role: storm}
    unit: s
    pass: {max: 60}
    marginal: {max: 90}
"""


def cell_id(n: int) -> str:
    return f"boot_storm-standalone-{n:03d}"


def pytest_session(here: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest in ``here`` with labctl's plugin from this tree, plain progress lines (CI)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LABCTL_", "PYTEST_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["CI"] = "1"
    # its own leases and quarantine: the project's `.labctl/` is shared with whatever else runs
    env["LABCTL_LEASE_DIR"] = str(here / ".lab-state" / "leases")
    env["LABCTL_QUARANTINE_FILE"] = str(here / ".lab-state" / "quarantine.json")
    argv = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-o", "timeout=0"]
    argv += [f"--rootdir={here}", f"--lab={ROOT / 'hardware' / 'sim-2007.yaml'}", *args]
    return subprocess.run(argv, cwd=here, env=env, capture_output=True, text=True, timeout=300, check=False)


def plans(here: Path, **modules: str) -> Path:
    """The synthetic plan modules (name -> group sizes) and their files in ``here``."""
    (here / "conftest.py").write_text(CONFTEST)
    (here / "criteria").mkdir()
    (here / "criteria" / "boot_storm.yaml").write_text(CRITERIA)
    for plan, sizes in modules.items():
        (here / f"test_{plan}.py").write_text(PLAN.replace('mark.plan("boot_storm")', f'mark.plan("{plan}")'))
        (here / f"{plan}.params.yaml").write_text(
            PARAMS.replace("boot_storm", plan).replace("1, 2, 3, 4, 5, 6", sizes)
        )
    return here


def test_junit_of_a_session_of_several_plans_holds_every_cell_of_every_plan(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """``labctl run 2007`` is one session of three plans: its junit.xml held the last plan's cells."""
    here = plans(tmp_path_factory.mktemp("plans"), boot_storm="1, 2", copy_reboot="1", ha_comparison="1, 2")
    proc = pytest_session(here, f"--results-dir={here / 'results'}", "--strict-marginal")
    assert proc.returncode == pytest.ExitCode.TESTS_FAILED, proc.stdout  # the marginal cells fail
    [folder] = [p for p in (here / "results").iterdir() if (p / "run.json").exists()]
    root = ET.parse(folder / "junit.xml").getroot()
    suites = {s.get("name"): [c.get("name") for c in s.iter("testcase")] for s in root.iter("testsuite")}
    assert suites == {
        "boot_storm": ["boot_storm-standalone-001", "boot_storm-standalone-002"],
        "copy_reboot": ["copy_reboot-standalone-001"],
        "ha_comparison": ["ha_comparison-standalone-001", "ha_comparison-standalone-002"],
    }
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "2", "0")
    last = proc.stdout.splitlines()[-1]
    assert "3 passed" in last and "2 marginal" in last, last
    run_json = json.loads((folder / "run.json").read_text())
    assert run_json["outcome"] == "failed" and "--strict-marginal" in run_json["reason"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One pytest session of six synthetic cells through the plugin (a process of its own: the
    interrupted cell sends itself SIGINT), written to a run folder and a DuckDB results store."""
    here = plans(tmp_path_factory.mktemp("plans"), boot_storm="1, 2, 3, 4, 5, 6")
    results = here / "results"
    store_url = f"duckdb:{here / 'store'}"
    proc = pytest_session(here, f"--results-dir={results}", f"--store={store_url}")
    folders = [p for p in results.iterdir() if (p / "run.json").exists()] if results.is_dir() else []
    assert len(folders) == 1, proc.stdout + proc.stderr
    return {
        "lines": proc.stdout.splitlines(),
        "code": proc.returncode,
        "folder": folders[0],
        "store": store_url,
    }


def test_the_run_has_a_cell_of_every_outcome(run: dict[str, Any]) -> None:
    from labctl.recorder.cell_files import read_cell_summaries

    summaries = read_cell_summaries(run["folder"])
    assert {c: s.outcome for c, s in summaries.items()} == {cell_id(n): o for n, o in OUTCOMES.items()}


def test_the_terminal_counts_each_outcome_under_its_word(run: dict[str, Any]) -> None:
    lines = run["lines"]
    assert run["code"] == pytest.ExitCode.INTERRUPTED  # the last cell was interrupted
    text = "\n".join(lines)
    for n, outcome in OUTCOMES.items():
        shown = {Outcome.PASS: "PASSED", Outcome.FAIL: "FAILED"}.get(outcome, WORD[outcome].upper())
        # -v: the word after the test's id (the cell's own lines come between), and the cell's
        # verdict line the moment it ended
        assert re.search(rf"^{cell_id(n)}: {WORD[outcome].upper()}\b.*\[cell {n} of ", text, re.M), n
        assert re.search(rf"\[{cell_id(n)}\] (.*\n)*?{shown}\s+\[", text), [
            x for x in lines if cell_id(n) in x
        ]
    summary = lines[-1]
    # pytest's own words for pass and fail ("passed", "failed"), the outcome's word for the rest
    for part in ("1 passed", "1 marginal", "1 failed", "1 lab fault", "1 no data", "1 interrupted"):
        assert part in summary, summary
    # a cell that did not pass is listed with its word and reason
    listed = "\n".join(lines)
    for n, outcome in OUTCOMES.items():
        if outcome is not Outcome.PASS:
            assert re.search(rf"^{WORD[outcome].upper()} {cell_id(n)}: ", listed, re.M), outcome


def test_junit_carries_the_word(run: dict[str, Any]) -> None:
    root = ET.parse(run["folder"] / "junit.xml").getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    for n, outcome in OUTCOMES.items():
        case = cases[cell_id(n)]
        props = {p.get("name"): p.get("value") for p in case.findall("properties/property")}
        assert props["outcome"] == outcome.value
        bad = case.find("failure") if case.find("failure") is not None else case.find("error")
        if outcome is Outcome.PASS:
            assert bad is None and case.find("system-out") is None
        elif outcome is Outcome.MARGINAL:
            assert bad is None  # passes, and says so where CI servers show a test's output
            assert (case.findtext("system-out") or "").startswith("MARGINAL: ")
        else:
            assert bad is not None and (bad.get("message") or "").startswith(f"{WORD[outcome]}: ")


def test_allure_carries_the_word_and_marginal_is_never_flaky(run: dict[str, Any]) -> None:
    """The results the sink wrote (what Allure 3 makes of them, the Marginal category and no flaky
    test, is checked on the generated report by tests/report/test_build.py)."""
    results = {}
    for f in (run["folder"] / "allure-results").glob("*-result.json"):
        r = json.loads(f.read_text())
        story = next(label["value"] for label in r["labels"] if label["name"] == "story")
        results[story] = r
    status = {Outcome.PASS: "passed", Outcome.MARGINAL: "passed", Outcome.FAIL: "failed"}
    for n, outcome in OUTCOMES.items():
        r = results[cell_id(n)]
        labels = {(label["name"], label["value"]) for label in r["labels"]}
        assert ("outcome", outcome.value) in labels
        assert r["status"] == status.get(outcome, "broken")
        assert not (r.get("statusDetails") or {}).get("flaky")
        if outcome is not Outcome.PASS:
            assert ("tag", WORD[outcome]) in labels
            assert f"outcome: {outcome.value}" in r["statusDetails"]["message"]


def test_the_figures_page_says_the_word(run: dict[str, Any]) -> None:
    from labctl.report.figures import figures_html

    page = figures_html(run["folder"])
    for n, outcome in OUTCOMES.items():
        row = re.search(rf"<tr[^>]*>\s*<td[^>]*>{cell_id(n)}</td>.*?</tr>", page, re.S)
        assert row is not None, cell_id(n)
        badge = re.search(r'<span class="badge[^"]*">([^<]*)</span>', row.group(0))
        assert badge is not None and badge.group(1) == WORD[outcome], (cell_id(n), badge)


def test_the_store_row_says_the_word(run: dict[str, Any]) -> None:
    from labctl.store import open_store

    store = open_store(run["store"])
    try:
        [row] = store.runs()
        cells = {c.cell: c for c in store.cells(row.run_id)}
    finally:
        store.close()
    assert {c: cells[c].outcome for c in cells} == {cell_id(n): o.value for n, o in OUTCOMES.items()}


def test_the_certificate_says_the_word(run: dict[str, Any]) -> None:
    from labctl.report.certify.document import build
    from labctl.report.certify.inputs import load_runs

    doc = build(load_runs([run["folder"]]))
    shown: dict[str, str] = {}  # group size -> the outcome column of the results table

    def walk(blocks: Any) -> None:
        for b in blocks:
            if getattr(b, "caption", "").startswith("Boot storm results per group size"):
                at = b.head.index("outcome")
                shown.update({row[0].text: row[at].text for row in b.rows})
            walk([*getattr(b, "blocks", ()), *getattr(b, "children", ())])

    walk(doc.sections)
    assert shown == {str(n): WORD[o] for n, o in OUTCOMES.items()}
    assert doc.verdict.status.value == "not certified"

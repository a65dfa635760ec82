"""labctl's pytest plugin (registered through the ``pytest11`` entry point).

What a test plan gets:

- options ``--lab FILE``, ``--lab-config NAME``, ``--results-dir DIR``, ``--lease-wait S`` and the
  plan options ``--profile``, ``--plan-param``, ``--plan-file`` (:mod:`labctl.plugin.options`);
- ``lab``: the loaded :class:`~labctl.inventory.model.Lab` (session scope). A bad inventory stops
  the session before any test runs, with the inventory's own ``file:line:`` lines;
- ``run_folder``: the session's :class:`~labctl.recorder.runfolder.RunFolder`, created the first
  time a test asks for it (so test sessions that never do, like labctl's own unit tests, leave
  ``results/`` alone) and finished at the end of the session with its outcome;
- for plans (``@pytest.mark.plan("name", params=Model)``): cells, ``plan_params``, ``lab_env``,
  ``run_cell`` and ``reuse_cell`` (:mod:`labctl.plugin.plan_fixtures`).
"""

from __future__ import annotations

from typing import Any

import pytest

from labctl.criteria.errors import LabFault, NoDataError, ThresholdFailure
from labctl.errors import PYTEST_EXIT_NOT_STORED, BadInputError
from labctl.inventory.model import Lab
from labctl.plugin import plan_fixtures
from labctl.plugin.options import add_options, session_lab, settings
from labctl.plugin.plan_fixtures import (  # noqa: F401  (pytest finds fixtures and hooks by name here)
    lab_env,
    plan_params,
    pytest_collection_modifyitems,
    pytest_generate_tests,
    reuse_cell,
    run_cell,
)
from labctl.plugin.runner import Interrupted
from labctl.recorder.cell_files import read_cell_summaries
from labctl.recorder.runfolder import RunFolder
from labctl.records.run_record import Outcome, RunOutcome, run_outcome

_run_key = pytest.StashKey[RunFolder]()
_plan_key = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)
    parser.getgroup("labctl").addoption(
        "--strict-marginal",
        action="store_true",
        default=False,
        help="A marginal cell (outside its pass band, inside its marginal band) fails the session "
        "(JUnit failure, Allure failed) instead of passing with a warning; it is still called marginal.",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "plan(name, params=Model, criteria=names): the test plan a test belongs to (names the run "
        "folder), its parameter model and the criteria files its cells use (default: the plan's)",
    )


def _uses(items: list[pytest.Item], *fixtures: str) -> bool:
    return any(f in getattr(item, "fixturenames", ()) for item in items for f in fixtures)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Before the first test: a bad inventory, plan file, ``--plan-param``, a parameter that does
    not fit the lab or a criteria file that does not load stops the session as a usage error (one
    line each); then the lab's lease is taken for a session that touches machines."""
    plan_fixtures.raise_plan_param_errors(session.config)
    if _uses(session.items, "lab", "run_folder", "lab_env", "run_cell"):
        plan_fixtures.check_lab_loads(session)
        plan_fixtures.check_plans(session)
        plan_fixtures.take_lease(session)
        plan_fixtures.count_cells(session)
    session.config.stash[_plan_key] = _plan_name(session.items)


@pytest.fixture(scope="session")
def lab(pytestconfig: pytest.Config) -> Lab:
    """The lab under test, loaded from ``--lab`` in the ``--lab-config`` configuration."""
    try:
        return session_lab(pytestconfig)
    except BadInputError as exc:  # reached only when a test asks for the lab dynamically
        pytest.fail(str(exc), pytrace=False)


# --- run folder -----------------------------------------------------------------------------------


def _plan_name(items: list[pytest.Item]) -> str:
    """What the run folder is named after: the ``plan`` markers of the selected tests, else their
    modules (``test_boot_storm.py`` -> ``boot_storm``), else ``session``."""
    plans: list[str] = []
    for item in items:
        marker = item.get_closest_marker("plan")
        if marker is not None and marker.args:
            plans.append(str(marker.args[0]))
    if not plans:
        plans = [item.path.stem.removeprefix("test_") for item in items if getattr(item, "path", None)]
    unique = list(dict.fromkeys(plans))
    return "+".join(unique) if 0 < len(unique) <= 3 else "session"


@pytest.fixture(scope="session")
def run_folder(lab: Lab, pytestconfig: pytest.Config) -> RunFolder:
    """This session's run folder (``results/<run-id>/``), created on first use."""
    if _run_key not in pytestconfig.stash:
        s = settings(pytestconfig)
        params: dict[str, Any] = {"pytest_args": list(pytestconfig.invocation_params.args)}
        plans = plan_fixtures.plans_recorded(pytestconfig)  # profile + parameters: what runs alike share
        if plans:
            profiles = list(dict.fromkeys(str(p["profile"]) for p in plans.values()))
            params.update(profile="+".join(profiles), plans=plans)
        plan = pytestconfig.stash.get(_plan_key, "session")
        run = RunFolder.create(s.results_dir, lab, plan, params)
        lease = plan_fixtures.lease_of(pytestconfig)
        if lease is not None:
            run.set_lease(lease.resource)
        pytestconfig.stash[_run_key] = run
    return pytestconfig.stash[_run_key]


@pytest.hookimpl(trylast=True)  # after session fixtures are torn down: their last writes are in
def pytest_sessionfinish(session: pytest.Session) -> None:
    """run.json's outcome, from the cells' own outcomes (a lab fault is not a failure of the system
    under test); an interrupted session ends as interrupted (pytest's exit status 2, ``labctl run``
    130) also when its cell ended gracefully rather than by KeyboardInterrupt."""
    plan_fixtures.finish_interrupts(session)
    run = session.config.stash.get(_run_key, None)
    if run is None:
        return
    cells = read_cell_summaries(run)
    outcome = run_outcome(c.outcome for c in cells.values())
    bad = [c for c in cells.values() if not c.outcome.passed]
    reason = f"{bad[0].cell}: {bad[0].reason}" if bad else ""
    try:
        status = pytest.ExitCode(session.exitstatus)
    except ValueError:  # a plugin's own exit status
        status = pytest.ExitCode.INTERNAL_ERROR
    it = plan_fixtures.interrupts_of(session.config)
    if (it is not None and it.requested) or status is pytest.ExitCode.INTERRUPTED:
        outcome = RunOutcome.INTERRUPTED
        reason = it.reason if it is not None and it.reason else "interrupted"
    elif status not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
        outcome, reason = RunOutcome.ERROR, f"pytest ended with {status.name.lower()}"
    elif status is pytest.ExitCode.TESTS_FAILED and outcome is RunOutcome.PASSED:
        marginal = [c for c in cells.values() if c.outcome is Outcome.MARGINAL]
        if marginal and session.config.getoption("--strict-marginal"):
            reason = f"{len(marginal)} marginal cell(s) fail with --strict-marginal: {marginal[0].cell}"
        else:
            reason = "a plan's own check failed (see the test report)"
        outcome = RunOutcome.FAILED
    plan_fixtures.finish_runners(session.config, run.finish(outcome, reason))
    if run.write_errors and session.exitstatus == pytest.ExitCode.OK:  # an incomplete folder is no pass
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    outputs = plan_fixtures.outputs_of(session.config)
    if outputs is not None and outputs.not_stored and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = PYTEST_EXIT_NOT_STORED  # measured and kept, not in the store: not a clean 0


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    plan_fixtures.uninstall_interrupts(config)
    plan_fixtures.release_lease(config)


# The terminal counts a cell under its outcome's word, as every other output names it: "5 passed,
# 2 marginal, 1 failed, 1 lab fault" (pytest's own words for pass and fail). Error keeps pytest's
# "failed" and its traceback: it is a defect of labctl or the plan, not a verdict.
# outcome -> (category in the summary line, progress letter, verbose word, colour)
TERMINAL: dict[Outcome, tuple[str, str, str, str]] = {
    Outcome.MARGINAL: ("marginal", "m", "MARGINAL", "yellow"),
    Outcome.LAB_FAULT: ("lab fault", "L", "LAB FAULT", "red"),
    Outcome.NO_DATA: ("no data", "N", "NO DATA", "red"),
    Outcome.INTERRUPTED: ("interrupted", "I", "INTERRUPTED", "yellow"),
}


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    outcome = getattr(report, "labctl_outcome", None)
    if report.when != "call" or outcome not in TERMINAL:
        return None
    category, letter, word, colour = TERMINAL[outcome]
    return category, letter, (word, {colour: True})


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """The cells that did not pass, one line each with their word and reason (a marginal or a
    lab-fault cell has no place in pytest's FAILURES section)."""
    lines = [
        f"{str(r.labctl_outcome).replace('_', ' ').upper()} {r.labctl_cell}: {r.labctl_reason}"
        for key in terminalreporter.stats
        for r in terminalreporter.stats[key]
        if getattr(r, "labctl_outcome", "pass") != "pass" and getattr(r, "when", "") == "call"
    ]
    if lines:
        terminalreporter.section("labctl: cells that did not pass")
        for line in lines:
            terminalreporter.write_line(line)
    it = plan_fixtures.interrupts_of(config)
    if it is not None and it.requested:
        terminalreporter.write_line(f"labctl: {it.reason}: what was measured is kept in the run folder")
    outputs = plan_fixtures.outputs_of(config)
    for line in outputs.summary_lines() if outputs is not None else []:  # a store lost mid-run, ...
        terminalreporter.write_line(f"labctl: {line}")
    run = config.stash.get(_run_key, None)
    if run is not None and run.write_errors:  # a full results disk: one line, not tracebacks
        terminalreporter.write_line(
            f"labctl: the results folder {run.path} could not be written ({'; '.join(run.write_errors[:3])}): "
            f"the run ends as {run.info.outcome.value}; free space and run again"
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A cell that failed, broke or was interrupted shows its one-line reason, not a traceback
    through the runner (the reason names the machine, the endpoint or the criterion); the report
    carries the cell's outcome, which the terminal counts it under."""
    report = yield
    excinfo = call.excinfo
    if excinfo is not None and isinstance(
        excinfo.value, ThresholdFailure | LabFault | NoDataError | Interrupted
    ):
        report.longrepr = f"{type(excinfo.value).__name__}: {excinfo.value}"
    noted = plan_fixtures.outcome_of(item)
    if call.when == "call" and noted is None and "run_cell" in getattr(item, "fixturenames", ()):
        plan_fixtures.run_progress(item.config).skipped()  # e.g. a cell reused from an earlier plan
    if call.when == "call" and noted is not None:
        outcome, reason = noted
        report.labctl_outcome = outcome.value
        report.labctl_reason = reason.splitlines()[0] if reason else ""
        report.labctl_cell = item.nodeid.rsplit("[", 1)[-1].rstrip("]") if "[" in item.nodeid else item.name
    return report


def pytest_report_header(config: pytest.Config) -> str:
    s = settings(config)
    lab = s.lab_file or "hardware/sim-2007.yaml (simulated)"
    return f"labctl: lab {lab}, results {s.results_dir}" + (
        f", configuration {s.lab_config}" if s.lab_config else ""
    )

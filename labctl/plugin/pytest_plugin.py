"""labctl's pytest plugin (registered through the ``pytest11`` entry point).

What a test plan gets:

- options ``--lab FILE``, ``--lab-config NAME``, ``--results-dir DIR``; each also from the
  environment (``LABCTL_LAB``, ``LABCTL_CONFIG``, ``LABCTL_RESULTS``) or an ini option
  (``labctl_lab``, ``labctl_lab_config``, ``labctl_results_dir``). Precedence: command line,
  environment, ini file, default (the simulated lab; ``<rootdir>/results``);
- ``lab``: the loaded :class:`~labctl.inventory.model.Lab` (session scope). A bad inventory stops
  the session before any test runs, with the inventory's own ``file:line:`` lines;
- ``run_folder``: the session's :class:`~labctl.recorder.runfolder.RunFolder`, created the first
  time a test asks for it (so test sessions that never do, like labctl's own unit tests, leave
  ``results/`` alone) and finished at the end of the session with its outcome.

Sections below: settings, lab, run folder. Fixtures of other layers (plan parameters, recorder,
criteria) go in sections of their own, reading :func:`settings` for the shared options.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from labctl.errors import BadInputError, InventoryError
from labctl.inventory.load import load_lab
from labctl.inventory.model import Lab
from labctl.plugin import plan_fixtures
from labctl.plugin.plan_fixtures import (  # noqa: F401  (pytest finds fixtures and hooks by name here)
    lab_env,
    plan_cell,
    plan_params,
    pytest_generate_tests,
    reuse_cell,
)
from labctl.recorder.runfolder import Outcome, RunFolder

# --- settings -----------------------------------------------------------------------------------

LAB_ENV = "LABCTL_LAB"
CONFIG_ENV = "LABCTL_CONFIG"
RESULTS_ENV = "LABCTL_RESULTS"


@dataclass(frozen=True)
class Settings:
    lab_file: Path | None  # None: the simulated lab shipped with labctl
    lab_config: str | None  # None: the file's default configuration
    results_dir: Path


_settings_key = pytest.StashKey[Settings]()
_lab_key = pytest.StashKey[Lab]()
_run_key = pytest.StashKey[RunFolder]()
_plan_key = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("labctl", "labctl lab orchestration")
    group.addoption(
        "--lab",
        action="store",
        default=None,
        metavar="FILE",
        help=f"inventory file (env {LAB_ENV}; default: hardware/sim-2007.yaml, the simulated lab)",
    )
    group.addoption(
        "--lab-config",
        action="store",
        default=None,
        metavar="NAME",
        help=f"configuration of the lab, e.g. standalone or ha (env {CONFIG_ENV}; default: the file's)",
    )
    group.addoption(
        "--results-dir",
        action="store",
        default=None,
        metavar="DIR",
        help=f"where run folders go (env {RESULTS_ENV}; default: <rootdir>/results)",
    )
    plan_fixtures.add_options(group)
    parser.addini("labctl_lab", "inventory file, relative to the ini file", default="")
    parser.addini("labctl_lab_config", "configuration of the lab", default="")
    parser.addini("labctl_results_dir", "where run folders go, relative to the ini file", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "plan(name): the test plan a test belongs to (names the run folder)")


def _pick(config: pytest.Config, option: str, env: str, ini: str) -> tuple[str | None, Path]:
    """The first of option, environment, ini value that is set, and the folder it is relative to."""
    value = config.getoption(option)
    if value:
        return str(value), config.invocation_params.dir
    if os.environ.get(env):
        return os.environ[env], config.invocation_params.dir
    ini_value = config.getini(ini)
    if ini_value:
        base = config.inipath.parent if config.inipath else config.rootpath
        return str(ini_value), base
    return None, config.rootpath


def settings(config: pytest.Config) -> Settings:
    """The labctl options of this session, resolved once."""
    if _settings_key not in config.stash:
        lab, lab_base = _pick(config, "--lab", LAB_ENV, "labctl_lab")
        lab_config, _ = _pick(config, "--lab-config", CONFIG_ENV, "labctl_lab_config")
        results, results_base = _pick(config, "--results-dir", RESULTS_ENV, "labctl_results_dir")
        config.stash[_settings_key] = Settings(
            lab_file=lab_base / lab if lab else None,
            lab_config=lab_config,
            results_dir=results_base / results if results else config.rootpath / "results",
        )
    return config.stash[_settings_key]


# --- lab ------------------------------------------------------------------------------------------


def _load(config: pytest.Config) -> Lab:
    if _lab_key not in config.stash:
        s = settings(config)
        config.stash[_lab_key] = load_lab(s.lab_file, s.lab_config)
    return config.stash[_lab_key]


def _uses(items: list[pytest.Item], fixture: str) -> bool:
    return any(fixture in getattr(item, "fixturenames", ()) for item in items)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Load the lab before the first test when any selected test needs it: a typo in the
    inventory is a usage error of the whole session, reported once as the inventory's own lines;
    so is a bad plan parameter file or ``--plan-param``."""
    plan_fixtures.raise_plan_param_errors(session.config)
    if _uses(session.items, "lab") or _uses(session.items, "run_folder"):
        try:
            _load(session.config)
        except InventoryError as exc:
            raise pytest.UsageError(
                "bad lab inventory:\n" + "\n".join(str(p) for p in exc.problems)
            ) from None
        except BadInputError as exc:
            raise pytest.UsageError(str(exc)) from None
    session.config.stash[_plan_key] = _plan_name(session.items)
    plan_fixtures.register_allure_listener(session)


@pytest.fixture(scope="session")
def lab(pytestconfig: pytest.Config) -> Lab:
    """The lab under test, loaded from ``--lab`` in the ``--lab-config`` configuration."""
    try:
        return _load(pytestconfig)
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
        plan = pytestconfig.stash.get(_plan_key, "session")
        pytestconfig.stash[_run_key] = RunFolder.create(s.results_dir, lab, plan, params)
    return pytestconfig.stash[_run_key]


_OUTCOMES = {
    pytest.ExitCode.OK: Outcome.PASSED,
    pytest.ExitCode.NO_TESTS_COLLECTED: Outcome.PASSED,
    pytest.ExitCode.TESTS_FAILED: Outcome.FAILED,
    pytest.ExitCode.INTERRUPTED: Outcome.INTERRUPTED,
}


@pytest.hookimpl(trylast=True)  # after session fixtures are torn down: their last writes are in
def pytest_sessionfinish(session: pytest.Session, exitstatus: int | pytest.ExitCode) -> None:
    run = session.config.stash.get(_run_key, None)
    if run is not None:
        try:
            outcome = _OUTCOMES.get(pytest.ExitCode(exitstatus), Outcome.ERROR)
        except ValueError:  # a plugin's own exit status
            outcome = Outcome.ERROR
        run.finish(outcome)


def pytest_report_header(config: pytest.Config) -> str:
    s = settings(config)
    lab = s.lab_file or "hardware/sim-2007.yaml (simulated)"
    return f"labctl: lab {lab}, results {s.results_dir}" + (
        f", configuration {s.lab_config}" if s.lab_config else ""
    )

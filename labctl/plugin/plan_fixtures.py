"""Plan fixtures: parameters and cells from plan files, the lab environment, the cell runner,
and Allure wiring. Imported into :mod:`labctl.plugin.pytest_plugin` so pytest finds them.

A plan test::

    pytestmark = pytest.mark.plan("boot_storm")

    def test_boot_storm(group_size, plan_params, lab_env, plan_cell):
        session = lab_env.session()
        ...
        with plan_cell("boot storm", group_size=group_size) as cell:
            result = run_boot_storm(session, clients, progress=cell.progress)
            cell.finish(summary, results, expected_clients)

Cells: every test argument ``x`` whose plural ``xs`` is a list in the plan's parameters is
parametrised over it (``group_size`` <- ``group_sizes``), in the order the arguments are declared,
with readable ids, so ``-k "boot_storm and 50"`` selects a cell.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest

from labctl.plugin.environment import LabEnvironment
from labctl.plugin.plans import PlanParams, load_plan_params
from labctl.plugin.progress import CellProgress
from labctl.recorder.runfolder import RunFolder
from labctl.records.samples import Sample

log = logging.getLogger(__name__)

_env_key = pytest.StashKey[LabEnvironment]()
_allure_dir_key = pytest.StashKey[Path]()
_param_errors_key = pytest.StashKey[list[str]]()


def add_options(group: Any) -> None:
    group.addoption(
        "--profile", default=None, metavar="NAME", help="plan parameter profile, e.g. quick or full"
    )
    group.addoption(
        "--plan-param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a plan parameter, e.g. --plan-param group_sizes=25,50 (repeatable)",
    )
    group.addoption("--plan-file", default=None, metavar="FILE", help="plan parameter file to use instead")


# --- parameters and cells -----------------------------------------------------------------------


def _plan_of(node: Any) -> str | None:
    marker = node.get_closest_marker("plan") if hasattr(node, "get_closest_marker") else None
    return str(marker.args[0]) if marker is not None and marker.args else None


def plan_file_for(test_path: Path, plan: str) -> Path:
    """A plan's parameter file sits next to it: ``testplans/<plan>.params.yaml``."""
    return test_path.parent / f"{plan}.params.yaml"


def plan_params_for(config: pytest.Config, test_path: Path, plan: str) -> PlanParams:
    explicit = config.getoption("--plan-file")
    path = Path(explicit) if explicit else plan_file_for(test_path, plan)
    return load_plan_params(path, config.getoption("--profile"), config.getoption("--plan-param"))


def _cell_id(name: str, value: Any) -> str:
    if isinstance(value, list | tuple):
        return "x".join(str(v) for v in value)
    return str(value)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    plan = _plan_of(metafunc.definition)
    if plan is None:
        return
    from labctl.errors import BadInputError

    if (
        not metafunc.config.getoption("--plan-file")
        and not plan_file_for(Path(metafunc.definition.path), plan).exists()
    ):
        return  # a plan without a parameter file has no cells; `plan_params` says so if asked for
    try:
        params = plan_params_for(metafunc.config, Path(metafunc.definition.path), plan)
    except BadInputError as exc:
        # raised here, even a UsageError is a collection error: a traceback and pytest's
        # "interrupted". Kept for :func:`raise_plan_param_errors` once collection is done.
        errors = metafunc.config.stash.setdefault(_param_errors_key, [])
        if str(exc) not in errors:
            errors.append(str(exc))
        return
    names = [n for n in metafunc.definition._fixtureinfo.argnames if isinstance(params.get(f"{n}s"), list)]
    if not names:
        return
    lists = [params[f"{n}s"] for n in names]
    values = list(itertools.product(*lists))
    ids = ["-".join(_cell_id(n, v) for n, v in zip(names, combo, strict=True)) for combo in values]
    if len(names) == 1:
        metafunc.parametrize(names[0], [v[0] for v in values], ids=ids)
    else:
        metafunc.parametrize(names, values, ids=ids)


def raise_plan_param_errors(config: pytest.Config) -> None:
    """A bad plan file or ``--plan-param`` stops the session as a usage error, one line each."""
    errors = config.stash.get(_param_errors_key, [])
    if errors:
        raise pytest.UsageError("\n".join(errors))


@pytest.fixture
def plan_params(request: pytest.FixtureRequest) -> PlanParams:
    """The resolved parameters of this test's plan (plan file, profile, overrides)."""
    plan = _plan_of(request.node)
    if plan is None:
        pytest.fail("plan_params needs @pytest.mark.plan('<name>') on the test or its module", pytrace=False)
    return plan_params_for(request.config, Path(request.node.path), plan)


# --- the lab ------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def lab_env(pytestconfig: pytest.Config, lab: Any, run_folder: RunFolder) -> Iterator[LabEnvironment]:
    """The lab the plans drive (starting the simulated lab if needed); restores power at the end."""
    from labctl.plugin.pytest_plugin import settings

    env = LabEnvironment(settings(pytestconfig).lab_file, lab)
    pytestconfig.stash[_env_key] = env
    try:
        yield env
    finally:
        env.close()
        _write_allure_environment(pytestconfig, env)


# --- Allure -------------------------------------------------------------------------------------


def enable_allure(config: pytest.Config, run: RunFolder) -> None:
    """Send Allure results to ``<run>/allure-results`` unless ``--alluredir`` was given."""
    if getattr(config.option, "allure_report_dir", None) or _allure_dir_key in config.stash:
        return
    import allure_commons
    from allure_commons.logger import AllureFileLogger

    target = run.path / "allure-results"
    logger = AllureFileLogger(str(target), False)
    allure_commons.plugin_manager.register(logger)
    config.add_cleanup(lambda: allure_commons.plugin_manager.unregister(logger))
    config.stash[_allure_dir_key] = target


def register_allure_listener(session: pytest.Session) -> None:
    """allure-pytest only listens when --alluredir is given at start; plans always want a report,
    into a run folder that does not exist yet, so listen here and log once the folder exists."""
    config = session.config
    if getattr(config.option, "allure_report_dir", None) or config.pluginmanager.has_plugin(
        "allure_listener"
    ):
        return
    if not any(_plan_of(item) for item in session.items):
        return
    import allure_commons
    from allure_pytest.listener import AllureListener

    listener = AllureListener(config)
    config.pluginmanager.register(listener, "allure_listener")
    allure_commons.plugin_manager.register(listener)
    config.add_cleanup(lambda: allure_commons.plugin_manager.unregister(listener))


def _write_allure_environment(config: pytest.Config, env: LabEnvironment) -> None:
    target = config.stash.get(_allure_dir_key, None)
    if target is None:
        return
    from labctl.report import allure_helpers as A

    target.mkdir(parents=True, exist_ok=True)
    A.write_environment(target, A.lab_environment(env.base_lab, **env.versions))
    A.write_categories(target)


# --- the cell runner ----------------------------------------------------------------------------


@dataclass
class Cell:
    """One plan cell in progress: its recorder, its progress line, and how it ends."""

    plan: str
    scenario: str
    cell_id: str
    params: dict[str, Any]
    run: RunFolder
    env: LabEnvironment
    criteria_file: Path | None
    recorder: Any  # labctl.recorder.Recorder
    progress: CellProgress
    extra_vars: dict[str, Any] = field(default_factory=dict)
    finished: bool = False  # the summary is written

    def record(
        self, entity: str, metric: str, unit: str, value: float | None, ts: float | None = None
    ) -> None:
        """A value the plan measured itself (boot time read at the end, a copy duration), as a
        ``result`` sample stamped ``ts`` (lab time; give the window's end so criteria see it)."""
        if value is None:
            return
        if ts is None:
            session = self.env.active
            ts = session.clock.now() if session is not None else 0.0
        self.recorder.record_samples([Sample("result", entity, metric, unit, ts, float(value))])

    def finish(
        self,
        summary: dict[str, Any],
        *,
        window: tuple[float, float],
        expected: dict[str, list[str]] | None = None,
        figures: Sequence[tuple[str, Any]] = (),
    ) -> None:
        """Write the cell summary, attach evidence, judge the criteria; raise on a failed cell."""
        from labctl.criteria import evaluate, load_criteria
        from labctl.criteria.variables import lab_names
        from labctl.recorder.cells import write_cell_summary
        from labctl.report import allure_helpers as A

        session = self.env.active
        assert session is not None
        self.recorder.stop()
        summary = {**summary, "metrics": self.recorder.summaries(self.cell_id, window=window)}
        write_cell_summary(self.run, self.cell_id, summary)
        self.finished = True
        A.attach_json(summary, "summary")
        A.attach_series([x for x in self.recorder.series(cell=self.cell_id) if _attached(x)], "series")
        for name, fig in figures:
            A.attach_figure(fig, name)
        if self.criteria_file is None:
            return
        verdict = evaluate(
            load_criteria(self.criteria_file),
            self.recorder,
            cell=self.cell_id,
            window=window,
            names=lab_names(session.lab).with_vars(self.extra_vars),
            expected=expected,
        )
        verdict.write(self.run)
        A.report_verdict(verdict, self.recorder)
        verdict.raise_for_outcome()


# What a cell's Allure "series" attachment holds: what the criteria and the paper's figures use.
# Everything else (per-NIC bandwidth, loopback, per-client status polls, BMC power, arrays) stays in
# series.csv: all of it attached made one report of the 2007 set a 100 MB file.
_ATTACHED_METRICS = frozenset(
    {"cpu_pct", "memory_used_mb", "nic_sent_util_pct", "disk_queue_len", "disk_iops"}
)


def _attached(series: Any) -> bool:
    if series.source == "result":
        return True
    return (
        series.source == "typeperf"
        and series.metric in _ATTACHED_METRICS
        and "Loopback" not in series.entity
        and not series.entity.endswith("/_Total")
    )


def _write_partial_summary(cell: Cell, exc: BaseException) -> None:
    from labctl.recorder.cells import write_cell_summary

    outcome = "interrupted" if isinstance(exc, KeyboardInterrupt) else "error"
    try:
        metrics = cell.recorder.summaries(cell.cell_id)
        write_cell_summary(
            cell.run,
            cell.cell_id,
            {
                "plan": cell.plan,
                "scenario": cell.scenario,
                **cell.params,
                "outcome": outcome,
                "error": f"{type(exc).__name__}: {exc}"[:500],
                "metrics": metrics,
            },
        )
    except Exception as write_error:  # never hide the original failure
        log.warning("could not write the partial summary of %s: %s", cell.cell_id, write_error)


@pytest.fixture
def plan_cell(
    request: pytest.FixtureRequest, lab_env: LabEnvironment, run_folder: RunFolder
) -> Callable[..., Any]:
    """``with plan_cell(scenario, configuration=None, interval_s=5, window_s=None, **params) as cell:``

    Labels the Allure test case (epic = plan, feature = scenario, story = cell), starts the
    recorder on every source the configuration offers, and shows a live progress line.
    """
    from labctl.recorder import Recorder
    from labctl.recorder.cells import cell_id
    from labctl.report import allure_helpers as A

    plan = _plan_of(request.node) or request.node.name
    enable_allure(request.config, run_folder)

    @contextmanager
    def run_cell(
        scenario: str,
        *,
        configuration: str | None = None,
        interval_s: float = 5.0,
        window_s: float | None = None,
        criteria: str | None = None,
        **params: Any,
    ) -> Iterator[Cell]:
        session = lab_env.session(configuration)
        cfg = lab_env.configuration or "default"
        cid = cell_id(plan, cfg, *params.values())
        A.label_cell(plan, scenario, cid, configuration=cfg, **params)
        criteria_file = Path(request.node.path).parent / "criteria" / f"{criteria or plan}.yaml"
        rec = Recorder(
            run_folder,
            cast("list[Any]", session.sources.for_plan(interval_s=interval_s)),
            clock=session.clock,
            interval_s=interval_s,
            cell=cid,
        )
        rec.attach(session.timeline)
        capman = request.config.pluginmanager.getplugin("capturemanager")
        progress = CellProgress(
            cid, window_s, suspend_capture=getattr(capman, "global_and_fixture_disabled", None)
        )
        cell = Cell(
            plan,
            scenario,
            cid,
            dict(params, configuration=cfg),
            run_folder,
            lab_env,
            criteria_file if criteria_file.exists() else None,
            rec,
            progress,
            dict(params),
        )
        rec.record("cell.start", cid, plan=plan, scenario=scenario, configuration=cfg, **params)
        rec.start()
        try:
            yield cell
        except (Exception, KeyboardInterrupt) as exc:
            if not cell.finished:  # keep what the cell measured before it broke off
                _write_partial_summary(cell, exc)
            raise
        finally:
            progress.close()
            rec.stop()

    return run_cell


@pytest.fixture
def reuse_cell(run_folder: RunFolder) -> Callable[..., bool]:
    """``reuse_cell(scenario_plan, configuration, *params)``: True (and the Allure case says so) when
    that cell was already measured in this run by its own plan, e.g. the standalone boot storm
    cells of ``labctl run 2007`` reused by the HA comparison instead of being run twice."""
    from labctl.recorder.cells import SUMMARY_FILE, cell_dir, cell_id
    from labctl.report import allure_helpers as A

    def reuse(plan: str, configuration: str, *params: Any) -> bool:
        cid = cell_id(plan, configuration, *params)
        path = cell_dir(run_folder, cid) / SUMMARY_FILE
        if not path.exists():
            return False
        A.label_cell("ha_comparison", plan.replace("_", " "), cid, configuration=configuration, reused=True)
        A.attach_file(path, f"summary of {cid} (measured earlier in this run)")
        return True

    return reuse

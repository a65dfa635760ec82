"""Plan fixtures and hooks: cells from typed plan parameters, checks before anything runs, the lab
environment, the cell runner, and Allure wiring. Imported into :mod:`labctl.plugin.pytest_plugin`
so pytest finds them.

A plan module::

    class BootStormPlan(BootStormSettings):
        group_sizes: CellValues[Count]

    pytestmark = pytest.mark.plan("boot_storm", params=BootStormPlan)

    def test_boot_storm(group_size, plan_params, run_cell):
        cell = run_cell(BootStorm(group_size, plan_params))
        assert ...  # on cell.summary (typed) or cell.verdict

Cells: every test argument ``x`` whose plural ``xs`` is a list of the plan's parameters is
parametrised over it (``group_size`` <- ``group_sizes``), with the cell id as the pytest id
(``test_boot_storm[boot_storm-standalone-050]``; ``-k 5`` selects the group of 5 only, see
:mod:`labctl.plugin.selection`).

Before the first cell (at collection): the plan's parameters are validated against its model,
then against the lab (a group larger than the lab's, a configuration without a share), and its
criteria files are loaded with the lab's names; each problem is one line and the session stops as
a usage error (``labctl run`` exits 2) before any machine is touched. Then the session takes the
lab's lease.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from labctl.criteria.known import unknown_selectors
from labctl.criteria.model import load_criteria
from labctl.criteria.variables import lab_names
from labctl.errors import BadInputError, InventoryError
from labctl.lab.lease import holder_description, lease_resource, lease_store_for
from labctl.lab.sites import require_agents
from labctl.plugin.environment import LabEnvironment
from labctl.plugin.interrupts import Interrupts
from labctl.plugin.live import RunProgress, Terminal
from labctl.plugin.options import session_lab, settings
from labctl.plugin.plans import PlanParams, load_plan_params
from labctl.plugin.runner import CellRun, CellRunner, Interrupted, RunOutputs, store_sink
from labctl.plugin.selection import CellSpec, cell_spec, deselect
from labctl.recorder.cell_files import cell_id, read_cell_summaries
from labctl.recorder.runfolder import RunFolder
from labctl.records.run_record import Outcome, RunInfo
from labctl.report import allure_helpers as A
from labctl.scenarios.base import Scenario

_param_errors_key = pytest.StashKey[list[str]]()
_typed_key = pytest.StashKey[dict[tuple[str, str], tuple[PlanParams, Any]]]()
_cell_names_key = pytest.StashKey[dict[tuple[str, str], list[str]]]()
_spec_key = pytest.StashKey[CellSpec]()
_interrupts_key = pytest.StashKey[Interrupts]()
_terminal_key = pytest.StashKey[Terminal]()
_lease_key = pytest.StashKey[Any]()
_runner_key = pytest.StashKey[dict[str, CellRunner]]()
_outputs_key = pytest.StashKey[RunOutputs]()
_progress_key = pytest.StashKey[RunProgress]()
_outcome_key = pytest.StashKey[tuple[Outcome, str]]()  # on a test item: its cells' outcome and reason
_store_key = pytest.StashKey[Any]()  # the session's StoreSink (one for every plan's runner), or None

CELL_FIXTURES = ("run_cell", "lab_env")  # a test using these touches machines: it needs the lease


# --- parameters and cells -----------------------------------------------------------------------


def plan_marker(node: Any) -> pytest.Mark | None:
    marker = node.get_closest_marker("plan") if hasattr(node, "get_closest_marker") else None
    return marker if marker is not None and marker.args else None


def _plan_of(node: Any) -> str | None:
    marker = plan_marker(node)
    return str(marker.args[0]) if marker is not None else None


def plan_file_for(test_path: Path, plan: str) -> Path:
    """A plan's parameter file sits next to it: ``testplans/<plan>.params.yaml``."""
    return test_path.parent / f"{plan}.params.yaml"


def plan_params_for(
    config: pytest.Config, test_path: Path, plan: str, model: type[BaseModel] | None = None
) -> PlanParams:
    explicit = config.getoption("--plan-file")
    path = Path(explicit) if explicit else plan_file_for(test_path, plan)
    known = list(model.model_fields) if model is not None else []
    return load_plan_params(path, config.getoption("--profile"), config.getoption("--plan-param"), known)


def typed_params(config: pytest.Config, test_path: Path, marker: pytest.Mark) -> tuple[PlanParams, Any]:
    """The plan's parameters, raw and as its model (``params=`` of the marker; the raw values when
    the plan declares none), loaded once per plan module. Raises BadInputError, one line each."""
    plan = str(marker.args[0])
    cache = config.stash.setdefault(_typed_key, {})
    key = (str(test_path), plan)
    if key not in cache:
        model: type[BaseModel] | None = marker.kwargs.get("params")
        raw = plan_params_for(config, test_path, plan, model)
        cache[key] = (raw, raw.typed(model) if model is not None else raw)
    return cache[key]


def plans_recorded(config: pytest.Config) -> dict[str, Any]:
    """Each plan of the session with its profile and resolved parameters (the profile's values with
    the --plan-param overrides applied), for run.json: what makes two runs alike
    (labctl.records.run_kind). Not the model's defaults: a parameter a later labctl adds must not
    make every earlier run unlike (the code's version is recorded beside them)."""
    out: dict[str, Any] = {}
    for (_, plan), (raw, _typed) in sorted(config.stash.get(_typed_key, {}).items()):
        values = json.loads(json.dumps(raw.values, default=str))  # as run.json will hold them
        out[plan] = {"profile": raw.profile, "source": raw.source, "values": values}
    return out


def _values(typed: Any, name: str) -> list[Any] | None:
    v = getattr(typed, name, None) if isinstance(typed, BaseModel) else typed.get(name)
    return list(v) if isinstance(v, list | tuple) else None


def _default_configuration(config: pytest.Config) -> str | None:
    try:
        lab = session_lab(config)
    except BadInputError:  # reported once, as a usage error, when collection is done
        return None
    return lab.configuration.name if lab.configuration else None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = plan_marker(metafunc.definition)
    if marker is None:
        return
    plan = str(marker.args[0])
    path = Path(metafunc.definition.path)
    if not metafunc.config.getoption("--plan-file") and not plan_file_for(path, plan).exists():
        return  # a plan without a parameter file has no cells; `plan_params` says so if asked for
    try:
        _, typed = typed_params(metafunc.config, path, marker)
    except BadInputError as exc:
        # raised here, even a UsageError is a collection error: a traceback and pytest's
        # "interrupted". Kept for the end of collection, where it stops the session cleanly.
        errors = metafunc.config.stash.setdefault(_param_errors_key, [])
        for line in str(exc).splitlines():
            if line not in errors:
                errors.append(line)
        return
    names = [n for n in metafunc.definition._fixtureinfo.argnames if _values(typed, f"{n}s") is not None]
    if not names:
        return
    metafunc.config.stash.setdefault(_cell_names_key, {})[(str(path), metafunc.definition.originalname)] = (
        names
    )
    combos = list(itertools.product(*(_values(typed, f"{n}s") or [] for n in names)))
    cfg = _default_configuration(metafunc.config)
    ids = [cell_spec(plan, dict(zip(names, c, strict=True)), cfg).cell_id for c in combos]
    if len(names) == 1:
        metafunc.parametrize(names[0], [c[0] for c in combos], ids=ids)
    else:
        metafunc.parametrize(names, combos, ids=ids)


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> Any:
    """Each plan cell's spec on its item; ``-k`` with cell numbers matched exactly."""
    names = config.stash.get(_cell_names_key, {})
    cfg = _default_configuration(config) if names else None
    specs: dict[str, CellSpec] = {}
    seen: dict[str, str] = {}
    for item in items:
        plan = _plan_of(item)
        cell_names = names.get((str(item.path), getattr(item, "originalname", item.name)))
        callspec = getattr(item, "callspec", None)
        if plan is None or not cell_names or callspec is None:
            continue
        spec = cell_spec(plan, {n: callspec.params[n] for n in cell_names}, cfg)
        if spec.cell_id in seen and seen[spec.cell_id] != item.nodeid:
            raise pytest.UsageError(
                f"two plan cells are both {spec.cell_id}: {seen[spec.cell_id]} and {item.nodeid} "
                "(give them different parameters or plans)"
            )
        seen[spec.cell_id] = item.nodeid
        item.stash[_spec_key] = spec
        specs[item.nodeid] = spec
    keyword = config.option.keyword
    deselect(items, config, specs)
    if specs:
        config.option.keyword = ""  # applied above, with the cell rule; pytest's own would undo it
    try:
        return (yield)
    finally:
        config.option.keyword = keyword


def raise_plan_param_errors(config: pytest.Config) -> None:
    """A bad plan file or ``--plan-param`` stops the session as a usage error, one line each."""
    errors = config.stash.get(_param_errors_key, [])
    if errors:
        raise pytest.UsageError("\n".join(errors))


def check_plans(session: pytest.Session) -> None:
    """The selected cells' plans against the lab: parameters that do not fit it and criteria files
    that do not load with its names stop the session before anything is touched."""
    config = session.config
    problems: list[str] = []
    done: set[tuple[str, str]] = set()
    for item in session.items:
        marker = plan_marker(item)
        if marker is None or (str(item.path), str(marker.args[0])) in done:
            continue
        done.add((str(item.path), str(marker.args[0])))
        try:
            raw, typed = typed_params(config, Path(item.path), marker)
        except BadInputError:
            continue  # reported by raise_plan_param_errors
        spec = item.stash.get(_spec_key, None)
        configurations = typed.lab_configurations() if hasattr(typed, "lab_configurations") else [None]
        criteria = [str(c) for c in marker.kwargs.get("criteria", (marker.args[0],))]
        for cfg in configurations:
            try:
                lab = session_lab(config, cfg)
            except BadInputError as exc:
                problems.append(f"{raw.source}: {raw.profile}.configurations: {exc}")
                continue
            if isinstance(typed, BaseModel) and hasattr(typed, "lab_problems"):
                problems += [
                    f"{raw.where(line.split(':', 1)[0])}:{line.split(':', 1)[1]}"
                    for line in typed.lab_problems(lab)
                ]
            names = lab_names(lab).with_vars(spec.params if spec else {})
            for name in criteria:
                path = Path(item.path).parent / "criteria" / f"{name}.yaml"
                if path.exists():
                    try:
                        # selectors naming no recorded series: refused now, not after a storm
                        found = unknown_selectors(load_criteria(path, names), str(path))
                    except BadInputError as exc:
                        found = str(exc).splitlines()
                    problems += [p for p in found if p not in problems]
    if problems:
        raise pytest.UsageError("\n".join(dict.fromkeys(problems)))


def take_lease(session: pytest.Session) -> None:
    """The lab's lease, when a selected test touches machines (not for --collect-only): from the
    lab's hub when it has site agents (shared by every controller), else this machine's lease
    store. A lab whose agents are not all up refuses to start here, before anything is touched."""
    config = session.config
    if config.option.collectonly or _lease_key in config.stash:
        return
    if not any(f in getattr(item, "fixturenames", ()) for item in session.items for f in CELL_FIXTURES):
        return
    lab = session_lab(config)
    plans = sorted({p for p in (_plan_of(i) for i in session.items) if p})
    what = f"labctl run {'+'.join(plans) or 'plans'}"
    try:
        require_agents(lab)
    except BadInputError as exc:
        raise pytest.UsageError(str(exc)) from None
    store = lease_store_for(lab)
    try:
        config.stash[_lease_key] = store.take(
            lease_resource("lab", lab.name), holder_description(what), wait_s=settings(config).lease_wait_s
        )
    except BadInputError as exc:
        store.close()
        raise pytest.UsageError(str(exc)) from None
    config.add_cleanup(store.close)


def release_lease(config: pytest.Config) -> None:
    lease = config.stash.get(_lease_key, None)
    if lease is not None:
        del config.stash[_lease_key]
        lease.release()


def lease_of(config: pytest.Config) -> Any:
    return config.stash.get(_lease_key, None)


@pytest.fixture
def plan_params(request: pytest.FixtureRequest) -> Any:
    """The typed parameters of this test's plan (plan file, profile, overrides)."""
    marker = plan_marker(request.node)
    if marker is None:
        pytest.fail("plan_params needs @pytest.mark.plan('<name>') on the test or its module", pytrace=False)
    try:
        return typed_params(request.config, Path(request.node.path), marker)[1]
    except BadInputError as exc:
        pytest.fail(str(exc), pytrace=False)


# --- interrupts and the terminal ------------------------------------------------------------------


def terminal(config: pytest.Config) -> Terminal:
    """The real terminal, past pytest's capture (taken while capture is suspended)."""
    if _terminal_key not in config.stash:
        capman = config.pluginmanager.getplugin("capturemanager")
        suspend = getattr(capman, "global_and_fixture_disabled", None)
        with suspend() if suspend is not None else contextlib.nullcontext():
            config.stash[_terminal_key] = Terminal.for_session(capman)
    return config.stash[_terminal_key]


def install_interrupts(config: pytest.Config) -> Interrupts:
    """From here on SIGINT, SIGTERM and SIGHUP stop the cell and restore the lab (the ``lab_env``
    fixture's first step; a test's own lab environment takes it too)."""
    if _interrupts_key not in config.stash:
        config.stash[_interrupts_key] = Interrupts(terminal(config).line).install()
    return config.stash[_interrupts_key]


def interrupts_of(config: pytest.Config) -> Interrupts | None:
    return config.stash.get(_interrupts_key, None)


def finish_interrupts(session: pytest.Session) -> None:
    """An interrupted session ends as interrupted (pytest's exit status 2, ``labctl run`` 130),
    also when the cell ended it gracefully instead of raising KeyboardInterrupt."""
    it = session.config.stash.get(_interrupts_key, None)
    if it is not None and it.requested:
        session.exitstatus = pytest.ExitCode.INTERRUPTED


def uninstall_interrupts(config: pytest.Config) -> None:
    it = config.stash.get(_interrupts_key, None)
    if it is not None:
        it.uninstall()
    t = config.stash.get(_terminal_key, None)
    if t is not None:
        t.close()
        del config.stash[_terminal_key]


# --- the lab ------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def lab_env(pytestconfig: pytest.Config, lab: Any, run_folder: RunFolder) -> Iterator[LabEnvironment]:
    """The lab the plans drive (starting the simulated lab if needed); restores power at the end.
    From here on SIGINT, SIGTERM and SIGHUP stop the cell and restore the lab (see interrupts)."""
    interrupts = install_interrupts(pytestconfig)
    env = LabEnvironment(
        settings(pytestconfig).lab_file, lab, abort=interrupts.abort, say=terminal(pytestconfig).line
    )
    try:
        yield env
    finally:
        with interrupts.busy():
            try:
                env.close()
            finally:
                _write_allure_environment(pytestconfig, env)


def _runner(config: pytest.Config, plan: str, env: LabEnvironment, run: RunFolder) -> CellRunner:
    runners = config.stash.setdefault(_runner_key, {})
    if plan not in runners:
        it = config.stash[_interrupts_key]
        runners[plan] = CellRunner(
            plan,
            run,
            env,
            it,
            terminal(config),
            lease=lease_of(config),
            outputs=_outputs(config, run),
            progress=run_progress(config),
        )
    return runners[plan]


def run_progress(config: pytest.Config) -> RunProgress:
    """Where the session is (cell n of N, elapsed, ETA), shared by its plans' runners. N is the
    number of selected tests that run cells, set when collection is done (:func:`count_cells`)."""
    if _progress_key not in config.stash:
        config.stash[_progress_key] = RunProgress()
    return config.stash[_progress_key]


def count_cells(session: pytest.Session) -> None:
    run_progress(session.config).total = sum(
        "run_cell" in getattr(item, "fixturenames", ()) for item in session.items
    )


def _outputs(config: pytest.Config, run: RunFolder) -> RunOutputs:
    """The run's sinks, one set for every plan of the session (one junit.xml with every cell)."""
    if _outputs_key not in config.stash:
        config.stash[_outputs_key] = RunOutputs(
            run,
            store=_store(config, run),
            strict_marginal=bool(config.getoption("--strict-marginal")),
            say=terminal(config).line,
        )
    return config.stash[_outputs_key]


def outputs_of(config: pytest.Config) -> RunOutputs | None:
    """The run's outputs, if a cell made them (their failures go into the run's summary)."""
    return config.stash.get(_outputs_key, None)


def _store(config: pytest.Config, run: RunFolder) -> Any:
    """The session's results-store sink (``--store``): one for the run, shared by its plans' runners."""
    url = settings(config).store_url
    if url and _store_key not in config.stash:
        sink = config.stash[_store_key] = store_sink(url, run, terminal(config).line)
        if sink is not None:
            config.add_cleanup(sink.store.close)
    return config.stash.get(_store_key, None)


@pytest.fixture
def run_cell(
    request: pytest.FixtureRequest, lab_env: LabEnvironment, run_folder: RunFolder
) -> Callable[..., CellRun]:
    """``run_cell(scenario, configuration=None) -> CellRun``: run one cell with the generic runner
    (recorder, criteria ``criteria/<scenario name>.yaml``, outputs); it raises the exception that
    gives the cell its status, so what follows in the test runs for a cell that passed."""
    plan = _plan_of(request.node) or request.node.name
    runner = _runner(request.config, plan, lab_env, run_folder)
    spec = request.node.stash.get(_spec_key, None)
    plan_dir = Path(request.node.path).parent

    def run(scenario: Scenario, *, configuration: str | None = None) -> CellRun:
        __tracebackhide__ = True  # the cell's one-line reason is the point, not the runner's frames
        cfg = configuration or (spec.configuration if spec else None)
        if spec is not None:
            cid = spec.cell_id
        else:
            params = {**({"configuration": cfg} if cfg else {}), **scenario.parameters()}
            cid = cell_spec(plan, params, lab_env.default_configuration()).cell_id
        it = runner.interrupts
        if it.requested:
            request.session.shouldstop = it.reason
            raise Interrupted(f"{cid}: not started: the run was {it.reason}")
        criteria = plan_dir / "criteria" / f"{scenario.name}.yaml"
        runner.last = None
        try:
            return runner.run(
                scenario, cell_id=cid, configuration=cfg, criteria=criteria if criteria.exists() else None
            )
        except Interrupted:
            request.session.shouldstop = it.reason  # no further cell starts
            raise
        finally:
            if runner.last is not None:  # the word the terminal counts the test under
                note_outcome(request.node, runner.last.outcome, runner.last.summary.reason)

    return run


def note_outcome(item: pytest.Item, outcome: Outcome, reason: str) -> None:
    """Keep a cell's outcome on its test (the worst, for a test that ran several cells)."""
    had = item.stash.get(_outcome_key, None)
    if had is None or outcome.severity > had[0].severity:
        item.stash[_outcome_key] = (outcome, reason)


def outcome_of(item: pytest.Item) -> tuple[Outcome, str] | None:
    """The outcome (and reason) of the cells a test ran, None for a test that ran none."""
    return item.stash.get(_outcome_key, None)


@pytest.fixture
def reuse_cell(run_folder: RunFolder) -> Callable[..., Any]:
    """``reuse_cell(plan, configuration, *params) -> CellSummary | None``: the summary of that cell
    when it was already measured in this run by its own plan, e.g. the standalone boot-storm cells
    of ``labctl run 2007`` reused by the HA comparison (its record and Allure result are its own)."""

    def reuse(plan: str, configuration: str, *params: Any) -> Any:
        summary = read_cell_summaries(run_folder).get(cell_id(plan, configuration, *params))
        if summary is None or summary.outcome.value == "interrupted":
            return None
        return summary

    return reuse


def finish_runners(config: pytest.Config, info: RunInfo) -> None:
    """The run ended: its per-run outputs (junit.xml, Allure categories, the store's run row),
    once for the run, not once per plan."""
    outputs = config.stash.get(_outputs_key, None)
    if outputs is not None:
        outputs.finish(info)


def check_lab_loads(session: pytest.Session) -> None:
    """Load the lab (a bad inventory is the session's usage error, as its own lines)."""
    try:
        session_lab(session.config)
    except InventoryError as exc:
        raise pytest.UsageError("bad lab inventory:\n" + "\n".join(str(p) for p in exc.problems)) from None
    except BadInputError as exc:
        raise pytest.UsageError(str(exc)) from None


# --- Allure -------------------------------------------------------------------------------------


def _write_allure_environment(config: pytest.Config, env: LabEnvironment) -> None:
    """Allure's environment page: the lab and the firmware / software versions read from it."""
    runners = config.stash.get(_runner_key, {})
    if not runners:
        return

    run = next(iter(runners.values())).run_folder
    target = run.path / "allure-results"
    try:
        target.mkdir(parents=True, exist_ok=True)
        A.write_environment(target, A.lab_environment(env.base_lab, **env.versions))
    except OSError as exc:  # a full results disk: said once at the run's end, not a teardown error
        run.note_write_error("allure-results/environment.properties", exc)

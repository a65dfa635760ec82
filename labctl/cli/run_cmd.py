"""`labctl run PLAN [pytest args]`: run a test plan with pytest, then build its report."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import click

from labctl.cli.common import (
    PROJECT_ROOT,
    check_simulator,
    config_option,
    lab_option,
    resolve_results_dir,
    results_dir_option,
)
from labctl.errors import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_NOT_STORED,
    EXIT_OK,
    PYTEST_EXIT_NOT_STORED,
    BadInputError,
    LabctlError,
)

PLANS_DIR = PROJECT_ROOT / "testplans"

# plan name -> test module; "2007" runs the whole 2007 set
PLAN_ALIASES = {
    "2007": ["boot_storm", "copy_reboot", "ha_comparison"],
    "all": ["boot_storm", "copy_reboot", "ha_comparison"],
}


def plan_files(plan: str) -> list[Path]:
    names = PLAN_ALIASES.get(plan, [plan])
    files = []
    for name in names:
        path = PLANS_DIR / f"test_{name}.py"
        if not path.exists():
            known = sorted(p.stem.removeprefix("test_") for p in PLANS_DIR.glob("test_*.py"))
            raise BadInputError(
                f"unknown plan {plan!r} (plans in {PLANS_DIR}: {', '.join(known)}; or 2007 for the whole set)"
            )
        files.append(path)
    return files


def _pytest_exit_to_labctl(code: int) -> int:
    """pytest's exit codes as labctl's: 0 ok, 1 a failed run, 2 bad input, 3 passed but not in the
    results store, 130 interrupted."""
    import pytest  # pytest: loaded when a plan runs, not for --help

    mapping: dict[int, int] = {
        pytest.ExitCode.OK: EXIT_OK,
        pytest.ExitCode.TESTS_FAILED: EXIT_FAILED,
        pytest.ExitCode.INTERRUPTED: EXIT_INTERRUPTED,
        pytest.ExitCode.USAGE_ERROR: EXIT_BAD_INPUT,  # also a bad inventory or plan file
        pytest.ExitCode.NO_TESTS_COLLECTED: EXIT_BAD_INPUT,
        PYTEST_EXIT_NOT_STORED: EXIT_NOT_STORED,  # measured and kept; the results store lacks the run
    }
    return mapping.get(int(code), EXIT_FAILED)


lease_wait_option = click.option(
    "--lease-wait",
    type=click.FloatRange(0, 86_400),
    default=0,
    metavar="SECONDS",
    help="Wait this long for a lab another run holds (default: stop at once, naming the holder).",
)


@click.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    short_help="Run a test plan (boot_storm, copy_reboot, ha_comparison, 2007) and build its report.",
)
@click.argument("plan")
@lab_option
@config_option
@click.option("--profile", default=None, help="Parameter profile of the plan, e.g. quick or full.")
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a plan parameter (repeatable), e.g. window_s=200.",
)
@results_dir_option("Where run folders go")
@click.option("--report/--no-report", default=True, help="Build the Allure and figures report afterwards.")
@click.option(
    "--strict-marginal",
    is_flag=True,
    help="A marginal cell fails the run (exit 1; JUnit failure, Allure failed) instead of passing "
    "with a warning.",
)
@lease_wait_option
@click.option(
    "--store",
    "store_url",
    default=None,
    metavar="URL",
    help="Results store the run is written to (default: the embedded store in <results-dir>/store; "
    "env LABCTL_STORE).",
)
@click.option("--no-store", is_flag=True, help="Write no results store (labctl runs import adds it later).")
@click.pass_context
def run(
    ctx: click.Context,
    plan: str,
    lab_file: Path | None,
    configuration: str | None,
    profile: str | None,
    params: tuple[str, ...],
    results_dir: Path | None,
    report: bool,
    strict_marginal: bool,
    lease_wait: float,
    store_url: str | None,
    no_store: bool,
) -> int:
    """Run PLAN with pytest on the lab (default: the simulated lab), then build the report.

    Extra arguments go to pytest unchanged, so cells are selected the pytest way.

    \b
    Examples:
      labctl run boot_storm                          # the 2007 boot storm, all group sizes
      labctl run boot_storm -k "50 or 75"            # two cells (a number matches a cell exactly)
      labctl run boot_storm --lf                     # the cells that failed last time
      labctl run boot_storm --collect-only -q        # the cells, without running them
      labctl run boot_storm --profile quick          # the short profile the test suite uses
      labctl run copy_reboot --param copy_paths=local_to_share
      labctl run 2007                                # boot storm, copy/reboot matrix, HA comparison
      labctl run boot_storm --strict-marginal        # a marginal cell fails the run (CI)
    """
    files = plan_files(plan)
    check_simulator(lab_file, configuration)  # another simulated lab running: one line, exit 2
    results = resolve_results_dir(results_dir).resolve()
    ran = run_plans(
        files,
        results,
        lab_file=lab_file,
        configuration=configuration,
        profile=profile,
        params=params,
        lease_wait=lease_wait,
        strict_marginal=strict_marginal,
        store_url=store_url,
        pytest_args=[*ctx.args, *(["--no-store"] if no_store else [])],
    )
    code, run_dir = ran.code, ran.run_dir
    if _collect_only(ctx.args):
        return code  # nothing ran: no run folder, no report
    if run_dir is None:
        if code != EXIT_BAD_INPUT:  # bad input was already said, in one line per problem
            click.echo("no run folder was written (nothing ran?)", err=True)
        return code if code != EXIT_OK else EXIT_BAD_INPUT
    if report:
        from labctl.report.build import build_report  # matplotlib: loaded when the report is built

        try:
            click.echo(f"report: {build_report(run_dir)}")
        except LabctlError as exc:  # the run is measured and kept: say where, and keep its exit code
            for line in str(exc).splitlines():
                click.echo(f"error: report: {line}", err=True)
            code = code if code != EXIT_OK else exc.exit_code
    click.echo(f"run folder: {run_dir}")
    if code == EXIT_INTERRUPTED:
        click.echo("interrupted: what was measured is kept in the run folder", err=True)
    return code


@dataclass(frozen=True)
class PlanRun:
    """A pytest session of plans: labctl's exit code for it and the run folder it wrote (None:
    nothing ran, e.g. bad input or --collect-only)."""

    code: int
    run_dir: Path | None


def run_plans(
    files: Sequence[Path],
    results: Path,
    *,
    lab_file: Path | None = None,
    configuration: str | None = None,
    profile: str | None = None,
    params: Sequence[str] = (),
    lease_wait: float = 0.0,
    store_url: str | None = None,
    strict_marginal: bool = False,
    pytest_args: Sequence[str] = (),
) -> PlanRun:
    """Run the plan modules ``files`` in one pytest session (one run folder, one lease on the lab)
    with labctl's plugin options; the code path of `labctl run` and `labctl nightly`."""
    import pytest  # pytest: loaded when a plan runs, not for --help

    args = [str(f) for f in dict.fromkeys(files)]
    # plan cells have their own lab-time deadlines; the test suite's wall-clock timeout is not for
    # them. --lf and --ff read pytest's cache: the plans' own, beside their run folders.
    args += ["-o", "timeout=0", "-o", f"cache_dir={results / '.pytest_cache'}", "--results-dir", str(results)]
    args += ["--lease-wait", f"{lease_wait:g}"]
    if lab_file is not None:
        args += ["--lab", str(lab_file)]
    if configuration:
        args += ["--lab-config", configuration]
    if profile is not None:  # an empty --profile is refused by the plan loader, not dropped
        args += ["--profile", profile]
    for p in params:
        args += ["--plan-param", p]
    if store_url:
        args += ["--store", store_url]
    if strict_marginal:
        args.append("--strict-marginal")
    args += list(pytest_args)
    started = time.time()
    code = _pytest_exit_to_labctl(pytest.main(args))
    if _collect_only(list(pytest_args)):
        return PlanRun(code, None)
    return PlanRun(code, _newest_run(results, since=started))


def _collect_only(args: list[str]) -> bool:
    return any(a in ("--collect-only", "--co") for a in args)


def _newest_run(results: Path, since: float) -> Path | None:
    if not results.is_dir():
        return None
    runs = [p for p in results.iterdir() if p.is_dir() and (p / "run.json").exists()]
    runs = [p for p in runs if p.stat().st_mtime >= since - 1]
    return max(runs, key=lambda p: p.name) if runs else None

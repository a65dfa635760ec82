"""Shared CLI plumbing: options, exit codes and error printing (never a traceback for a labctl error).

Exit codes: 0 success, 2 bad input or usage (click's usage errors too), 1 a run or the lab failed,
130 interrupted.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from labctl.cli.dispatch import run_cli as run_cli  # its home moved; the commands and tests import it here
from labctl.errors import EXIT_BAD_INPUT, BadInputError, LabctlError
from labctl.inventory.lab_ref import resolve_lab_file, resolve_lab_name
from labctl.inventory.load import default_lab_file, display_path, load_lab
from labctl.inventory.model import Group, Lab

F = TypeVar("F", bound=Callable[..., Any])


def _lab_file(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    """``--lab`` of a command that drives the lab: a file as it is, a lab's name as its file."""
    return resolve_lab_file(value)


lab_option = click.option(
    "--lab",
    "lab_file",
    default=None,
    metavar="FILE|NAME",
    envvar="LABCTL_LAB",
    callback=_lab_file,
    help="Inventory file, or a lab's name in hardware/ (default: hardware/sim-2007.yaml, the simulated "
    "lab; env LABCTL_LAB).",
)


def lab_name_option(help_text: str) -> Callable[[F], F]:
    """``--lab`` of a command that reads the results store: a lab's name, or an inventory file
    (its ``lab.name``); resolved by :func:`lab_name` once the store's labs are known."""
    return click.option("--lab", "lab", default=None, metavar="NAME|FILE", help=help_text)


def lab_name(ref: str | None, known: list[str] | None = None, option: str = "--lab") -> str | None:
    """The lab name ``ref`` stands for: a file's ``lab.name``, or a name the store has runs of
    (``known``) or that an inventory in hardware/ carries; anything else is refused in one line."""
    return resolve_lab_name(ref, known=known or [], option=option)


config_option = click.option(
    "--config",
    "configuration",
    default=None,
    envvar="LABCTL_CONFIG",
    help="Configuration of the lab, e.g. standalone or ha (default: the file's default; env LABCTL_CONFIG).",
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
RESULTS_ENV = "LABCTL_RESULTS"  # the same variable the pytest plugin reads for --results-dir


def results_dir_option(what: str) -> Callable[[F], F]:
    """``--results-dir`` (env LABCTL_RESULTS): one default for the commands that write runs and
    those that read them, so `labctl report` finds what `labctl run` wrote."""
    return click.option(
        "--results-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        envvar=RESULTS_ENV,
        help=f"{what} (env {RESULTS_ENV}; default: results/ in the project).",
    )


def resolve_results_dir(given: Path | None) -> Path:
    """The results folder: ``--results-dir`` or $LABCTL_RESULTS if given, else the project's."""
    return given or PROJECT_ROOT / "results"


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def find_group(lab: Lab, name: str) -> Group:
    """The group called ``name``; a bad name is bad input with a did-you-mean and the known groups."""
    group = lab.groups.get(name)
    if group is not None:
        return group
    close = difflib.get_close_matches(name, list(lab.groups), n=1)
    hint = f"did you mean {close[0]!r}?" if close else f"groups of {lab.name}: {', '.join(lab.groups)}"
    raise BadInputError(f"unknown group {name!r} in {display_path(lab.source_file)} ({hint})")


def check_simulator(lab_file: Path | None, configuration: str | None) -> None:
    """Before a command drives a simulated lab: if the simulated lab that runs is another file or
    configuration, say so in one line (exit 2) instead of failing later in the middle of the run.
    A bad inventory is left to the command, which reports it with its own lines."""
    file = lab_file or default_lab_file()
    try:
        lab = load_lab(file, configuration)
    except LabctlError:
        return
    if lab.simulated:
        from labctl.sim.simlab import serving  # the simulator: real labs never import it

        serving(file, configuration)


def simulator_hint(lab: Lab, lab_file: Path | None, configuration: str | None) -> str | None:
    """Why a simulated lab's endpoints do not answer, when it is that no simulator serves the file:
    not running (start it), or running another lab. None for real labs or when it runs."""
    if not lab.simulated:
        return None
    from labctl.sim.simlab import SimLabMismatchError, serving  # the simulator: real labs never import it
    from labctl.sim.state import resolve_state_dir

    file = lab_file or default_lab_file()
    try:
        if serving(file, configuration) is not None:
            return None
    except SimLabMismatchError as exc:
        return str(exc)
    config = f" --config {configuration}" if configuration else ""
    return (
        f"no simulated lab is running (state dir {display_path(resolve_state_dir())}): "
        f"start it with `labctl sim up --lab {display_path(file)}{config}`, then check again"
    )

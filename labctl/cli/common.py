"""Shared CLI plumbing: exit codes and error printing (never a traceback for a labctl error)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from labctl.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, LabctlError

lab_option = click.option(
    "--lab",
    "lab_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    envvar="LABCTL_LAB",
    help="Inventory file (default: hardware/sim-2007.yaml, the simulated lab; env LABCTL_LAB).",
)
config_option = click.option(
    "--config",
    "configuration",
    default=None,
    envvar="LABCTL_CONFIG",
    help="Configuration of the lab to use, e.g. standalone or ha (default: the file's default).",
)


def run_cli(group: click.Group) -> int:
    """Run a click group; map labctl errors to one-line messages and exit codes."""
    try:
        rv = group.main(standalone_mode=False)
    except LabctlError as exc:
        for line in str(exc).splitlines():
            click.echo(f"error: {line}" if not line.startswith("error") else line, err=True)
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        return EXIT_INTERRUPTED
    except click.ClickException as exc:
        exc.show()
        return EXIT_BAD_INPUT if exc.exit_code == 2 else exc.exit_code
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        return EXIT_INTERRUPTED
    except SystemExit as exc:  # commands may sys.exit with an explicit code
        return exc.code if isinstance(exc.code, int) else 0
    return rv if isinstance(rv, int) else 0


def fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)

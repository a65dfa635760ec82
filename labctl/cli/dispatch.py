"""How `labctl` dispatches: a click group that imports a command's module only when it runs.

A launcher machine runs `labctl launcher <verb>` once per controller poll (every few seconds in a
session storm); importing every command group for it (the lab, drivers, simulator, matplotlib,
pyVmomi) cost 2-5 s a call. So the group knows its commands by name and module, and `run_cli` is
here rather than in `common` (which imports the inventory): a command loads only what it uses.
`labctl --help` lists them all, which imports them all, and reads as before.

Exit codes: 0 success, 2 bad input or usage (click's usage errors too), 1 a run or the lab failed,
130 interrupted.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import click

from labctl.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, InventoryError, LabctlError


class LazyGroup(click.Group):
    """A group whose commands are ``name -> "module:attribute"``, imported on first use."""

    def __init__(self, *args: Any, lazy: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            module, attribute = self.lazy[cmd_name].split(":")
            command = getattr(importlib.import_module(module), attribute)
            if not isinstance(command, click.Command) or command.name != cmd_name:
                raise RuntimeError(f"labctl.cli: {self.lazy[cmd_name]} is not the command {cmd_name!r}")
            self.add_command(command)
        return super().get_command(ctx, cmd_name)


def run_cli(group: click.Group, args: list[str] | None = None) -> int:
    """Run a click group; map labctl errors to one-line messages and exit codes."""
    try:
        rv = group.main(args=args, prog_name="labctl", standalone_mode=False)
    except InventoryError as exc:
        # already `file:line: item: what (fix)`, one line per problem: editors and CI parse these
        for problem in exc.problems:
            click.echo(str(problem), err=True)
        return exc.exit_code
    except LabctlError as exc:
        # imported here: the redaction patterns load the inventory's credential models, which the
        # launcher's verbs (polled every few seconds) never need unless an error is printed
        from labctl.recorder.redact import redact_patterns

        for line in str(exc).splitlines():  # a URL or DSN echoed back keeps no password
            click.echo(f"error: {redact_patterns(line)}", err=True)
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        return EXIT_INTERRUPTED
    except click.ClickException as exc:
        exc.show()
        # click's own errors are all about the command line (bad option, missing file argument ...)
        return EXIT_BAD_INPUT if isinstance(exc, click.UsageError | click.FileError) else exc.exit_code
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        return EXIT_INTERRUPTED
    except SystemExit as exc:  # commands may sys.exit with an explicit code
        return exc.code if isinstance(exc.code, int) else 0
    return rv if isinstance(rv, int) else 0

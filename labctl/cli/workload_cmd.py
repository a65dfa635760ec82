"""`labctl workload` (inside a desktop session): the in-session workload agent, or its zipapp."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from labctl.workload import agent as workload_agent
from labctl.workload import zipapp_build


@click.command(
    "workload",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
)
@click.option(
    "--zipapp",
    "zipapp_out",
    metavar="FILE",
    help="write the workload as one file for a desktop image, and exit",
)
@click.pass_context
def workload(ctx: click.Context, zipapp_out: str | None) -> None:
    """Run a workload inside a desktop session and report to its launcher (--help for options)."""
    if zipapp_out:
        out = zipapp_build.build(Path(zipapp_out))
        click.echo(f"wrote {out} (python3 {out.name} --help)")
        return
    sys.exit(workload_agent.main(list(ctx.args)))

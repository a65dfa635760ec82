"""labctl's command line. Thin: every command calls the same API the pytest plugin uses.

Each command group lives in its own module and is registered here.
"""

from __future__ import annotations

import sys

import click

from labctl import __version__
from labctl.cli.common import run_cli

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "--version", prog_name="labctl")
def cli() -> None:
    """labctl: run storage/streaming test plans on a lab, real or simulated.

    \b
    Quick start (the simulated lab is the default):
      labctl inventory validate          # check hardware/sim-2007.yaml
      labctl sim up                      # start the simulated lab on loopback
      labctl run boot_storm              # run a test plan, then open the report
    """


def _register() -> None:
    from labctl.cli import inventory_cmd

    cli.add_command(inventory_cmd.inventory)
    # Optional groups: each lands with its own issue; a missing module just means not built yet.
    for module, attr in [
        ("labctl.cli.sim_cmd", "sim"),
        ("labctl.cli.check_cmd", "check"),
        ("labctl.cli.power_cmd", "power"),
        ("labctl.cli.run_cmd", "run"),
        ("labctl.cli.report_cmd", "report"),
        ("labctl.cli.compare_cmd", "compare"),
    ]:
        try:
            mod = __import__(module, fromlist=[attr])
        except ModuleNotFoundError as exc:
            if exc.name == module:
                continue
            raise
        cli.add_command(getattr(mod, attr))


_register()


def main() -> None:
    sys.exit(run_cli(cli))

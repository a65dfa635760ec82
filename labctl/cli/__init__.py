"""labctl's command line. Thin: every command calls the same API the pytest plugin uses.

Each command group lives in its own module and is registered here.
"""

from __future__ import annotations

import sys

import click

from labctl import __version__
from labctl.cli import check_cmd, compare_cmd, inventory_cmd, power_cmd, report_cmd, run_cmd, sim_cmd
from labctl.cli.agent_cmd import agent, agents
from labctl.cli.baseline_cmd import baseline
from labctl.cli.certify_cmd import certify
from labctl.cli.common import run_cli
from labctl.cli.launcher_cmd import launcher, workload
from labctl.cli.lease_cmd import lease
from labctl.cli.nightly_cmd import nightly
from labctl.cli.quarantine_cmd import quarantine
from labctl.cli.runs_cmd import runs
from labctl.cli.size_cmd import size

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
    for command in (
        inventory_cmd.inventory,
        sim_cmd.sim,
        check_cmd.check,
        power_cmd.power,
        run_cmd.run,
        report_cmd.report,
        compare_cmd.compare,
        lease,
        agent,
        agents,
        quarantine,
        size,
        certify,
        runs,
        baseline,
        nightly,
        launcher,
        workload,
    ):
        cli.add_command(command)


_register()


def main() -> None:
    sys.exit(run_cli(cli))

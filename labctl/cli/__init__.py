"""labctl's command line. Thin: every command calls the same API the pytest plugin uses.

Each command group lives in its own module and is named here (`COMMANDS`), imported when it runs.
"""

from __future__ import annotations

import sys

import click

from labctl import __version__
from labctl.cli.dispatch import LazyGroup, run_cli

# Each command by name and where it lives; imported when it runs (or `labctl --help` lists it), so
# `labctl launcher <verb>`, which a controller runs over SSH every few seconds, loads only the
# launcher's modules (tests/test_launcher_imports.py keeps it so).
COMMANDS = {
    "inventory": "labctl.cli.inventory_cmd:inventory",
    "sim": "labctl.cli.sim_cmd:sim",
    "check": "labctl.cli.check_cmd:check",
    "power": "labctl.cli.power_cmd:power",
    "run": "labctl.cli.run_cmd:run",
    "report": "labctl.cli.report_cmd:report",
    "compare": "labctl.cli.compare_cmd:compare",
    "lease": "labctl.cli.lease_cmd:lease",
    "agent": "labctl.cli.agent_cmd:agent",
    "agents": "labctl.cli.agent_cmd:agents",
    "quarantine": "labctl.cli.quarantine_cmd:quarantine",
    "size": "labctl.cli.size_cmd:size",
    "certify": "labctl.cli.certify_cmd:certify",
    "runs": "labctl.cli.runs_cmd:runs",
    "baseline": "labctl.cli.baseline_cmd:baseline",
    "nightly": "labctl.cli.nightly_cmd:nightly",
    "launcher": "labctl.cli.launcher_cmd:launcher",
    "workload": "labctl.cli.workload_cmd:workload",
}

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "--version", prog_name="labctl")
def cli() -> None:
    """labctl: run storage/streaming test plans on a lab, real or simulated.

    \b
    Quick start (the simulated lab is the default):
      labctl inventory validate          # check hardware/sim-2007.yaml
      labctl sim up                      # start the simulated lab on loopback
      labctl run boot_storm              # run a test plan, then open the report
    """


def main() -> None:
    sys.exit(run_cli(cli))

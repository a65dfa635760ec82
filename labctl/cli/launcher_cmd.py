"""`labctl launcher` (on a launcher machine): the daemon and the protocol's verbs.

The controller runs a verb over SSH every few seconds in a storm, so this module imports only the
launcher's own modules (tests/test_launcher_imports.py); `serve` imports the daemon when it runs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from labctl.launcher import config as launcher_config
from labctl.launcher import verbs

CONFIG_HELP = "the launcher's configuration (env LABCTL_LAUNCHER_CONFIG; default /etc/labctl/launcher.yaml)"


def _config(path: str | None) -> launcher_config.LauncherConfig:
    p = Path(path or os.environ.get("LABCTL_LAUNCHER_CONFIG") or verbs.default_config_path())
    try:
        return launcher_config.load(p)
    except launcher_config.ConfigError as exc:
        raise click.UsageError(str(exc)) from None


@click.command(
    "launcher",
    context_settings={"ignore_unknown_options": True, "help_option_names": ["-h", "--help"]},
)
@click.option("--config", "config_path", metavar="FILE", help=CONFIG_HELP)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def launcher(config_path: str | None, args: tuple[str, ...]) -> None:
    """Start real desktop sessions on this launcher machine (labctl-launcher/1).

    \b
    labctl launcher --config launcher.yaml serve     # the daemon (a service on the launcher)
    labctl launcher hello                             # the verbs the controller runs over SSH:
    labctl launcher start -Workload task -Desktop d1,d2 -User u1,u2
    labctl launcher events -After 0
    labctl launcher logoff -Session s1

    Connectors: rdp (FreeRDP), horizon, citrix (StoreFront), custom. docs/session-launchers.md
    is the set-up guide.
    """
    if not args:
        raise click.UsageError("give a verb: serve, hello, start, events or logoff (labctl launcher --help)")
    cfg = _config(config_path)
    if args[0] == "serve":
        from labctl.launcher.daemon import Launcher  # only the daemon needs the session machinery

        Launcher(cfg).serve()
        return
    sys.exit(verbs.run(cfg, list(args)))

"""`labctl quarantine list|check|release`: devices kept out of runs after a failed health check."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from labctl.cli.common import config_option, lab_option
from labctl.inventory.load import load_lab
from labctl.lab.health import WAKE_TIMEOUT_S, QuarantineStore, check_devices
from labctl.lab.lease import format_duration
from labctl.lab.session import LabSession


@click.group()
def quarantine() -> None:
    """Devices that failed a health check, kept out of runs until one passes again.

    Before a storm every device of the cell is checked (its power state can be read, it answers
    SSH when on, its BMC answers); a device that fails is excluded from the cell with the reason
    and stays quarantined for later runs. The store is .labctl/quarantine.json (env
    LABCTL_QUARANTINE_FILE).

    \b
    Examples:
      labctl quarantine list
      labctl quarantine check optiplex-[001-100]          # releases those that pass
      labctl quarantine check clients --wake               # also wake clients that are off
      labctl quarantine release optiplex-007
    """


@quarantine.command("list")
@lab_option
@click.option("--all", "every_lab", is_flag=True, help="Every lab in the store, not only this one.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per device.")
def list_cmd(lab_file: Path | None, every_lab: bool, as_json: bool) -> None:
    """The quarantined devices: why, and since when."""
    store = QuarantineStore()
    lab_name = None if every_lab else load_lab(lab_file, every_machine=True).name
    entries = store.entries(lab_name)
    if as_json:
        for q in entries:
            click.echo(json.dumps(asdict(q)))
        return
    if not entries:
        click.echo(f"nothing quarantined ({store.path})")
        return
    table = Table(box=None, pad_edge=False)
    for col in ("LAB", "DEVICE", "SINCE", "REASON"):
        table.add_column(col, overflow="fold")
    now = time.time()
    for q in entries:
        table.add_row(q.lab, q.machine, f"{format_duration(now - q.since_wall)} ago", q.reason)
    Console(width=None if sys.stdout.isatty() else 160, highlight=False).print(table)


@quarantine.command()
@click.argument("target")
@lab_option
@config_option
@click.option("--wake", is_flag=True, help="Wake clients that are off and wait until they come up.")
@click.option(
    "--wake-timeout",
    "wake_timeout_s",
    type=float,
    default=WAKE_TIMEOUT_S,
    show_default=True,
    help="Lab seconds a woken client gets to come up.",
)
def check(
    target: str, lab_file: Path | None, configuration: str | None, wake: bool, wake_timeout_s: float
) -> None:
    """Health-check TARGET (a machine, group or range): quarantine failures, release passes."""
    lab = load_lab(lab_file, configuration)
    store = QuarantineStore()
    with LabSession(lab) as session:
        machines = session.machines(target)
        results = check_devices(session, machines, wake=wake, wake_timeout_s=wake_timeout_s)
    added, freed = store.record(lab.name, results.values())
    failed = [h for h in results.values() if not h.ok]
    for h in failed:
        click.echo(f"{h.machine}: {h.reason}" + ("  (quarantined)" if h.machine in added else ""))
    click.echo(
        f"{len(results) - len(failed)} of {len(results)} healthy; {len(added)} newly quarantined, "
        f"{len(freed)} released"
    )
    if failed:
        sys.exit(1)


@quarantine.command()
@click.argument("names", nargs=-1, required=True)
@lab_option
def release(names: tuple[str, ...], lab_file: Path | None) -> None:
    """Let NAMES take part in runs again without a health check."""
    lab = load_lab(lab_file, every_machine=True)
    store = QuarantineStore()
    for name in names:
        q = store.release(lab.name, name)
        click.echo(f"released {name}" if q is not None else f"{name} was not quarantined")

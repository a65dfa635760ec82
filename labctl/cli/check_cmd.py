"""`labctl check`: preflight of every endpoint of the lab, concurrently."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from labctl.cli.common import config_option, lab_option, simulator_hint
from labctl.errors import EXIT_FAILED, EXIT_OK, BadInputError
from labctl.inventory import load_lab
from labctl.lab.launchers.greet import GREETING_TIMEOUT_S
from labctl.lab.preflight import KINDS, CheckResult, Preflight
from labctl.lab.session import DriverSettings, LabSession


@click.command()
@lab_option
@config_option
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0.5),
    default=10.0,
    show_default=True,
    help="Seconds to wait for each endpoint call.",
)
@click.option(
    "--kind",
    "kinds",
    type=click.Choice(KINDS),
    multiple=True,
    help="Check only endpoints of this kind (repeatable), e.g. --kind launcher to greet the launchers.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON instead of a table.")
def check(
    lab_file: Path | None, configuration: str | None, timeout_s: float, kinds: tuple[str, ...], as_json: bool
) -> int:
    """Preflight every endpoint: reachable, TLS as configured, credentials accepted, versions,
    and what the plans need (typeperf counters, Unity metric paths, vCenter perf counters); a VDI
    lab's session launchers are greeted (labctl-launcher/1 hello) over SSH or their site agent.

    Exits 1 with one line per failing endpoint, saying why and what to do.

    \b
    Example:
      labctl check
      labctl check --lab hardware/lab-2007.example.yaml --config ha
      labctl check --lab hardware/vdi-mcs-sc40-1000.yaml --kind launcher
    """
    lab = load_lab(lab_file, configuration)
    settings = DriverSettings(
        ssh_connect_timeout_s=timeout_s,
        ssh_command_timeout_s=max(30.0, timeout_s),
        redfish_timeout_s=timeout_s,
        vcenter_timeout_s=max(timeout_s, 10.0),
        storage_timeout_s=timeout_s,
    )
    err = Console(stderr=True)
    with LabSession(lab, settings=settings) as session:
        pre = Preflight(session, launcher_timeout_s=max(GREETING_TIMEOUT_S, timeout_s), kinds=kinds)
        total = len(pre.checks())
        if kinds and not total:
            raise BadInputError(
                f"{lab.source_file}: lab {lab.name} has no endpoint of kind {', '.join(kinds)} "
                "(drop --kind, or name a kind its inventory has)"
            )
        done = [0]

        def progress(r: CheckResult) -> None:
            done[0] += 1
            if err.is_terminal and not as_json:
                err.print(
                    f"[dim]{done[0]}/{total}[/] {r.endpoint}: {'ok' if r.ok else 'FAILED'}", highlight=False
                )

        results = pre.run(progress)
    failed = [r for r in results if not r.ok]
    if as_json:
        click.echo(
            json.dumps(
                {
                    "lab": lab.name,
                    "configuration": lab.configuration.name if lab.configuration else None,
                    "ok": not failed,
                    "endpoints": [
                        {
                            "endpoint": r.endpoint,
                            "kind": r.kind,
                            "address": r.address,
                            "ok": r.ok,
                            "version": r.version,
                            "capabilities": r.capabilities,
                            "tls": r.tls,
                            "reason": r.reason,
                            "fix": r.fix,
                            "seconds": round(r.seconds, 3),
                        }
                        for r in results
                    ],
                },
                indent=2,
            )
        )
    else:
        render(lab.name, results)
    if failed:
        for r in failed:
            click.echo(f"FAILED {r.line}", err=True)
        click.echo(f"{len(failed)} of {len(results)} endpoints failed the preflight", err=True)
        hint = simulator_hint(lab, lab_file, configuration)
        if hint:
            click.echo(f"hint: {hint}", err=True)
        sys.exit(EXIT_FAILED)
    return EXIT_OK


def render(lab_name: str, results: list[CheckResult]) -> None:
    console = Console(width=max(Console().width, 120))
    t = Table(title=f"{lab_name}: preflight ({sum(r.ok for r in results)}/{len(results)} endpoints ok)")
    for col in ("endpoint", "kind", "address", "result", "version", "capabilities", "TLS", "s"):
        t.add_column(col, overflow="fold")
    for r in results:
        t.add_row(
            r.endpoint,
            r.kind,
            r.address,
            "[green]ok[/]" if r.ok else "[red]FAILED[/]",
            r.version,
            r.capabilities
            if r.ok or not r.reason
            else (r.capabilities + "\n" if r.capabilities else "") + f"[red]{r.reason}[/]",
            r.tls,
            f"{r.seconds:.1f}",
        )
    console.print(t)
    for r in results:
        for note in r.notes:
            console.print(f"note: {r.endpoint}: {note}", highlight=False)

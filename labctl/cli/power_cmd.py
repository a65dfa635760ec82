"""`labctl power on|off|reset|reboot|status TARGET`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from labctl.cli.common import config_option, lab_option
from labctl.errors import EXIT_FAILED
from labctl.inventory import load_lab
from labctl.inventory.ranges import compact_names
from labctl.lab.lease.guard import check_not_leased
from labctl.lab.power import Action, MachineState, PowerReport, State
from labctl.lab.session import LabSession

TARGET_HELP = "A machine, a group, a range like optiplex-[001-010], or a comma-separated list."


@click.group()
def power() -> None:
    """Power machines on and off, whatever their backend (WoL/SSH, Redfish, IPMI, vCenter).

    \b
    Examples:
      labctl power on optiplex-[001-010]
      labctl power status first-25
      labctl power off clients
      labctl power off --hard optiplex-007
      labctl power reboot pvs-01

    \b
    A lab that another run leases is refused (the line names the holder and the time its lease
    has left) unless --force; the lab's leases are read where its runs take them (its inventory's
    hub, else $LABCTL_HUB, else this machine's). Your own `labctl lease take` is not in the way.
    """


def _session(lab_file: Path | None, configuration: str | None) -> LabSession:
    return LabSession(load_lab(lab_file, configuration))


def _with_progress(total: int, label: str, fn: Callable[[Callable[[Any], None]], Any]) -> Any:
    """Run ``fn(advance)`` with a progress bar on a terminal (more than one machine)."""
    console = Console(stderr=True)
    if total <= 1 or not console.is_terminal:
        return fn(lambda _o: None)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task(label, total=total)
        return fn(lambda _o: progress.advance(task))


def _group_rows(items: list[tuple[str, str, str, str]]) -> list[tuple[str, str, str, str, int]]:
    """Rows (names, kind, result, detail, count): machines with the same outcome share a row."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for name, kind, result, detail in items:
        groups.setdefault((kind, result, detail), []).append(name)
    return [(compact_names(names), k, r, d, len(names)) for (k, r, d), names in groups.items()]


def _act(
    action: Action,
    lab_file: Path | None,
    configuration: str | None,
    target: str,
    wait: float | None,
    hard: bool,
    force: bool,
) -> None:
    """Run ``action`` on ``target``, print the outcome per machine, then wait for readiness if asked."""
    with _session(lab_file, configuration) as s:
        machines = s.machines(target)
        if not force:  # a run that holds the lab would measure machines changed under it
            check_not_leased(s.lab, machines, f"power {action.value} {target}")
        report: PowerReport = _with_progress(
            len(machines),
            f"power {action.value} {target}",
            lambda advance: s.power.act(action, target, force=hard, progress=advance),
        )
        _print_report(report)
        ready_failed = 0
        if wait is not None and action is not Action.OFF:
            ok_names = [m for m in machines if report.outcomes[m.name].ok]
            ready = (
                s.wait_ready(ok_names, timeout_s=wait, expect_boot=action is not Action.ON)
                if ok_names
                else {}
            )
            rows = [
                (
                    n,
                    r.kind,
                    r.state,
                    r.detail
                    + (f", boot {r.boot_time_s:.1f} s" if r.boot_time_s is not None else "")
                    + (f", {r.retries} retries" if r.retries else ""),
                )
                for n, r in ready.items()
            ]
            _print_rows(f"ready within {wait:g} lab s", rows, ok_word="ready")
            ready_failed = sum(not r.ready for r in ready.values())
    if not report.ok or ready_failed:
        sys.exit(EXIT_FAILED)


def _print_report(report: PowerReport) -> None:
    rows = [(o.machine, o.kind, "ok" if o.ok else "FAILED", o.detail) for o in report.outcomes.values()]
    spread = ""
    if len(report.outcomes) > 1:
        spread = (
            f"; send spread {report.send_spread_lab_s:.3f} lab s ({report.send_spread_wall_s * 1000:.1f} ms)"
        )
        if report.delivery_spread_lab_s is not None and report.delivery_spread_wall_s is not None:
            spread += (
                f", delivery spread {report.delivery_spread_lab_s:.3f} lab s "
                f"({report.delivery_spread_wall_s * 1000:.1f} ms)"
            )
    title = (
        f"power {report.action} {report.target}: {len(report.outcomes) - len(report.failed)}/"
        f"{len(report.outcomes)} ok{spread}"
    )
    _print_rows(title, rows, ok_word="ok")
    for o in report.failed.values():
        fix = f" -- fix: {o.fix}" if o.fix else ""
        click.echo(f"FAILED {o.machine}: {o.detail}{fix}", err=True)


def _print_rows(title: str, rows: list[tuple[str, str, str, str]], ok_word: str) -> None:
    console = Console(width=max(Console().width, 100))
    t = Table(title=title, title_justify="left")
    for col in ("machines", "n", "kind", "result", "detail"):
        t.add_column(col, overflow="fold")
    for names, kind, result, detail, n in _group_rows(rows):
        style = (
            "green"
            if result in (ok_word, "on")
            else ("red" if result in ("FAILED", "error", "unknown", "timeout") else "")
        )
        t.add_row(names, str(n), kind, f"[{style}]{result}[/]" if style else result, detail)
    console.print(t)


def _register(action: Action, help_text: str) -> None:
    @power.command(name=action.value, help=help_text)
    @click.argument("target")
    @lab_option
    @config_option
    @click.option(
        "--wait",
        type=click.FloatRange(min=0),
        default=None,
        metavar="LAB_SECONDS",
        hidden=action is Action.OFF,  # nothing to wait for: an off machine is never "ready"
        help="After the action, wait up to this many lab seconds for each machine to be ready.",
    )
    @click.option(
        "--hard",
        is_flag=True,
        default=False,
        hidden=action is not Action.OFF,
        help="Power off without a graceful OS shutdown where the backend allows it.",
    )
    @click.option(
        "--force",
        is_flag=True,
        default=False,
        help="Act even though another run leases the lab (its measurements will be wrong).",
    )
    def cmd(
        target: str,
        lab_file: Path | None,
        configuration: str | None,
        wait: float | None,
        hard: bool,
        force: bool,
    ) -> None:
        _act(action, lab_file, configuration, target, wait, hard, force)


_register(
    Action.ON, f"Power on TARGET (clients by Wake-on-LAN, servers by Redfish, VMs by vCenter). {TARGET_HELP}"
)
_register(Action.OFF, f"Power off TARGET (clients and servers shut their OS down). {TARGET_HELP}")
_register(Action.RESET, f"Hard-reset TARGET. {TARGET_HELP}")
_register(Action.REBOOT, f"Reboot TARGET through its OS. {TARGET_HELP}")


@power.command(help=f"Show the power state of TARGET, read from each backend now. {TARGET_HELP}")
@click.argument("target")
@lab_option
@config_option
def status(target: str, lab_file: Path | None, configuration: str | None) -> None:
    with _session(lab_file, configuration) as s:
        states: dict[str, MachineState] = s.power.state(target)
    rows = [(n, st.kind, st.state.value, st.detail) for n, st in states.items()]
    counts: dict[str, int] = {}
    for st in states.values():
        counts[st.state.value] = counts.get(st.state.value, 0) + 1
    _print_rows(f"{target}: " + ", ".join(f"{n} {k}" for k, n in counts.items()), rows, ok_word="on")
    unknown = [st for st in states.values() if st.state is State.UNKNOWN]
    for st in unknown:
        click.echo(f"UNKNOWN {st.machine}: {st.detail}", err=True)
    if unknown:
        sys.exit(EXIT_FAILED)

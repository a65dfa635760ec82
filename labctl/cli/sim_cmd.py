"""`labctl sim up|status|down`: the simulated lab on loopback."""

from __future__ import annotations

import signal
import sys
import time
from collections import defaultdict
from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.table import Table

from labctl.cli.calibrate_cmd import calibrate
from labctl.cli.common import config_option, lab_option
from labctl.errors import EXIT_FAILED, EXIT_OK, LabctlError
from labctl.inventory.fault_targets import check_faults
from labctl.inventory.load import display_path, load_lab
from labctl.sim.endpoint import EndpointInfo
from labctl.sim.simlab import EndpointHealth, SimNotRunningError, SimulatedLab, describe_faults
from labctl.sim.state import default_state_dir, read_state, resolve_state_dir, state_path

state_dir_option = click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Run-time folder of the simulated lab (default: $LABCTL_STATE_DIR, else .labctl/sim/).",
)
verbose_option = click.option("-v", "--verbose", is_flag=True, help="One row per endpoint.")


@click.group()
def sim() -> None:
    """Start, inspect and stop the simulated lab (every endpoint on loopback).

    \b
    Examples:
      labctl sim up                                  # hardware/sim-2007.yaml
      labctl sim up --config ha --fault client_never_wakes:optiplex-007
      labctl sim status -v
      labctl sim down
    """


def _console() -> Console:
    return Console(width=None if sys.stdout.isatty() else 100, highlight=False)


def _addresses(infos: list[EndpointInfo]) -> str:
    by_port: dict[tuple[int, str], list[str]] = defaultdict(list)
    for i in sorted(infos, key=lambda i: _ip_key(i.host)):
        by_port[(i.port, i.protocol)].append(i.host)
    parts = []
    for (port, proto), hosts in by_port.items():
        suffix = f":{port}" + ("/udp" if proto == "udp" else "")
        if len(hosts) <= 2:
            parts.append(", ".join(h + suffix for h in hosts))
        else:
            parts.append(f"{hosts[0]} .. {hosts[-1]}{suffix} ({len(hosts)})")
    return "; ".join(parts)


def _ip_key(host: str) -> tuple[int, ...] | tuple[str]:
    try:
        return tuple(int(p) for p in host.split("."))
    except ValueError:
        return (host,)


def _sorted(health: list[EndpointHealth]) -> list[EndpointHealth]:
    kinds = ["vcenter", "redfish", "unity", "ssh", "wol"]
    return sorted(
        health,
        key=lambda h: (kinds.index(h.info.kind) if h.info.kind in kinds else 99, h.info.kind, h.info.name),
    )


def _state_text(rows: list[EndpointHealth]) -> str:
    counts: dict[str, int] = defaultdict(int)
    for h in rows:
        counts[h.state] += 1
    order = [("answers", "green"), ("off", "yellow"), ("down", "red")]
    udp = all(h.info.protocol == "udp" for h in rows)
    words = {"answers": "bound" if udp else "answering", "off": "off (twin)", "down": "down"}
    return ", ".join(f"[{c}]{counts[s]} {words[s]}[/{c}]" for s, c in order if counts[s])


def _placed_block(sim: SimulatedLab) -> int | None:
    try:
        return sim.lab.loopback_block
    except LabctlError:  # the file changed since `up`: the table still shows what runs
        return None


def _print_lab(sim: SimulatedLab, health: list[EndpointHealth], verbose: bool, headline: str) -> None:
    console = _console()
    st = sim.state
    console.print(headline)
    console.print(
        f"  lab {st.lab_name} from {display_path(st.lab_file)}"
        + (f", configuration {st.configuration}" if st.configuration else "")
        + f"; time scale {st.time_scale:g}x; twin {st.twin or '?'}"
    )
    block = _placed_block(sim)
    if block is not None:
        console.print(f"  placed on loopback 127.{block}.0.0/16 (lab.loopback_block)")
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    health = _sorted(health)
    if verbose:
        for col in ("kind", "name", "address", "state"):
            table.add_column(col)
        for h in health:
            i = h.info
            colour = {"answers": "green", "off": "yellow"}.get(h.state, "red")
            detail = f": {h.detail}" if h.detail and h.state != "answers" else ""
            table.add_row(
                i.kind, i.name, f"{i.host}:{i.port}/{i.protocol}", f"[{colour}]{h.state}[/]{detail}"
            )
    else:
        for col in ("kind", "n", "addresses", "state"):
            table.add_column(col)
        by_kind: dict[str, list[EndpointHealth]] = defaultdict(list)
        for h in health:
            by_kind[h.info.kind].append(h)
        for kind, rows in by_kind.items():
            table.add_row(kind, str(len(rows)), _addresses([r.info for r in rows]), _state_text(rows))
    for s in st.skipped:
        table.add_row(s.kind, "-", "-", f"[yellow]skipped[/]: {s.reason}")
    console.print(table)
    procs = ", ".join(
        f"{p.role} pid {p.pid}" + ("" if ok else " [red](not running)[/]") for p, ok in sim.process_status()
    )
    console.print(f"  processes: {procs}")
    console.print(
        f"  state: {display_path(state_path(Path(st.state_dir)))}; logs: {display_path(st.state_dir)}/*.log"
    )
    console.print(f"  credentials: {display_path(st.secrets_file)}")
    if Path(st.state_dir) != default_state_dir():
        console.print(f"  for labctl: export LABCTL_SECRETS_FILE={st.secrets_file}", soft_wrap=True)
    if st.faults:
        console.print(f"  faults added at up: {', '.join(describe_faults(st.faults))}")


@sim.command()
@lab_option
@config_option
@click.option(
    "--fault",
    "faults",
    multiple=True,
    metavar="KIND:TARGET[,TARGET]",
    help="Inject a fault (repeatable), e.g. client_never_wakes:optiplex-007 or vcenter_task_fails:vdi-003.",
)
@click.option(
    "--twin",
    type=click.Choice(["auto", "placeholder", "physical"]),
    default="auto",
    show_default=True,
    help="Lab twin: the physical model if built (auto), or the placeholder (fixed boot time, flat counters).",
)
@state_dir_option
@verbose_option
def up(
    lab_file: Path | None,
    configuration: str | None,
    faults: tuple[str, ...],
    twin: str,
    state_dir: Path | None,
    verbose: bool,
) -> None:
    """Start the simulated lab and wait until every endpoint answers.

    Runs in the background until `labctl sim down`. Exits 2 if one is already running or an
    address it needs is taken.
    """
    # every target checked against the lab before anything starts (a fault that cannot fire
    # would leave a clean storm "passing" it)
    check_faults(faults, load_lab(lab_file, configuration, every_machine=True))
    t0 = time.monotonic()

    def terminated(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM while starting: clean up what was started, as on Ctrl-C

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        sim = SimulatedLab(lab_file, configuration, faults, state_dir, twin=twin, detach=True).start()
    finally:
        signal.signal(signal.SIGTERM, previous)
    for w in sim.warnings:
        click.echo(f"warning: {w}", err=True)
    health = sim.health()
    _print_lab(sim, health, verbose, f"Simulated lab up in {time.monotonic() - t0:.1f} s.")


@sim.command()
@state_dir_option
@verbose_option
def status(state_dir: Path | None, verbose: bool) -> None:
    """Show what runs and what answers. Exits 0 if every endpoint answers, 1 otherwise."""
    try:
        sim = SimulatedLab.attach(state_dir)
    except SimNotRunningError as exc:
        click.echo(str(exc))
        sys.exit(EXIT_FAILED)
    procs = sim.process_status()
    health = sim.health()
    bad = [h for h in health if not h.ok]
    dead = [p for p, ok in procs if not ok]
    if dead and not any(ok for _, ok in procs):
        headline = (
            "[red]The simulated lab is not running[/] (its processes are gone; `labctl sim down` cleans up)."
        )
    elif bad or dead:
        headline = f"[red]The simulated lab runs, but {len(bad)} endpoint(s) do not answer.[/]"
    else:
        headline = "[green]The simulated lab runs; every endpoint answers.[/]"
    _print_lab(sim, health, verbose, headline)
    if not verbose:
        for h in bad[:10]:
            click.echo(f"  down: {h.info.kind} {h.info.name} {h.info.host}:{h.info.port}: {h.detail}")
    sys.exit(EXIT_FAILED if bad or dead else EXIT_OK)


@sim.command()
@state_dir_option
def down(state_dir: Path | None) -> None:
    """Stop every process `labctl sim up` started (by pid) and remove the state file."""
    sd = resolve_state_dir(state_dir)
    state = read_state(sd)
    if state is None:
        click.echo(f"no simulated lab is running (state dir {display_path(sd)}); nothing to stop")
        return
    sim = SimulatedLab.attach(sd)
    left = sim.stop()
    if left:
        click.echo("error: could not stop " + ", ".join(f"{p.role} pid {p.pid}" for p in left), err=True)
        sys.exit(EXIT_FAILED)
    click.echo("stopped " + ", ".join(f"{p.role} (pid {p.pid})" for p in state.processes))


sim.add_command(calibrate)

"""`labctl sim calibrate`: the 2007 boot storm in fast-forward, side by side with the paper.

Registered by the sim group (``sim.add_command(calibrate)``); also runnable on its own:
``python -m labctl.cli.calibrate_cmd [--lab FILE] [--config C]``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import click
import numpy as np
from rich import box
from rich.console import Console
from rich.table import Table

from labctl.cli import calibrate_vdi
from labctl.cli.common import config_option, lab_option, run_cli
from labctl.inventory import load_lab
from labctl.inventory.model import Lab
from labctl.sim.twin import hardware as hwm
from labctl.sim.twin.calibration import COPY_AGREEMENT, GROUP_SIZES, Calibration, CopyRow, Row, copy_table
from labctl.sim.twin.calibration import calibrate as run_calibration
from labctl.sim.twin.storm import STORM_WINDOW_S

_QUANTITIES = (
    ("boot time", "boot s", "{:.1f}"),
    ("retries", "retries", "{:.1f}"),
    ("cpu_avg", "CPU avg %", "{:.0f}"),
    ("cpu_peak", "CPU peak %", "{:.0f}"),
    ("nic_peak", "NIC peak %", "{:.0f}"),
    ("queue_peak", "queue peak", "{:.1f}"),
    ("mem", "free MB", "{:.0f}"),
)


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(sorted({int(x) for x in text.split(",") if x.strip()}))
    except ValueError:
        raise click.BadParameter(f"{text!r}: give client counts separated by commas, e.g. 1,25,100") from None
    if not sizes or min(sizes) < 1:
        raise click.BadParameter("client counts must be at least 1")
    return sizes


@click.command()
@lab_option
@config_option
@click.option(
    "--sizes",
    default=",".join(str(n) for n in GROUP_SIZES),
    show_default=True,
    help="Group sizes to boot (clients booted at once).",
)
@click.option(
    "--window",
    "window_s",
    type=float,
    default=STORM_WINDOW_S,
    show_default=True,
    help="Storm window per group, lab seconds (the paper's 6 minutes).",
)
@click.option(
    "--copies",
    is_flag=True,
    help="Also run each copy path alone and with 25 / 50 copiers and set the copy times beside "
    "the bottleneck the physics gives (about a minute more).",
)
def calibrate(
    lab_file: Path | None, configuration: str | None, sizes: str, window_s: float, copies: bool
) -> None:
    """Run the 2007 boot storm in fast-forward and compare with the published figures.

    Boots each group of clients at once on the lab twin (no sockets, no waiting), samples the
    streaming server like perfmon every lab second, and prints boot time, retries, CPU average
    and peak, NIC peak, write-cache disk queue peak and time above 8, and the least free memory,
    next to the 2007 paper's figures, with a verdict per row. Exits 1 if any verdict fails.

    Figures other than the paper's are shown for other configurations (e.g. --config ha), where
    only the trends and the return to idle are judged.

    A virtual-desktop lab (an inventory with a vdi: section) runs its boot, login and steady
    storms instead and prints them beside the 2012 EqualLogic paper's tables 5-7 or the 2014
    write-cache post, whichever the lab is shaped like (--sizes and --window do not apply).

    \b
    Examples:
      labctl sim calibrate
      labctl sim calibrate --sizes 50,75,100
      labctl sim calibrate --config ha
      labctl sim calibrate --lab hardware/vdi-2012-ps6010xvs-630.yaml
      labctl sim calibrate --sizes 100 --copies
    """
    groups = _sizes(sizes)
    lab = load_lab(lab_file, configuration, every_machine=True)
    console = Console(highlight=False)
    if lab.vdi is not None:  # a virtual-desktop lab: the 2012 / 2014 studies (labctl.cli.calibrate_vdi)
        sys.exit(calibrate_vdi.run(lab, console))
    console.print(_header(lab))
    with console.status("booting...") as status:

        def progress(n: int, _res: object) -> None:
            status.update(f"booted {n} clients...")

        cal = run_calibration(lab, groups, duration_s=window_s, progress=progress)
    console.print(_table(cal))
    for line in _failures(cal):
        console.print(f"[red]{line}[/red]")
    console.print(_trends(cal))
    for line in _why_lines(cal):
        console.print(line)
    copies_ok = True
    if copies:
        with console.status("copying...") as status:

            def copy_progress(path: str, n: int) -> None:
                status.update(f"{n} cop{'y' if n == 1 else 'ies'} {path}...")

            rows = copy_table(lab, progress=copy_progress)
        console.print(_copy_table(rows))
        copies_ok = all(r.ok for r in rows)
    ok = cal.ok and copies_ok
    verdict = "[green]PASS[/green]" if ok else "[red]FAIL[/red]"
    wall = sum(r.result.wall_s for r in cal.rows)
    console.print(f"calibration: {verdict} ({len(cal.rows)} storms, {wall:.1f} s of wall time)")
    if not ok:
        sys.exit(1)


def _copy_table(rows: list[CopyRow]) -> Table:
    lo, hi = COPY_AGREEMENT
    t = Table(
        box=box.SIMPLE,
        title=f"copies of 512 MB, no rebooters: twin vs the bottleneck bound (agree: {lo:g}-{hi:g} x)",
        title_justify="left",
    )
    for col in ("path", "copiers", "limited by", "bound s", "twin s (min-max)", "verdict"):
        t.add_column(col, justify="right" if col in ("copiers", "bound s") else "left", no_wrap=col == "path")
    for r in rows:
        spread = f"{np.median(r.twin_s):.0f} ({np.nanmin(r.twin_s):.0f}-{np.nanmax(r.twin_s):.0f})"
        t.add_row(
            r.path,
            str(r.copiers),
            r.limit,
            f"{r.expected_s:.0f}",
            spread,
            "[green]pass[/green]" if r.ok else "[red]FAIL[/red]",
        )
    return t


def _header(lab: Lab) -> str:
    conf = lab.configuration
    where = f"configuration {conf.name}: {conf.description}" if conf else "no configuration"
    return f"lab {lab.name} ({where})"


def _table(cal: Calibration) -> Table:
    """Quantities down, group sizes across; under each twin figure, the published one (dim)."""
    t = Table(box=box.SIMPLE_HEAVY, title="boot storm: twin, [dim]published[/dim]", title_justify="left")
    t.add_column("clients", no_wrap=True)
    for r in cal.rows:
        t.add_column(str(r.clients), justify="right")
    for quantity, title, fmt in _QUANTITIES:
        twin_cells, pub_cells = [], []
        for r in cal.rows:
            check = next((c for c in r.checks if c.quantity == quantity), None)
            value = _value(r, quantity)
            text = "-" if math.isnan(value) else fmt.format(value)
            if check is not None:
                colour = "green" if check.ok else "red"
                text = f"[{colour}]{text}[/{colour}]"
            twin_cells.append(text)
            pub_cells.append(f"[dim]{check.published}[/dim]" if check is not None else "")
        t.add_row(title, *twin_cells)
        if any(pub_cells):
            t.add_row("", *pub_cells)
    t.add_row("queue>8 s", *(f"{r.queue_over_8_s:.0f}" for r in cal.rows))
    t.add_row("CPU 100% s", *(f"{r.cpu_100_s:.0f}" for r in cal.rows))
    t.add_row("verdict", *(_verdict(r) for r in cal.rows), end_section=True)
    return t


def _value(r: Row, quantity: str) -> float:
    return {
        "boot time": r.boot_s,
        "retries": r.retries,
        "cpu_avg": r.cpu_avg_pct,
        "cpu_peak": r.cpu_peak_pct,
        "nic_peak": r.nic_peak_pct,
        "queue_peak": r.queue_peak,
        "mem": r.mem_min_free_mb,
    }[quantity]


def _verdict(r: Row) -> str:
    return "[green]pass[/green]" if r.ok else "[red]FAIL[/red]"


def _failures(cal: Calibration) -> list[str]:
    out = []
    for r in cal.rows:
        for c in r.checks:
            if not c.ok:
                out.append(f"  {r.clients} clients: {c.quantity} = {c.value:.1f}, published {c.published}")
    return out


def _trends(cal: Calibration) -> Table:
    t = Table(box=box.SIMPLE, title="trends")
    t.add_column("check")
    t.add_column("value", justify="right")
    t.add_column("expected")
    t.add_column("verdict")
    for c in cal.trends:
        if c.ok:
            verdict = "[green]pass[/green]"
        elif not c.judged:
            verdict = "[yellow]limit[/yellow] (twin README)"
        else:
            verdict = "[red]fail[/red]"
        t.add_row(
            c.quantity, f"{c.value:+.1f}" if "->" in c.quantity else f"{c.value:.1f}", c.published, verdict
        )
    return t


def _why_lines(cal: Calibration) -> list[str]:
    """The capacities the storm runs into, so a reader sees why the queue and NIC peak where they do."""
    lab = cal.lab
    conf = lab.configuration
    if conf is None:
        return []
    p = lab.twin
    out = ["[bold]capacities[/bold]"]
    server = lab.machine(cal.streaming_server).server_hardware
    if server is not None:
        nic = hwm.nic_counted_bytes_per_s(server.nics.speed_gbps, p) / hwm.MB
        out.append(
            f"  {cal.streaming_server}: {hwm.cores(server)} cores x {server.cpu.ghz:g} GHz; "
            f"{server.nics.count} x {server.nics.speed_gbps:g} GbE = {server.nics.count * nic:.0f} MB/s out "
            f"(a saturated port reads {100 * nic * hwm.MB * 8 / (server.nics.speed_gbps * 1e9):.1f}%)"
        )
    wc_server = lab.machine(conf.write_cache_server).server_hardware
    vol = next(
        (v for v in (wc_server.volumes if wc_server else ()) if v.name == conf.write_cache_volume), None
    )
    if vol is not None:
        kb = p.settle.write_kb
        qd1 = hwm.write_capacity_iops(vol, p, kb)
        deep = (
            vol.disks
            / hwm.raid_write_penalty(vol)
            / (
                (
                    hwm.disk_timing(vol, p).positioning_ms
                    * p.queue_reorder_max_depth ** (-p.queue_reorder_exponent)
                    + kb * 1024 / (hwm.disk_timing(vol, p).media_rate_mb_s * hwm.MB) * 1e3
                )
                / 1e3
            )
        )
        out.append(
            f"  write cache {conf.write_cache_server}:{vol.name}: RAID{vol.raid} of {vol.disks} "
            f"({vol.disk_type.value}{f', {vol.rpm} rpm' if vol.rpm else ''}), write penalty "
            f"{hwm.raid_write_penalty(vol)}: {qd1:.0f} writes/s of {kb:g} KB at queue depth 1, up to "
            f"{deep:.0f}/s with deep queues; controller cache absorbs {p.controller_write_cache_mb:g} MB first"
        )
        rows = [r for r in cal.rows if r.queue_peak > 0]
        if rows:
            r = rows[-1]
            per_client = (p.kernel.write_mb + p.logon.write_mb + p.settle.write_mb) * 1024 / kb
            out.append(
                f"  {r.clients} clients offer about {r.clients * per_client:.0f} writes of {kb:g} KB in the storm; "
                f"once the controller cache is full they wait for the spindles: queue peak {r.queue_peak:.0f}, "
                f"{r.queue_over_8_s:.0f} s above 8"
            )
    return out


def main() -> None:
    group = click.Group(commands={"calibrate": calibrate})
    sys.argv.insert(1, "calibrate")
    sys.exit(run_cli(group))


if __name__ == "__main__":
    main()

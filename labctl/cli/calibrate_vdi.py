"""`labctl sim calibrate --lab <vdi lab>`: the VDI twin beside the published tables, with verdicts.

Called by :mod:`labctl.cli.calibrate_cmd` for an inventory with a ``vdi:`` section. A lab shaped like
the 2012 EqualLogic paper (PVS task workers) is compared with its tables 5-7, one like the 2014
write-cache post (PVS pools of several profiles) with the post's host IOPS per user; any other lab
gets its boot, login and steady figures printed without verdicts. Exit status 1 when a verdict fails.
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table

from labctl.inventory.model import Lab
from labctl.sim.twin.vdi import arrays as arr
from labctl.sim.twin.vdi.calibration import Study, calibrate, figures


def run(lab: Lab, console: Console) -> int:
    """Print the study for ``lab`` and return the exit status (0 pass, 1 a failed verdict)."""
    vdi = lab.vdi
    assert vdi is not None
    console.print(
        f"lab {lab.name}: {len(vdi.placement)} desktops, {len(vdi.hosts)} hosts, {len(vdi.arrays)} array(s)"
    )
    if vdi.note:
        console.print(f"[dim]{vdi.note}[/dim]")
    with console.status("running storms...") as status:
        study = calibrate(vdi, lab.name, status.update) or figures(vdi, lab.name, status.update)
    console.print(table(study))
    for note in study.notes:
        console.print(f"  {note}")
    console.print("[bold]capacities[/bold]")
    for hw in vdi.arrays.values():
        for line in arr.describe(hw, vdi.twin):
            console.print(f"  {line}")
    judged = [c for c in study.checks if c.ok is not None]
    if not judged:
        console.print(f"no verdicts ({study.wall_s:.1f} s of wall time)")
        return 0
    failed = [c for c in judged if not c.ok]
    verdict = "[green]PASS[/green]" if not failed else f"[red]FAIL[/red] ({len(failed)} of {len(judged)})"
    console.print(f"calibration: {verdict} ({len(judged)} checks, {study.wall_s:.1f} s of wall time)")
    return 0 if not failed else 1


def table(study: Study) -> Table:
    t = Table(box=box.SIMPLE_HEAVY, title=f"{study.name}: twin, [dim]published[/dim]", title_justify="left")
    t.add_column("")
    t.add_column("quantity")
    t.add_column("twin", justify="right")
    t.add_column("published", justify="right")
    t.add_column("verdict")
    last = None
    for c in study.checks:
        value = (
            f"{c.value:,.0f}"
            if abs(c.value) >= 100
            else f"{c.value:.2f}"
            if abs(c.value) < 10
            else f"{c.value:.1f}"
        )
        value = f"{value} {c.unit}".strip()
        verdict = "" if c.ok is None else "[green]pass[/green]" if c.ok else "[red]FAIL[/red]"
        colour = "" if c.ok is None else "green" if c.ok else "red"
        shown = f"[{colour}]{value}[/{colour}]" if colour else value
        t.add_row(c.group if c.group != last else "", c.quantity, shown, f"[dim]{c.published}[/dim]", verdict)
        last = c.group
    return t

"""`labctl inventory validate|show`."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from labctl.cli.common import config_option
from labctl.inventory import load_lab
from labctl.inventory.model import Lab, MachineKind
from labctl.inventory.ranges import compact_names


@click.group()
def inventory() -> None:
    """Validate and list a lab inventory (hardware/*.yaml).

    \b
    Example:
      labctl inventory validate hardware/sim-2007.yaml
      labctl inventory show --group first-25
    """


@inventory.command()
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@config_option
def validate(file: Path | None, configuration: str | None) -> None:
    """Check an inventory file and print a summary; exit 2 with one line per problem.

    \b
    Example:
      labctl inventory validate hardware/lab-2007.example.yaml
    """
    lab = load_lab(file, configuration)
    kinds = Counter(m.kind.value for m in lab.machines.values())
    click.echo(f"{lab.source_file}: OK — lab {lab.name!r}" + (" (simulated)" if lab.simulated else ""))
    if lab.configuration:
        click.echo(f"  configuration: {lab.configuration.name} (of {', '.join(lab.configurations)})")
    click.echo("  machines: " + ", ".join(f"{n} {k}s" for k, n in kinds.items()))
    click.echo(f"  groups: {', '.join(f'{g} ({len(grp.members)})' for g, grp in lab.groups.items())}")
    extras = [f"{len(lab.vcenters)} vCenter", f"{len(lab.storage)} storage array", f"{len(lab.shares)} share"]
    click.echo(f"  endpoints: {', '.join(extras)}")


@inventory.command()
@click.option(
    "--lab",
    "lab_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    envvar="LABCTL_LAB",
    help="Inventory file (default: hardware/sim-2007.yaml).",
)
@config_option
@click.option("--group", "group", default=None, help="Show only the members of this group.")
def show(lab_file: Path | None, configuration: str | None, group: str | None) -> None:
    """List machines as a table: clients compactly, servers with their hardware.

    \b
    Example:
      labctl inventory show --group first-25
    """
    lab = load_lab(lab_file, configuration)
    names = list(lab.machines)
    if group is not None:
        if group not in lab.groups:
            from labctl.errors import UnknownTargetError

            raise UnknownTargetError(group, lab)
        names = list(lab.groups[group].members)
    render_inventory(lab, names)


def render_inventory(lab: Lab, names: list[str]) -> None:
    console = Console()
    clients = [lab.machines[n] for n in names if lab.machines[n].kind is MachineKind.CLIENT]
    if clients:
        t = Table(title=f"{lab.name}: clients ({len(clients)})")
        for col in ("names", "count", "model", "MAC", "IP", "tags"):
            t.add_column(col)
        # one row per run of identical model/tags so 100 clients take one line
        runs: list[list] = []
        for m in clients:
            if runs and runs[-1][0].model == m.model and runs[-1][0].tags == m.tags:
                runs[-1].append(m)
            else:
                runs.append([m])
        for run in runs:
            t.add_row(
                compact_names([m.name for m in run]),
                str(len(run)),
                run[0].model,
                f"{run[0].mac} .. {run[-1].mac}" if len(run) > 1 else str(run[0].mac),
                f"{run[0].ip} .. {run[-1].ip}" if len(run) > 1 else str(run[0].ip),
                ", ".join(run[0].tags),
            )
        console.print(t)
    servers = [lab.machines[n] for n in names if lab.machines[n].kind is MachineKind.SERVER]
    if servers:
        t = Table(title=f"{lab.name}: servers ({len(servers)})")
        for col in ("name", "role", "model", "IP", "BMC", "CPU", "RAM", "NICs", "volumes"):
            t.add_column(col)
        for m in servers:
            hw = m.server_hardware
            cpu = f"{hw.cpu.sockets}x{hw.cpu.cores}c {hw.cpu.ghz:g} GHz {hw.cpu.model}" if hw else ""
            vols = "\n".join(
                f"{v.name} {v.drive or ''} RAID{v.raid} {v.disks}x{v.capacity_gb:g}GB {v.disk_type.value}"
                + (f" {v.rpm // 1000}K" if v.rpm else "")
                + f" [{', '.join(p.value for p in v.purposes)}]"
                for v in (hw.volumes if hw else ())
            )
            t.add_row(
                m.name,
                m.role.value if m.role else "",
                m.model,
                m.ip or "",
                m.bmc.url if m.bmc else "",
                cpu,
                f"{hw.ram_gb:g} GB" if hw else "",
                f"{hw.nics.count}x{hw.nics.speed_gbps:g}G" if hw else "",
                vols,
            )
        console.print(t)
    vms = [lab.machines[n] for n in names if lab.machines[n].kind is MachineKind.VM]
    if vms:
        t = Table(title=f"{lab.name}: virtual machines ({len(vms)})")
        t.add_column("names")
        t.add_column("vCenter")
        t.add_row(compact_names([m.name for m in vms]), ", ".join(sorted({m.vcenter or "" for m in vms})))
        console.print(t)

"""`labctl inventory validate|show`: check a lab file, and list what is in it."""

from __future__ import annotations

import ipaddress
from collections import Counter
from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.table import Table

from labctl.cli.common import config_option, find_group, lab_option
from labctl.inventory import load_lab
from labctl.inventory.load import display_path, validate_file
from labctl.inventory.model import Lab, Machine, MachineKind
from labctl.inventory.ranges import compact_names


@click.group()
def inventory() -> None:
    """Validate and list a lab inventory (hardware/*.yaml).

    \b
    Examples:
      labctl inventory validate hardware/lab-2007.example.yaml
      labctl inventory show --group first-25
    """


@inventory.command()
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@lab_option
@config_option
def validate(file: Path | None, lab_file: Path | None, configuration: str | None) -> None:
    """Check an inventory file and print a summary of the lab.

    Every configuration in the file is checked, not only the one in use, and every problem is
    reported in one run: one line per problem as `file:line: item: what is wrong (how to fix)`,
    exit 2. FILE (or --lab FILE, as for the other commands) defaults to $LABCTL_LAB, else the
    simulated lab hardware/sim-2007.yaml.

    \b
    Examples:
      labctl inventory validate
      labctl inventory validate hardware/lab-2007.example.yaml --config ha
      labctl inventory validate --lab hardware/my-lab.yaml
    """
    if file is not None and lab_file is not None and file.resolve() != lab_file.resolve():
        raise click.UsageError(f"two files given: {file} and --lab {lab_file}; give one")
    lab = validate_file(file or lab_file, configuration)
    for line in summary_lines(lab):
        click.echo(line)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def summary_lines(lab: Lab) -> list[str]:
    """What `validate` prints: machines per kind, groups, endpoints."""
    kinds = Counter(m.kind for m in lab.machines.values())
    kind_words = {MachineKind.CLIENT: "client", MachineKind.SERVER: "server", MachineKind.VM: "VM"}
    how = f"simulated, time scale {lab.time_scale:g}x" if lab.simulated else "real hardware"
    lines = [f"{display_path(lab.source_file)}: OK, lab {lab.name!r} ({how})"]
    if lab.configuration:
        others = [c for c in lab.configurations if c != lab.configuration.name]
        also = f"; also checked: {', '.join(others)}" if others else ""
        lines.append(f"  configuration: {lab.configuration.name}{also}")
    lines.append("  machines: " + ", ".join(_plural(kinds[k], w) for k, w in kind_words.items() if kinds[k]))
    lines.append(
        "  groups: " + (", ".join(f"{g} ({len(grp.members)})" for g, grp in lab.groups.items()) or "none")
    )
    bmcs = sum(1 for m in lab.machines.values() if m.bmc is not None)
    endpoints = [
        _plural(bmcs, "BMC"),
        _plural(len(lab.vcenters), "vCenter"),
        _plural(len(lab.storage), "storage array"),
        _plural(len(lab.shares), "share"),
    ]
    lines.append(f"  endpoints: {', '.join(endpoints)}")
    return lines


@inventory.command()
@lab_option
@config_option
@click.option("--group", "group", default=None, help="Show only the members of this group.")
def show(lab_file: Path | None, configuration: str | None, group: str | None) -> None:
    """List the lab as tables: clients compactly (one row per range), servers with their hardware,
    volumes, endpoints and groups.

    \b
    Examples:
      labctl inventory show
      labctl inventory show --config ha --group streaming
      labctl inventory show --lab hardware/lab-2007.example.yaml
    """
    lab = load_lab(lab_file, configuration)
    if group is None:
        render_inventory(lab, list(lab.machines), show_groups=True)
    else:
        render_inventory(lab, list(find_group(lab, group).members), title=f"group {group}")


# --- tables ---------------------------------------------------------------------------------------
# Laid out to fit an 80-column terminal: long values are stacked on two lines instead of widening
# the table, and address ranges print their common prefix once.


def _table(title: str) -> Table:
    return Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, expand=False)


def span(first: str, last: str, sep: str) -> str:
    """``10.0.1.1``, ``10.0.1.100`` -> ``10.0.1.1..100``: the common leading parts written once."""
    if first == last:
        return first
    a, b = first.split(sep), last.split(sep)
    i = 0
    while i < len(a) - 1 and a[i] == b[i]:
        i += 1
    return f"{first}..{sep.join(b[i:])}"


def _is_next(prev: str | None, cur: str | None, step: int) -> bool:
    """True when ``cur`` is the address after ``prev`` (MACs as hex, IPs as dotted quads)."""
    if prev is None or cur is None:
        return prev is cur
    if ":" in prev:
        return int(cur.replace(":", ""), 16) == int(prev.replace(":", ""), 16) + step

    return int(ipaddress.ip_address(cur)) == int(ipaddress.ip_address(prev)) + step


def client_runs(clients: list[Machine]) -> list[list[Machine]]:
    """Consecutive clients with the same model, tags and network and consecutive names and addresses."""
    runs: list[list[Machine]] = []
    for m in clients:
        if runs:
            run = runs[-1]
            head, prev = run[0], run[-1]
            if (
                (head.model, head.tags, head.network) == (m.model, m.tags, m.network)
                and "," not in compact_names([prev.name, m.name])
                and _is_next(prev.mac, m.mac, 1)
                and _is_next(prev.ip, m.ip, 1)
            ):
                run.append(m)
                continue
        runs.append([m])
    return runs


def _clients_table(lab: Lab, clients: list[Machine]) -> Table:
    t = _table(f"Clients ({len(clients)})")
    t.add_column("names / tags", no_wrap=True)
    t.add_column("n", justify="right")
    t.add_column("model")
    t.add_column("MAC", no_wrap=True)
    t.add_column("IP", no_wrap=True)
    for run in client_runs(clients):
        first, last = run[0], run[-1]
        tags = f"\n[dim]{', '.join(first.tags)}[/dim]" if first.tags else ""
        t.add_row(
            compact_names([m.name for m in run]) + tags,
            str(len(run)),
            first.model,
            span(first.mac, last.mac or "", ":") if first.mac else "",
            span(first.ip, last.ip or "", ".") if first.ip else "",
        )
    return t


def _servers_table(servers: list[Machine]) -> Table:
    t = _table(f"Servers ({len(servers)})")
    t.add_column("name / role", no_wrap=True)
    t.add_column("model")
    t.add_column("IP", no_wrap=True)
    t.add_column("CPU")
    t.add_column("RAM", justify="right", no_wrap=True)
    t.add_column("NICs", no_wrap=True)
    for m in servers:
        hw = m.server_hardware
        role = f"\n[dim]{m.role.value}[/dim]" if m.role else ""
        cpu = ram = nics = ""
        if hw is not None:
            sockets = f"{hw.cpu.sockets}x " if hw.cpu.sockets > 1 else ""
            cpu = f"{sockets}{hw.cpu.model or 'CPU'}\n{hw.cpu.cores} cores {hw.cpu.ghz:g} GHz"
            ram = f"{hw.ram_gb:g} GB"
            nics = f"{hw.nics.count}x {hw.nics.speed_gbps:g}G"
        t.add_row(m.name + role, m.model, m.ip or "", cpu, ram, nics)
    return t


def _volumes_table(servers: list[Machine]) -> Table | None:
    t = _table("Server volumes")
    t.add_column("server", no_wrap=True)
    t.add_column("volume", no_wrap=True)
    t.add_column("RAID", no_wrap=True)
    t.add_column("disks")
    t.add_column("holds")
    rows = 0
    for m in servers:
        for v in m.server_hardware.volumes if m.server_hardware else ():
            speed = f" {v.rpm / 1000:g}K" if v.rpm else ""
            if v.service_time_ms:
                speed = f" {v.service_time_ms:g} ms"
            drive = f"{v.drive} " if v.drive else ""
            t.add_row(
                m.name,
                f"{drive}{v.name}",
                f"RAID{v.raid}",
                f"{v.disks}x {v.capacity_gb:g} GB {v.disk_type.value.upper()}{speed}",
                ", ".join(p.value for p in v.purposes),
            )
            rows += 1
    return t if rows else None


def _endpoints_table(lab: Lab, machines: list[Machine], everything: bool) -> Table | None:
    t = _table("Endpoints")
    t.add_column("name", no_wrap=True)
    t.add_column("kind", no_wrap=True)
    t.add_column("URL")
    t.add_column("TLS", no_wrap=True)
    rows: list[tuple[str, str, str, str]] = []
    for m in machines:
        if m.bmc is not None:
            rows.append((m.name, "BMC (Redfish)", m.bmc.url, m.bmc.tls.mode.value))
    if everything:
        rows += [(vc.name, "vCenter", vc.url, vc.tls.mode.value) for vc in lab.vcenters.values()]
        rows += [(a.name, f"storage ({a.kind.value})", a.url, a.tls.mode.value) for a in lab.storage.values()]
        rows += [(s.name, f"share on {s.server}", s.unc, "") for s in lab.shares.values()]
    for row in rows:
        t.add_row(*row)
    return t if rows else None


def _vms_table(vms: list[Machine]) -> Table:
    t = _table(f"Virtual machines ({len(vms)})")
    t.add_column("names", no_wrap=True)
    t.add_column("n", justify="right")
    t.add_column("vCenter", no_wrap=True)
    t.add_column("tags")
    by_vcenter: dict[str, list[Machine]] = {}
    for m in vms:
        by_vcenter.setdefault(m.vcenter or "", []).append(m)
    for vc, members in by_vcenter.items():
        tags = sorted({t for m in members for t in m.tags})
        t.add_row(compact_names([m.name for m in members]), str(len(members)), vc, ", ".join(tags))
    return t


def _groups_table(lab: Lab) -> Table:
    t = _table(f"Groups ({len(lab.groups)})")
    t.add_column("group", no_wrap=True)
    t.add_column("n", justify="right")
    t.add_column("members")
    t.add_column("description")
    for g in lab.groups.values():
        t.add_row(g.name, str(len(g.members)), compact_names(list(g.members)), g.description)
    return t


def render_inventory(
    lab: Lab, names: list[str], *, title: str = "", show_groups: bool = False, console: Console | None = None
) -> None:
    """Print the tables for ``names`` (machine names of ``lab``)."""
    console = console or Console()
    machines = [lab.machines[n] for n in names]
    how = f"simulated, time scale {lab.time_scale:g}x" if lab.simulated else "real hardware"
    config = f", configuration {lab.configuration.name}" if lab.configuration else ""
    console.print(f"[bold]{lab.name}[/bold] ({how}{config})" + (f": {title}" if title else ""))
    clients = [m for m in machines if m.kind is MachineKind.CLIENT]
    servers = [m for m in machines if m.kind is MachineKind.SERVER]
    vms = [m for m in machines if m.kind is MachineKind.VM]
    tables: list[Table | None] = []
    if clients:
        tables.append(_clients_table(lab, clients))
    if servers:
        tables += [_servers_table(servers), _volumes_table(servers)]
    tables.append(_endpoints_table(lab, servers, everything=show_groups))
    if vms:
        tables.append(_vms_table(vms))
    if show_groups and lab.groups:
        tables.append(_groups_table(lab))
    for table in tables:
        if table is not None:
            console.print(table)

"""`labctl lease list|take|release|break`: who owns the lab, and reserving it from the shell."""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from labctl.cli.common import PROJECT_ROOT, lab_option
from labctl.errors import BadInputError
from labctl.inventory import load_lab
from labctl.inventory.load import default_lab_file
from labctl.inventory.model import Lab
from labctl.lab.lease import (
    HUB_DOMAIN_VAR,
    HUB_VAR,
    LeaseHeld,
    LeaseInfo,
    LeaseStore,
    check_resource,
    clean_note,
    format_duration,
    lease_store_for,
    open_lease_store,
    this_host,
    this_user,
)

F = TypeVar("F", bound=Callable[..., Any])
DEFAULT_RESERVE_TTL = "4h"
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(d|h|min|m|s)?", re.IGNORECASE)
_UNIT_S = {"d": 86400.0, "h": 3600.0, "min": 60.0, "m": 60.0, "s": 1.0, None: 1.0}


class Duration(click.ParamType):
    """``90``, ``90s``, ``30m``, ``8h``, ``2d``, ``1h30m`` -> seconds."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, int | float):
            return float(value)
        text = str(value).strip()
        parts = list(_DURATION_PART.finditer(text))
        if (
            not text
            or not parts
            or "".join(p.group(0) for p in parts).replace(" ", "") != text.replace(" ", "")
        ):
            self.fail(f"{value!r} is not a duration (e.g. 90s, 30m, 8h, 2d, 1h30m)", param, ctx)
        return sum(float(p.group(1)) * _UNIT_S[(p.group(2) or "").lower() or None] for p in parts)


def store_options(f: F) -> F:
    f = lab_option(f)
    f = click.option(
        "--hub-domain",
        envvar=HUB_DOMAIN_VAR,
        default=None,
        help=f"The hub's JetStream domain, when --hub is a site's leaf node (env {HUB_DOMAIN_VAR}).",
    )(f)
    return click.option(
        "--hub",
        default=None,
        metavar="URL",
        help=f"The NATS hub to use, e.g. nats://hub:4222. Default: the lab's own (its inventory's "
        f"agents.hub), else ${HUB_VAR}, else this machine's leases in .labctl/leases "
        f"(env LABCTL_LEASE_DIR).",
    )(f)


def _resource(name: str) -> str:
    """A bare name is a lab: ``sim-2007`` -> ``lab:sim-2007``."""
    return check_resource(name if ":" in name else f"lab:{name}")


def _owner() -> str:
    return f"{this_user()}@{this_host()}"


_LAB_NAME = re.compile(r"^lab:[^\n]*\n(?:[ \t#][^\n]*\n|\n)*?[ \t]+name:[ \t]*[\"']?([A-Za-z0-9_.-]+)", re.M)
_NAME_READ_BYTES = 64 * 1024  # the lab's name is near the top of its inventory


def _lab_name_of(path: Path) -> str | None:
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            head = f.read(_NAME_READ_BYTES)
    except OSError:
        return None
    found = _LAB_NAME.search(head)
    return found.group(1) if found else None


def _known_labs(lab_file: Path | None) -> dict[str, Path]:
    """Lab name -> inventory: the lab of --lab (or $LABCTL_LAB, else the default) and every lab in
    the project's hardware/ folder."""
    files = [lab_file or default_lab_file(), *sorted((PROJECT_ROOT / "hardware").glob("*.yaml"))]
    out: dict[str, Path] = {}
    for f in files:
        name = _lab_name_of(f)
        if name is not None:
            out.setdefault(name, f)
    return out


def _lab_of(resource: str) -> str | None:
    """The lab a ``lab:`` or ``group:`` resource belongs to (None for other kinds)."""
    kind, _, name = resource.partition(":")
    return name.split("/", 1)[0] if kind in ("lab", "group") else None


def _lab_for(resource: str | None, lab_file: Path | None, *, known_only: bool) -> Lab:
    """The lab whose store holds ``resource``'s lease: the lab it names when it names one, else
    the lab of --lab. ``known_only``: a lab name no inventory declares is refused (exit 2)."""
    wanted = _lab_of(resource) if resource else None
    if wanted is not None:
        labs = _known_labs(lab_file)
        if wanted in labs:
            return load_lab(labs[wanted])
        if known_only:
            raise BadInputError(
                f"{resource}: no lab named {wanted!r} (known: {', '.join(sorted(labs))}); "
                "give its inventory with --lab FILE"
            )
    return load_lab(lab_file)


def _store(hub: str | None, hub_domain: str | None, lab: Lab) -> LeaseStore:
    """--hub when given; else the lab's own store (its hub, else $LABCTL_HUB, else the files)."""
    if hub:
        return open_lease_store(hub, hub_domain=hub_domain)
    return lease_store_for(lab)


def _holders(info: LeaseInfo) -> str:
    """Who holds it, safe for a terminal (notes come from other people's shells)."""
    if info.refs == 1:
        return clean_note(info.holder)
    return f"{info.refs} holders: " + "; ".join(clean_note(h) for h in info.holders)


@click.group()
def lease() -> None:
    """Who owns the lab: list, take, release and break leases.

    A run takes a lease on its lab (and on the groups and shared resources it touches), renews it
    while it runs and releases it at the end; a second run waits (labctl run --lease-wait S) or is
    refused with one line naming the holder and the time its lease has left. Your own reservation
    (lease take) does not refuse your own runs, nightlies and power commands: they go ahead under it. A holder that dies stops renewing: its lease expires after its TTL
    (at once on this machine's store when its process is gone).

    RESOURCE is kind:name (lab:sim-2007, group:sim-2007/first-25, array:unity-01,
    switch:pc6248); a bare name is a lab. The leases of a lab live where its inventory says (its
    site agents' hub), else on $LABCTL_HUB, else in this machine's .labctl/leases.

    \b
    Examples:
      labctl lease list
      labctl lease take sim-2007 --ttl 8h --note "firmware update"    # reserve the lab
      labctl lease release sim-2007
      labctl lease break lab:sim-2007                                 # a stuck holder's lease
      labctl lease list --hub nats://hub.lab:4222                     # the site's shared leases
    """


@lease.command("list")
@store_options
@click.option("--json", "as_json", is_flag=True, help="One JSON object per lease (for scripts).")
def list_cmd(hub: str | None, hub_domain: str | None, lab_file: Path | None, as_json: bool) -> None:
    """The leased resources: holder, age, and when each expires unless renewed."""
    store = _store(hub, hub_domain, _lab_for(None, lab_file, known_only=False))
    try:
        infos = store.list()
        where = store.where
    finally:
        store.close()
    now = time.time()
    if as_json:
        for info in infos:
            row = {**asdict(info), "holder": clean_note(info.holder)}
            row["holders"] = [clean_note(h) for h in info.holders]
            click.echo(json.dumps({**row, "age_s": round(info.age_s(now), 3)}))
        return
    if not infos:
        click.echo(f"no leases ({where})")
        return
    click.echo(f"leases in {where}:")
    table = Table(box=None, pad_edge=False)
    for col in ("RESOURCE", "HOLDER", "AGE", "EXPIRES IN", "TTL"):
        table.add_column(col, overflow="fold")
    for info in infos:
        shared = " (shared)" if info.shared else ""
        cells = (
            info.resource + shared,
            _holders(info),
            format_duration(info.age_s(now)),
            format_duration(info.expires_at - now),
            format_duration(info.ttl_s),
        )
        table.add_row(*(Text(c) for c in cells))  # Text: a note's [brackets] are not rich markup
    Console(width=None if sys.stdout.isatty() else 160, highlight=False).print(table)


@lease.command()
@click.argument("resource")
@store_options
@click.option(
    "--ttl",
    type=Duration(),
    default=DEFAULT_RESERVE_TTL,
    show_default=True,
    help="How long the reservation lasts (90s, 30m, 8h, 2d): at most a week.",
)
@click.option("--wait", "wait_s", type=Duration(), default=0, help="Wait this long for the holder to let go.")
@click.option("--shared", is_flag=True, help="A shared (reference-counted) lease, e.g. on a switch.")
@click.option(
    "--note",
    default="",
    help="Why, shown to whoever finds the lab leased (one line, at most 200 characters; "
    "extending without --note keeps the note).",
)
def take(
    resource: str,
    hub: str | None,
    hub_domain: str | None,
    lab_file: Path | None,
    ttl: float,
    wait_s: float,
    shared: bool,
    note: str,
) -> None:
    """Reserve RESOURCE for yourself from the shell, until `release` or the TTL.

    A reservation belongs to you (user@host), not to this command's process, so it outlives it.
    Nothing renews it in the background: it lasts --ttl (default 4 h). Run the same command again
    to extend it (a new TTL from now; when it was first taken and its note are kept). `labctl lease
    list` shows when it expires. Others' runs that need the lab wait for it or are refused with your
    name and note; your own runs, nightlies and power commands go ahead under it. A lab name no
    inventory declares is refused (give its inventory with --lab).
    """
    name = _resource(resource)
    lab = _lab_for(name, lab_file, known_only=True)
    owner = _owner()
    note = clean_note(note)
    holder = f"{owner} (by hand{': ' + note if note else ''})"
    store = _store(hub, hub_domain, lab)
    try:
        info = store.reserve(
            name, owner, holder, ttl_s=ttl, wait_s=wait_s, shared=shared, keep_holder=not note
        )
    except LeaseHeld as exc:
        raise exc.with_wait_flag("--wait") from None
    finally:
        store.close()
    until = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.expires_at))
    others = f" (shared with {info.refs - 1} other holder(s))" if info.refs > 1 else ""
    click.echo(
        f"leased {name} to {owner} until {until} ({format_duration(ttl)}){others}; extend with the "
        f"same command, give it back with `labctl lease release {name}`"
    )


@lease.command()
@click.argument("resource")
@store_options
def release(resource: str, hub: str | None, hub_domain: str | None, lab_file: Path | None) -> None:
    """Give back RESOURCE, reserved by you with `labctl lease take`."""
    name = _resource(resource)
    store = _store(hub, hub_domain, _lab_for(name, lab_file, known_only=False))
    try:
        rest = store.unreserve(name, _owner())
    finally:
        store.close()
    tail = f" (still held by {_holders(rest)})" if rest is not None else ""
    click.echo(f"released {name}{tail}")


@lease.command("break")
@click.argument("resource")
@store_options
def break_cmd(resource: str, hub: str | None, hub_domain: str | None, lab_file: Path | None) -> None:
    """Remove RESOURCE's lease, whoever holds it (every holder of a shared one).

    For a holder that is stuck or forgot its reservation. A run that held it finds the lease lost
    at its next renewal and stops trusting that the lab is its own.
    """
    name = _resource(resource)
    store = _store(hub, hub_domain, _lab_for(name, lab_file, known_only=False))
    try:
        info = store.break_lease(name)
    finally:
        store.close()
    if info is None:
        click.echo(f"{name} was not leased")
    else:
        click.echo(f"broke the lease of {name}: held by {_holders(info)} for {format_duration(info.age_s())}")

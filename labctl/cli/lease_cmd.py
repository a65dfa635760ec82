"""`labctl lease list|take|release|break`: who owns the lab, and reserving it from the shell."""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.table import Table

from labctl.lab.lease import (
    HUB_DOMAIN_VAR,
    HUB_VAR,
    LeaseInfo,
    LeaseStore,
    check_resource,
    format_duration,
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
    f = click.option(
        "--hub-domain",
        envvar=HUB_DOMAIN_VAR,
        default=None,
        help=f"The hub's JetStream domain, when --hub is a site's leaf node (env {HUB_DOMAIN_VAR}).",
    )(f)
    return click.option(
        "--hub",
        envvar=HUB_VAR,
        default=None,
        metavar="URL",
        help=f"The site's NATS hub, e.g. nats://hub:4222 (env {HUB_VAR}); default: this machine's "
        f"leases in .labctl/leases (env LABCTL_LEASE_DIR).",
    )(f)


def _resource(name: str) -> str:
    """A bare name is a lab: ``sim-2007`` -> ``lab:sim-2007``."""
    return check_resource(name if ":" in name else f"lab:{name}")


def _owner() -> str:
    return f"{this_user()}@{this_host()}"


def _store(hub: str | None, hub_domain: str | None) -> LeaseStore:
    return open_lease_store(hub, hub_domain=hub_domain)


def _holders(info: LeaseInfo) -> str:
    return info.holder if info.refs == 1 else f"{info.refs} holders: " + "; ".join(info.holders)


@click.group()
def lease() -> None:
    """Who owns the lab: list, take, release and break leases.

    A run takes a lease on its lab (and on the groups and shared resources it touches), renews it
    while it runs and releases it at the end; a second run waits (--wait) or is refused with one
    line naming the holder. A holder that dies stops renewing: its lease expires after its TTL
    (at once on this machine's store when its process is gone).

    RESOURCE is kind:name (lab:sim-2007, group:sim-2007/first-25, array:unity-01,
    switch:pc6248); a bare name is a lab.

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
def list_cmd(hub: str | None, hub_domain: str | None, as_json: bool) -> None:
    """The leased resources: holder, age, and when each expires unless renewed."""
    store = _store(hub, hub_domain)
    try:
        infos = store.list()
        where = store.where
    finally:
        store.close()
    now = time.time()
    if as_json:
        for info in infos:
            click.echo(json.dumps({**asdict(info), "age_s": round(info.age_s(now), 3)}))
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
        table.add_row(
            info.resource + shared,
            _holders(info),
            format_duration(info.age_s(now)),
            format_duration(info.expires_at - now),
            format_duration(info.ttl_s),
        )
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
@click.option("--note", default="", help="Why, shown to whoever finds the lab leased.")
def take(
    resource: str, hub: str | None, hub_domain: str | None, ttl: float, wait_s: float, shared: bool, note: str
) -> None:
    """Reserve RESOURCE for yourself from the shell, until `release` or the TTL.

    A reservation belongs to you (user@host), not to this command's process, so it outlives it.
    Nothing renews it in the background: it lasts --ttl (default 4 h). Run the same command again
    to extend it (a new TTL from now; when it was first taken is kept). `labctl lease list` shows
    when it expires. Runs that need the lab wait for it or are refused with your name and note.
    """
    name = _resource(resource)
    owner = _owner()
    holder = f"{owner} (by hand{': ' + note if note else ''})"
    store = _store(hub, hub_domain)
    try:
        info = store.reserve(name, owner, holder, ttl_s=ttl, wait_s=wait_s, shared=shared)
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
def release(resource: str, hub: str | None, hub_domain: str | None) -> None:
    """Give back RESOURCE, reserved by you with `labctl lease take`."""
    name = _resource(resource)
    store = _store(hub, hub_domain)
    try:
        rest = store.unreserve(name, _owner())
    finally:
        store.close()
    tail = f" (still held by {_holders(rest)})" if rest is not None else ""
    click.echo(f"released {name}{tail}")


@lease.command("break")
@click.argument("resource")
@store_options
def break_cmd(resource: str, hub: str | None, hub_domain: str | None) -> None:
    """Remove RESOURCE's lease, whoever holds it (every holder of a shared one).

    For a holder that is stuck or forgot its reservation. A run that held it finds the lease lost
    at its next renewal and stops trusting that the lab is its own.
    """
    name = _resource(resource)
    store = _store(hub, hub_domain)
    try:
        info = store.break_lease(name)
    finally:
        store.close()
    if info is None:
        click.echo(f"{name} was not leased")
    else:
        click.echo(f"broke the lease of {name}: held by {_holders(info)} for {format_duration(info.age_s())}")

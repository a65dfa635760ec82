"""Checks of a ``vdi:`` section that need more than one entry: the VDI half of what
:func:`labctl.inventory.load.resolve` checks for the 2007 machines, in the same one pass and the
same one-line-per-problem form (``file:line: item: what (fix)``).

- **names** are one namespace across kinds: an ESXi host, a desktop, a session launcher, a PVS
  server, a datastore, a pool, a vCenter and an array are all targets of ``--fault``, power
  actions, groups and reports by name, so no two things share one (ranges compared by what they
  expand to);
- **addresses**: hosts, launchers, desktops, machines and the vCenter and array endpoints each
  have their own IP (a launcher on a desktop's address would log on to itself);
- **RAID geometry**: a group width the level can be built from, whole groups, spares within reason;
- **controllers**: no more than the array kind has, and a standby for ``active_standby``;
- **capacity**: no datastore larger than its array's usable capacity (after RAID);
- **launchers**: a backend labctl has (:data:`~labctl.inventory.vdi.LAUNCHER_KINDS`), with the
  access it needs to log in (``ssh``) or its configuration on its site agent's machine (``local``,
  which only a site agent hosts: :func:`launcher_placement`).

Credentials are typed as references (:mod:`labctl.inventory.refs`), so a plain-text launcher
password fails its type, reported without its value.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from labctl.inventory.ranges import RangeError, expand_ips, expand_names
from labctl.inventory.vdi import LAUNCHER_KINDS, ArrayHardware, ControllerMode, TierSpec, VdiSpec

Loc = tuple[str | int, ...]
AddProblem = Callable[[Loc, str, str], None]

# Kinds whose duplicates among themselves are reported elsewhere (the loader's machine check, the
# resolver's per-kind name check); a clash across kinds is reported here.
_MACHINE_KINDS = frozenset({"machine", "desktop"})
_OWN_NAME_CHECK = frozenset({"host", "launcher", "PVS server", "datastore", "pool"})
_ENDPOINT_KINDS = frozenset({"vCenter", "array"})


@dataclass(frozen=True)
class Claim:
    """One thing claiming a name or an address: its kind, the value, where it is written."""

    kind: str
    value: str
    loc: Loc  # the item to name in the problem line (the entry's name:, ip: or url:)


def _reported_elsewhere(attr: str, a: Claim, b: Claim) -> bool:
    if a.kind in _MACHINE_KINDS and b.kind in _MACHINE_KINDS:
        return True  # the loader's duplicate machine names and IPs
    if attr == "name" and a.kind == b.kind and a.kind in _OWN_NAME_CHECK:
        return True  # the resolver's "duplicate host name" etc.
    kinds = {a.kind, b.kind}
    if attr == "ip" and kinds & _ENDPOINT_KINDS and "machine" in kinds:
        return True  # a vCenter appliance or array manager may be a VM or server of the file, at its IP
    # "pool has the name of a machine or group"
    return attr == "name" and "pool" in kinds and bool(kinds & _MACHINE_KINDS)


def check_unique(attr: str, claims: Iterable[Claim], add: AddProblem) -> None:
    """Report every value claimed twice (one line per claiming entry, not per expanded name)."""
    first: dict[str, Claim] = {}
    clashes: dict[Loc, list[tuple[Claim, Claim]]] = {}
    for claim in claims:
        other = first.get(claim.value)
        if other is None:
            first[claim.value] = claim
        elif other.loc != claim.loc and not _reported_elsewhere(attr, other, claim):
            clashes.setdefault(claim.loc, []).append((claim, other))
    what = "name" if attr == "name" else "address"
    for loc, found in clashes.items():
        claim, other = found[0]
        more = f" and {len(found) - 1} more of this range" if len(found) > 1 else ""
        add(
            loc,
            f"{claim.kind} {what} {claim.value} is also the {what} of {other.kind} at {_path(other.loc)}{more}",
            f"give each {claim.kind} its own {what}" + ("; ranges must not overlap" if more else ""),
        )


def _path(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out


def _names(text: str) -> list[str]:
    try:
        return expand_names(text)
    except RangeError:
        return []  # reported by the resolver


def _ips(first: str | None, count: int) -> list[str]:
    if not first or not count:
        return []
    try:
        return [ip for ip in expand_ips(first, count) if ip]
    except RangeError:
        return []  # reported by the resolver


def _url_host(url: str) -> str | None:
    try:
        host = urlsplit(url).hostname
        return str(ipaddress.ip_address(host)) if host else None
    except ValueError:
        return None


def vdi_claims(
    vdi: VdiSpec,
    machines: Iterable[tuple[str, str | None, Loc]],
    endpoints: Iterable[tuple[str, str, str, Loc]],
) -> tuple[list[Claim], list[Claim]]:
    """``(names, addresses)`` claimed in a VDI lab, in file order.

    ``machines``: (name, ip, entry loc) of every machine the loader declared (desktops included,
    their loc ending in ``desktops``); ``endpoints``: (kind, name, url, entry loc) of the vCenters
    and arrays."""
    names: list[Claim] = []
    addrs: list[Claim] = []
    for name, ip, loc in machines:
        desktop = bool(loc) and loc[-1] == "desktops"
        kind = "desktop" if desktop else "machine"
        names.append(Claim(kind, name, loc if desktop else (*loc, "name")))
        if ip:
            addrs.append(Claim(kind, ip, (*loc[:-1], "ip") if desktop else (*loc, "ip")))
    for kind, name, url, loc in endpoints:
        names.append(Claim(kind, name, (*loc, "name")))
        host = _url_host(url)
        if host:
            addrs.append(Claim(kind, host, (*loc, "url")))
    for i, cluster in enumerate(vdi.clusters):
        for j, hs in enumerate(cluster.hosts):
            hloc: Loc = ("vdi", "clusters", i, "hosts", j)
            hosts = _names(hs.name)
            names += [Claim("host", n, (*hloc, "name")) for n in hosts]
            addrs += [Claim("host", ip, (*hloc, "ip")) for ip in _ips(hs.ip, len(hosts))]
    for i, ls in enumerate(vdi.launchers):
        lloc: Loc = ("vdi", "launchers", i)
        launchers = _names(ls.name)
        names += [Claim("launcher", n, (*lloc, "name")) for n in launchers]
        addrs += [Claim("launcher", ip, (*lloc, "ip")) for ip in _ips(ls.ip, len(launchers))]
    for i, ps in enumerate(vdi.pvs_servers):
        names += [Claim("PVS server", n, ("vdi", "pvs_servers", i, "name")) for n in _names(ps.name)]
    for i, ds in enumerate(vdi.datastores):
        names += [Claim("datastore", n, ("vdi", "datastores", i, "name")) for n in _names(ds.name)]
    for i, pool in enumerate(vdi.pools):
        names.append(Claim("pool", pool.name, ("vdi", "pools", i, "name")))
    return names, addrs


# --- arrays --------------------------------------------------------------------------------------

# RAID level -> (smallest group width, width must be even, at least two groups, how to say it)
_WIDTH_RULES: dict[int, tuple[int, bool, bool, str]] = {
    1: (2, True, False, "a mirror is a group of exactly 2 drives"),
    10: (2, True, False, "mirrored pairs: an even width, at least 2"),
    5: (3, False, False, "at least 3 drives per group (2 data + 1 parity)"),
    50: (3, False, True, "at least 3 drives per RAID 5 group, and at least two groups"),
    6: (4, False, False, "at least 4 drives per group (2 data + 2 parity)"),
    60: (4, False, True, "at least 4 drives per RAID 6 group, and at least two groups"),
}


def check_tier(t: TierSpec, width: int, loc: Loc, add: AddProblem) -> None:
    """A tier's RAID groups: a width its level can be built from, whole groups, sane spares.

    The drive count's own rule (RAID 10 needs an even count, ...) is the resolver's; this adds the
    group: RAID 5 groups of 2 drives, mirrors of 3, a 46-drive tier in groups of 5."""
    least, even, two_groups, rule = _WIDTH_RULES[t.raid]
    if width < least or (even and width % 2) or (t.raid == 1 and width != 2):
        add((*loc, "raid_width"), f"RAID {t.raid} cannot be built in groups of {width} drive(s)", rule)
        return
    if width > t.count:
        return  # the resolver says the groups need more drives than the tier has
    if t.count % width:
        add(
            (*loc, "count"),
            f"{t.count} drives do not make whole RAID {t.raid} groups of {width}",
            f"give a count that is a multiple of {width}, or another raid_width",
        )
    elif two_groups and t.count < 2 * width:
        add((*loc, "count"), f"RAID {t.raid} needs two groups of {width}, not {t.count} drive(s)", rule)
    if t.spares > t.count:
        add(
            (*loc, "spares"),
            f"{t.spares} spares for {t.count} data drives",
            "spares are a few drives per tier; count holds the data drives",
        )


def check_controllers(
    controllers: int, mode: ControllerMode, kind: str, names: tuple[str, ...], loc: Loc, add: AddProblem
) -> None:
    """No more controllers than the array kind has; ``active_standby`` needs the standby."""
    if controllers > len(names):
        add(
            (*loc, "controllers"),
            f"{kind} arrays have at most {len(names)} controllers ({', '.join(names)}), not {controllers}",
            f"give controllers: {len(names)} or fewer (a second array is a second storage: entry)",
        )
    elif mode is ControllerMode.ACTIVE_STANDBY and controllers < 2:
        add(
            (*loc, "controllers"),
            "active_standby needs a standby controller, but the array has 1",
            "give controllers: 2, or controller_mode: active_active",
        )


def usable_gb(array: ArrayHardware) -> float:
    return sum(t.usable_gb for t in array.tiers)


def check_datastore_sizes(vdi: VdiSpec, arrays: dict[str, ArrayHardware], add: AddProblem) -> None:
    """No datastore larger than its array can hold after RAID (several may overcommit together:
    thin provisioning; one larger than the whole array cannot be)."""
    for i, ds in enumerate(vdi.datastores):
        arr = arrays.get(ds.array)
        if arr is None or not arr.tiers:
            continue  # an unknown array is reported with the datastore
        usable = usable_gb(arr)
        if ds.capacity_gb > usable:
            add(
                ("vdi", "datastores", i, "capacity_gb"),
                f"datastore {ds.name} of {ds.capacity_gb:g} GB is larger than array {arr.name!r} "
                f"({usable:.0f} GB usable after RAID)",
                f"give capacity_gb: {int(usable)} or less, or more drives to the array",
            )


# --- launchers -----------------------------------------------------------------------------------


def _absolute(path: str) -> bool:
    """A POSIX or Windows absolute path of one line."""
    return "\n" not in path and (
        path.startswith("/") or (len(path) > 2 and path[1] == ":" and path[2] in "\\/")
    )


def check_launchers(vdi: VdiSpec, add: AddProblem) -> None:
    """Each launcher has a backend labctl knows and what that backend needs: ``ssh`` the access it
    logs in with, ``local`` the launcher's configuration on its site agent's machine (that it is
    placed at an agent is checked with the agents: section, :func:`launcher_placement`)."""
    for i, ls in enumerate(vdi.launchers):
        loc: Loc = ("vdi", "launchers", i)
        if ls.kind not in LAUNCHER_KINDS:
            add(
                (*loc, "kind"),
                f"unknown launcher kind {ls.kind!r}",
                f"use one of: {', '.join(LAUNCHER_KINDS)} (a new kind is a backend in labctl/lab/launchers/)",
            )
            continue
        if ls.kind == "local":
            if ls.local is None:
                add(
                    (*loc, "local"),
                    f"launcher {ls.name} is local but gives no local: configuration",
                    "add local: {config: /etc/labctl/launcher.yaml} (the file on its site agent's machine)",
                )
            elif not _absolute(ls.local.config):
                add(
                    (*loc, "local", "config"),
                    f"launcher configuration {ls.local.config!r} is not an absolute path",
                    "write the full path of the file on the agent's machine, e.g. /etc/labctl/launcher.yaml",
                )
            continue
        if ls.access is None:
            add(
                (*loc, "access"),
                f"launcher {ls.name} has no access: labctl cannot log in to start sessions",
                "add access: {user: ..., password: secret:KEY} (or key_file:)",
            )
        elif ls.access.password is None and ls.access.key_file is None:
            add(
                (*loc, "access"),
                f"launcher {ls.name} has neither a password nor a key_file",
                "add password: secret:KEY (or env:NAME), or key_file:",
            )


def launcher_placement(vdi: VdiSpec, placed: dict[str, str], has_agents: bool, add: AddProblem) -> None:
    """A ``local`` launcher runs on its site agent's machine: one the ``agents:`` section does not
    place (``placed``: launcher -> agent) has nobody to host it."""
    for i, ls in enumerate(vdi.launchers):
        if ls.kind != "local":
            continue
        try:
            names = expand_names(ls.name)
        except RangeError:
            continue  # reported with the name
        lonely = [n for n in names if n not in placed]
        if lonely:
            more = f" and {len(lonely) - 1} more" if len(lonely) > 1 else ""
            add(
                ("vdi", "launchers", i, "kind"),
                f"local launcher {lonely[0]!r}{more} is placed at no site agent, which would host it",
                "name it under agents.sites[].launchers"
                if has_agents
                else "add an agents: section whose site lists it under launchers:, or use kind: ssh",
            )

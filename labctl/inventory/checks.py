"""Checks on an inventory's values that its types cannot express, made on the parsed YAML before
the spec models see it, so that they are reported in the same pass as everything else:

- **names** (machines, groups, networks, the lab, vCenters, arrays, shares, configurations):
  the rule of :mod:`labctl.inventory.names`, with a suggested fix;
- **text**: no control characters, bidirectional overrides or invisible characters anywhere (they
  reach terminals, logs, command lines and file names);
- **numbers**: finite, within what a count or a size can be, and never ``true``/``false`` where a
  number is expected (``port: true`` was taken for port 1);
- **URLs**: no user name or password inside them (``https://root:calvin@host``: it would be
  printed by ``inventory show``, ``check --json`` and error messages; credentials belong in
  ``user:`` and ``password:`` references), no query or fragment, no spaces; shown redacted;
- **user names**: one word, no spaces, quotes or control characters;
- **words that reach command lines**: tags, volume names and SSH hosts follow the name rule,
  drive letters are ``X:``, share paths ``\\\\server\\share[\\dir]`` without quotes or shell
  operators (copy commands run through cmd.exe on the clients);
- **text length**: a value longer than ``MAX_TEXT`` characters is refused (messages quote values
  shortened to ``SHOWN`` characters, so one problem stays one readable line);
- **files**: ``tls.ca_file`` exists and is a file (a relative path is taken from the inventory
  file's folder and made absolute, so it does not depend on the working folder);
- **simulated labs** listen on loopback only: their addresses must be 127.x.y.z;
- **binary values** (``!!binary``) are refused.
"""

from __future__ import annotations

import ipaddress
import math
import re
import typing
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel

from labctl.inventory.model import InventorySpec
from labctl.inventory.names import RULE, name_problem, suggest

Loc = tuple[str | int, ...]

MAX_INT = 2**63 - 1  # what a count, size or seed can be (NumPy's int64)
MAX_FLOAT = 1e15  # far beyond any capacity in GB, rate, or duration in seconds a lab has
MAX_TIME_SCALE = 1000.0  # lab seconds per wall second; the simulated 2007 lab runs at 60
MAX_TEXT = 4096  # characters in any one value (descriptions are a paragraph)
SHOWN = 60  # characters of a value quoted in a message

# C0 and C1 control characters except tab and line feed, DEL, bidirectional overrides and
# isolates ("trojan source"), zero-width characters
_BAD_TEXT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_RANGE = re.compile(r"\[(\d+)-(\d+)\]")
_USER_BAD = re.compile(r"[\s\"'`;$|&<>]")
_DRIVE = re.compile(r"^[A-Za-z]:$")
_UNC = re.compile(r"^\\\\[A-Za-z0-9][A-Za-z0-9._-]*\\[A-Za-z0-9._$-]+(\\[A-Za-z0-9._$ -]+)*\\?$")

# where names live: (section, what the message calls it)
_LIST_NAMES = {
    "networks": "network name",
    "clients": "machine name",
    "servers": "machine name",
    "vms": "machine name",
    "vcenters": "vCenter name",
    "storage": "storage array name",
    "shares": "share name",
    "switches": "switch name",
}
_KEY_NAMES = {"groups": "group name", "configurations": "configuration name"}


@dataclass(frozen=True)
class Finding:
    loc: Loc
    message: str
    fix: str


def screen(data: dict[str, Any], inventory_dir: Path) -> list[Finding]:
    """Every finding in ``data``. ``tls.ca_file`` values are made absolute in place."""
    out: list[Finding] = []
    _walk(data, (), out)
    _names(data, out)
    _vdi_names(data, out)
    _ca_files(data, inventory_dir, out)
    lab = data.get("lab")
    if isinstance(lab, dict) and lab.get("simulated") is True:
        _loopback(data, out)
    return out


def screen_spec(spec: BaseModel) -> list[Finding]:
    """Numbers after type-checking: a text such as ``1e308`` or ``inf`` (YAML 1.1 reads both as
    text) becomes a float there. Non-finite or absurd values, and the time scale's bound."""
    out: list[Finding] = []
    stack: list[tuple[Any, Loc]] = [(spec, ())]
    while stack:
        v, here = stack.pop()
        if isinstance(v, BaseModel):
            stack.extend((getattr(v, name), (*here, name)) for name in type(v).model_fields)
        elif isinstance(v, tuple):
            stack.extend((x, (*here, i)) for i, x in enumerate(v))
        elif isinstance(v, dict):
            stack.extend((x, (*here, k)) for k, x in v.items() if isinstance(k, str))
        elif isinstance(v, float) and not isinstance(v, bool):
            if not math.isfinite(v):
                out.append(Finding(here, f"must be a finite number, got {v}", "write an ordinary number"))
            elif abs(v) > MAX_FLOAT:
                out.append(Finding(here, f"{v:g} is too large", f"give a value under {MAX_FLOAT:g}"))
            elif here == ("lab", "time_scale") and v > MAX_TIME_SCALE:
                out.append(
                    Finding(
                        here,
                        f"time scale {v:g} is more than {MAX_TIME_SCALE:g}",
                        "a simulated lab runs at most 1000 lab seconds per second; real labs use 1",
                    )
                )
    return out


def shown(value: object) -> str:
    """``repr(value)``, cut to ``SHOWN`` characters: hostile values stay readable in one line."""
    text = repr(value)
    return text if len(text) <= SHOWN else text[: SHOWN - 4] + "...'"


def redact_url(url: str) -> str:
    """``https://root:calvin@host/x?token=t`` -> ``https://***@host/x?***`` (for messages): what
    could be a credential (user information, query, fragment) is never shown."""
    url = re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/@]*@", r"\1***@", url)
    return re.sub(r"([?#]).*$", r"\1***", url, flags=re.S)


# --- every value -----------------------------------------------------------------------------------


def _walk(value: Any, loc: Loc, out: list[Finding]) -> None:
    """Text, numbers and binary values everywhere; URLs and users by their key. Iterative."""
    stack: list[tuple[Any, Loc]] = [(value, loc)]
    seen: set[int] = set()  # an anchor shared by aliases is checked once
    while stack:
        v, here = stack.pop()
        if isinstance(v, dict | list):
            if id(v) in seen:
                continue
            seen.add(id(v))
            items = v.items() if isinstance(v, dict) else enumerate(v)
            stack.extend((child, (*here, k)) for k, child in items if isinstance(k, str | int))
            continue
        key = here[-1] if here else ""
        if isinstance(v, str):
            bad = _BAD_TEXT.search(v)
            if len(v) > MAX_TEXT:
                out.append(
                    Finding(here, f"the text is {len(v)} characters long", f"keep it under {MAX_TEXT}")
                )
            elif bad:
                out.append(
                    Finding(here, f"the text has the invisible character U+{ord(bad[0]):04X}", "remove it")
                )
            elif key == "url" or here == ("agents", "hub"):
                _url(v, here, out)
            elif key == "user":
                _user(v, here, out)
            elif key == "drive" and here[:1] == ("servers",) and "volumes" in here and not _DRIVE.match(v):
                out.append(Finding(here, f"drive {shown(v)} is not a drive letter", 'write it as "D:"'))
            elif key == "unc" and here[:1] == ("shares",) and not _UNC.match(v):
                out.append(
                    Finding(
                        here,
                        f"share path {shown(v)} is not \\\\server\\share[\\folder] of plain names",
                        "use letters, digits, '-', '_', '.' and '$': the path goes on cmd.exe command lines",
                    )
                )
            elif key == "host" and len(here) >= 2 and here[-2] == "ssh":
                _name(v, here, "SSH host", out, address_ok=True)
        elif isinstance(v, bytes):
            out.append(Finding(here, "a binary value (!!binary) is not allowed here", "write plain text"))
        elif isinstance(v, bool):
            if _expects_number(here):
                out.append(Finding(here, f"expected a number, got {str(v).lower()}", "write digits, e.g. 4"))
        elif isinstance(v, float):
            if not math.isfinite(v):
                out.append(Finding(here, f"must be a finite number, got {v}", "write an ordinary number"))
            elif abs(v) > MAX_FLOAT:
                out.append(Finding(here, f"{v:g} is too large", f"give a value under {MAX_FLOAT:g}"))
        elif isinstance(v, int) and abs(v) > MAX_INT:
            out.append(Finding(here, f"{v} is too large", "give a value that fits 64 bits"))


def _expects_number(loc: Loc) -> bool:
    """Whether the spec types the field at ``loc`` as a number (int or float)."""
    ann = _annotation_at(loc)
    return ann in (int, float)


def _annotation_at(loc: Loc) -> Any:
    current: Any = InventorySpec
    for part in loc:
        current = _strip(current)
        if isinstance(current, tuple):  # ("seq", item) or ("map", value)
            current = current[1]
            continue
        if isinstance(part, int) or not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        field = current.model_fields.get(part)
        if field is None:
            return None
        current = field.annotation
    return _strip(current)


def _strip(tp: Any) -> Any:
    """Through Annotated and Optional; containers as ("seq"|"map", item type)."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return None
            tp = args[0]
        elif origin in (tuple, list):
            return ("seq", typing.get_args(tp)[0])
        elif origin is dict:
            return ("map", typing.get_args(tp)[1])
        else:
            return tp


# --- URLs and users ----------------------------------------------------------------------------------


def _url(url: str, loc: Loc, out: list[Finding]) -> None:
    safe = shown(redact_url(url))
    space = re.search(r"\s", url)
    if space:
        out.append(Finding(loc, f"URL {safe} has a space or line break", "write scheme://host[:port][/path]"))
        return
    try:
        parts = urlsplit(url)
    except ValueError:
        return  # reported as malformed by the loader
    if "@" in parts.netloc:
        out.append(
            Finding(
                loc,
                f"URL {safe} has a user name or password in it",
                "remove 'user:password@'; give user: and password: beside url:, the password as env:NAME or secret:KEY",
            )
        )
    elif parts.scheme == "snmp" and parts.query and not parts.fragment:
        _snmp_options(parts.query, safe, loc, out)
    elif parts.query or parts.fragment:
        out.append(
            Finding(
                loc,
                f"URL {safe} has a query or fragment",
                "give scheme://host[:port][/path] only; credentials go in user: and password:",
            )
        )


# An SNMP agent's URL carries its protocol options (snmp://host:161?version=3&auth=sha&priv=aes),
# never a secret: the community or the USM passphrases are the array's password: reference.
SNMP_URL_OPTIONS: dict[str, tuple[str, ...]] = {
    "version": ("2c", "3"),
    "auth": ("sha", "md5", "sha256"),
    "priv": ("aes", "des", "none"),
}


def _snmp_options(query: str, safe: str, loc: Loc, out: list[Finding]) -> None:
    for key, values in parse_qs(query, keep_blank_values=True).items():
        allowed = SNMP_URL_OPTIONS.get(key.lower())
        if allowed is None:
            out.append(
                Finding(
                    loc,
                    f"URL {safe} has an unknown SNMP option {shown(key)}",
                    f"use only {', '.join(f'{k}=' for k in SNMP_URL_OPTIONS)}; credentials go in user: and password:",
                )
            )
        elif any(v.lower() not in allowed for v in values):
            out.append(
                Finding(
                    loc,
                    f"URL {safe} has SNMP option {key} not one of {', '.join(allowed)}",
                    f"write {key}={allowed[0]}",
                )
            )


def _user(user: str, loc: Loc, out: list[Finding]) -> None:
    if ":" in user:  # user:password pasted into the user field: never echo it
        out.append(
            Finding(
                loc,
                "user name has ':' (a password after it?)",
                "write the account name alone; the password goes in password: as env:NAME or secret:KEY",
            )
        )
        return
    bad = _USER_BAD.search(user)
    if not user or bad or len(user) > 128:
        what = "is empty" if not user else (f"has {bad[0]!r}" if bad else "is too long")
        out.append(Finding(loc, f"user name {shown(user)} {what}", "write the account name alone, e.g. root"))


# --- names -------------------------------------------------------------------------------------------


def _names(data: dict[str, Any], out: list[Finding]) -> None:
    lab = data.get("lab")
    if isinstance(lab, dict) and isinstance(lab.get("name"), str):
        _name(lab["name"], ("lab", "name"), "lab name", out)
    for section, what in _LIST_NAMES.items():
        items = data.get(section)
        if not isinstance(items, list):
            continue
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            if isinstance(item.get("name"), str):
                _name(item["name"], (section, i, "name"), what, out)
            if section == "vcenters":
                _vcenter_names(item, (section, i), out)
            tags = item.get("tags")
            for j, tag in enumerate(tags if isinstance(tags, list) else []):
                if isinstance(tag, str):
                    _name(tag, (section, i, "tags", j), "tag", out)
            hw = item.get("hardware")
            volumes = hw.get("volumes") if isinstance(hw, dict) else None
            for j, vol in enumerate(volumes if isinstance(volumes, list) else []):
                if isinstance(vol, dict) and isinstance(vol.get("name"), str):
                    _name(vol["name"], (section, i, "hardware", "volumes", j, "name"), "volume name", out)
    for section, what in _KEY_NAMES.items():
        entries = data.get(section)
        if isinstance(entries, dict):
            for key in entries:
                if isinstance(key, str):
                    _name(key, (section, key), what, out)


# vdi: section -> (what the message calls a name there, the keys of each entry holding names)
_VDI_NAMES: dict[str, tuple[str, tuple[str, ...]]] = {
    "clusters": ("cluster name", ("name",)),
    "datastores": ("datastore name", ("name", "volume")),
    "pvs_servers": ("PVS server name", ("name",)),
    "pools": ("pool name", ("name",)),
    "launchers": ("launcher name", ("name",)),
}
# a launcher script path: a Windows path of plain words (it goes on the launcher's command line)
_SCRIPT = re.compile(r"^(?:[A-Za-z]:)?[\\/]?(?:[A-Za-z0-9._ -]+[\\/])*[A-Za-z0-9._-]+$")
# any other script is a command line (`labctl launcher --config F`) run by a POSIX shell: words of
# plain characters, no shell operators, quotes or expansions
_COMMAND = re.compile(r"^[A-Za-z0-9._/:=@+,\\-]+(?: [A-Za-z0-9._/:=@+,\\-]+)*$")


def _vdi_names(data: dict[str, Any], out: list[Finding]) -> None:
    """Names in ``vdi:`` follow the same rule as machine names: desktops, hosts, launchers and
    PVS servers become VM and host names, SSH targets, command-line words and cell ids."""
    vdi = data.get("vdi")
    if not isinstance(vdi, dict):
        return
    for section, (what, keys) in _VDI_NAMES.items():
        for i, item in enumerate(_list(vdi, section)):
            for key in keys:
                if isinstance(item.get(key), str):
                    _name(item[key], ("vdi", section, i, key), what, out)
            tags = item.get("tags")
            for j, tag in enumerate(tags if isinstance(tags, list) else []):
                if isinstance(tag, str):
                    _name(tag, ("vdi", section, i, "tags", j), "tag", out)
    for i, pool in enumerate(_list(vdi, "pools")):
        if isinstance(pool.get("desktops"), str):
            _name(pool["desktops"], ("vdi", "pools", i, "desktops"), "desktop name", out)
    for i, cluster in enumerate(_list(vdi, "clusters")):
        for j, host in enumerate(_list(cluster, "hosts")):
            if isinstance(host.get("name"), str):
                _name(host["name"], ("vdi", "clusters", i, "hosts", j, "name"), "host name", out)
    for i, launcher in enumerate(_list(vdi, "launchers")):
        access = launcher.get("access")
        script = access.get("script") if isinstance(access, dict) else None
        if not isinstance(script, str) or _BAD_TEXT.search(script):
            continue
        if script.lower().endswith(".ps1") and not _SCRIPT.match(script):
            out.append(
                Finding(
                    ("vdi", "launchers", i, "access", "script"),
                    f"launcher script {shown(script)} is not a plain path",
                    r"write a path of letters, digits, '-', '_', '.' and spaces, e.g. C:\labctl\launcher.ps1",
                )
            )
        elif not script.lower().endswith(".ps1") and not _COMMAND.match(script):
            out.append(
                Finding(
                    ("vdi", "launchers", i, "access", "script"),
                    f"launcher command {shown(script)} holds shell operators, quotes or expansions",
                    "write plain words separated by single spaces, e.g. "
                    "/opt/labctl/bin/labctl launcher --config /etc/labctl/launcher.yaml",
                )
            )


def _vcenter_names(vc: dict[str, Any], loc: Loc, out: list[Finding]) -> None:
    for j, dc in enumerate(vc.get("datacenters") or []):
        if not isinstance(dc, dict):
            continue
        if isinstance(dc.get("name"), str):
            _name(dc["name"], (*loc, "datacenters", j, "name"), "datacenter name", out)
        for k, cl in enumerate(dc.get("clusters") or []):
            if isinstance(cl, dict) and isinstance(cl.get("name"), str):
                _name(cl["name"], (*loc, "datacenters", j, "clusters", k, "name"), "cluster name", out)


def _clean(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text.encode("ascii", "ignore").decode())


def _name(name: str, loc: Loc, what: str, out: list[Finding], *, address_ok: bool = False) -> None:
    if _BAD_TEXT.search(name) or len(name) > MAX_TEXT:
        return  # reported as text
    if address_ok:
        try:
            ipaddress.ip_address(name)
            return
        except ValueError:
            pass
    # a range stands for its names: check the first of them (a malformed range is the loader's)
    concrete = _RANGE.sub(lambda m: m[1], name)
    if "[" in concrete or "]" in concrete:
        return
    why = name_problem(concrete)
    if why is None:
        return
    m = _RANGE.search(name)
    if m is None:
        suggestion = suggest(name)
    else:  # keep the range: fix the text around it
        suggestion = _clean(name[: m.start()]).lstrip("-_.") + m[0] + _clean(name[m.end() :]).rstrip("-_.")
    out.append(
        Finding(
            loc,
            f"{what} {shown(name)} {why}; names become host names, command-line words and file names "
            f"({RULE} characters)",
            f"rename it, e.g. {shown(suggestion)}",
        )
    )


# --- files ---------------------------------------------------------------------------------------


def _ca_files(data: dict[str, Any], base: Path, out: list[Finding]) -> None:
    for loc, tls in _mappings_under(data, "tls"):
        ca = tls.get("ca_file")
        if not isinstance(ca, str) or not ca or _BAD_TEXT.search(ca):
            continue
        path = Path(ca).expanduser()
        if not path.is_absolute():
            path = base / path
        where = "" if Path(ca).expanduser().is_absolute() else f" (looked at {path})"
        if not path.exists():
            out.append(
                Finding(
                    (*loc, "ca_file"),
                    f"CA file {shown(ca)} does not exist{where}",
                    "give the path of a PEM bundle, absolute or relative to the inventory file",
                )
            )
        elif not path.is_file():
            out.append(
                Finding(
                    (*loc, "ca_file"), f"CA file {shown(ca)} is a folder{where}", "name the PEM file in it"
                )
            )
        else:
            tls["ca_file"] = str(path.resolve())


def _mappings_under(data: Any, key: str) -> list[tuple[Loc, dict[str, Any]]]:
    found: list[tuple[Loc, dict[str, Any]]] = []
    stack: list[tuple[Any, Loc]] = [(data, ())]
    seen: set[int] = set()
    while stack:
        v, here = stack.pop()
        if not isinstance(v, dict | list) or id(v) in seen:
            continue
        seen.add(id(v))
        items = v.items() if isinstance(v, dict) else enumerate(v)
        for k, child in items:
            if k == key and isinstance(child, dict):
                found.append(((*here, k), child))
            elif isinstance(k, str | int):
                stack.append((child, (*here, k)))
    return found


# --- simulated labs on loopback ----------------------------------------------------------------------


def _loopback(data: dict[str, Any], out: list[Finding]) -> None:
    def check(value: Any, loc: Loc) -> None:
        """An address, a first..last range or a subnet: all of it inside 127.0.0.0/8."""
        if not isinstance(value, str):
            return
        for text in value.split(".."):
            try:
                net = ipaddress.ip_network(text.strip(), strict=False)
            except ValueError:
                return  # malformed: the loader says so
            if not isinstance(net, ipaddress.IPv4Network) or not net.subnet_of(_LOOPBACK):
                out.append(
                    Finding(
                        loc,
                        f"{shown(value)} is not on loopback, and a simulated lab listens on loopback only",
                        "use 127.x.y.z addresses, as hardware/sim-2007.yaml does",
                    )
                )
                return

    for i, net in enumerate(_list(data, "networks")):
        check(net.get("subnet"), ("networks", i, "subnet"))
        check(net.get("broadcast"), ("networks", i, "broadcast"))
    for section in ("clients", "servers", "vms"):
        for i, item in enumerate(_list(data, section)):
            check(item.get("ip"), (section, i, "ip"))
            ssh = item.get("ssh")
            if isinstance(ssh, dict):
                check(ssh.get("host"), (section, i, "ssh", "host"))
    for loc, url in _urls(data):
        try:
            host = urlsplit(url).hostname
        except ValueError:
            continue
        if host is None or host == "localhost":
            continue
        try:
            ipaddress.ip_address(host)
        except ValueError:
            out.append(
                Finding(
                    loc,
                    f"URL host {shown(host)} is a name, and a simulated lab listens on loopback addresses only",
                    "use a 127.x.y.z address in the URL",
                )
            )
            continue
        check(host, loc)


_LOOPBACK = ipaddress.IPv4Network("127.0.0.0/8")


def _list(data: dict[str, Any], section: str) -> list[dict[str, Any]]:
    items = data.get(section)
    return [x for x in items if isinstance(x, dict)] if isinstance(items, list) else []


def _urls(data: dict[str, Any]) -> list[tuple[Loc, str]]:
    out: list[tuple[Loc, str]] = []
    for i, s in enumerate(_list(data, "servers")):
        bmc = s.get("bmc")
        if isinstance(bmc, dict) and isinstance(bmc.get("url"), str):
            out.append((("servers", i, "bmc", "url"), bmc["url"]))
    for section in ("vcenters", "storage"):
        for i, item in enumerate(_list(data, section)):
            if isinstance(item.get("url"), str):
                out.append(((section, i, "url"), item["url"]))
    return out

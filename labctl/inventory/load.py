"""Load `hardware/*.yaml` into a resolved :class:`Lab`, with errors that name file, line and item."""

from __future__ import annotations

import difflib
import hashlib
import ipaddress
import types
import typing
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml
from pydantic import BaseModel, ValidationError

from labctl.errors import InventoryError, Problem
from labctl.inventory.model import (
    SUPPORTED_STORAGE_KINDS,
    Configuration,
    Group,
    InventorySpec,
    Lab,
    Machine,
    MachineKind,
    MachineRole,
)
from labctl.inventory.ranges import RangeError, expand_ips, expand_macs, expand_names, normalise_mac

Loc = tuple[str | int, ...]

# RAID level -> (minimum disks, rule the count must satisfy, how to say it)
_RAID_RULES: dict[int, tuple[int, typing.Callable[[int], bool], str]] = {
    0: (1, lambda n: n >= 1, "at least 1 disk"),
    1: (2, lambda n: n == 2, "exactly 2 disks"),
    5: (3, lambda n: n >= 3, "at least 3 disks"),
    6: (4, lambda n: n >= 4, "at least 4 disks"),
    10: (4, lambda n: n >= 4 and n % 2 == 0, "an even number of disks, at least 4"),
    50: (6, lambda n: n >= 6 and n % 2 == 0, "an even number of disks, at least 6"),
    60: (8, lambda n: n >= 8 and n % 2 == 0, "an even number of disks, at least 8"),
}


def default_lab_file() -> Path:
    """The simulated 2007 lab shipped with the project: the embedded default."""
    return Path(__file__).resolve().parents[2] / "hardware" / "sim-2007.yaml"


# --- YAML with line numbers -----------------------------------------------------------------------


def _line_map(node: yaml.Node, loc: Loc, out: dict[Loc, int]) -> None:
    out[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            out[(*loc, key)] = key_node.start_mark.line + 1
            _line_map(value_node, (*loc, key), out)
            out[(*loc, key)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _line_map(item, (*loc, i), out)


def _line_of(lines: dict[Loc, int], loc: Loc) -> int | None:
    for n in range(len(loc), -1, -1):
        if loc[:n] in lines:
            return lines[loc[:n]]
    return None


def _path(loc: Loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


# --- did-you-mean for unknown keys ----------------------------------------------------------------


def _unwrap(tp: Any) -> Any:
    """From an annotation to the model class it holds (through Optional, tuple, dict, Annotated)."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(tp)[0])
    if origin in (tuple, list):
        return _unwrap(typing.get_args(tp)[0])
    if origin is dict:
        return ("dict", _unwrap(typing.get_args(tp)[1]))
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(tp):
            if arg is not type(None):
                return _unwrap(arg)
    return tp


def _fields_at(loc: Loc) -> list[str]:
    current: Any = InventorySpec
    for part in loc:
        if isinstance(current, tuple) and current[0] == "dict":
            current = current[1]
            continue
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return []
        field = current.model_fields.get(part)
        if field is None:
            return []
        current = _unwrap(field.annotation)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _describe(err: Any, loc: Loc) -> tuple[str, str]:
    kind = err["type"]
    if kind == "extra_forbidden":
        key = str(loc[-1])
        allowed = _fields_at(loc[:-1])
        close = difflib.get_close_matches(key, allowed, n=1)
        fix = f"did you mean {close[0]!r}?" if close else f"allowed keys: {', '.join(allowed)}"
        return f"unknown key {key!r}", fix
    if kind == "missing":
        return "required key is missing", f"add {loc[-1]}:"
    if kind in ("greater_than", "greater_than_equal"):
        return f"must be positive, got {err.get('input')!r}", "give a number greater than zero"
    if kind == "enum" or kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        if loc and loc[-1] == "kind" and len(loc) >= 2 and loc[0] == "storage":
            return (
                f"unsupported storage array kind {err.get('input')!r}",
                f"supported kinds: {', '.join(SUPPORTED_STORAGE_KINDS)}",
            )
        return f"{err.get('input')!r} is not allowed", f"use one of {expected}"
    if kind == "string_pattern_mismatch" and loc and loc[-1] in ("password", "key_file"):
        return (
            "a credential must be a reference, not a value",
            "write env:VARIABLE_NAME or secret:KEY (the secrets file is named by $LABCTL_SECRETS_FILE)",
        )
    msg = err["msg"]
    return f"{msg}, got {err.get('input')!r}" if "input" in err and not isinstance(
        err.get("input"), dict | list
    ) else msg, "see hardware/sim-2007.yaml for a complete example"


# --- loading -------------------------------------------------------------------------------------


def read_inventory(path: str | Path) -> tuple[InventorySpec, dict[Loc, int], str, bytes]:
    """Parse and type-check a file. Returns the spec, its line map, its display name and raw bytes."""
    p = Path(path)
    shown = str(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise InventoryError(
            [
                Problem(
                    shown,
                    None,
                    "",
                    "file not found",
                    "check the path, or run `labctl inventory validate` "
                    "with no argument for the default simulated lab",
                )
            ]
        ) from None
    except OSError as exc:
        raise InventoryError(
            [Problem(shown, None, "", f"cannot read file: {exc.strerror}", "check permissions")]
        ) from None
    text = raw.decode("utf-8", errors="replace")
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InventoryError(
            [
                Problem(
                    shown,
                    line,
                    "",
                    f"YAML syntax error: {problem}",
                    "fix the indentation or quoting on that line",
                )
            ]
        ) from None
    if not isinstance(data, dict) or node is None:
        raise InventoryError(
            [Problem(shown, 1, "", "the file is not a YAML mapping", "start with `lab:` and `networks:`")]
        )
    lines: dict[Loc, int] = {}
    _line_map(node, (), lines)
    try:
        spec = InventorySpec.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            message, fix = _describe(err, loc)
            problems.append(Problem(shown, _line_of(lines, loc), _path(loc), message, fix))
        raise InventoryError(problems) from None
    return spec, lines, shown, raw


def load_lab(
    path: str | Path | None = None, configuration: str | None = None, *, every_machine: bool = False
) -> Lab:
    """Load, validate and resolve an inventory file into one configuration of the lab.

    ``every_machine`` keeps machines that only other configurations use (the simulator runs every
    box in the file, as a real lab has them all racked, whichever configuration is active).
    """
    spec, lines, shown, raw = read_inventory(path or default_lab_file())
    return resolve(spec, lines, shown, raw, configuration, every_machine=every_machine)


class _Collector:
    def __init__(self, file: str, lines: dict[Loc, int]):
        self.file = file
        self.lines = lines
        self.problems: list[Problem] = []

    def add(self, loc: Loc, message: str, fix: str = "") -> None:
        self.problems.append(Problem(self.file, _line_of(self.lines, loc), _path(loc), message, fix))


def resolve(
    spec: InventorySpec,
    lines: dict[Loc, int],
    shown: str,
    raw: bytes,
    configuration: str | None = None,
    *,
    every_machine: bool = False,
) -> Lab:
    c = _Collector(shown, lines)
    networks = {}
    for i, net in enumerate(spec.networks):
        loc: Loc = ("networks", i)
        if net.name in networks:
            c.add((*loc, "name"), f"duplicate network name {net.name!r}", "give each network its own name")
        try:
            subnet = ipaddress.ip_network(net.subnet, strict=False)
        except ValueError:
            c.add((*loc, "subnet"), f"malformed subnet {net.subnet!r}", "write CIDR, e.g. 10.0.0.0/24")
            subnet = None
        try:
            bcast = ipaddress.ip_address(net.broadcast)
            if subnet is not None and bcast not in subnet:
                c.add(
                    (*loc, "broadcast"),
                    f"broadcast {net.broadcast} is outside {net.subnet}",
                    f"use {subnet.broadcast_address}",
                )
        except ValueError:
            c.add((*loc, "broadcast"), f"malformed IP address {net.broadcast!r}", "write e.g. 10.0.0.255")
        networks[net.name] = net

    # which configuration applies
    config_names = tuple(spec.configurations)
    chosen = configuration or spec.default_configuration or (config_names[0] if config_names else None)
    if configuration and configuration not in spec.configurations:
        c.add(
            ("configurations",),
            f"unknown configuration {configuration!r}",
            f"choose one of: {', '.join(config_names) or '(none declared)'}",
        )
        chosen = None
    if spec.default_configuration and spec.default_configuration not in spec.configurations:
        c.add(
            ("default_configuration",),
            f"unknown configuration {spec.default_configuration!r}",
            f"choose one of: {', '.join(config_names) or '(none declared)'}",
        )

    machines: dict[str, Machine] = {}
    machine_loc: dict[str, Loc] = {}
    seen_mac: dict[str, str] = {}
    seen_ip: dict[str, str] = {}

    def in_config(wanted: tuple[str, ...], loc: Loc) -> bool:
        for name in wanted:
            if name not in spec.configurations:
                c.add(
                    (*loc, "configurations"),
                    f"unknown configuration {name!r}",
                    f"declare it under configurations: or use one of {', '.join(config_names)}",
                )
        return every_machine or not wanted or chosen in wanted

    def add_machine(m: Machine, loc: Loc) -> None:
        if m.name in machines:
            c.add(
                (*loc, "name"),
                f"duplicate machine name {m.name!r}",
                f"already defined at line {_line_of(lines, machine_loc[m.name])}; rename one",
            )
            return
        if m.mac:
            if m.mac in seen_mac:
                c.add(
                    (*loc, "mac"), f"duplicate MAC {m.mac} on {m.name!r}", f"{seen_mac[m.mac]!r} has it too"
                )
            seen_mac[m.mac] = m.name
        if m.ip:
            if m.ip in seen_ip:
                c.add((*loc, "ip"), f"duplicate IP {m.ip} on {m.name!r}", f"{seen_ip[m.ip]!r} has it too")
            seen_ip[m.ip] = m.name
        machines[m.name] = m
        machine_loc[m.name] = loc

    def check_network(name: str, loc: Loc) -> None:
        if name not in networks:
            close = difflib.get_close_matches(name, list(networks), n=1)
            c.add(
                (*loc, "network"),
                f"unknown network {name!r}",
                f"did you mean {close[0]!r}?"
                if close
                else f"declare it under networks: ({', '.join(networks)})",
            )

    for i, cs in enumerate(spec.clients):
        loc = ("clients", i)
        check_network(cs.network, loc)
        try:
            names = expand_names(cs.name)
        except RangeError as exc:
            c.add((*loc, "name"), str(exc), exc.fix)
            continue
        try:
            macs = expand_macs(cs.mac, len(names))
        except RangeError as exc:
            c.add((*loc, "mac"), str(exc), exc.fix)
            continue
        try:
            ips = expand_ips(cs.ip, len(names))
        except RangeError as exc:
            c.add((*loc, "ip"), str(exc), exc.fix)
            continue
        present = in_config(cs.configurations, loc)
        for name, mac, ip in zip(names, macs, ips, strict=True):
            m = Machine(
                name=name,
                kind=MachineKind.CLIENT,
                model=cs.model,
                os=cs.os,
                network=cs.network,
                mac=mac,
                ip=ip,
                ssh=cs.ssh,
                tags=cs.tags,
                client_hardware=cs.hardware,
            )
            if present:
                add_machine(m, loc)

    for i, ss in enumerate(spec.servers):
        loc = ("servers", i)
        check_network(ss.network, loc)
        server_mac: str | None = None
        server_ip: str | None
        if ss.mac:
            try:
                server_mac = normalise_mac(ss.mac)
            except RangeError as exc:
                c.add((*loc, "mac"), str(exc), exc.fix)
        try:
            server_ip = expand_ips(ss.ip, 1)[0]
        except RangeError as exc:
            c.add((*loc, "ip"), str(exc), exc.fix)
            server_ip = None
        if ss.bmc is not None:
            _check_url(c, (*loc, "bmc", "url"), ss.bmc.url, ("https", "http"))
        if ss.hardware is not None:
            for j, vol in enumerate(ss.hardware.volumes):
                _, ok, rule = _RAID_RULES[vol.raid]
                if not ok(vol.disks):
                    c.add(
                        (*loc, "hardware", "volumes", j, "disks"),
                        f"RAID {vol.raid} cannot be formed from {vol.disks} disk(s) on volume {vol.name!r}",
                        f"RAID {vol.raid} needs {rule}",
                    )
                if vol.disk_type in ("sas", "sata") and vol.rpm is None and vol.service_time_ms is None:
                    c.add(
                        (*loc, "hardware", "volumes", j),
                        f"rotational volume {vol.name!r} has neither rpm nor service_time_ms",
                        "add rpm: 10000 (or service_time_ms:)",
                    )
        if ss.role is MachineRole.HYPERVISOR and ss.hardware is None:
            pass  # hypervisors may be described by their vCenter instead
        m = Machine(
            name=ss.name,
            kind=MachineKind.SERVER,
            role=ss.role,
            model=ss.model,
            os=ss.os,
            network=ss.network,
            mac=server_mac,
            ip=server_ip,
            ssh=ss.ssh,
            bmc=ss.bmc,
            tags=ss.tags,
            server_hardware=ss.hardware,
        )
        if in_config(ss.configurations, loc):
            add_machine(m, loc)

    vcenters = {}
    for i, vc in enumerate(spec.vcenters):
        loc = ("vcenters", i)
        if vc.name in vcenters:
            c.add((*loc, "name"), f"duplicate vCenter name {vc.name!r}", "rename one")
        _check_url(c, (*loc, "url"), vc.url, ("https", "http"))
        vcenters[vc.name] = vc

    for i, vs in enumerate(spec.vms):
        loc = ("vms", i)
        if vs.vcenter not in vcenters:
            c.add(
                (*loc, "vcenter"),
                f"unknown vCenter {vs.vcenter!r}",
                f"declare it under vcenters: ({', '.join(vcenters) or 'none yet'})",
            )
        try:
            names = expand_names(vs.name)
            vm_ips: list[str | None] = list(expand_ips(vs.ip, len(names))) if vs.ip else [None] * len(names)
        except RangeError as exc:
            c.add((*loc, "name" if "name" in str(exc) else "ip"), str(exc), exc.fix)
            continue
        present = in_config(vs.configurations, loc)
        for name, vm_ip in zip(names, vm_ips, strict=True):
            if present:
                add_machine(
                    Machine(
                        name=name,
                        kind=MachineKind.VM,
                        ip=vm_ip,
                        vcenter=vs.vcenter,
                        vm_host=vs.host,
                        tags=vs.tags,
                    ),
                    loc,
                )

    storage = {}
    for i, arr in enumerate(spec.storage):
        loc = ("storage", i)
        if arr.name in storage:
            c.add((*loc, "name"), f"duplicate storage array name {arr.name!r}", "rename one")
        _check_url(c, (*loc, "url"), arr.url, ("https", "http"))
        storage[arr.name] = arr

    shares = {}
    for i, sh in enumerate(spec.shares):
        loc = ("shares", i)
        if sh.name in shares:
            c.add((*loc, "name"), f"duplicate share name {sh.name!r}", "rename one")
        if sh.server not in machines and not any(s.name == sh.server for s in spec.servers):
            c.add((*loc, "server"), f"unknown server {sh.server!r}", "name a server from servers:")
        if not sh.unc.startswith("\\\\"):
            c.add((*loc, "unc"), f"malformed UNC path {sh.unc!r}", r"write \\server\share")
        shares[sh.name] = sh

    groups: dict[str, Group] = {}
    for gname, gs in spec.groups.items():
        loc = ("groups", gname)
        if gname in machines:
            c.add(loc, f"group {gname!r} has the name of a machine", "rename the group")
        members: list[str] = []
        for j, entry in enumerate(gs.members):
            try:
                names = expand_names(entry)
            except RangeError as exc:
                c.add((*loc, "members", j), str(exc), exc.fix)
                continue
            for n in names:
                if n not in machines:
                    known_everywhere = _declared_anywhere(spec, n)
                    if known_everywhere:
                        continue  # exists, but not in this configuration
                    close = difflib.get_close_matches(n, list(machines), n=1)
                    c.add(
                        (*loc, "members", j),
                        f"group {gname!r} names unknown machine {n!r}",
                        f"did you mean {close[0]!r}?" if close else "declare it or remove it from the group",
                    )
                    break
                members.append(n)
        if gs.tags or gs.kind:
            for m in machines.values():
                if gs.kind and m.kind.value != gs.kind:
                    continue
                if all(t in m.tags for t in gs.tags) and m.name not in members:
                    members.append(m.name)
        if not members and not c.problems:
            c.add(loc, f"group {gname!r} is empty", "list members: or tags: that match at least one machine")
        groups[gname] = Group(name=gname, members=tuple(members), description=gs.description)

    config = None
    if chosen is not None and chosen in spec.configurations:
        cs_ = spec.configurations[chosen]
        loc = ("configurations", chosen)
        for s in cs_.streaming_servers:
            server = machines.get(s)
            if server is None or server.role is not MachineRole.STREAMING:
                c.add(
                    (*loc, "streaming_servers"),
                    f"{s!r} is not a streaming server in configuration {chosen!r}",
                    "name a server with role: streaming",
                )
        vd = _server_volume(c, machines, (*loc, "vdisk_volume"), cs_.vdisk_volume)
        wc = _server_volume(c, machines, (*loc, "write_cache_volume"), cs_.write_cache_volume)
        share = None
        if cs_.share is not None:
            share = shares.get(cs_.share)
            if share is None:
                c.add(
                    (*loc, "share"),
                    f"unknown share {cs_.share!r}",
                    f"declare it under shares: ({', '.join(shares)})",
                )
        config = Configuration(
            name=chosen,
            description=cs_.description,
            streaming_servers=cs_.streaming_servers,
            vdisk_server=vd[0],
            vdisk_volume=vd[1],
            write_cache_server=wc[0],
            write_cache_volume=wc[1],
            share=share,
        )

    for i, fault in enumerate(spec.lab.faults):
        for j, target in enumerate(fault.targets):
            try:
                names = expand_names(target)
            except RangeError as exc:
                c.add(("lab", "faults", i, "targets", j), str(exc), exc.fix)
                continue
            for n in names:
                if (
                    n not in machines
                    and n not in storage
                    and n not in vcenters
                    and not _declared_anywhere(spec, n)
                ):
                    c.add(
                        ("lab", "faults", i, "targets", j),
                        f"fault targets unknown item {n!r}",
                        "name a machine, vCenter or storage array",
                    )
                    break

    if c.problems:
        raise InventoryError(c.problems)
    return Lab(
        name=spec.lab.name,
        description=spec.lab.description,
        source_file=shown,
        time_scale=spec.lab.time_scale,
        simulated=spec.lab.simulated,
        seed=spec.lab.seed,
        twin=spec.lab.twin,
        faults=spec.lab.faults,
        configuration=config,
        configurations=config_names,
        networks=networks,
        machines=machines,
        groups=groups,
        vcenters=vcenters,
        storage=storage,
        shares=shares,
        switches=spec.switches,
        inventory_sha256=hashlib.sha256(raw).hexdigest(),
    )


def _declared_anywhere(spec: InventorySpec, name: str) -> bool:
    for coll in (spec.clients, spec.servers, spec.vms):
        for entry in coll:
            try:
                if name in expand_names(entry.name):
                    return True
            except RangeError:
                pass
    return False


def _server_volume(c: _Collector, machines: dict[str, Machine], loc: Loc, ref: str) -> tuple[str, str]:
    server, _, volume = ref.partition(":")
    m = machines.get(server)
    if m is None:
        c.add(
            loc,
            f"unknown server {server!r} in {ref!r}",
            "write server:volume with a server of this configuration",
        )
        return server, volume
    vols = [v.name for v in (m.server_hardware.volumes if m.server_hardware else ())]
    if volume not in vols:
        c.add(
            loc,
            f"server {server!r} has no volume {volume!r}",
            f"choose one of: {', '.join(vols) or '(none)'}",
        )
    return server, volume


def _check_url(c: _Collector, loc: Loc, url: str, schemes: tuple[str, ...]) -> None:
    try:
        parsed = urlparse(url)
        ok = parsed.scheme in schemes and bool(parsed.hostname)
        _ = parsed.port  # raises on a bad port
    except ValueError:
        ok = False
    if not ok:
        c.add(loc, f"malformed URL {url!r}", f"write {schemes[0]}://host[:port][/path]")

"""Resolve a parsed inventory into a :class:`~labctl.inventory.model.Lab`: expand ranges, apply
one configuration and check everything that needs the whole lab (duplicate names and addresses,
unknown references, RAID geometry, agents, the VDI section's cross-checks, fault targets),
collecting every problem as one ``file:line: item: what (fix)`` line before raising them together.

:func:`resolve` is called by :mod:`labctl.inventory.load` once per configuration; references to
items whose own entry already failed its types (``broken``) are not reported again as unknown.
"""

from __future__ import annotations

import difflib
import hashlib
import ipaddress
import typing
from dataclasses import dataclass
from urllib.parse import urlparse

from labctl.errors import InventoryError, Problem
from labctl.inventory import checks, fault_targets, lenient, vdi_checks
from labctl.inventory.agents import Agents, resolve_agents
from labctl.inventory.lines import Loc, item_path, line_of, one_line
from labctl.inventory.model import (
    POWER_ENDPOINT,
    Configuration,
    Group,
    InventorySpec,
    Lab,
    Machine,
    MachineKind,
    MachineRole,
    Network,
    PowerKind,
    Share,
    StorageArray,
    VCenter,
)
from labctl.inventory.ranges import RangeError, expand_ips, expand_macs, expand_names, normalise_mac
from labctl.inventory.vdi_resolve import (
    STORAGE_URL_SCHEMES,
    VdiResolver,
    pool_groups,
    storage_with_volumes,
    vcenters_with_clusters,
)

# RAID level -> (rule the disk count must satisfy, how to say it)
_RAID_RULES: dict[int, tuple[typing.Callable[[int], bool], str]] = {
    0: (lambda n: n >= 1, "at least 1 disk"),
    1: (lambda n: n == 2, "exactly 2 disks"),
    5: (lambda n: n >= 3, "at least 3 disks"),
    6: (lambda n: n >= 4, "at least 4 disks"),
    10: (lambda n: n >= 4 and n % 2 == 0, "an even number of disks, at least 4"),
    50: (lambda n: n >= 6 and n % 2 == 0, "an even number of disks, at least 6"),
    60: (lambda n: n >= 8 and n % 2 == 0, "an even number of disks, at least 8"),
}


class Collector:
    def __init__(self, file: str, lines: dict[Loc, int]):
        self.file = file
        self.lines = lines
        self.problems: list[Problem] = []
        self.broken: frozenset[str] = frozenset()  # names whose entry failed its types
        self.positions: dict[str, list[int]] = {}  # spec index -> file index, per list section

    def line(self, loc: Loc) -> int | None:
        return line_of(self.lines, lenient.file_loc(loc, self.positions))

    def add(self, loc: Loc, message: str, fix: str = "") -> None:
        where = lenient.file_loc(loc, self.positions)
        problem = Problem(self.file, line_of(self.lines, where), item_path(where), one_line(message), fix)
        if problem not in self.problems:
            self.problems.append(problem)


@dataclass
class Declared:
    """A machine as declared, before configurations are applied."""

    machine: Machine
    loc: Loc  # the spec entry (a range declares many machines at one loc)
    present: bool  # in the configuration being resolved


def _did_you_mean(name: str, known: typing.Iterable[str], otherwise: str) -> str:
    by_lower = {k.lower(): k for k in known}  # 'HA' should suggest 'ha'
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1)
    return f"did you mean {by_lower[close[0]]!r}?" if close else otherwise


def _declare_hint(section: str, known: typing.Iterable[str]) -> str:
    names = ", ".join(known)
    return f"declare it under {section}:" + (f", or use one of: {names}" if names else "")


def resolve(
    spec: InventorySpec,
    lines: dict[Loc, int],
    shown: str,
    raw: bytes,
    configuration: str | None = None,
    *,
    every_machine: bool = False,
    broken: frozenset[str] = frozenset(),
    positions: dict[str, list[int]] | None = None,
) -> Lab:
    """Expand ranges, apply one configuration and check cross-references; raise every problem at once.

    ``broken``: names of items whose own entry failed to type-check (already reported): a
    reference to one of them is not reported again as unknown. ``positions``: the file's index
    of each list item ``spec`` kept (see :func:`labctl.inventory.lenient.file_loc`)."""
    c = Collector(shown, lines)
    c.broken = broken
    c.positions = positions or {}
    networks = _networks(c, spec)

    config_names = tuple(spec.configurations)
    chosen = configuration or spec.default_configuration or (config_names[0] if config_names else None)
    choices = ", ".join(config_names) or "none declared"
    if configuration and configuration not in spec.configurations and configuration not in broken:
        c.add(
            ("configurations",),
            f"unknown configuration {configuration!r}",
            _did_you_mean(configuration, config_names, f"choose one of: {choices}"),
        )
        chosen = None
    if (
        spec.default_configuration
        and spec.default_configuration not in spec.configurations
        and spec.default_configuration not in broken
    ):
        c.add(
            ("default_configuration",),
            f"unknown configuration {spec.default_configuration!r}",
            _did_you_mean(spec.default_configuration, config_names, f"choose one of: {choices}"),
        )

    misspelt_configuration = False

    def in_config(wanted: tuple[str, ...], loc: Loc) -> bool:
        nonlocal misspelt_configuration
        for name in wanted:
            if name not in spec.configurations and name not in broken:
                misspelt_configuration = True
                c.add(
                    (*loc, "configurations"),
                    f"unknown configuration {name!r}",
                    _did_you_mean(name, config_names, _declare_hint("configurations", config_names)),
                )
        return every_machine or not wanted or chosen in wanted

    declared = _declare_machines(c, spec, networks, in_config)
    vdi = VdiResolver(spec, c.add) if spec.vdi is not None else None
    if vdi is not None:  # desktops are VMs of the lab, in every configuration
        declared.extend(Declared(m, loc, True) for m, loc in vdi.desktops())
    everywhere: dict[str, Machine] = {}  # every machine of the file, whatever the configuration
    machines: dict[str, Machine] = {}  # those of the chosen configuration
    for d in declared:
        everywhere.setdefault(d.machine.name, d.machine)
        if d.present and d.machine.name not in machines:
            machines[d.machine.name] = d.machine
    _check_duplicates(c, declared)
    for i, net in enumerate(spec.networks):
        if net.wol_relay and net.wol_relay not in everywhere and net.wol_relay not in broken:
            c.add(
                ("networks", i, "wol_relay"),
                f"Wake-on-LAN relay {net.wol_relay!r} is not a machine of this file",
                _did_you_mean(net.wol_relay, everywhere, "name a machine on that subnet with ssh:"),
            )

    vcenters: dict[str, VCenter] = {}
    for i, vc in enumerate(spec.vcenters):
        if vc.name in vcenters:
            c.add(("vcenters", i, "name"), f"duplicate vCenter name {vc.name!r}", "rename one")
        _check_url(c, ("vcenters", i, "url"), vc.url)
        vcenters[vc.name] = vc
    for i, vs in enumerate(spec.vms):
        if vs.vcenter not in vcenters and vs.vcenter not in broken:
            c.add(
                ("vms", i, "vcenter"),
                f"unknown vCenter {vs.vcenter!r}",
                _did_you_mean(vs.vcenter, vcenters, _declare_hint("vcenters", vcenters)),
            )

    storage: dict[str, StorageArray] = {}
    for i, arr in enumerate(spec.storage):
        if arr.name in storage:
            c.add(("storage", i, "name"), f"duplicate storage array name {arr.name!r}", "rename one")
        _check_url(
            c, ("storage", i, "url"), arr.url, STORAGE_URL_SCHEMES.get(arr.kind.value, ("https", "http"))
        )
        storage[arr.name] = arr

    shares: dict[str, Share] = {}
    for i, sh in enumerate(spec.shares):
        loc: Loc = ("shares", i)
        if sh.name in shares:
            c.add((*loc, "name"), f"duplicate share name {sh.name!r}", "rename one")
        host = everywhere.get(sh.server)
        if (host is None and sh.server not in broken) or (
            host is not None and host.kind is not MachineKind.SERVER
        ):
            servers = [m.name for m in everywhere.values() if m.kind is MachineKind.SERVER]
            c.add(
                (*loc, "server"),
                f"share {sh.name!r} is on unknown server {sh.server!r}",
                _did_you_mean(sh.server, servers, "name a server from servers:"),
            )
        if not sh.unc.startswith("\\\\"):
            c.add((*loc, "unc"), f"malformed UNC path {sh.unc!r}", r"write \\server\share")
        shares[sh.name] = sh

    groups = _groups(c, spec, everywhere, machines)
    agents = _agents(c, spec, networks, everywhere, machines)
    # A machine that names a misspelt configuration is missing from the one it meant; what the
    # configuration then lacks is a consequence, not a second problem to report.
    config = _configuration(c, spec, None if misspelt_configuration else chosen, machines, shares)

    vdi_lab = vdi.finish(storage, [*everywhere, *groups]) if vdi is not None else None
    if spec.vdi is not None:
        placed = _placed_launchers(agents)
        vdi_checks.launcher_placement(spec.vdi, placed, agents is not None, c.add)
        if vdi_lab is not None and placed:
            vdi_lab = vdi_lab.model_copy(
                update={
                    "launchers": tuple(
                        ln.model_copy(update={"agent": placed.get(ln.name)}) for ln in vdi_lab.launchers
                    )
                }
            )
    if vdi_lab is not None:
        vcenters = vcenters_with_clusters(vcenters, vdi_lab, c.add)
        storage = storage_with_volumes(storage, vdi_lab)
        groups = {**groups, **pool_groups(vdi_lab)}
    vdi_targets = [*vdi_lab.hosts, *vdi_lab.datastores] if vdi_lab is not None else []
    if spec.vdi is not None:
        endpoints = [
            *(("vCenter", vc.name, vc.url, ("vcenters", i)) for i, vc in enumerate(spec.vcenters)),
            *(("array", arr.name, arr.url, ("storage", i)) for i, arr in enumerate(spec.storage)),
        ]
        name_claims, ip_claims = vdi_checks.vdi_claims(
            spec.vdi, ((d.machine.name, d.machine.ip, d.loc) for d in declared), endpoints
        )
        vdi_checks.check_unique("name", name_claims, c.add)
        vdi_checks.check_unique("ip", ip_claims, c.add)

    for i, fault in enumerate(spec.lab.faults):
        for j, target in enumerate(fault.targets):
            floc: Loc = ("lab", "faults", i, "targets", j)
            try:
                names = expand_names(target)
            except RangeError as exc:
                c.add(floc, str(exc), exc.fix)
                continue
            known = [*everywhere, *storage, *vcenters, *vdi_targets]
            unknown = [n for n in names if n not in known and n not in broken]
            if unknown:
                c.add(
                    floc,
                    f"fault targets unknown item {unknown[0]!r}",
                    _did_you_mean(unknown[0], known, "name a machine, vCenter or storage array"),
                )

    if c.problems:
        raise InventoryError(sorted(c.problems, key=lambda p: p.line or 0))
    lab = Lab(
        name=spec.lab.name,
        description=spec.lab.description,
        source_file=shown,
        time_scale=spec.lab.time_scale,
        simulated=spec.lab.simulated,
        loopback_block=spec.lab.loopback_block if isinstance(spec.lab.loopback_block, int) else None,
        seed=spec.lab.seed,
        twin=spec.lab.twin,
        faults=spec.lab.faults,
        nightly=spec.lab.nightly,
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
        vdi=vdi_lab,
        agents=agents,
    )
    # each fault strikes a thing of its kind (a BMC fault on a client would never fire)
    whole = lab.model_copy(update={"machines": {**everywhere, **machines}})
    kinds = fault_targets.targets_by_kind(whole)
    known = [*everywhere, *storage, *vcenters, *vdi_targets]
    for i, fault in enumerate(spec.lab.faults):
        for j, target in enumerate(fault.targets):
            wrong = fault_targets.target_problem(fault.kind, target, kinds, known)
            if wrong is not None:
                c.add(("lab", "faults", i, "targets", j), *wrong)
    if c.problems:
        raise InventoryError(sorted(c.problems, key=lambda p: p.line or 0))
    return lab


def _agents(
    c: Collector,
    spec: InventorySpec,
    networks: dict[str, Network],
    everywhere: dict[str, Machine],
    machines: dict[str, Machine],
) -> Agents | None:
    """Resolve ``agents:`` against every machine of the file and mark each machine of this
    configuration with the agent that serves it (in place in ``machines``)."""
    if spec.agents is None:
        return None

    def expand(entry: str) -> list[str]:
        try:
            return expand_names(entry)
        except RangeError as exc:
            raise ValueError(str(exc)) from None

    launchers: list[str] = []
    for ls in spec.vdi.launchers if spec.vdi is not None else ():
        try:
            launchers += expand_names(ls.name)
        except RangeError:
            pass  # reported with the launcher
    agents, served_by = resolve_agents(
        spec.agents,
        networks=networks,
        machines={n: (m.kind.value, m.network) for n, m in everywhere.items()},
        expand=expand,
        add=c.add,
        launchers=launchers,
    )
    for name, agent in served_by.items():
        if name in machines:
            machines[name] = machines[name].model_copy(update={"agent": agent})
    # an agent's list keeps only the machines of this configuration
    return agents.model_copy(
        update={
            "sites": {
                n: a.model_copy(update={"machines": tuple(m for m in a.machines if m in machines)})
                for n, a in agents.sites.items()
            }
        }
    )


def _placed_launchers(agents: Agents | None) -> dict[str, str]:
    """Session launcher -> the site agent it is placed at (``agents.sites[].launchers``)."""
    if agents is None:
        return {}
    return {ln: a.name for a in agents.sites.values() for ln in a.launchers}


def _networks(c: Collector, spec: InventorySpec) -> dict[str, Network]:
    networks: dict[str, Network] = {}
    for i, net in enumerate(spec.networks):
        loc: Loc = ("networks", i)
        if net.name in networks:
            c.add((*loc, "name"), f"duplicate network name {net.name!r}", "give each network its own name")
        subnet: ipaddress.IPv4Network | ipaddress.IPv6Network | None
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
    return networks


def _declare_machines(
    c: Collector,
    spec: InventorySpec,
    networks: dict[str, Network],
    in_config: typing.Callable[[tuple[str, ...], Loc], bool],
) -> list[Declared]:
    """Every machine the file declares, ranges expanded, with whether it is in the configuration."""
    out: list[Declared] = []

    def check_network(name: str, loc: Loc, ips: list[str]) -> None:
        net = networks.get(name)
        if net is None:
            if name in c.broken:
                return
            c.add(
                (*loc, "network"),
                f"unknown network {name!r}",
                _did_you_mean(name, networks, _declare_hint("networks", networks)),
            )
            return
        try:
            subnet = ipaddress.ip_network(net.subnet, strict=False)
        except ValueError:
            return  # reported with the network
        outside = [ip for ip in ips if ipaddress.ip_address(ip) not in subnet]
        if outside:
            c.add(
                (*loc, "ip"),
                f"IP {outside[0]} is outside network {name!r} ({net.subnet})",
                "Wake-on-LAN and the lab's broadcasts would not reach it; fix the address or the network",
            )

    for i, cs in enumerate(spec.clients):
        loc: Loc = ("clients", i)
        try:
            names = expand_names(cs.name)
        except RangeError as exc:
            c.add((*loc, "name"), str(exc), exc.fix)
            continue
        # A bad MAC or IP range still declares its machines (without addresses), so groups that
        # name them do not add a second, misleading "unknown machine" line.
        macs: list[str | None] = [None] * len(names)
        ips: list[str | None] = [None] * len(names)
        try:
            macs = list(expand_macs(cs.mac, len(names)))
        except RangeError as exc:
            c.add((*loc, "mac"), str(exc), exc.fix)
        try:
            ips = list(expand_ips(cs.ip, len(names)))
        except RangeError as exc:
            c.add((*loc, "ip"), str(exc), exc.fix)
        check_network(cs.network, loc, [ip for ip in ips if ip])
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
                power=cs.power,
                tags=cs.tags,
                client_hardware=cs.hardware,
            )
            out.append(Declared(m, loc, present))
        if names:
            _check_power_endpoint(c, loc, out[-1].machine)

    for i, ss in enumerate(spec.servers):
        loc = ("servers", i)
        server_mac: str | None = None
        server_ip: str | None = None
        if ss.mac:
            try:
                server_mac = normalise_mac(ss.mac)
            except RangeError as exc:
                c.add((*loc, "mac"), str(exc), exc.fix)
        try:
            server_ip = expand_ips(ss.ip, 1)[0]
        except RangeError as exc:
            c.add((*loc, "ip"), str(exc), exc.fix)
        check_network(ss.network, loc, [server_ip] if server_ip else [])
        if ss.bmc is not None:
            _check_url(c, (*loc, "bmc", "url"), ss.bmc.url)
        if ss.hardware is not None:
            for j, vol in enumerate(ss.hardware.volumes):
                ok, rule = _RAID_RULES[vol.raid]
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
                        "add rpm: 10000, or service_time_ms:",
                    )
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
            ipmi=ss.ipmi,
            power=ss.power,
            tags=ss.tags,
            server_hardware=ss.hardware,
            time_zone=ss.time_zone,
        )
        _check_power_endpoint(c, loc, m)
        out.append(Declared(m, loc, in_config(ss.configurations, loc)))

    for i, vs in enumerate(spec.vms):
        loc = ("vms", i)
        try:
            names = expand_names(vs.name)
        except RangeError as exc:
            c.add((*loc, "name"), str(exc), exc.fix)
            continue
        vm_ips: list[str | None] = [None] * len(names)
        if vs.ip:
            try:
                vm_ips = list(expand_ips(vs.ip, len(names)))
            except RangeError as exc:
                c.add((*loc, "ip"), str(exc), exc.fix)
        present = in_config(vs.configurations, loc)
        for name, vm_ip in zip(names, vm_ips, strict=True):
            m = Machine(
                name=name,
                kind=MachineKind.VM,
                ip=vm_ip,
                vcenter=vs.vcenter,
                vm_host=vs.host,
                power=vs.power,
                tags=vs.tags,
            )
            out.append(Declared(m, loc, present))
        if names:
            _check_power_endpoint(c, loc, out[-1].machine)
    return out


def _check_power_endpoint(c: Collector, loc: Loc, m: Machine) -> None:
    """A machine that names a power backend needing an endpoint (bmc:, ipmi:, vcenter:) gives it.

    Only an explicit ``power:`` is checked: a server without bmc: has always been allowed (it is
    then powered by hand, and a power action on it says so)."""
    if m.power is None:
        return
    if m.power is PowerKind.AGENT:
        c.add(
            (*loc, "power"),
            "power: agent is not written on a machine",
            "write the backend its agent runs (wol-ssh, redfish, ipmi, vcenter); the agent that "
            "serves it comes from the agents: section",
        )
        return
    need = POWER_ENDPOINT.get(m.power)
    if need is not None and getattr(m, need[0]) is None:
        c.add(
            (*loc, "power"),
            f"power: {m.power.value} needs the machine's {need[0]}: endpoint",
            f"add {need[1]}, or choose another power: backend",
        )


def _check_duplicates(c: Collector, declared: list[Declared]) -> None:
    """Duplicate names, MACs and IPs across the whole file, whatever the configuration.

    A real lab has every box racked at once, so two boxes may not share an address even if no
    configuration uses both. Overlapping ranges give one line per range, not one per machine.
    """
    for attr, what in (("name", "machine name"), ("mac", "MAC"), ("ip", "IP")):
        first: dict[str, Declared] = {}
        clashes: dict[Loc, list[tuple[str, Declared]]] = {}
        for d in declared:
            value = getattr(d.machine, attr)
            if value is None:
                continue
            if value in first:
                clashes.setdefault(d.loc, []).append((value, first[value]))
            else:
                first[value] = d
        for loc, found in clashes.items():
            value, other = found[0]
            where = c.line((*other.loc, attr))
            more = f" and {len(found) - 1} more of this range" if len(found) > 1 else ""
            if attr == "name":
                message = f"duplicate machine name {value!r}{more}"
                fix = f"already declared at line {where}; rename one"
            else:
                owner = next(
                    d.machine.name for d in declared if d.loc == loc and getattr(d.machine, attr) == value
                )
                message = f"duplicate {what} {value} on {owner!r}{more}"
                fix = f"{other.machine.name!r} at line {where} has it too; give each machine its own"
            c.add((*loc, attr), message, fix)


def _groups(
    c: Collector, spec: InventorySpec, everywhere: dict[str, Machine], machines: dict[str, Machine]
) -> dict[str, Group]:
    """Resolve groups against every machine of the file, keep the members of this configuration.

    A group whose members all belong to another configuration (e.g. `ha-servers` while resolving
    `standalone`) is empty here but not wrong; a group no configuration can fill is.
    """
    groups: dict[str, Group] = {}
    for gname, gs in spec.groups.items():
        loc: Loc = ("groups", gname)
        if gname in everywhere:
            c.add(loc, f"group {gname!r} has the name of a machine", "rename the group")
        found: list[str] = []
        own_problem = False
        for j, entry in enumerate(gs.members):
            try:
                names = expand_names(entry)
            except RangeError as exc:
                c.add((*loc, "members", j), str(exc), exc.fix)
                own_problem = True
                continue
            unknown = [n for n in names if n not in everywhere and n not in c.broken]
            if unknown:
                c.add(
                    (*loc, "members", j),
                    f"group {gname!r} names unknown machine {unknown[0]!r}"
                    + (f" and {len(unknown) - 1} more" if len(unknown) > 1 else ""),
                    _did_you_mean(unknown[0], everywhere, "declare it or remove it from the group"),
                )
                own_problem = True
            found.extend(n for n in names if n in everywhere)
        if gs.tags or gs.kind:
            for m in everywhere.values():
                if gs.kind and m.kind.value != gs.kind:
                    continue
                if all(t in m.tags for t in gs.tags):
                    found.append(m.name)
        # an entry that failed its types may be what the group would have held
        maybe_broken = any(n in c.broken for n in _member_names(gs.members)) or (
            bool(c.broken) and bool(gs.tags or gs.kind)
        )
        if not found and not own_problem and not maybe_broken:
            selector = ", ".join(
                [f"tags {list(gs.tags)}"] * bool(gs.tags) + [f"kind {gs.kind}"] * bool(gs.kind)
            )
            c.add(
                loc,
                f"group {gname!r} is empty" + (f": no machine matches {selector}" if selector else ""),
                "list members: or tags: that match at least one machine",
            )
        members = tuple(dict.fromkeys(n for n in found if n in machines))  # dedupe, keep order
        groups[gname] = Group(name=gname, members=members, description=gs.description)
    return groups


def _configuration(
    c: Collector,
    spec: InventorySpec,
    chosen: str | None,
    machines: dict[str, Machine],
    shares: dict[str, Share],
) -> Configuration | None:
    if chosen is None or chosen not in spec.configurations:
        return None
    cs = spec.configurations[chosen]
    loc: Loc = ("configurations", chosen)
    for j, s in enumerate(cs.streaming_servers):
        server = machines.get(s)
        if s in c.broken:
            continue
        if server is None or server.role is not MachineRole.STREAMING:
            c.add(
                (*loc, "streaming_servers", j),
                f"{s!r} is not a streaming server in configuration {chosen!r}",
                "name a server with role: streaming that this configuration includes",
            )
    vd = _server_volume(c, machines, (*loc, "vdisk_volume"), cs.vdisk_volume)
    wc = _server_volume(c, machines, (*loc, "write_cache_volume"), cs.write_cache_volume)
    share = None
    if cs.share is not None:
        share = shares.get(cs.share)
        if share is None and cs.share not in c.broken:
            c.add(
                (*loc, "share"),
                f"unknown share {cs.share!r}",
                _did_you_mean(cs.share, shares, _declare_hint("shares", shares)),
            )
    return Configuration(
        name=chosen,
        description=cs.description,
        streaming_servers=cs.streaming_servers,
        vdisk_server=vd[0],
        vdisk_volume=vd[1],
        write_cache_server=wc[0],
        write_cache_volume=wc[1],
        share=share,
    )


def _server_volume(c: Collector, machines: dict[str, Machine], loc: Loc, ref: str) -> tuple[str, str]:
    server, _, volume = ref.partition(":")
    m = machines.get(server)
    if m is None and server in c.broken:
        return server, volume
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
            _did_you_mean(
                volume,
                vols,
                f"choose one of: {', '.join(vols)}" if vols else "describe its volumes under hardware:",
            ),
        )
    return server, volume


def _check_url(c: Collector, loc: Loc, url: str, schemes: tuple[str, ...] = ("https", "http")) -> None:
    try:
        parsed = urlparse(url)
        ok = parsed.scheme in schemes and bool(parsed.hostname)
        _ = parsed.port  # raises on a bad port
    except ValueError:
        ok = False
    if not ok:
        c.add(loc, f"malformed URL {checks.redact_url(url)!r}", f"write {schemes[0]}://host[:port][/path]")


def _member_names(members: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for entry in members:
        try:
            out.extend(expand_names(entry))
        except RangeError:
            out.append(entry)
    return out

"""Which things each fault kind can strike, and ``--fault KIND:TARGET`` checked against the lab.

A fault aimed at something that cannot have it never fires: ``bmc_503:optiplex-001`` (a client
has no BMC), ``datastore_full:vdi-01`` (a typo), ``host_in_maintenance:esx-[01-99]`` (hosts that do
not exist). The storm then runs clean and the test "passes" a fault it never saw. So every target,
in the inventory's ``lab.faults`` and on the command line, must name a thing of the right kind,
checked before anything starts; a range must stand for things that all exist.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

from labctl.errors import BadInputError
from labctl.inventory.faults import FaultKind, FaultSpec
from labctl.inventory.model import Lab, MachineKind
from labctl.inventory.ranges import RangeError, expand_names

MAX_FAULT_OPTION = 4096  # characters in one --fault option
MAX_TARGETS = 20_000  # names one option's ranges may stand for (the inventory's machine bound)

# what each kind strikes, as messages say it
WHAT: dict[FaultKind, str] = {
    FaultKind.CLIENT_NEVER_WAKES: "a client woken by Wake-on-LAN",
    FaultKind.BMC_503: "a server with a bmc:",
    FaultKind.BMC_HANG: "a server with a bmc:",
    FaultKind.VCENTER_TASK_FAILS: "a VM, a desktop or a vCenter",
    FaultKind.SSH_DROP_MID_COMMAND: "a machine with ssh:",
    FaultKind.SSH_REFUSE_AUTH: "a machine with ssh:",
    FaultKind.STORAGE_TOKEN_EXPIRY: "a storage array",
    FaultKind.ARRAY_CONTROLLER_FAILOVER: "an array described under vdi.arrays",
    FaultKind.HOST_IN_MAINTENANCE: "an ESXi host of vdi.clusters",
    FaultKind.DATASTORE_FULL: "a datastore of vdi.datastores",
    FaultKind.SESSION_LOGIN_FAILS: "a desktop of a vdi pool",
}


class FaultOptionError(BadInputError):
    """A ``--fault`` option labctl refuses: one line naming the option, what is wrong and the fix."""


def targets_by_kind(lab: Lab) -> dict[FaultKind, frozenset[str]]:
    """For each fault kind, the names in ``lab`` it can strike."""
    machines = lab.machines.values()
    vdi = lab.vdi
    desktops = frozenset(vdi.placement) if vdi is not None else frozenset()
    bmc = frozenset(m.name for m in machines if m.bmc is not None)
    ssh = frozenset(m.name for m in machines if m.ssh is not None)
    return {
        FaultKind.CLIENT_NEVER_WAKES: frozenset(
            m.name for m in machines if m.kind is MachineKind.CLIENT and m.mac is not None
        ),
        FaultKind.BMC_503: bmc,
        FaultKind.BMC_HANG: bmc,
        FaultKind.VCENTER_TASK_FAILS: frozenset(
            [*(m.name for m in machines if m.kind is MachineKind.VM), *lab.vcenters]
        ),
        FaultKind.SSH_DROP_MID_COMMAND: ssh,
        FaultKind.SSH_REFUSE_AUTH: ssh,
        FaultKind.STORAGE_TOKEN_EXPIRY: frozenset(lab.storage),
        FaultKind.ARRAY_CONTROLLER_FAILOVER: frozenset(vdi.arrays) if vdi is not None else frozenset(),
        FaultKind.HOST_IN_MAINTENANCE: frozenset(vdi.hosts) if vdi is not None else frozenset(),
        FaultKind.DATASTORE_FULL: frozenset(vdi.datastores) if vdi is not None else frozenset(),
        FaultKind.SESSION_LOGIN_FAILS: desktops,
    }


def target_problem(
    kind: FaultKind, target: str, known: Mapping[FaultKind, Iterable[str]], everything: Iterable[str] = ()
) -> tuple[str, str] | None:
    """``(what is wrong, the fix)`` for one target (a name or a range) of a fault, or None."""
    try:
        names = expand_names(target)
    except RangeError as exc:
        return str(exc), exc.fix
    if len(names) > MAX_TARGETS:
        return f"the range stands for {len(names)} names", f"at most {MAX_TARGETS}"
    allowed = frozenset(known.get(kind, ()))
    missing = [n for n in names if n not in allowed]
    if not missing:
        return None
    more = f" (and {len(missing) - 1} more of the range)" if len(missing) > 1 else ""
    name = missing[0]
    if name in set(everything):
        return (
            f"{kind.value} cannot strike {name!r}{more}: it is not {WHAT[kind]}",
            _choices(name, allowed, kind),
        )
    return f"{kind.value} targets unknown item {name!r}{more}", _choices(name, allowed, kind)


def _choices(name: str, allowed: frozenset[str], kind: FaultKind) -> str:
    if not allowed:
        return (
            f"this lab has no {WHAT[kind].removeprefix('a ').removeprefix('an ')}; choose another fault kind"
        )
    close = difflib.get_close_matches(name, sorted(allowed), n=1)
    if close:
        return f"did you mean {close[0]!r}?"
    shown = sorted(allowed)
    return f"name {WHAT[kind]}, e.g. {', '.join(shown[:3])}" + (" ..." if len(shown) > 3 else "")


def _shown(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:56] + "...")


def parse_fault(text: str) -> FaultSpec:
    """``KIND:TARGET[,TARGET...]``, strictly: a known kind, at least one non-empty target, no
    control characters, bounded; raises :class:`FaultOptionError`."""
    shown = _shown(text)
    if len(text) > MAX_FAULT_OPTION:
        raise FaultOptionError(
            f"--fault {shown}: longer than {MAX_FAULT_OPTION} characters (name fewer targets)"
        )
    if any(not c.isprintable() for c in text):
        raise FaultOptionError(f"--fault {shown}: has a control character (write KIND:TARGET in plain text)")
    kind, sep, targets = text.partition(":")
    if not sep or not targets.strip():
        raise FaultOptionError(f"--fault {shown}: write KIND:TARGET, e.g. client_never_wakes:optiplex-007")
    try:
        fk = FaultKind(kind.strip())
    except ValueError:
        close = difflib.get_close_matches(kind.strip().lower(), [k.value for k in FaultKind], n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"one of: {', '.join(k.value for k in FaultKind)}"
        raise FaultOptionError(f"--fault {shown}: unknown fault kind {kind!r} ({hint})") from None
    parts = [t.strip() for t in targets.split(",")]
    if any(not p for p in parts):
        raise FaultOptionError(f"--fault {shown}: an empty target (write KIND:A,B without empty items)")
    return FaultSpec(kind=fk, targets=tuple(parts))


def check_faults(texts: Iterable[str], lab: Lab) -> list[FaultSpec]:
    """Every ``--fault`` option parsed and each target checked against ``lab``; raises
    :class:`FaultOptionError` with one line per bad option, before anything starts."""
    known = targets_by_kind(lab)
    everything = {*lab.machines, *lab.vcenters, *lab.storage}
    if lab.vdi is not None:
        everything |= {*lab.vdi.hosts, *lab.vdi.datastores, *lab.vdi.arrays}
    specs: list[FaultSpec] = []
    lines: list[str] = []
    for text in texts:
        try:
            spec = parse_fault(text)
        except FaultOptionError as exc:
            lines.append(str(exc))
            continue
        for target in spec.targets:
            problem = target_problem(spec.kind, target, known, everything)
            if problem is not None:
                lines.append(f"--fault {_shown(text)}: {problem[0]} ({problem[1]})")
                break
        else:
            specs.append(spec)
    if lines:
        raise FaultOptionError("\n".join(lines))
    return specs

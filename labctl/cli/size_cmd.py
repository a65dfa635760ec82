"""`labctl size <calculator>`: the papers' sizing arithmetic, exact, with the formula shown.

Thin: each subcommand passes its options, as typed, to one function of :mod:`labctl.sizing` and
prints the result (``--json`` for machines). Options are named like the function's parameters
(``--write-share`` is ``write_share``), so an error from the function names the option.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from labctl.cli.common import RESULTS_ENV, resolve_results_dir
from labctl.errors import BadInputError
from labctl.sizing import (
    ArrayCapability,
    MeasuredProfile,
    Phase,
    PhaseLoad,
    SizingInputError,
    capacity_headroom,
    desktops_per_array,
    drives_needed,
    functional_iops,
    nic_ports_needed,
    raid_set_functional_iops,
    raw_iops_needed,
    size_from_measurements,
    storm_drives,
)
from labctl.sizing.from_run import measured_profile

F = TypeVar("F", bound=Callable[..., Any])


def _json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")(f)


def _calculator(f: F) -> F:
    """Run a subcommand body; print its result; a calculator's input error names the option."""

    @wraps(f)
    def run(*args: Any, as_json: bool, **kwargs: Any) -> int:
        try:
            result = f(*args, **kwargs)
        except SizingInputError as exc:
            raise BadInputError(exc.message("--" + exc.field.replace("_", "-"))) from None
        click.echo(json.dumps(result.as_json(), indent=2, ensure_ascii=False) if as_json else result.text())
        return 0

    return _json_option(run)  # type: ignore[return-value]


def _number(name: str, help_: str, required: bool = False, default: str | None = None) -> Callable[[F], F]:
    # str, not float: the calculators read "0.1" as exactly 1/10 and "87%" as 87/100
    suffix = f" [default: {default}]" if default is not None else ""
    return click.option(
        name, type=str, required=required, default=default, metavar=_metavar(name), help=help_ + suffix
    )


def _metavar(name: str) -> str:
    """What an option takes, from its name: --write-share SHARE, --vm-ram-gb GB, --raid LEVEL."""
    for ending, metavar in (
        ("share", "SHARE"),
        ("-gb", "GB"),
        ("raid", "LEVEL"),
        ("type", "TYPE"),
        ("iops", "IOPS"),
    ):
        if name.endswith(ending):
            return metavar
    return "IOPS" if "iops" in name else "N"


_raid = _number(
    "--raid", "RAID level: 0, 1, 5, 6, 10, 50 or 60 (write penalty 1, 2, 4, 6, 2, 4, 6).", required=True
)
_drive = _number(
    "--drive-type", "Drive type for the default IOPS per drive: ssd 6000, 15k 180, 10k 140, 7.2k 80."
)
_per_drive = _number("--iops-per-drive", "IOPS one drive delivers (overrides --drive-type's default).")


@click.group(short_help="Sizing calculators from the papers: IOPS, drives, capacity, measured figures.")
def size() -> None:
    """Sizing calculators from the reference papers, exact, each showing its formula with the numbers.

    \b
    Numbers are exact decimals or fractions (1.5, 3/2); shares take 87% or 0.87.
    Rounding: what must be provisioned (drives, arrays, ports) rounds up; what must fit
    (desktops per array) rounds down. Every subcommand takes --json.
    """


@size.command("functional-iops")
@_number("--raw-iops", "Back-end IOPS of the RAID set (or give --drives).")
@_number("--drives", "Drives in the RAID set, instead of --raw-iops (with --drive-type or --iops-per-drive).")
@_drive
@_per_drive
@_number("--write-share", "Share of host I/Os that are writes, 0-100 %.", required=True)
@_raid
@_calculator
def functional_iops_cmd(
    raw_iops: str | None,
    drives: str | None,
    drive_type: str | None,
    iops_per_drive: str | None,
    write_share: str,
    raid: str,
) -> Any:
    """Front-end (host) IOPS a RAID set delivers at a write share.

    \b
    functional IOPS = raw IOPS / ((1 - write share) + write share × RAID write penalty)
    raw IOPS        = drives × IOPS per drive, when --drives is given
    Penalties: RAID 0: 1; RAID 1, 10: 2; RAID 5, 50: 4; RAID 6, 60: 6. Units: IOPS.

    \b
    Examples:
      labctl size functional-iops --raw-iops 1000 --write-share 50% --raid 5      # 400 IOPS
      labctl size functional-iops --drives 4 --drive-type 10k --write-share 100% --raid 10
    """
    if (raw_iops is None) == (drives is None):
        raise BadInputError("give either --raw-iops or --drives (with --drive-type or --iops-per-drive)")
    if drives is not None:
        return raid_set_functional_iops(drives, write_share, raid, drive_type, iops_per_drive)
    return functional_iops(raw_iops or "", write_share, raid)


@size.command("raw-iops")
@_number("--functional-iops", "Host (front-end) IOPS to serve.", required=True)
@_number("--write-share", "Share of host I/Os that are writes, 0-100 %.", required=True)
@_raid
@_calculator
def raw_iops_cmd(functional_iops: str, write_share: str, raid: str) -> Any:
    """Back-end (raw) IOPS a RAID set needs for a host load: the inverse of functional-iops.

    \b
    raw IOPS = functional IOPS × ((1 - write share) + write share × RAID write penalty)
    Units: IOPS.

    \b
    Example (the 2012 paper's one-array steady state, Tables 6 and 7):
      labctl size raw-iops --functional-iops 4500 --write-share 99.8% --raid 10    # 8991 IOPS
    """
    return raw_iops_needed(functional_iops, write_share, raid)


@size.command("drives")
@_number("--desktops", "Desktops to serve.")
@_number("--steady-iops-per-desktop", "Host IOPS per desktop in steady state.")
@_number("--steady-write-share", "Write share in steady state, 0-100 %.")
@_number("--boot-iops-per-desktop", "Host IOPS per desktop while booting.")
@_number("--boot-write-share", "Write share while booting, 0-100 %.")
@_number(
    "--preboot-share", "Share of desktops booted before the storm (they do not boot in it).", default="0%"
)
@_number("--functional-iops", "A single host load instead of desktops (with --write-share).")
@_number("--write-share", "Write share of --functional-iops, 0-100 %.")
@_raid
@_drive
@_per_drive
@_calculator
def drives_cmd(
    desktops: str | None,
    steady_iops_per_desktop: str | None,
    steady_write_share: str | None,
    boot_iops_per_desktop: str | None,
    boot_write_share: str | None,
    preboot_share: str,
    functional_iops: str | None,
    write_share: str | None,
    raid: str,
    drive_type: str | None,
    iops_per_drive: str | None,
) -> Any:
    """Drives a RAID set needs for steady state and for a boot storm (or for one host load).

    \b
    raw IOPS = host IOPS × ((1 - write share) + write share × RAID write penalty)
    drives   = raw IOPS / IOPS per drive, rounded up, then up to the RAID level's
               geometry (RAID 10: even, at least 4; RAID 5: at least 3; RAID 6: at least 4)
    host IOPS: steady = desktops × steady IOPS per desktop;
               boot   = (desktops not pre-booted) × boot IOPS per desktop
    Default IOPS per drive: ssd 6000 (sizing guides' planning figure), 15k 180, 10k 140, 7.2k 80
    (1 / (datasheet seek + half a revolution)); see labctl/sizing/drives.py.

    \b
    Examples (the 2012 paper's task worker, Table 7, upper ends):
      labctl size drives --desktops 630 --steady-iops-per-desktop 8 --steady-write-share 99.8% \\
          --boot-iops-per-desktop 18 --boot-write-share 87% --raid 10 --drive-type 15k
      labctl size drives --functional-iops 4500 --write-share 99.8% --raid 6 --iops-per-drive 1400
    """
    if functional_iops is not None:
        if write_share is None:
            raise BadInputError(
                "--functional-iops needs --write-share (the share of host I/Os that are writes)"
            )
        return drives_needed(functional_iops, write_share, raid, drive_type, iops_per_drive)
    phase_options = {
        "--desktops": desktops,
        "--steady-iops-per-desktop": steady_iops_per_desktop,
        "--steady-write-share": steady_write_share,
        "--boot-iops-per-desktop": boot_iops_per_desktop,
        "--boot-write-share": boot_write_share,
    }
    missing = [name for name, value in phase_options.items() if value is None]
    if missing:
        raise BadInputError(
            f"{', '.join(missing)} not given (give --desktops with the steady and boot figures, "
            "or --functional-iops with --write-share)"
        )
    steady = PhaseLoad.of(steady_iops_per_desktop or "", steady_write_share or "", "steady_")
    boot = PhaseLoad.of(boot_iops_per_desktop or "", boot_write_share or "", "boot_")
    return storm_drives(desktops or "", steady, boot, raid, drive_type, iops_per_drive, preboot_share)


@size.command("capacity")
@_number("--array-capacity-gb", "Total capacity of one array, GB.", required=True)
@_number("--vdisk-size-gb", "Size of one vDisk (master image), GB.", required=True)
@_number("--vdisk-count", "vDisks kept on the array (versions, backups).", required=True)
@_number("--vm-ram-gb", "RAM of one desktop, GB (its swap file lives on the array).", required=True)
@_number("--write-cache-gb", "Write cache one desktop fills, GB.", required=True)
@_number("--array-headroom-share", "Capacity kept free on the array.", default="15%")
@_number("--vm-headroom-share", "Headroom on each desktop's RAM + write cache.", default="25%")
@_number("--desktops", "Desktops to place: also give the arrays they need.")
@_calculator
def capacity_cmd(
    array_capacity_gb: str,
    vdisk_size_gb: str,
    vdisk_count: str,
    vm_ram_gb: str,
    write_cache_gb: str,
    array_headroom_share: str,
    vm_headroom_share: str,
    desktops: str | None,
) -> Any:
    """Desktops per array from capacity: the 2012 paper's formula (section 6.3).

    \b
    NumVM = (ArrayCapacity - (15 % × ArrayCapacity + vDiskSize × NumvDisk))
            / (125 % × (VMem + WCacheSize))
    rounded down; arrays for --desktops = desktops / NumVM, rounded up.
    Units: GB throughout (the paper's: 1 TB = 1024 GB, so 2.48 TB = 2539.5 GB).

    \b
    Example (the paper's sample calculation, "around 640 desktops"):
      labctl size capacity --array-capacity-gb 2539 --vdisk-size-gb 25 --vdisk-count 6 \\
          --vm-ram-gb 1 --write-cache-gb 1.5                                    # 642
    """
    return desktops_per_array(
        array_capacity_gb,
        vdisk_size_gb,
        vdisk_count,
        vm_ram_gb,
        write_cache_gb,
        array_headroom_share,
        vm_headroom_share,
        desktops,
    )


@size.command("headroom")
@_number("--array-capacity-gb", "Total capacity of the array (or pool), GB.", required=True)
@_number("--used-gb", "Capacity allocated to volumes, GB.", required=True)
@_number("--required-share", "Spare capacity required.", default="15%")
@_calculator
def headroom_cmd(array_capacity_gb: str, used_gb: str, required_share: str) -> Any:
    """Spare capacity of an array against the 2012 paper's criterion (at least 15 % free).

    \b
    free share = (ArrayCapacity - used) / ArrayCapacity.  Units: GB.

    \b
    Example (the paper's two-array pool, 8 x 500 GB + 150 GB of volumes, "more than 18 %"):
      labctl size headroom --array-capacity-gb 5079 --used-gb 4150
    """
    return capacity_headroom(array_capacity_gb, used_gb, required_share)


@size.command("measured")
@click.option(
    "--run",
    "run",
    metavar="RUN",
    help="A run folder or run id (in LABCTL_RESULTS or results/): the phases and the array's figures "
    "come from its passing cells; options given as well override them.",
)
@_number("--desktops", "Desktops to size for.", required=True)
@_number("--boot-iops-per-desktop", "Measured host IOPS per desktop while booting.")
@_number("--boot-write-share", "Measured write share while booting.")
@_number("--login-iops-per-desktop", "Measured host IOPS per desktop in the login storm.")
@_number("--login-write-share", "Measured write share in the login storm.")
@_number("--steady-iops-per-desktop", "Measured host IOPS per desktop in steady state.")
@_number("--steady-write-share", "Measured write share in steady state.")
@_number("--array-iops", "Host IOPS one array sustained within the criteria (or --run).")
@_number("--array-write-share", "Write share while it did (or --run).")
@_number("--raid", "RAID level of the array: 0, 1, 5, 6, 10, 50 or 60 (or --run).")
@_number("--desktops-per-array-by-capacity", "From `labctl size capacity`: arrays = max(IOPS, capacity).")
@_drive
@_per_drive
@_number("--drive-raid", "RAID level for the boot-storm drives [default: --raid].")
@_number("--preboot-share", "Share of desktops booted before the storm.", default="0%")
@_calculator
def measured_cmd(
    run: str | None,
    desktops: str,
    boot_iops_per_desktop: str | None,
    boot_write_share: str | None,
    login_iops_per_desktop: str | None,
    login_write_share: str | None,
    steady_iops_per_desktop: str | None,
    steady_write_share: str | None,
    array_iops: str | None,
    array_write_share: str | None,
    raid: str | None,
    desktops_per_array_by_capacity: str | None,
    drive_type: str | None,
    iops_per_drive: str | None,
    drive_raid: str | None,
    preboot_share: str,
) -> Any:
    """Desktops per array, arrays for N desktops and drives for a boot storm, from measured figures.

    \b
    per desktop (phase)  = IOPS × ((1 - w) + w × penalty)      back-end I/Os
    array raw capability = array IOPS × ((1 - w) + w × penalty)
    desktops per array   = capability / per desktop, rounded down, smallest over the phases
    arrays               = desktops / desktops per array, rounded up (and the larger of that
                           and capacity's, with --desktops-per-array-by-capacity)
    boot-storm drives    = as `labctl size drives`, with --drive-type or --iops-per-drive
    Give each measured phase as its IOPS per desktop and write share. Units: IOPS.

    \b
    Example (the 2012 paper's one array: Table 6 over 630 desktops, Table 7's shares):
      labctl size measured --desktops 1270 --steady-iops-per-desktop 50/7 \\
          --steady-write-share 99.8% --boot-iops-per-desktop 1000/63 --boot-write-share 87% \\
          --array-iops 10000 --array-write-share 87% --raid 10 --drive-type ssd

    \b
    From a run: a 2007 boot storm gives the boot IOPS per client of its largest passing group
    and the write-cache set's figures; a VDI storm its passing cells' IOPS per desktop and write
    share per phase and what one array carried inside its latency criterion (see
    labctl/sizing/from_run.py for what each kind of run gives):
      labctl size measured --run RUN --desktops 100 --drive-type 10k
      labctl size measured --run VDI_RUN --desktops 1270
    (RUN: a run folder, or a run id under results/, as `labctl runs` lists them)
    """
    given = {
        Phase.BOOT: (boot_iops_per_desktop, boot_write_share),
        Phase.LOGIN: (login_iops_per_desktop, login_write_share),
        Phase.STEADY: (steady_iops_per_desktop, steady_write_share),
    }
    measured = _run_profile(run) if run is not None else None
    phases = dict(measured.phases) if measured is not None else {}
    for phase, (iops, write) in given.items():
        if iops is None and write is None:
            continue
        if iops is None or write is None:
            half = f"--{phase}-write-share" if write is None else f"--{phase}-iops-per-desktop"
            raise BadInputError(
                f"{half} not given (a phase needs both its IOPS per desktop and its write share)"
            )
        phases[phase] = PhaseLoad.of(iops, write, f"{phase}_")
    if not phases:
        raise BadInputError(
            "no phase given (give e.g. --steady-iops-per-desktop 7.3 --steady-write-share 99.8%, and boot/login)"
        )
    array = _array(measured, array_iops, array_write_share, raid)
    typed = _given_any(array_iops, array_write_share, raid, *(x for pair in given.values() for x in pair))
    source = "command line"
    if measured is not None:
        source = measured.source + (" and command line" if typed else "")
    profile = MeasuredProfile(phases, array, source)
    return size_from_measurements(
        profile,
        desktops,
        drive=drive_type,
        iops_per_drive=iops_per_drive,
        drive_raid=drive_raid,
        preboot_share=preboot_share,
        desktops_per_array_by_capacity=desktops_per_array_by_capacity,
    )


def _given_any(*values: str | None) -> bool:
    return any(v is not None for v in values)


def _run_profile(run: str) -> Any:
    """The measured profile of RUN (a folder, or a run id in the results folder)."""
    from labctl.report.build import resolve_run  # matplotlib: only for --run

    # no --results-dir of its own: $LABCTL_RESULTS as every command that reads runs honours it
    env = os.environ.get(RESULTS_ENV)
    return measured_profile(resolve_run(run, resolve_results_dir(Path(env) if env else None)))


def _array(measured: Any, iops: str | None, write_share: str | None, raid: str | None) -> Any:
    """The array's capability: the options given, the rest from the run."""
    if measured is None:
        missing = [
            n
            for n, v in (("--array-iops", iops), ("--array-write-share", write_share), ("--raid", raid))
            if v is None
        ]
        if missing:
            raise BadInputError(
                f"{', '.join(missing)} not given (give the array's measured figures, or --run RUN)"
            )
        return ArrayCapability.of(iops or "", write_share or "", raid or "")
    a = measured.array
    return ArrayCapability.of(
        iops if iops is not None else a.iops,
        write_share if write_share is not None else a.write_share,
        raid if raid is not None else a.raid,
    )


@size.command("nic-ports")
@_number("--peak-utilisation-share", "Peak utilisation measured on each port (balanced).", required=True)
@_number("--ports", "Ports the load was measured on.", required=True)
@_number("--max-utilisation-share", "Highest utilisation allowed per port.", default="100%")
@_number("--on-ports", "Also give the utilisation on this many ports.")
@_calculator
def nic_ports_cmd(
    peak_utilisation_share: str, ports: str, max_utilisation_share: str, on_ports: str | None
) -> Any:
    """Streaming NIC ports a measured load needs (the 2007 paper's one-port reasoning).

    \b
    load  = peak utilisation per port × ports           (ports' worth)
    ports = load / highest utilisation allowed, rounded up
    Units: shares of one port's line rate (60% or 0.6). The 2012 paper's criterion for the
    highest utilisation is 90 %.

    \b
    Example (2007: over 60 % on each of two GbE ports at 50 clients; one port saturates):
      labctl size nic-ports --peak-utilisation-share 60% --ports 2 --on-ports 1
    """
    return nic_ports_needed(peak_utilisation_share, ports, max_utilisation_share, on_ports)

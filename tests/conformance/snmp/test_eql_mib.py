"""Every OID, type, index and unit the EqualLogic driver and the simulated agent use, against the
vendor's MIBs (EQLMEMBER/EQLCONTROLLER/EQLVOLUME/EQLDISK-MIB, compiled by pysmi)."""

from __future__ import annotations

import pytest

from labctl.drivers.storage import equallogic as drv
from labctl.sim.equallogic import mib as sim
from labctl.sim.twin.interface import ArrayControllerCounters, ArrayTierCounters, ArrayVolumeCounters
from tests.conformance.snmp.mibs_loader import WIRE_TAG, Mibs

# Every object the driver reads, by the name the driver's code and docstring give it
DRIVER_OBJECTS = {
    drv.SYS_UPTIME[:-1]: "sysUpTime",
    (*drv.MEMBER, 2): "eqlMemberDateAndTime",
    (*drv.MEMBER, 9): "eqlMemberName",
    (*drv.MEMBER, 21): "eqlMemberControllerMajorVersion",
    (*drv.MEMBER, 22): "eqlMemberControllerMinorVersion",
    (*drv.MEMBER, 23): "eqlMemberControllerMaintenanceVersion",
    (*drv.MEMBER_CHASSIS, 1): "eqlMemberModel",
    (*drv.MEMBER_CHASSIS, 3): "eqlMemberNumberOfControllers",
    (*drv.CONTROLLER, 9): "eqlControllerPrimaryOrSecondary",
    (*drv.VOLUME, 4): "eqliscsiVolumeName",
    (*drv.DISK, 12): "eqlDiskTypeEnum",
    (*drv.DISK, 13): "eqlDiskRPM",
    **{oid: name for oid, (name, _unit) in drv.COLUMN_UNITS.items()},
}


@pytest.mark.parametrize("oid", list(DRIVER_OBJECTS), ids=lambda o: DRIVER_OBJECTS[o])
def test_every_object_the_driver_reads_is_that_object_in_the_mib(
    eql_mibs: Mibs, oid: tuple[int, ...]
) -> None:
    hit = eql_mibs.node(oid)
    assert hit is not None, f"{'.'.join(map(str, oid))} is in no MIB"
    node, suffix = hit
    assert suffix == ()
    assert node.name == DRIVER_OBJECTS[oid]
    assert node.nodetype in ("column", "scalar")


@pytest.mark.parametrize("oid", list(drv.COLUMN_UNITS), ids=lambda o: drv.COLUMN_UNITS[o][0])
def test_the_driver_reads_each_counter_in_the_unit_the_mib_defines(
    eql_mibs: Mibs, oid: tuple[int, ...]
) -> None:
    """The unit defect: eqlDiskStatusBytesRead counts Mbytes and BusyTime seconds (read as bytes and
    milliseconds before: 2^20 and 1,000 times off)."""
    name, unit = drv.COLUMN_UNITS[oid]
    node, _ = eql_mibs.node(oid) or pytest.fail(f"{name} not in the MIB")
    assert node.states_unit(unit), (
        f"{name}: the MIB says {node.units or node.description!r}, the driver reads {unit}"
    )
    assert eql_mibs.base_type(node) == "Counter64"


def test_the_driver_s_enumerations_are_the_mib_s(eql_mibs: Mibs) -> None:
    disk_type, _ = eql_mibs.node((*drv.DISK, 12)) or pytest.fail("eqlDiskTypeEnum")
    ssd = {v for k, v in disk_type.enumeration.items() if k.endswith("-ssd")}
    assert ssd == drv.SSD_TYPES
    role, _ = eql_mibs.node((*drv.CONTROLLER, 9)) or pytest.fail("eqlControllerPrimaryOrSecondary")
    assert role.enumeration == {"primary": 1, "secondary": 2}
    rpm, _ = eql_mibs.node((*drv.DISK, 13)) or pytest.fail("eqlDiskRPM")
    assert f"if {drv.SSD_RPM}, disk is non-rotating media" in rpm.description


def test_the_driver_s_rows_are_indexed_as_the_mib_says(eql_mibs: Mibs) -> None:
    """The driver keys volumes by (member id, volume index) and disks by (group, member, disk)."""
    names = {
        (*drv.VOLUME_STATS, 3): ["eqliscsiLocalMemberId", "eqliscsiVolumeIndex"],
        (*drv.VOLUME, 4): ["eqliscsiLocalMemberId", "eqliscsiVolumeIndex"],
        (*drv.DISK_STATUS, 4): ["eqlGroupId", "eqlMemberIndex", "eqlDiskIndex"],
        (*drv.MEMBER, 9): ["eqlGroupId", "eqlMemberIndex"],
        (*drv.MEMBER_CHASSIS, 3): ["eqlGroupId", "eqlMemberIndex"],
        (*drv.CONTROLLER, 9): ["eqlGroupId", "eqlMemberIndex", "eqlControllerIndex"],
    }
    for oid, want in names.items():
        node, _ = eql_mibs.node(oid) or pytest.fail(str(oid))
        assert [i.name for i in eql_mibs.indexes(node)] == want, node.name


def _member_state() -> sim.MemberState:
    t = 1_700_000_000.0
    vols = tuple(
        ArrayVolumeCounters("ps1", f"vol{k}", "cm0", t, 1e6, 2e6, 8e9, 16e9, 900.0, 1800.0, 50.0)
        for k in (1, 2)
    )
    tiers = (
        ArrayTierCounters("ps1", "ssd", 8, t, 4e6, 6e6, 40 * 2**30, 60 * 2**30, 8000.0),
        ArrayTierCounters("ps1", "15k", 16, t, 2e6, 3e6, 20 * 2**30, 30 * 2**30, 32000.0),
    )
    ctrls = (
        ArrayControllerCounters("ps1", "cm0", "active", t, 3e6, 100.0, 1e8, 2e9, False),
        ArrayControllerCounters("ps1", "cm1", "standby", t, 0.0, 0.0, 0.0, 2e9, False),
    )
    return sim.MemberState(
        name="ps1",
        member_index=1841966935,  # as large as a real member's (the LibreNMS recording's)
        model="PS6010XVS",
        serial="ABC",
        cache_mb=2048,
        lab_time_s=t,
        uptime_s=86400.0,
        volumes=vols,
        tiers=tiers,
        tier_drives={"ssd": 8, "15k": 16},
        controllers=ctrls,
        avg_latency_ms={"vol1": (2, 3)},
    )


def test_every_object_the_simulated_agent_serves_has_the_mib_s_type_and_index(eql_mibs: Mibs) -> None:
    problems = []
    objects = sim.objects(_member_state())
    for oid, value in objects:
        hit = eql_mibs.node(oid)
        dotted = ".".join(map(str, oid))
        if hit is None:
            problems.append(f"{dotted}: in no MIB")
            continue
        node, suffix = hit
        tag = (value.tagSet[0].tagClass, value.tagSet[0].tagId)
        want = WIRE_TAG[eql_mibs.base_type(node)]
        if tag != want:
            problems.append(
                f"{node.name}: served as {type(value).__name__}, the MIB says {eql_mibs.base_type(node)}"
            )
        if node.nodetype == "scalar":
            if suffix != (0,):
                problems.append(f"{node.name}: a scalar's instance is .0, not {suffix}")
        elif node.nodetype == "column":
            if len(suffix) != len(eql_mibs.indexes(node)):
                problems.append(
                    f"{node.name}: index {suffix}, the MIB's row has {len(eql_mibs.indexes(node))}"
                )
        else:
            problems.append(f"{node.name}: a {node.nodetype}, not an instance")
        if node.enumeration and int(value) not in node.enumeration.values():
            problems.append(f"{node.name}: {int(value)} is not one of {node.enumeration}")
    assert len(objects) > 100
    assert not problems, "\n".join(problems)


def test_the_simulated_agent_counts_disk_traffic_in_mbytes_and_busy_time_in_seconds() -> None:
    """The agent made the driver's assumption (bytes, milliseconds); the MIB says Mbytes and seconds."""
    objects = dict(sim.objects(_member_state()))
    m = (sim.GROUP_ID, 1841966935)
    first_ssd = (*m, 1)
    assert int(objects[(*sim.DISK_STATUS, 2, *first_ssd)]) == 40 * 1024 // 8  # 40 GiB over 8 drives, in MiB
    assert int(objects[(*sim.DISK_STATUS, 3, *first_ssd)]) == 60 * 1024 // 8
    assert int(objects[(*sim.DISK_STATUS, 4, *first_ssd)]) == 8000 // 8  # busy seconds per drive
    assert int(objects[(*sim.DISK, 13, *first_ssd)]) == 1  # eqlDiskRPM of an SSD

"""The EqualLogic driver against snmpsim, an SNMP agent this project did not write, replaying
recordings: a real member's (LibreNMS' test recording, a cut) and one made from the vendor's MIB
whose counters grow at known rates (snmpsim's ``numeric`` variation), so the driver's units show."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from labctl.drivers.storage import equallogic as drv
from labctl.drivers.storage.equallogic import EqualLogicDriver, EqualLogicError
from labctl.inventory.model import StorageArray
from tests.conformance.snmp.mibs_loader import Mibs
from tests.conformance.snmp.snmpsim_agent import Snmpsim

RECORDINGS = Path(__file__).parent / "recordings"
MEMBER = 1841966935  # the member index of the real recording (LibreNMS)
G, M = 1, MEMBER

# counter rates per second of snmpsim's clock in the made recording
DISK_READ_MB_S, DISK_WRITE_MB_S, DISK_BUSY_S, DISK_XFERS = 40, 20, 0.5, 400
VOL_TX_B, VOL_RX_B, VOL_READS, VOL_WRITES, VOL_READ_MS, VOL_WRITE_MS = 4e6, 2e6, 100, 50, 200, 150


def _made_recording() -> str:
    """An EqualLogic member as the vendor's MIB defines it: member, controllers, 2 volumes,
    8 SSDs + 16 15K disks; counters with snmpsim's numeric variation (value = rate x seconds)."""
    rows: list[tuple[tuple[int, ...], str]] = []

    def add(oid: tuple[int, ...], tag: str, value: object) -> None:
        rows.append((oid, f"{'.'.join(map(str, oid))}|{tag}|{value}"))

    def counter(oid: tuple[int, ...], rate: float) -> None:
        add(oid, "70:numeric", f"rate={rate},initial=1000")

    add((1, 3, 6, 1, 2, 1, 1, 1, 0), "4", "Storage Array Firmware V7.1.4 (made from the MIB)")
    add(drv.SYS_UPTIME, "67:numeric", "rate=100,initial=5000")
    add((*drv.MEMBER, 2, G, M), "65", 1_700_000_000)
    add((*drv.MEMBER, 9, G, M), "4", "ps-made")
    for col, v in ((21, 7), (22, 1), (23, 4)):
        add((*drv.MEMBER, col, G, M), "66", v)
    add((*drv.MEMBER_CHASSIS, 1, G, M), "4", "70-0400(PS6010XVS)")
    add((*drv.MEMBER_CHASSIS, 3, G, M), "2", 2)
    add((*drv.CONTROLLER, 9, G, M, 1), "2", 1)
    add((*drv.CONTROLLER, 9, G, M, 2), "2", 2)
    for v in (1, 2):
        add((*drv.VOLUME, 4, M, v), "4", f"vdi-ds-{v:02d}")
        for col, rate in (
            (3, VOL_TX_B),
            (4, VOL_RX_B),
            (6, VOL_READ_MS),
            (7, VOL_WRITE_MS),
            (8, VOL_READS),
            (9, VOL_WRITES),
        ):
            counter((*drv.VOLUME_STATS, col, M, v), rate)
    for d in range(1, 25):
        ssd = d <= 8
        add((*drv.DISK, 12, G, M, d), "2", 4 if ssd else 2)  # sas-ssd / sas
        add((*drv.DISK, 13, G, M, d), "2", 1 if ssd else 15000)  # 1: non-rotating media
        for col, rate in ((1, DISK_XFERS), (2, DISK_READ_MB_S), (3, DISK_WRITE_MB_S), (4, DISK_BUSY_S)):
            counter((*drv.DISK_STATUS, col, G, M, d), rate)
    return "\n".join(line for _, line in sorted(rows)) + "\n"


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory):
    recs = {
        "made-from-mib": _made_recording(),
        "librenms-equallogic": (RECORDINGS / "librenms-equallogic.snmprec").read_text(),
    }
    with Snmpsim(tmp_path_factory.mktemp("snmpsim"), recs) as sim:
        yield sim


def _array(port: int, community: str) -> StorageArray:
    return StorageArray.model_validate(
        {
            "name": "ps",
            "kind": "equallogic",
            "url": f"snmp://127.0.0.1:{port}",
            "user": "",
            "password": f"env:EQL_{community.upper().replace('-', '_')}",
        }
    )


@pytest.fixture(autouse=True)
def _communities(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EQL_MADE_FROM_MIB", "made-from-mib")
    monkeypatch.setenv("EQL_LIBRENMS_EQUALLOGIC", "librenms-equallogic")


def test_the_driver_reads_disk_traffic_in_mbytes_and_busy_time_in_seconds(agent: Snmpsim) -> None:
    """The unit defect, end to end: disks counting Mbytes and busy seconds as the MIB defines them
    give MB/s and % in range (bytes and milliseconds made 2 Mbytes/s read as 0.000002 MB/s)."""
    with EqualLogicDriver(_array(agent.port, "made-from-mib"), timeout_s=3) as d:
        info = d.info()
        assert (info.name, info.software_version) == ("ps-made", "V7.1.4")
        d.start_metrics(5)
        time.sleep(2.5)  # snmpsim's counters grow with its clock; a tier needs two readings apart
        tiers = {t.tier: t for t in d.read_tiers()}
        batch = d.read_metrics()
    assert set(tiers) == {"ssd", "15k"}  # eqlDiskRPM 1 is an SSD
    # What is checked is the unit (a factor of 2^20 or 1,000): the MIB's whole Mbytes and seconds
    # over a test interval of seconds carry a truncation of up to one unit, and the disk table is
    # walked a little after the uptime is read.
    for tier, drives in (("ssd", 8), ("15k", 16)):
        t = tiers[tier]
        assert t.read_mb_s == pytest.approx(drives * DISK_READ_MB_S * 2**20 / 1e6, rel=0.25)
        assert t.write_mb_s == pytest.approx(drives * DISK_WRITE_MB_S * 2**20 / 1e6, rel=0.25)
        assert t.busy_pct == pytest.approx(100 * DISK_BUSY_S, rel=0.6)
        assert t.iops == pytest.approx(drives * DISK_XFERS, rel=0.25)
    vols = {v.volume: v for v in batch.volumes}
    assert set(vols) == {"vdi-ds-01", "vdi-ds-02"}
    v = vols["vdi-ds-01"]
    assert v.read_iops == pytest.approx(VOL_READS, rel=0.15)
    assert v.read_mb_s == pytest.approx(VOL_TX_B / 1e6, rel=0.15)  # TxData: octets the member sent
    assert v.read_latency_ms == pytest.approx(VOL_READ_MS / VOL_READS, rel=0.15)
    assert v.write_latency_ms == pytest.approx(VOL_WRITE_MS / VOL_WRITES, rel=0.15)
    assert {c.controller: c.state for c in batch.controllers} == {"cm0": "active", "cm1": "standby"}


def test_a_real_member_s_partial_recording_gets_a_one_line_error_naming_what_is_missing(
    agent: Snmpsim,
) -> None:
    """LibreNMS' recording of a real member holds the health, sensor and disk tables but no
    eqlMemberTable: the driver says so instead of failing later."""
    with pytest.raises(EqualLogicError, match="no EQLMEMBER-MIB eqlMemberName"):
        EqualLogicDriver(_array(agent.port, "librenms-equallogic"), timeout_s=3).open()


def test_every_equallogic_object_of_the_real_recording_is_in_the_mib_with_its_type(eql_mibs: Mibs) -> None:
    """The real member's objects against the vendor's MIB: our MIB pipeline and the recording agree,
    and the index shapes the driver assumes (group, a 10-digit member index, disk) are the real ones."""
    from tests.conformance.snmp.mibs_loader import WIRE_TAG

    tags = {"2": (0, 2), "4": (0, 4), "66": (64, 2), "65": (64, 1), "70": (64, 6), "67": (64, 3)}
    checked = 0
    for line in (RECORDINGS / "librenms-equallogic.snmprec").read_text().splitlines():
        oid_text, tag, _value = line.split("|", 2)
        oid = tuple(int(x) for x in oid_text.split("."))
        if oid[:7] != drv.EQL:
            continue
        hit = eql_mibs.node(oid)
        assert hit is not None, oid_text
        node, suffix = hit
        assert tags[tag] == WIRE_TAG[eql_mibs.base_type(node)], f"{node.name}: recorded {tag}"
        assert len(suffix) == len(eql_mibs.indexes(node)), node.name
        if node.name in ("eqlDiskStatus", "eqlDiskSerialNumber"):
            assert suffix[:2] == (G, MEMBER)
        checked += 1
    assert checked == 137


def test_the_simulated_member_identifies_itself_as_the_real_one_does() -> None:
    """sysObjectID: the real member's 1.3.6.1.4.1.12740.17.1 (the simulator answered 12740.1.2)."""
    from labctl.sim.equallogic import mib as sim

    recorded = next(
        line.split("|")[2]
        for line in (RECORDINGS / "librenms-equallogic.snmprec").read_text().splitlines()
        if line.startswith("1.3.6.1.2.1.1.2.0|")
    )
    assert ".".join(map(str, sim.SYS_OBJECT_ID_PS)) == recorded

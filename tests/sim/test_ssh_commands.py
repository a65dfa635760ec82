"""The simulated Windows commands without sockets: cmd.exe parsing, PDH arithmetic, PVS JSON layout.

Commands run through the same dispatcher the SSH sessions use, with a recording channel.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from labctl.clock import LabClock
from labctl.inventory import load_lab
from labctl.inventory.model import Lab
from labctl.sim.endpoint import SimContext
from labctl.sim.faults import FaultBook
from labctl.sim.ssh.cmdline import split_args, split_line
from labctl.sim.ssh.dispatch import run_line
from labctl.sim.ssh.files import FileStore
from labctl.sim.ssh.pvs import convert_to_json
from labctl.sim.ssh.shell import CommandDropped, MachineEnv, Shell
from labctl.sim.twin.interface import DeviceStatus, NicCounters, ServerCounters, VolumeCounters
from labctl.sim.twin.placeholder import PlaceholderTwin
from labctl.sim.twin.twin import FastForwardClock
from tests.labfiles import make_test_lab

T0 = 1_180_000_000.0  # 05/24/2007 09:46:40 UTC


@dataclass
class RecordingIo:
    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)
    dropped: bool = False

    @property
    def alive(self) -> bool:
        return not self.dropped

    async def write(self, data: str, *, stderr: bool = False) -> None:
        (self.err if stderr else self.out).append(data)

    async def drop(self) -> None:
        self.dropped = True


class ScriptedTwin(PlaceholderTwin):
    """Server counters from a script (one reading per call); devices as set by the test."""

    def __init__(self, lab: Lab, clock: LabClock):
        super().__init__(lab, clock)
        self.readings: list[ServerCounters] = []
        self.devices: list[DeviceStatus] = []

    def server_counters(self, server: str) -> ServerCounters:
        r = self.readings.pop(0) if len(self.readings) > 1 else self.readings[0]
        if isinstance(self.clock, FastForwardClock):  # the scripted reading is the lab's present
            self.clock.advance(r.lab_time_s - self.clock.now())
        return r

    def device_status(self, streaming_server: str) -> tuple[DeviceStatus, ...]:
        return tuple(self.devices)


@dataclass
class Box:
    lab: Lab
    twin: ScriptedTwin
    ctx: SimContext
    files: FileStore

    def run(self, machine: str, line: str, *, drop_armed: bool = False) -> tuple[str, str, int | None]:
        env = MachineEnv(self.lab.machine(machine), self.ctx, self.files)
        io = RecordingIo()
        sh = Shell(env, io, drop_armed=drop_armed)

        async def go() -> int | None:
            try:
                return await run_line(sh, line)
            except CommandDropped:
                return None

        status = asyncio.run(go())
        return "".join(io.out), "".join(io.err), status


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Lab:
    return load_lab(make_test_lab(tmp_path_factory.mktemp("lab"), clients=3), every_machine=True)


def _box(lab: Lab, tmp_path: Path, clock: LabClock) -> Box:
    twin = ScriptedTwin(lab, clock)
    ctx = SimContext(lab, twin, FaultBook((), clock), clock, tmp_path, {})
    return Box(lab, twin, ctx, FileStore(lab, twin.boot_count))


@pytest.fixture
def box(lab: Lab, tmp_path: Path) -> Iterator[Box]:
    yield _box(lab, tmp_path, LabClock(scale=1e6))  # sleeps take no time


@pytest.fixture
def pdh_box(lab: Lab, tmp_path: Path) -> Iterator[Box]:
    """Sleeps take no time and the lab's present is the time of the twin's latest scripted reading
    (a reading later than the next row's time is a simulator that was starved until then)."""
    yield _box(lab, tmp_path, FastForwardClock(scale=1e6, start_s=T0))


def reading(
    t: float, busy: float, *, q: float = 0.0, transfers: float = 0.0, rt: float = 0.0
) -> ServerCounters:
    vol = VolumeCounters("1 D:", transfers, transfers, 0.0, 0.0, 0.0, q, rt)
    nic = NicCounters(
        "Broadcom BCM5708C NetXtreme II GigE",
        bytes_sent=1e6 * (t - T0),
        bytes_received=0.0,
        bandwidth_bps=1e9,
    )
    return ServerCounters(t, 2, busy, 4096.0, 3000.6, (nic,), (vol,))


# --- cmd.exe parsing -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "argv"),
    [
        (
            r'typeperf "\Processor(_Total)\% Processor Time" -sc 3',
            ["typeperf", r"\Processor(_Total)\% Processor Time", "-sc", "3"],
        ),
        (
            r'copy /Y "C:\dir with space\\" \\srv\share\f.bin',
            ["copy", "/Y", "C:\\dir with space\\", r"\\srv\share\f.bin"],
        ),
        (r"copy C:\a\b.bin C:\c\ ", ["copy", r"C:\a\b.bin", "C:\\c\\"]),
        (r'x "a \"quoted\" word" ""', ["x", 'a "quoted" word', ""]),
        (r'x a\\\"b "c""d"', ["x", 'a\\"b', 'c"d']),
    ],
)
def test_arguments_split_as_commandlinetoargvw(line: str, argv: list[str]) -> None:
    assert split_args(line) == argv


def test_the_client_driver_quoting_round_trips() -> None:
    from labctl.drivers.ssh import join_command  # the client side, checked against the server side

    for argv in (
        [
            "typeperf",
            r"\PhysicalDisk(*)\Avg. Disk sec/Transfer",
            r"\Memory\Available MBytes",
            "-sc",
            "5",
            "-si",
            "2",
        ],
        ["copy", "/Y", r"C:\Documents and Settings\labadmin\x & y.bin", "\\\\infra-01\\copytest\\"],
        ["fsutil", "file", "createnew", r"C:\labctl\file512.bin", "536870912"],
    ):
        line = join_command(argv)
        (seg,) = split_line(line)
        assert seg.argv == argv, line


def test_lines_split_at_cmd_operators_but_not_inside_quotes_or_redirections() -> None:
    segs = split_line('a && b || c & echo "x & y" 2>&1 >nul ^& z | more')
    assert [(s.joiner, s.argv) for s in segs] == [
        ("", ["a"]),
        ("&&", ["b"]),
        ("||", ["c"]),
        ("&", ["echo", "x & y", "&", "z"]),
        ("|", ["more"]),
    ]
    assert (segs[3].stdout_to, segs[3].stderr_to) == ("nul", "&1")


def test_cmd_built_ins(box: Box) -> None:
    assert box.run("pvs-01", "echo hello world") == ("hello world\r\n", "", 0)
    assert box.run("pvs-01", "echo.") == ("\r\n", "", 0)
    assert box.run("pvs-01", 'cmd.exe /C "exit /b 3"') == ("", "", 3)
    assert box.run("pvs-01", "cmd /c hostname & exit 5 & hostname") == ("pvs-01\r\n", "", 5)
    out, err, status = box.run("pvs-01", r'"C:\Program Files\x.exe" /y')
    assert (out, status) == ("", 1)
    assert err.startswith(
        "'\"C:\\Program Files\\x.exe\"' is not recognized as an internal or external command,\r\n"
    )
    assert box.run("pvs-01", "hostname | findstr pvs") == (
        "",
        "'findstr' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n",
        1,
    )


# --- typeperf arithmetic ---------------------------------------------------------------------------


def test_typeperf_rates_from_deltas_as_pdh(pdh_box: Box) -> None:
    pdh_box.twin.readings = [
        reading(T0, busy=100.0, q=10.0, transfers=1000, rt=5.0),
        reading(T0 + 5, busy=105.0, q=60.0, transfers=1500, rt=10.0),  # 50 % CPU, queue 10, 10 ms/IO
        reading(T0 + 10, busy=125.0, q=60.0, transfers=1500, rt=10.0),  # 200 % -> capped; idle disk
        reading(T0 + 15, busy=20.0, q=70.0, transfers=1600, rt=11.0),  # counters went back (reboot)
    ]
    counters = [
        r"\Processor(_Total)\% Processor Time",
        r"\PhysicalDisk(1 D:)\Avg. Disk Queue Length",
        r"\PhysicalDisk(1 D:)\Avg. Disk sec/Transfer",
        r"\PhysicalDisk(1 D:)\Disk Transfers/sec",
        r"\PhysicalDisk(1 D:)\% Disk Time",
        r"\Memory\Available MBytes",
        r"\Network Interface(Broadcom BCM5708C NetXtreme II GigE)\Bytes Sent/sec",
    ]
    out, err, status = pdh_box.run(
        "pvs-01", "typeperf " + " ".join(f'"{c}"' for c in counters) + " -sc 3 -si 5"
    )
    assert (err, status) == ("", 0)
    assert out.split("\r\n")[2:6] == [
        '"05/24/2007 09:46:45.000","50.000000","10.000000","0.010000","100.000000","100.000000","3000.000000","1000000.000000"',
        '"05/24/2007 09:46:50.000","100.000000","0.000000","0.000000","0.000000","0.000000","3000.000000","1000000.000000"',
        '"05/24/2007 09:46:55.000"," ","2.000000","0.010000","20.000000","100.000000","3000.000000","1000000.000000"',
        "Exiting, please wait...",
    ]


def test_a_starved_typeperf_still_writes_every_row_at_its_own_time(pdh_box: Box) -> None:
    """The simulator did not run from T0 to T0 + 17 (three rows were due): on waking it writes all
    three, stamped 5, 10 and 15 s, from the counters at those times (interpolated between the twin's
    readings at 0 and 17 s: the busy counter grew at a steady 50 %), then goes on at 20 s."""
    pdh_box.twin.readings = [
        reading(T0, busy=0.0, transfers=0),
        reading(T0 + 17, busy=17.0, transfers=1700),  # 2 cores at 50 %, 100 IO/s
        reading(T0 + 20, busy=23.0, transfers=2300),  # 100 %, 200 IO/s
    ]
    counters = r'"\Processor(_Total)\% Processor Time" "\PhysicalDisk(1 D:)\Disk Transfers/sec"'
    out, err, status = pdh_box.run("pvs-01", f"typeperf {counters} -sc 4 -si 5")
    assert (err, status) == ("", 0)
    assert out.split("\r\n")[2:7] == [
        '"05/24/2007 09:46:45.000","50.000000","100.000000"',
        '"05/24/2007 09:46:50.000","50.000000","100.000000"',
        '"05/24/2007 09:46:55.000","50.000000","100.000000"',
        # 15 -> 20 s: busy 15 -> 23 core-s (8 / 10 = 80 %), transfers 1500 -> 2300
        '"05/24/2007 09:47:00.000","80.000000","160.000000"',
        "Exiting, please wait...",
    ]


def test_typeperf_si_accepts_minutes_and_rejects_nonsense(pdh_box: Box) -> None:
    pdh_box.twin.readings = [reading(T0, 0.0), reading(T0 + 90, 0.0)]
    out, _, status = pdh_box.run("pvs-01", r'typeperf "\Memory\Available MBytes" -si 01:30 -sc 1')
    assert status == 0 and '"05/24/2007 09:48:10.000","3000.000000"' in out
    out, _, status = pdh_box.run("pvs-01", r'typeperf "\Memory\Available MBytes" -sc zero')
    assert status == 1 and out.startswith("Error:")


def test_typeperf_tsv_and_host_prefixed_paths(pdh_box: Box) -> None:
    pdh_box.twin.readings = [reading(T0, 0.0), reading(T0 + 1, 1.0)]
    out, _, _ = pdh_box.run("pvs-01", r'typeperf "\\pvs-01\Processor(*)\% Processor Time" -f TSV -sc 1')
    header = out.split("\r\n")[1]
    assert header == "\t".join(
        [
            '"(PDH-TSV 4.0)"',
            *(f'"\\\\PVS-01\\Processor({i})\\% Processor Time"' for i in ("0", "1", "_Total")),
        ]
    )
    out, _, status = pdh_box.run("pvs-01", r'typeperf "\\other\Memory\Available MBytes" -sc 1')
    assert (out, status) == ("\r\nError: No valid counters.\r\n", 1)


def test_typeperf_output_parses_with_the_client_driver(pdh_box: Box) -> None:
    from labctl.drivers.typeperf import parse_pdh_csv  # contract check against the client parser

    pdh_box.twin.readings = [reading(T0, 0.0), reading(T0 + 2, 1.0), reading(T0 + 4, 3.0)]
    out, _, _ = pdh_box.run(
        "pvs-01",
        r'typeperf "\Processor(_Total)\% Processor Time" "\PhysicalDisk(*)\Avg. Disk Queue Length" -sc 2 -si 2',
    )
    table = parse_pdh_csv(out)
    assert [c.instance for c in table.columns] == ["_Total", "1 D:", "_Total"]
    assert [v[0] for _, v in table.rows] == [25.0, 50.0]


def test_drop_fault_cuts_after_the_header(pdh_box: Box) -> None:
    pdh_box.twin.readings = [reading(T0, 0.0), reading(T0 + 1, 1.0)]
    out, _, status = pdh_box.run("pvs-01", r'typeperf "\Memory\Available MBytes" -sc 5', drop_armed=True)
    assert out == '\r\n"(PDH-CSV 4.0)","\\\\PVS-01\\Memory\\Available MBytes"\r\n' and status is None


# --- PVS -------------------------------------------------------------------------------------------


def test_convert_to_json_is_windows_powershell_layout() -> None:
    assert convert_to_json(
        {"Name": "a<b", "Active": True, "BootTime": None, "DiskVersion": 1, "T": 27.5}
    ) == (
        '{\r\n    "Name":  "a\\u003cb",\r\n    "Active":  true,\r\n    "BootTime":  null,\r\n'
        '    "DiskVersion":  1,\r\n    "T":  27.5\r\n}'
    )
    assert (
        convert_to_json([{"A": 1}, {"A": 2}])
        == '[\r\n    {\r\n        "A":  1\r\n    },\r\n    {\r\n        "A":  2\r\n    }\r\n]'
    )


def test_pvs_devices_merge_the_twin_and_the_inventory(box: Box) -> None:
    box.twin.devices = [
        DeviceStatus("optiplex-002", "00:1a:a0:07:00:02", True, 7, 41.25, "pvs-01", "127.0.0.2"),
    ]
    out, err, status = box.run(
        "pvs-01",
        'powershell.exe -NoProfile -Command "Add-PSSnapin Citrix.PVS.SnapIn; Get-PvsDeviceInfo -SiteName Site | ConvertTo-Json"',
    )
    assert (err, status) == ("", 0)
    devices = json.loads(out)
    assert [(d["Name"], d["Active"], d["Status"], d["BootTime"]) for d in devices] == [
        ("optiplex-001", False, "", None),
        ("optiplex-002", True, "7,0", 41.25),
        ("optiplex-003", False, "", None),
    ]
    from labctl.drivers.pvs import parse_device_info  # contract check against the client parser

    parsed = parse_device_info(out)
    assert (parsed[1].retries, parsed[1].server, parsed[1].mac) == (7, "pvs-01", "00:1a:a0:07:00:02")
    out, _, _ = box.run(
        "pvs-01", 'powershell -Command "Get-PvsDeviceInfo -DeviceName nobody | ConvertTo-Json"'
    )
    assert out == ""  # an empty pipeline converts to nothing


def test_other_powershell_commands_are_not_recognised(box: Box) -> None:
    out, err, status = box.run("pvs-01", 'powershell -NoProfile -Command "Get-Frob -X | ConvertTo-Json"')
    assert (out, status) == ("", 1)
    assert err.startswith("Get-Frob : The term 'Get-Frob' is not recognized as the name of a cmdlet")


# --- files -----------------------------------------------------------------------------------------


def test_paths_resolve_like_windows(box: Box) -> None:
    c = box.lab.machine("optiplex-001")
    files = box.files
    assert files.resolve(c, r"c:\LabCtl\..\labctl\File512.BIN").key == "c:\\labctl\\file512.bin"
    assert files.resolve(c, "x.bin").shown == "C:\\Documents and Settings\\labadmin\\x.bin"
    assert files.resolve(c, r"\\INFRA-01\copytest\a\b").key == "\\\\infra-01\\copytest\\a\\b"
    share_ip = box.lab.machine("infra-01").ip
    assert files.resolve(c, rf"\\{share_ip}\copytest\file512.bin").share_root == "\\\\infra-01\\copytest"
    pvs = box.lab.machine("pvs-01")
    assert files.resolve(pvs, r"D:\cache\x").key == "d:\\cache\\x"  # the server's write-cache volume
    from labctl.sim.ssh.files import PathError

    with pytest.raises(PathError, match="cannot find the path"):
        files.resolve(c, r"D:\x")  # a diskless client has only its streamed C:


def test_copy_onto_itself_and_fsutil_errors(box: Box) -> None:
    out, err, status = box.run("optiplex-001", r"copy C:\labctl\file512.bin C:\labctl")
    assert (out, err, status) == (
        "        0 file(s) copied.\r\n",
        "The file cannot be copied onto itself.\r\n",
        1,
    )
    assert (
        box.run("optiplex-001", r"fsutil file createnew C:\labctl\file512.bin 5")[0]
        == "Error:  The file exists.\r\n"
    )
    assert box.run("optiplex-001", r"fsutil file createnew C:\y.bin")[0].startswith(
        "Usage : fsutil file createnew"
    )
    assert box.run("optiplex-001", r"del C:\labctl\file512.bin") == ("", "", 0)
    assert box.run("optiplex-001", r"del C:\labctl\file512.bin") == (
        "",
        "Could Not Find C:\\labctl\\file512.bin\r\n",
        0,
    )


def test_drop_fault_cuts_a_long_copy_midway(box: Box) -> None:
    client = box.lab.machine("optiplex-001")
    assert box.run(client.name, r"fsutil file createnew C:\big.bin 1000000000000")[2] == 0
    before = len(box.twin._copies)
    out, err, status = box.run(
        client.name, r"copy /Y C:\big.bin \\infra-01\copytest\big.bin", drop_armed=True
    )
    assert (out, err, status) == ("", "", None)
    assert len(box.twin._copies) == before + 1  # the copy had started on the twin
    assert box.files.size(client, box.files.resolve(client, r"\\infra-01\copytest\big.bin")) is None

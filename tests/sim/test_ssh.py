"""The simulated SSH endpoints, driven over real sockets with paramiko (the client labctl uses).

Each test gets its own lab on random 127.x addresses (tests.labfiles.make_test_lab), a
PlaceholderTwin on a 60x clock, and stops every endpoint it started, even on failure.
"""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import json
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import asyncssh
import paramiko
import pytest

from labctl.clock import LabClock
from labctl.inventory import load_lab
from labctl.inventory.faults import FaultKind, FaultSpec
from labctl.inventory.model import Lab
from labctl.sim.endpoint import PortInUseError, SimContext
from labctl.sim.faults import FaultBook
from labctl.sim.ssh import SshEndpoint, build_endpoints
from labctl.sim.ssh.hostkeys import load_or_create_host_keys
from labctl.sim.twin.interface import CopyJob, CopyLocation, PowerAction, PowerState
from labctl.sim.twin.placeholder import PlaceholderTwin
from tests.labfiles import make_test_lab

pytestmark = pytest.mark.integration

CLIENT_PW = "client-pw-1"
SERVER_PW = "server-pw-2"
SECRETS = {"secret:sim.client_password": CLIENT_PW, "secret:sim.server_password": SERVER_PW}
TIMEOUT = 5.0
BOOT_S = 30.0  # PlaceholderTwin client boot time, lab seconds
POWER_ON_DELAY_S = 1.0
COPY_RATE_MB_S = 40.0
NOT_RECOGNIZED = (
    "is not recognized as an internal or external command,\r\noperable program or batch file.\r\n"
)


class RecordingTwin(PlaceholderTwin):
    """The placeholder twin, remembering the power actions and copies it was asked for."""

    def __init__(self, *args: object, **kwargs: object):
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.actions: list[tuple[str, PowerAction]] = []
        self.copies: list[CopyJob] = []

    def power(self, machine: str, action: PowerAction) -> None:
        self.actions.append((machine, action))
        super().power(machine, action)

    def start_copy(
        self, client: str, source: CopyLocation, destination: CopyLocation, size_bytes: int
    ) -> CopyJob:
        job = super().start_copy(client, source, destination, size_bytes)
        self.copies.append(job)
        return job


@dataclass
class SimSsh:
    lab: Lab
    clock: LabClock
    twin: RecordingTwin
    ctx: SimContext
    endpoints: list[SshEndpoint]
    clients: list[paramiko.SSHClient] = field(default_factory=list)

    def password(self, name: str) -> str:
        return SERVER_PW if self.lab.machine(name).kind.value == "server" else CLIENT_PW

    def connect(
        self, name: str, password: str | None = None, *, user: str | None = None, **kw: object
    ) -> paramiko.SSHClient:
        m = self.lab.machine(name)
        assert m.ssh is not None and m.ssh_host is not None
        c = paramiko.SSHClient()
        c.set_missing_host_key_policy(paramiko.AutoAddPolicy())
        self.clients.append(c)
        args: dict[str, object] = dict(
            username=user or m.ssh.user,
            timeout=TIMEOUT,
            banner_timeout=TIMEOUT,
            auth_timeout=TIMEOUT,
            allow_agent=False,
            look_for_keys=False,
        )
        if "pkey" not in kw:
            args["password"] = self.password(name) if password is None else password
        args.update(kw)
        c.connect(m.ssh_host, m.ssh.port, **args)  # type: ignore[arg-type]
        return c

    def run(self, name: str, command: str, client: paramiko.SSHClient | None = None) -> tuple[str, str, int]:
        c = client or self.connect(name)
        _, out, err = c.exec_command(command, timeout=TIMEOUT)
        stdout = out.read().decode()
        stderr = err.read().decode()
        return stdout, stderr, out.channel.recv_exit_status()

    def boot(self, *names: str) -> None:
        for n in names:
            self.twin.power(n, PowerAction.ON)
        wait_for(lambda: all(self.twin.is_os_up(n) for n in names), "clients booted")
        wait_for(lambda: all(self.endpoint(n).listening for n in names), "endpoints listening")

    def endpoint(self, name: str) -> SshEndpoint:
        return next(e for e in self.endpoints if e.info.name == name)


def wait_for(cond: object, what: str, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():  # type: ignore[operator]
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def _active(c: paramiko.SSHClient, timeout: float = TIMEOUT) -> bool:
    """Whether the client's transport is still up once ``timeout`` has passed or it went down."""
    transport = c.get_transport()
    deadline = time.monotonic() + timeout
    while transport is not None and transport.is_active() and time.monotonic() < deadline:
        time.sleep(0.01)
    return transport is not None and transport.is_active()


def _port_free(host: str, port: int) -> bool:
    s = socket.socket()
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        return True
    except OSError:
        return False
    finally:
        s.close()


_lab_ids = itertools.count(1)


def _fresh_lab(tmp_path: Path, clients: int = 3) -> Lab:
    """A test lab whose SSH addresses no other pytest session holds right now (make_test_lab
    picks its 127.x block at random, so two concurrent sessions can pick the same one)."""
    for _ in range(10):
        path = make_test_lab(tmp_path, clients=clients, name=f"test-lab-{next(_lab_ids)}.yaml")
        lab = load_lab(path, every_machine=True)
        if all(_port_free(m.ssh_host, m.ssh.port) for m in lab.machines.values() if m.ssh and m.ssh_host):
            return lab
    raise AssertionError("no free 127.x block for a test lab")


class TwinProxy:
    """Delegates to the twin of the current test: one lab (one 127.x block) serves the module."""

    def __init__(self, target: RecordingTwin):
        self.target = target

    def __getattr__(self, name: str) -> object:
        return getattr(self.target, name)


def _new_twin(lab: Lab, clock: LabClock) -> RecordingTwin:
    return RecordingTwin(
        lab,
        clock,
        client_boot_time_s=BOOT_S,
        power_on_delay_s=POWER_ON_DELAY_S,
        copy_rate_mb_s=COPY_RATE_MB_S,
    )


@contextlib.contextmanager
def _make(tmp_path: Path, clients: int = 3) -> Iterator[SimSsh]:
    """A started SSH sim; stops every endpoint on exit. Another pytest session may hold the
    random 127.x block make_test_lab picked: then try a fresh block."""
    for attempt in range(5):
        lab = _fresh_lab(tmp_path, clients)
        clock = LabClock(scale=lab.time_scale)
        twin = _new_twin(lab, clock)
        ctx = SimContext(lab, TwinProxy(twin), FaultBook((), clock), clock, tmp_path / "state", SECRETS)  # type: ignore[arg-type]
        eps = build_endpoints(ctx)
        sim = SimSsh(lab, clock, twin, ctx, eps)
        try:
            try:
                for e in eps:
                    e.start()
            except PortInUseError:
                if attempt == 4:
                    raise
                continue
            yield sim
            return
        finally:
            for c in sim.clients:
                c.close()
            for e in eps:
                e.stop()


@pytest.fixture(scope="module")
def shared_sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimSsh]:
    with _make(tmp_path_factory.mktemp("ssh")) as sim:
        yield sim


@pytest.fixture
def sim(shared_sim: SimSsh) -> Iterator[SimSsh]:
    """The module's sim with a fresh twin (every client off), no faults and fresh files."""
    sim = shared_sim
    sim.twin = _new_twin(sim.lab, sim.clock)
    sim.ctx.twin.target = sim.twin  # type: ignore[attr-defined]
    sim.ctx.faults.clear()
    sim.endpoints[0].manager.files.clear()
    servers = {m.name for m in sim.lab.servers}
    wait_for(
        lambda: all(e.listening == (e.info.name in servers) and not e.connections for e in sim.endpoints),
        "the endpoints to follow the fresh twin",
    )
    try:
        yield sim
    finally:
        for c in sim.clients:
            c.close()
        sim.clients.clear()
        for e in sim.endpoints:
            for t in list(e.env.scheduled):
                t.cancel()


def _fault(sim: SimSsh, kind: FaultKind, *targets: str) -> None:
    sim.ctx.faults.add(FaultSpec(kind=kind, targets=targets))


# --- a small PDH-CSV reader, independent of labctl.drivers ---------------------------------------


@dataclass
class Pdh:
    header: list[str]
    rows: list[list[str]]
    trailer: list[str]

    @property
    def paths(self) -> list[str]:
        return self.header[1:]

    def times(self) -> list[datetime]:
        return [datetime.strptime(r[0], "%m/%d/%Y %H:%M:%S.%f").replace(tzinfo=UTC) for r in self.rows]

    def column(self, path: str) -> list[float]:
        i = self.header.index(path)
        return [float(r[i]) for r in self.rows]


def read_pdh(text: str) -> Pdh:
    assert text.startswith("\r\n"), "typeperf starts with a blank line"
    lines = text[2:].split("\r\n")
    assert lines[-1] == "", "every line ends with CRLF"
    lines = lines[:-1]
    quoted = [ln for ln in lines if ln.startswith('"')]
    trailer = [ln for ln in lines if not ln.startswith('"')]
    assert lines == quoted + trailer, "status lines come last"
    table = list(csv.reader(io.StringIO("\n".join(quoted))))
    return Pdh(table[0], table[1:], trailer)


# --- auth ----------------------------------------------------------------------------------------


def test_password_auth_and_hostname_on_a_server(sim: SimSsh) -> None:
    c = sim.connect("pvs-01")
    transport = c.get_transport()
    assert transport is not None and transport.remote_version == "SSH-2.0-OpenSSH_for_Windows_7.7"
    assert sim.run("pvs-01", "hostname", c) == ("pvs-01\r\n", "", 0)
    # the same connection runs a second command; user names compare case-insensitively
    assert sim.run("pvs-01", "HOSTNAME.EXE", c)[0] == "pvs-01\r\n"
    assert sim.run("infra-01", "hostname", sim.connect("infra-01", user="administrator"))[0] == "infra-01\r\n"


def test_wrong_password_and_wrong_user_are_rejected(sim: SimSsh) -> None:
    with pytest.raises(paramiko.AuthenticationException):
        sim.connect("pvs-01", "not-the-password")
    with pytest.raises(paramiko.AuthenticationException):
        sim.connect("pvs-01", user="guest")
    with pytest.raises(paramiko.AuthenticationException):
        sim.connect("pvs-01", CLIENT_PW)  # the clients' password is not the servers'


def test_public_key_auth_uses_the_state_dir_authorized_keys(sim: SimSsh, tmp_path: Path) -> None:
    key = asyncssh.generate_private_key("ssh-ed25519")
    pkey = paramiko.Ed25519Key.from_private_key(io.StringIO(key.export_private_key().decode()))
    with pytest.raises(paramiko.AuthenticationException):
        sim.connect("pvs-01", pkey=pkey)
    other = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode()
    mine = key.export_public_key().decode()
    (sim.ctx.state_dir / "authorized_keys").write_text(f"# lab keys\n{other}no-pty {mine}")
    c = sim.connect("pvs-01", pkey=pkey)
    assert sim.run("pvs-01", "hostname", c)[0] == "pvs-01\r\n"


def test_host_keys_are_generated_once_per_state_dir(sim: SimSsh) -> None:
    keys_dir = sim.ctx.state_dir / "ssh"
    first = sorted(p.read_bytes() for p in keys_dir.glob("ssh_host_*_key"))
    assert len(first) == 2
    assert all((p.stat().st_mode & 0o777) == 0o600 for p in keys_dir.glob("ssh_host_*_key"))
    c = sim.connect("pvs-01")
    transport = c.get_transport()
    assert transport is not None
    host_key = transport.get_remote_server_key()
    known = (keys_dir / "known_hosts").read_text()
    m = sim.lab.machine("pvs-01")
    assert (
        f"[{m.ssh_host}]:{m.ssh.port if m.ssh else 0} {host_key.get_name()} {host_key.get_base64()}" in known
    )
    load_or_create_host_keys(sim.ctx.state_dir)  # a second start of the sim reuses them
    assert sorted(p.read_bytes() for p in keys_dir.glob("ssh_host_*_key")) == first


def test_refuse_auth_fault_refuses_every_attempt_on_that_machine_only(sim: SimSsh) -> None:
    _fault(sim, FaultKind.SSH_REFUSE_AUTH, "pvs-01")
    with pytest.raises(paramiko.AuthenticationException):
        sim.connect("pvs-01")
    assert sim.run("infra-01", "hostname")[0] == "infra-01\r\n"


# --- clients follow the twin -----------------------------------------------------------------------


def test_client_refuses_while_down_and_answers_only_after_the_twin_boot(sim: SimSsh) -> None:
    name = "optiplex-001"
    with pytest.raises(paramiko.ssh_exception.NoValidConnectionsError):
        sim.connect(name)
    mac = sim.lab.machine(name).mac
    assert mac is not None
    t_wake = sim.clock.now()
    assert sim.twin.wake_on_lan(mac) == name
    answered: tuple[float, float] | None = None  # lab times: start and end of the first good attempt
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        attempt = sim.clock.now()
        try:
            out = sim.run(name, "hostname")
        except (paramiko.SSHException, OSError):
            time.sleep(0.01)
            continue
        answered = (attempt, sim.clock.now())
        assert out == (f"{name}\r\n", "", 0)
        break
    assert answered is not None, "the client never answered"
    up_at = t_wake + POWER_ON_DELAY_S + BOOT_S
    assert answered[1] >= up_at  # not before the twin's boot time
    assert answered[0] < up_at + 5  # and soon after it (the watcher polls every 25 ms of wall time)


def test_shutdown_drops_the_connection_and_the_twin_sees_shutdown(sim: SimSsh) -> None:
    name = "optiplex-002"
    sim.boot(name)
    c = sim.connect(name)
    _, out, err = c.exec_command("shutdown /s /t 0", timeout=TIMEOUT)
    assert out.read() == b"" and err.read() == b""
    assert out.channel.recv_exit_status() == -1  # no exit status: the box went down under it
    transport = c.get_transport()
    wait_for(lambda: transport is None or not transport.is_active(), "transport closed")
    assert (name, PowerAction.SHUTDOWN) in sim.twin.actions
    assert sim.twin.power_state(name) in (PowerState.POWERING_OFF, PowerState.OFF)
    wait_for(lambda: not sim.endpoint(name).listening, "listener closed")
    with pytest.raises(paramiko.ssh_exception.NoValidConnectionsError):
        sim.connect(name)


def test_restart_drops_then_answers_after_the_next_boot(sim: SimSsh) -> None:
    name = "optiplex-003"
    sim.boot(name)
    boots = sim.twin.boot_count(name)
    c = sim.connect(name)
    _, out, _ = c.exec_command("cmd /c shutdown -r -f -t 0", timeout=TIMEOUT)
    assert out.read() == b"" and out.channel.recv_exit_status() == -1
    assert (name, PowerAction.RESTART) in sim.twin.actions
    wait_for(lambda: sim.twin.boot_count(name) == boots + 1 and sim.endpoint(name).listening, "reboot")
    assert sim.run(name, "hostname")[0] == f"{name}\r\n"


def test_delayed_shutdown_can_be_aborted(sim: SimSsh) -> None:
    name = "optiplex-001"
    sim.boot(name)
    c = sim.connect(name)
    assert sim.run(name, "shutdown /s /t 20", c) == ("", "", 0)
    assert sim.run(name, "shutdown /a", c) == ("", "", 0)
    time.sleep(sim.clock.to_wall_s(25))
    assert sim.twin.is_os_up(name)
    assert sim.twin.actions == [(name, PowerAction.ON)]
    _, err, status = sim.run(name, "shutdown /a", c)
    assert status == 1116 and "no shutdown was in progress" in err


def test_a_twin_side_power_off_closes_open_connections(sim: SimSsh) -> None:
    name = "optiplex-001"
    sim.boot(name)
    c = sim.connect(name)
    transport = c.get_transport()
    assert transport is not None and transport.is_active()
    sim.twin.power(name, PowerAction.FORCE_OFF)
    wait_for(lambda: not transport.is_active(), "the connection closed when the box went off")


# --- typeperf --------------------------------------------------------------------------------------

SERVER_COUNTERS = (
    r"\Processor(_Total)\% Processor Time",
    r"\Memory\Available MBytes",
    r"\Network Interface(*)\Bytes Sent/sec",
    r"\Network Interface(*)\Bytes Received/sec",
    r"\Network Interface(*)\Current Bandwidth",
    r"\PhysicalDisk(*)\Avg. Disk Queue Length",
    r"\PhysicalDisk(*)\Disk Transfers/sec",
    r"\PhysicalDisk(*)\Avg. Disk sec/Transfer",
)


def test_typeperf_pdh_csv_header_instances_rows_and_values(sim: SimSsh) -> None:
    quoted = " ".join(f'"{c}"' for c in SERVER_COUNTERS)
    out, err, status = sim.run("pvs-01", f"typeperf {quoted} -sc 3 -si 5")
    assert (err, status) == ("", 0)
    pdh = read_pdh(out)
    assert pdh.header[0] == "(PDH-CSV 4.0)"
    nics = [
        "MS TCP Loopback interface",
        "Broadcom BCM5708C NetXtreme II GigE",
        "Broadcom BCM5708C NetXtreme II GigE _2",
    ]
    disks = ["0 C:", "1 D:", "_Total"]
    expected = [r"\\PVS-01\Processor(_Total)\% Processor Time", r"\\PVS-01\Memory\Available MBytes"]
    for ctr in ("Bytes Sent/sec", "Bytes Received/sec", "Current Bandwidth"):
        expected += [rf"\\PVS-01\Network Interface({n})\{ctr}" for n in nics]
    for ctr in ("Avg. Disk Queue Length", "Disk Transfers/sec", "Avg. Disk sec/Transfer"):
        expected += [rf"\\PVS-01\PhysicalDisk({d})\{ctr}" for d in disks]
    assert pdh.paths == expected
    assert len(pdh.rows) == 3 and all(len(r) == len(pdh.header) for r in pdh.rows)
    assert all(all(cell.count(".") == 1 and len(cell.split(".")[1]) == 6 for cell in r[1:]) for r in pdh.rows)
    times = pdh.times()
    steps = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
    assert all(abs(s - 5.0) < 0.6 for s in steps), steps
    assert abs(times[-1].timestamp() - sim.clock.now()) < 2.0
    assert pdh.trailer == ["Exiting, please wait...", "The command completed successfully."]
    # PDH arithmetic over the placeholder's linear counters (3 % CPU, 0.02 queue, 10 ms per I/O)
    for values, want in (
        (pdh.column(r"\\PVS-01\Processor(_Total)\% Processor Time"), 3.0),
        (pdh.column(r"\\PVS-01\Memory\Available MBytes"), 3276.0),
        (
            pdh.column(r"\\PVS-01\Network Interface(Broadcom BCM5708C NetXtreme II GigE)\Bytes Sent/sec"),
            2000.0,
        ),
        (pdh.column(r"\\PVS-01\Network Interface(MS TCP Loopback interface)\Bytes Sent/sec"), 0.0),
        (
            pdh.column(
                r"\\PVS-01\Network Interface(Broadcom BCM5708C NetXtreme II GigE _2)\Current Bandwidth"
            ),
            1e9,
        ),
        (pdh.column(r"\\PVS-01\PhysicalDisk(1 D:)\Avg. Disk Queue Length"), 0.02),
        (pdh.column(r"\\PVS-01\PhysicalDisk(_Total)\Avg. Disk Queue Length"), 0.04),
        (pdh.column(r"\\PVS-01\PhysicalDisk(_Total)\Disk Transfers/sec"), 4.0),
        (pdh.column(r"\\PVS-01\PhysicalDisk(0 C:)\Avg. Disk sec/Transfer"), 0.01),
    ):
        assert values == pytest.approx([want] * 3, rel=1e-3), want


def test_typeperf_streams_rows_and_the_first_comes_after_one_interval(sim: SimSsh) -> None:
    c = sim.connect("pvs-01")
    transport = c.get_transport()
    assert transport is not None
    chan = transport.open_session(timeout=TIMEOUT)
    chan.settimeout(TIMEOUT)
    start = time.monotonic()
    chan.exec_command(r'typeperf "\PhysicalDisk(1 D:)\Avg. Disk Queue Length" -sc 2 -si 10')
    buf = b""
    line_times: list[float] = []  # when each complete line had arrived
    while True:
        data = chan.recv(4096)
        if not data:
            break
        buf += data
        line_times += [time.monotonic() - start] * (buf.count(b"\r\n") - len(line_times))
    assert chan.recv_exit_status() == 0
    lines = buf.decode().split("\r\n")
    assert lines[1] == r'"(PDH-CSV 4.0)","\\PVS-01\PhysicalDisk(1 D:)\Avg. Disk Queue Length"'
    assert len(lines) == 7  # blank, header, 2 rows, 2 status lines, and the empty tail
    interval_wall = sim.clock.to_wall_s(10)
    assert line_times[1] < interval_wall / 2  # the header at once
    assert line_times[2] >= interval_wall * 0.9  # row 1 needs a second reading, one interval later
    assert line_times[3] >= 2 * interval_wall * 0.9


def test_typeperf_specific_instances_and_an_unknown_counter(sim: SimSsh) -> None:
    out, _, status = sim.run(
        "pvs-01",
        r'typeperf "\PhysicalDisk(1 D:)\Disk Transfers/sec" "\Bogus\Counter" "\Network Interface(nope)\Bytes Sent/sec" -sc 1',
    )
    assert status == 0
    assert read_pdh(out).paths == [r"\\PVS-01\PhysicalDisk(1 D:)\Disk Transfers/sec"]
    out, err, status = sim.run("pvs-01", r'typeperf "\Bogus\Counter" -sc 1')
    assert (out, err, status) == ("\r\nError: No valid counters.\r\n", "", 1)


def test_typeperf_query_lists_the_counters(sim: SimSsh) -> None:
    out, _, status = sim.run("pvs-01", "typeperf -q")
    assert status == 0
    listed = {ln for ln in out.split("\r\n") if ln.startswith("\\")}
    wild = {c.replace("(_Total)", "(*)") for c in SERVER_COUNTERS}
    assert wild <= listed
    assert out.endswith("The command completed successfully.\r\n")
    out, _, _ = sim.run("pvs-01", "typeperf -qx PhysicalDisk")
    assert r"\PhysicalDisk(1 D:)\Avg. Disk Queue Length" in out.split("\r\n")
    assert not any(ln.startswith(r"\Memory") for ln in out.split("\r\n"))
    out, _, status = sim.run("pvs-01", "typeperf -q Nonsense")
    assert status == 1 and out.startswith("Error:")


# --- PVS device status -------------------------------------------------------------------------------


def test_pvs_device_info_json_lists_every_device_of_the_site(sim: SimSsh) -> None:
    sim.boot("optiplex-002")
    out, err, status = sim.run(
        "pvs-01", 'powershell -NoProfile -Command "Get-PvsDeviceInfo | ConvertTo-Json"'
    )
    assert (err, status) == ("", 0)
    assert out.startswith('[\r\n    {\r\n        "Name":  "optiplex-001",\r\n')
    devices = json.loads(out)
    assert [d["Name"] for d in devices] == ["optiplex-001", "optiplex-002", "optiplex-003"]
    for d in devices:
        assert {
            "Name",
            "DeviceMac",
            "Active",
            "Status",
            "ServerName",
            "Ip",
            "BootTime",
            "DiskVersion",
        } <= set(d)
    up = devices[1]
    assert up["DeviceMac"] == "00-1A-A0-07-00-02"
    assert up["Active"] is True and up["Status"] == "0,0" and up["ServerName"] == "pvs-01"
    assert up["Ip"] == sim.lab.machine("optiplex-002").ip
    assert up["BootTime"] == pytest.approx(BOOT_S, abs=0.01)
    down = devices[0]
    assert down["Active"] is False and down["BootTime"] is None and down["Status"] == ""


def test_pvs_single_device_is_a_bare_object_and_other_servers_lack_the_cmdlet(sim: SimSsh) -> None:
    out, _, status = sim.run(
        "pvs-01", "powershell -NoProfile -Command \"Get-PvsDeviceInfo -Name 'optiplex-003' | ConvertTo-Json\""
    )
    assert status == 0
    assert json.loads(out)["Name"] == "optiplex-003"
    assert out.startswith("{\r\n")
    out, err, status = sim.run(
        "infra-01", 'powershell -NoProfile -Command "Get-PvsDeviceInfo | ConvertTo-Json"'
    )
    assert out == "" and status == 1
    assert "CommandNotFoundException" in err and "'Get-PvsDeviceInfo' is not recognized" in err


# --- copies --------------------------------------------------------------------------------------------


def test_copy_from_the_share_takes_the_twin_time(sim: SimSsh) -> None:
    name = "optiplex-001"
    sim.boot(name)
    c = sim.connect(name)
    t0 = sim.clock.now()
    out, err, status = sim.run(name, r"copy /Y \\infra-01\copytest\file512.bin C:\temp\ ", c)
    took = sim.clock.now() - t0
    assert (out, err, status) == ("        1 file(s) copied.\r\n", "", 0)
    job = sim.twin.copies[-1]
    assert (job.client, job.source, job.destination, job.size_bytes) == (
        name,
        CopyLocation.SHARE,
        CopyLocation.LOCAL,
        512 * 1024 * 1024,
    )
    expected = 512 * 1024 * 1024 / (COPY_RATE_MB_S * 1e6)
    assert expected <= took < expected + 4, took


def test_copy_local_to_share_then_another_client_reads_it(sim: SimSsh) -> None:
    sim.boot("optiplex-001", "optiplex-002")
    c1 = sim.connect("optiplex-001")
    assert sim.run("optiplex-001", r"fsutil file createnew C:\labctl\small.bin 4000000", c1) == (
        "File C:\\labctl\\small.bin is created\r\n",
        "",
        0,
    )
    out, _, status = sim.run(
        "optiplex-001", r'cmd /c "copy /Y C:\labctl\small.bin \\infra-01\copytest\o1.bin"', c1
    )
    assert (out, status) == ("        1 file(s) copied.\r\n", 0)
    assert sim.twin.copies[-1].size_bytes == 4_000_000
    assert (sim.twin.copies[-1].source, sim.twin.copies[-1].destination) == (
        CopyLocation.LOCAL,
        CopyLocation.SHARE,
    )
    out, _, status = sim.run("optiplex-002", r"copy /Y \\INFRA-01\CopyTest\o1.bin C:\temp\o1.bin")
    assert status == 0 and sim.twin.copies[-1].size_bytes == 4_000_000


def test_copy_errors_are_the_cmd_messages(sim: SimSsh) -> None:
    name = "optiplex-001"
    sim.boot(name)
    c = sim.connect(name)
    assert sim.run(name, r"copy /Y \\infra-01\copytest\missing.bin C:\temp\\", c) == (
        "",
        "The system cannot find the file specified.\r\n",
        1,
    )
    assert sim.run(name, r"copy /Y \\nohost\copytest\file512.bin C:\temp\\", c)[1:] == (
        "The network path was not found.\r\n",
        1,
    )
    assert sim.run(name, r"copy /Y \\infra-01\noshare\file512.bin C:\temp\\", c)[1:] == (
        "The network name cannot be found.\r\n",
        1,
    )
    assert sim.twin.copies == []


def test_files_written_to_a_streamed_client_vanish_at_reboot(sim: SimSsh) -> None:
    name = "optiplex-001"
    sim.boot(name)
    assert sim.run(name, r"fsutil file createnew C:\x.bin 10")[2] == 0
    sim.twin.power(name, PowerAction.FORCE_RESTART)
    wait_for(lambda: sim.twin.boot_count(name) == 2 and sim.endpoint(name).listening, "reboot")
    assert sim.run(name, r"copy C:\x.bin \\infra-01\copytest\x.bin")[2] == 1
    assert sim.run(name, r"copy C:\labctl\file512.bin \\infra-01\copytest\x.bin")[2] == 0  # the image's file


# --- unknown commands, drop fault ------------------------------------------------------------------------


def test_unknown_command_gets_the_cmd_message_and_exit_1(sim: SimSsh) -> None:
    assert sim.run("pvs-01", "frobnicate /x") == ("", f"'frobnicate' {NOT_RECOGNIZED}", 1)
    # chained commands run as cmd.exe runs them
    assert sim.run("pvs-01", "nosuch && hostname")[0] == ""
    assert sim.run("pvs-01", "nosuch || hostname")[0] == "pvs-01\r\n"
    assert sim.run("pvs-01", "hostname 2>&1 >nul & echo done") == ("done\r\n", "", 0)


def test_drop_fault_truncates_the_output_and_sends_no_exit_status(sim: SimSsh) -> None:
    _fault(sim, FaultKind.SSH_DROP_MID_COMMAND, "pvs-01")
    c = sim.connect("pvs-01")
    _, out, _ = c.exec_command(r'typeperf "\Processor(_Total)\% Processor Time" -sc 3', timeout=TIMEOUT)
    assert out.read().decode() == '\r\n"(PDH-CSV 4.0)","\\\\PVS-01\\Processor(_Total)\\% Processor Time"\r\n'
    assert out.channel.recv_exit_status() == -1
    assert not _active(c)
    # a command with no output loses its exit status too; other machines are unaffected
    _, out, _ = sim.connect("pvs-01").exec_command("del C:\\nothing.txt 2>nul", timeout=TIMEOUT)
    assert out.read() == b"" and out.channel.recv_exit_status() == -1
    assert sim.run("infra-01", "hostname") == ("infra-01\r\n", "", 0)


def test_drop_fault_cuts_an_interactive_shell_after_the_first_line(sim: SimSsh) -> None:
    _fault(sim, FaultKind.SSH_DROP_MID_COMMAND, "pvs-01")
    c = sim.connect("pvs-01")
    chan = c.invoke_shell()
    chan.settimeout(TIMEOUT)
    chan.send(b"hostname\r\nhostname\r\n")
    buf = b""
    while data := chan.recv(4096):
        buf += data
    text = buf.decode()
    assert text.endswith(">hostname\r\npvs-01\r\n"), text  # no prompt after it, no second command
    assert text.count("pvs-01") == 1
    assert chan.recv_exit_status() == -1
    assert not _active(c)


def test_interactive_shell_runs_lines_until_exit(sim: SimSsh) -> None:
    c = sim.connect("pvs-01")
    chan = c.invoke_shell()
    chan.settimeout(TIMEOUT)
    chan.send(b"hostname\r\nexit\r\n")
    buf = b""
    while not chan.exit_status_ready() or chan.recv_ready():
        data = chan.recv(4096)
        if not data:
            break
        buf += data
    text = buf.decode()
    assert "Microsoft Windows [Version 5.2.3790]" in text
    assert "C:\\Documents and Settings\\Administrator>hostname\r\npvs-01\r\n" in text
    assert chan.recv_exit_status() == 0


# --- lifecycle ---------------------------------------------------------------------------------------


def test_stop_frees_the_address_and_a_taken_port_is_named(tmp_path: Path) -> None:
    lab = _fresh_lab(tmp_path, clients=1)
    clock = LabClock(scale=lab.time_scale)
    twin = PlaceholderTwin(lab, clock)
    ctx = SimContext(lab, twin, FaultBook((), clock), clock, tmp_path / "state", SECRETS)
    pvs = lab.machine("pvs-01")
    assert pvs.ssh is not None and pvs.ssh_host is not None
    blocker = socket.socket()
    blocker.bind((pvs.ssh_host, pvs.ssh.port))
    blocker.listen()
    eps = build_endpoints(ctx)
    ep = next(e for e in eps if e.info.name == "pvs-01")
    try:
        with pytest.raises(PortInUseError) as err:
            ep.start()
        assert f"{pvs.ssh_host}:{pvs.ssh.port}" in str(err.value) and "pvs-01" in str(err.value)
    finally:
        blocker.close()
    try:
        ep.start()
        assert ep.listening
    finally:
        ep.stop()
    s = socket.socket()
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((pvs.ssh_host, pvs.ssh.port))  # free again
    finally:
        s.close()
    assert not eps[0].manager.running


def test_104_endpoints_start_in_under_two_seconds(tmp_path: Path) -> None:
    lab = _fresh_lab(tmp_path, clients=100)
    clock = LabClock(scale=lab.time_scale)
    twin = PlaceholderTwin(lab, clock)
    for m in lab.clients[:50]:
        twin.power(m.name, PowerAction.ON)  # half of them booting while the sim starts
    ctx = SimContext(lab, twin, FaultBook((), clock), clock, tmp_path / "state", SECRETS)
    eps = build_endpoints(ctx)
    assert len(eps) == 104
    t0 = time.monotonic()
    try:
        for e in eps:
            e.start()
        took = time.monotonic() - t0
        assert took < 2.0, took
        assert sum(e.listening for e in eps) == 4  # only the servers: every client is off or booting
        wait_for(lambda: sum(e.listening for e in eps) == 54, "the booted half listening")
    finally:
        for e in eps:
            e.stop()
    assert not eps[0].manager.running

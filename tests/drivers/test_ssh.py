"""The SSH driver against the simulated Windows boxes (asyncssh speaking cmd.exe), faults included."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import paramiko
import pytest

from labctl.drivers.ssh import SshError, SshPool, SshTarget, SshTimeout, close_channel
from labctl.drivers.ssh_burst import ssh_burst
from labctl.inventory.model import HostKeyPolicy
from labctl.sim.twin.interface import PowerAction
from tests.drivers.simparts import endpoints, write_secrets

pytestmark = pytest.mark.integration


@pytest.fixture
def boxes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    write_secrets(tmp_path, monkeypatch)
    with endpoints(tmp_path, "labctl.sim.ssh", clients=2) as parts:
        yield parts


@pytest.fixture
def pool():
    with SshPool(connect_timeout_s=5, command_timeout_s=20) as p:
        yield p


def target(parts, name: str, **changes) -> SshTarget:
    t = SshTarget.for_machine(parts.lab.machine(name))
    return t if not changes else SshTarget(**{**t.__dict__, **changes})


def test_commands_reuse_one_connection(boxes, pool: SshPool) -> None:
    t = target(boxes, "pvs-01")
    first = pool.run(t, ["hostname"])
    assert first.ok and first.stdout.strip() == "pvs-01"
    transport = pool._conns[t.key].client.get_transport()
    results = [pool.run(t, ["hostname"]) for _ in range(5)]
    assert all(r.ok for r in results)
    assert len(pool._conns) == 1 and pool._conns[t.key].client.get_transport() is transport


def test_concurrent_commands_on_one_connection(boxes, pool: SshPool) -> None:
    t = target(boxes, "pvs-01")
    out: list[str] = []
    threads = [
        threading.Thread(target=lambda: out.append(pool.run(t, ["hostname"]).stdout.strip()))
        for _ in range(8)
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert out == ["pvs-01"] * 8 and len(pool._conns) == 1


def test_a_name_with_space_and_ampersand_stays_one_argument(boxes, pool: SshPool) -> None:
    t = target(boxes, "pvs-01")
    quoted = pool.run(t, ["echo", "lab pc&hostname"])
    assert quoted.stdout.strip().splitlines() == ['"lab pc&hostname"']  # cmd echoes the quotes
    raw = pool.run(t, "echo lab pc&hostname")  # the same text unquoted: two commands
    assert raw.stdout.strip().splitlines() == ["lab pc", "pvs-01"]


def test_unknown_command_exit_status_and_check(boxes, pool: SshPool) -> None:
    t = target(boxes, "pvs-01")
    res = pool.run(t, ["no-such-tool", "/x"])
    assert res.exit_status == 1 and "is not recognized" in res.stderr
    with pytest.raises(SshError) as ei:
        pool.run(t, ["no-such-tool"], check=True)
    assert ei.value.kind == "exit" and "pvs-01 (ssh Administrator@" in str(ei.value)
    assert "operable program or batch file" in str(ei.value)


def test_a_machine_that_is_off_refuses_then_answers_once_booted(boxes, pool: SshPool) -> None:
    t = target(boxes, "optiplex-001")
    with pytest.raises(SshError) as ei:
        pool.run(t, ["hostname"])
    assert ei.value.kind == "refused" and "connection refused" in ei.value.reason
    assert "powered on" in ei.value.fix
    boxes.twin.power("optiplex-001", PowerAction.ON)  # placeholder: up 31 lab s later (~0.5 s)
    deadline = time.monotonic() + 5
    while True:
        try:
            assert pool.run(t, ["hostname"]).stdout.strip() == "optiplex-001"
            break
        except SshError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_shutdown_drops_the_connection_as_expected(boxes, pool: SshPool) -> None:
    t = target(boxes, "infra-01")
    res = pool.run(t, ["shutdown", "/s", "/t", "0"], expect_drop=True)
    assert res.dropped and not res.ok
    assert t.key not in pool._conns  # the broken connection is not reused


def test_drop_mid_command_is_an_error_not_a_hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_secrets(tmp_path, monkeypatch)
    fault = "- {kind: ssh_drop_mid_command, targets: [pvs-01]}"
    with endpoints(tmp_path, "labctl.sim.ssh", faults=fault) as parts, SshPool(connect_timeout_s=5) as pool:
        t = target(parts, "pvs-01")
        t0 = time.monotonic()
        with pytest.raises(SshError) as ei:
            pool.run(
                t, ["typeperf", r"\Processor(_Total)\% Processor Time", "-sc", "3", "-si", "1"], timeout_s=20
            )
        assert time.monotonic() - t0 < 5
    assert ei.value.kind == "dropped" and "no exit status" in ei.value.reason


def test_refused_authentication_names_the_credential(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_secrets(tmp_path, monkeypatch)
    fault = "- {kind: ssh_refuse_auth, targets: [pvs-01]}"
    with (
        endpoints(tmp_path, "labctl.sim.ssh", faults=fault) as parts,
        SshPool(connect_timeout_s=5) as pool,
        pytest.raises(SshError) as ei,
    ):
        pool.run(target(parts, "pvs-01"), ["hostname"])
    assert ei.value.kind == "auth"
    assert "authentication failed for user 'Administrator'" in str(ei.value)
    assert "secret:sim.server_password" in ei.value.fix and "server-sim" not in str(ei.value)


def test_command_timeout(boxes, pool: SshPool) -> None:
    t = target(boxes, "pvs-01")
    t0 = time.monotonic()
    with pytest.raises(SshTimeout, match=r"did not finish within 0\.5 s"):
        pool.run(t, ["typeperf", r"\Memory\Available MBytes", "-sc", "100", "-si", "60"], timeout_s=0.5)
    assert time.monotonic() - t0 < 3


def test_connect_timeout_on_a_port_that_never_speaks_ssh(tmp_path: Path) -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(5)
    try:
        port = srv.getsockname()[1]
        t = SshTarget("mute-01", "127.0.0.1", port, "x", host_key_policy=HostKeyPolicy.INSECURE)
        with SshPool(connect_timeout_s=0.5) as pool:
            t0 = time.monotonic()
            with pytest.raises(SshTimeout, match=r"no SSH banner within 0\.5 s"):
                pool.run(t, ["hostname"])
            assert time.monotonic() - t0 < 3
    finally:
        srv.close()


def test_host_key_policies(boxes, pool: SshPool, tmp_path: Path) -> None:
    kh = tmp_path / "known_hosts"
    strict = target(boxes, "pvs-01", host_key_policy=HostKeyPolicy.STRICT, known_hosts=str(kh))
    with pytest.raises(SshError) as ei:
        pool.run(strict, ["hostname"])
    assert ei.value.kind == "hostkey" and "accept-new" in ei.value.fix
    tofu = target(boxes, "pvs-01", host_key_policy=HostKeyPolicy.ACCEPT_NEW, known_hosts=str(kh))
    assert pool.run(tofu, ["hostname"]).ok
    assert kh.read_text().count("\n") == 1
    pool.close()
    assert pool.run(strict, ["hostname"]).ok  # the remembered key now passes strict checking
    # a different key for the same host is refused even with accept-new
    text = kh.read_text().split()
    import paramiko

    other = paramiko.ECDSAKey.generate()
    kh.write_text(f"{text[0]} {other.get_name()} {other.get_base64()}\n")
    pool.close()
    with pytest.raises(SshError) as ei:
        pool.run(tofu, ["hostname"])
    assert ei.value.kind == "hostkey"


def test_stream_reads_lines_as_they_come_and_closes(boxes, pool: SshPool) -> None:
    t = target(boxes, "pvs-01")
    st = pool.stream(t, ["typeperf", r"\Processor(_Total)\% Processor Time", "-si", "1"], idle_timeout_s=10)
    rows = []
    for line in st.lines():
        if line.startswith('"') and "PDH-CSV" not in line:
            rows.append(line)
        if len(rows) == 3:
            st.close()
    assert len(rows) == 3
    assert pool.run(t, ["hostname"]).ok  # the connection is still good after closing the stream


# --- a transport that dies: an SshError naming the host, never a bare EOFError ----------------


def dead_socket(pool: SshPool, t: SshTarget) -> paramiko.Transport:
    """The cached transport of ``t``, its socket gone while paramiko still thinks it is active
    (what a machine that just rebooted looks like): every message it sends raises EOFError."""
    transport = pool._conns[t.key].client.get_transport()
    assert transport is not None and transport.is_active()
    _kill_sends(transport)
    return transport


def _kill_sends(transport: paramiko.Transport) -> None:
    def send(_message: object) -> None:
        raise EOFError()

    transport._send_user_message = send  # type: ignore[method-assign]


def test_a_transport_dying_under_a_command_is_an_ssh_error_naming_the_host(boxes) -> None:
    """The socket dies after the command started: reading fails, and closing the channel (which
    sends a close message) raises EOFError too; the caller must get the SshError, not that."""
    exec_command = paramiko.Channel.exec_command

    def exec_then_die(chan: paramiko.Channel, command: str) -> None:
        exec_command(chan, command)
        _kill_sends(chan.get_transport())

        def recv(_n: int) -> bytes:
            raise OSError("connection reset by peer")

        chan.recv = recv  # type: ignore[method-assign]

    with SshPool(connect_timeout_s=5, command_timeout_s=10) as pool:
        t = target(boxes, "pvs-01")
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(paramiko.Channel, "exec_command", exec_then_die)
            with pytest.raises(SshError) as ei:
                pool.run(t, ["hostname"])
        assert type(ei.value) is SshError and ei.value.kind == "dropped"
        assert t.host in str(ei.value) and "pvs-01" in str(ei.value)
        assert t.key not in pool._conns  # not reused
        assert pool.run(t, ["hostname"]).stdout.strip() == "pvs-01"  # a fresh connection works


def test_a_dead_pooled_transport_is_an_ssh_error_naming_the_host(boxes) -> None:
    with SshPool(connect_timeout_s=5, command_timeout_s=10) as pool:
        t = target(boxes, "pvs-01")
        assert pool.run(t, ["hostname"]).ok  # the connection is now pooled
        dead_socket(pool, t)
        with pytest.raises(SshError) as ei:
            pool.run(t, ["hostname"])
        assert ei.value.kind == "dropped" and t.host in str(ei.value)


def test_close_channel_swallows_what_a_dead_transport_raises(boxes) -> None:
    with SshPool(connect_timeout_s=5) as pool:
        t = target(boxes, "pvs-01")
        pool.run(t, ["hostname"])
        transport = pool._conns[t.key].client.get_transport()
        assert transport is not None
        chan, chan2 = transport.open_session(timeout=5), transport.open_session(timeout=5)
        dead_socket(pool, t)
        with pytest.raises(EOFError):
            chan.close()  # what SshPool._exec's `finally` used to do
        close_channel(chan2)  # and what it does now


def test_a_timeout_is_an_ssh_error() -> None:
    e = SshTimeout("pvs-01 (ssh u@127.0.0.1:22)", "run x", "no answer within 1 s")
    assert isinstance(e, SshError) and e.kind == "timeout" and "pvs-01" in str(e)


def test_a_burst_arms_a_fresh_connection_when_the_pooled_one_died(boxes) -> None:
    with SshPool(connect_timeout_s=5, command_timeout_s=10) as pool:
        t = target(boxes, "optiplex-001")
        boxes.twin.power("optiplex-001", PowerAction.ON)
        deadline = time.monotonic() + 10
        while not boxes.twin.is_os_up("optiplex-001"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert pool.run(t, ["hostname"]).ok
        stale = pool._conns[t.key].client.get_transport()
        stale.sock.close()  # the TCP connection is gone; the pool does not know yet
        out = ssh_burst(pool, [(t, ["hostname"])], action="hostname", timeout_s=10)
        o = out["optiplex-001"]
        assert o.ok and o.exit_status == 0 and o.sent_wall is not None and o.delivered_wall is not None
        assert pool._conns[t.key].client.get_transport() is not stale

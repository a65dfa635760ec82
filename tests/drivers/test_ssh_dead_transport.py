"""A transport that dies under a command: an SshError naming the host, never a bare EOFError;
and a burst whose pooled connection died since is armed on a fresh one."""

from __future__ import annotations

import time
from pathlib import Path

import paramiko
import pytest

from labctl.drivers.ssh import SshError, SshPool, SshTarget, SshTimeout, close_channel
from labctl.drivers.ssh_burst import ssh_burst
from labctl.sim.twin.interface import PowerAction
from tests.drivers.simparts import endpoints, write_secrets

pytestmark = pytest.mark.integration


@pytest.fixture
def boxes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    write_secrets(tmp_path, monkeypatch)
    with endpoints(tmp_path, "labctl.sim.ssh", clients=2) as parts:
        yield parts


def target(parts, name: str) -> SshTarget:
    return SshTarget.for_machine(parts.lab.machine(name))


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

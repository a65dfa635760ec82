"""How one SSH ``hostname`` probe turns into "up", "not up yet" or an error for wait_ready."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from labctl.drivers.ssh import CommandResult, SshError, SshTimeout
from labctl.errors import EndpointError
from labctl.inventory.load import load_lab
from labctl.lab.ready import _answers


class _Ssh:
    def __init__(self, outcome: object) -> None:
        self.outcome = outcome
        self.forgotten: list[object] = []

    def run(self, *a: object, **kw: object) -> CommandResult:
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome  # type: ignore[return-value]

    def forget(self, target: object) -> None:
        self.forgotten.append(target)


def _session(outcome: object) -> SimpleNamespace:
    return SimpleNamespace(
        ssh=_Ssh(outcome),
        ssh_target=lambda m: m.name,
        settings=SimpleNamespace(ssh_command_timeout_s=120.0),
    )


@pytest.fixture(scope="module")
def server():
    return load_lab().servers[0]


def test_an_answer_a_failure_and_a_timeout(server) -> None:
    assert _answers(_session(CommandResult("hostname", 0, "pvs-01", "", 0.1)), server) == (True, "")  # type: ignore[arg-type]
    assert _answers(_session(CommandResult("hostname", 1, "", "", 0.1)), server) == (  # type: ignore[arg-type]
        False,
        "hostname exited 1",
    )
    slow = SshTimeout("pvs-01 (ssh)", "check it is up", "no SSH banner within 3 s")
    assert _answers(_session(slow), server) == (False, "no SSH banner within 3 s")  # type: ignore[arg-type]


def test_refused_is_not_up_yet_and_the_connection_is_dropped(server) -> None:
    s = _session(SshError("pvs-01 (ssh)", "check it is up", "connection refused", kind="refused"))
    assert _answers(s, server) == (False, "connection refused")  # type: ignore[arg-type]
    assert s.ssh.forgotten == [server.name]


@pytest.mark.parametrize(
    "exc",
    [
        SshError("pvs-01 (ssh)", "check it is up", "authentication failed", kind="auth"),
        SshError("pvs-01 (ssh)", "check it is up", "host key differs", kind="hostkey"),
        # not a timeout, whatever its wording: an error for that machine, not "still booting"
        EndpointError("pvs-01", "ssh", "no access configured within this inventory"),
    ],
)
def test_errors_that_waiting_will_not_mend_raise(server, exc: Exception) -> None:
    with pytest.raises(type(exc)):
        _answers(_session(exc), server)  # type: ignore[arg-type]

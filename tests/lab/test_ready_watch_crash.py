"""A readiness watcher that crashes keeps its reason, also for machines it had already seen."""

from __future__ import annotations

import pytest

from labctl.lab.session import LabSession

pytestmark = pytest.mark.integration


def test_a_crashed_client_watch_is_an_error_with_its_reason_not_a_deadline(session_for) -> None:
    """The streaming server's status was read once (every client seen, not booted), then the
    watcher died of a bare EOFError: the outcome says so instead of "not ready by the deadline"
    for a deadline 300 lab s away."""
    s: LabSession = session_for()
    real = s.power.device_status
    calls = [0]

    def flaky():  # type: ignore[no-untyped-def]
        calls[0] += 1
        if calls[0] > 1:
            raise EOFError("the transport closed")
        return real()

    s.power.device_status = flaky  # type: ignore[method-assign]
    clients = [s.lab.machine("optiplex-001"), s.lab.machine("optiplex-002")]
    ready = s.wait_ready(clients, timeout_s=300, expect_boot=True)
    for r in ready.values():
        assert r.state == "error", r
        assert "the readiness watch failed: EOFError: the transport closed" in r.detail
        assert "not ready by the deadline" not in r.detail

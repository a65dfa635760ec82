"""The Redfish driver against the simulated iDRAC over HTTPS, faults included."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from labctl.drivers.base import Backoff
from labctl.drivers.redfish import RedfishClient, RedfishError, RedfishTimeout
from labctl.inventory.model import BmcEndpoint, Tls, TlsMode
from tests.drivers.simparts import endpoints, write_secrets

pytestmark = pytest.mark.integration

FAST = Backoff(attempts=3, base_s=0.05, max_s=0.3, jitter=0.0)


def bmc_of(parts, name: str = "pvs-01", **changes) -> BmcEndpoint:
    bmc = parts.lab.machine(name).bmc
    assert bmc is not None
    return bmc.model_copy(update=changes) if changes else bmc


def verified(parts, **changes) -> BmcEndpoint:
    return bmc_of(parts, tls=Tls(mode=TlsMode.VERIFY, ca_file=str(parts.ca_file)), **changes)


@pytest.fixture
def idrac(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    write_secrets(tmp_path, monkeypatch)
    with endpoints(tmp_path, "labctl.sim.redfish") as parts:
        yield parts


def test_session_inventory_power_and_logout(idrac) -> None:
    svc = idrac.by_name()["pvs-01"]
    with RedfishClient("pvs-01", verified(idrac), timeout_s=5, backoff=FAST) as rf:
        assert rf.auth_mode == "session"
        assert svc.active_sessions() == 1
        inv = rf.inventory()
        assert inv.manufacturer == "Dell Inc." and inv.model == "PowerEdge 2950"
        assert inv.bmc_firmware and inv.redfish_version.startswith("1.")
        assert rf.power_state() == "On"
        assert rf.power_watts() > 0
        target, allowed = rf.allowed_reset_types()
        assert target.endswith("ComputerSystem.Reset") and "ForceOff" in allowed and "On" in allowed
        assert rf.reset("On") == "already"  # iDRAC's PSU501, not an error
        rf.set_boot_once("Pxe")
        assert rf.boot_override() == ("Pxe", "Once")
        assert rf.reset("ForceOff") == "accepted"
        deadline = time.monotonic() + 5
        while rf.power_state() != "Off" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert rf.power_state() == "Off"
        assert rf.reset("On") == "accepted"
    assert svc.active_sessions() == 0  # logged out


def test_expired_session_logs_in_once_more_and_the_request_goes_through(idrac) -> None:
    svc = idrac.by_name()["pvs-01"]
    with RedfishClient("pvs-01", verified(idrac), timeout_s=5, backoff=FAST) as rf:
        shorter = rf.patch("/redfish/v1/SessionService", {"SessionTimeout": 30}, action="shorten sessions")
        assert shorter.status == 200
        time.sleep(svc.ctx.clock.to_wall_s(45))  # idle past the 30 lab-second timeout
        assert svc.active_sessions() == 0  # the BMC dropped the session
        assert rf.power_state() == "On"  # 401, one fresh login, the same request again
        assert rf.auth_mode == "session" and svc.active_sessions() == 1
    assert svc.active_sessions() == 0  # and the fresh session is the one logged out


def test_a_body_that_is_not_json_is_an_error_naming_the_bmc(idrac) -> None:
    from labctl.sim.http import Response

    svc = idrac.by_name()["pvs-01"]
    orig = svc.handle

    def html_for_the_system(req):
        if req.path == "/redfish/v1/Systems/System.Embedded.1":
            return Response(200, b"<html>proxy sign-in</html>", [], "text/html")
        return orig(req)

    with RedfishClient("pvs-01", verified(idrac), timeout_s=5, backoff=FAST) as rf:
        svc.handle = html_for_the_system
        try:
            with pytest.raises(RedfishError, match="not JSON") as ei:
                rf.power_state()
        finally:
            svc.handle = orig
    assert "pvs-01 BMC" in str(ei.value) and "read the system" in str(ei.value)
    assert ei.value.status == 200


def test_reset_type_is_checked_before_sending(idrac) -> None:
    with (
        RedfishClient("pvs-01", verified(idrac), timeout_s=5, backoff=FAST) as rf,
        pytest.raises(RedfishError) as ei,
    ):
        rf.reset("Hibernate")
    msg = str(ei.value)
    assert "pvs-01 BMC" in msg and "ComputerSystem.Reset Hibernate" in msg and "use one of:" in msg


def test_session_limit_backs_off_then_falls_back_to_basic_auth(idrac) -> None:
    svc = idrac.by_name()["pvs-01"]
    bmc = verified(idrac)
    others = [RedfishClient("pvs-01", bmc, timeout_s=5, backoff=FAST) for _ in range(bmc.max_sessions)]
    for c in others:
        c.open()
    try:
        assert svc.active_sessions() == bmc.max_sessions
        # a second labctl process (its own slot accounting) meets the BMC's limit: 503 RAC0218
        import labctl.drivers.redfish as rfmod

        fresh_limits = rfmod.KeyedLimits()
        old = rfmod._SESSION_LIMITS
        rfmod._SESSION_LIMITS = fresh_limits
        try:
            sleeps: list[float] = []
            rf = RedfishClient("pvs-01", bmc, timeout_s=5, backoff=FAST, sleep=sleeps.append)
            with rf:
                assert rf.auth_mode == "basic (session limit reached)"
                assert rf.power_state() == "On"
            assert len(sleeps) == FAST.attempts - 1 and rf.retries_503 == FAST.attempts - 1
        finally:
            rfmod._SESSION_LIMITS = old
    finally:
        for c in others:
            c.close()
    assert svc.active_sessions() == 0


def test_labctl_itself_holds_no_more_sessions_than_the_bmc_allows(idrac) -> None:
    bmc = verified(idrac, max_sessions=2)
    a, b = RedfishClient("pvs-01", bmc), RedfishClient("pvs-01", bmc)
    a.open()
    b.open()
    try:
        c = RedfishClient("pvs-01", bmc, session_wait_s=0.2)
        with pytest.raises(RedfishError, match="already holds 2 sessions"):
            c.open()
        b.close()
        c.open()  # a slot is free again
        c.close()
    finally:
        a.close()
        b.close()


def test_concurrent_requests_per_bmc_are_bounded(idrac) -> None:
    """Twelve threads share one client; the BMC never sees more than max_sessions requests at once."""
    bmc = verified(idrac, max_sessions=2)
    svc = idrac.by_name()["pvs-01"]
    inflight, peak = [0], [0]
    lock = threading.Lock()
    orig = svc.handle

    def slow_counting(req):
        with lock:
            inflight[0] += 1
            peak[0] = max(peak[0], inflight[0])
        try:
            time.sleep(0.05)
            return orig(req)
        finally:
            with lock:
                inflight[0] -= 1

    with RedfishClient("pvs-01", bmc, timeout_s=5) as rf:
        svc.handle = slow_counting
        try:
            threads = [threading.Thread(target=rf.power_state) for _ in range(12)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            svc.handle = orig
    assert peak[0] == 2


def test_503_fault_backs_off_honouring_retry_after_then_fails_naming_bmc_and_action(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_secrets(tmp_path, monkeypatch)
    with endpoints(tmp_path, "labctl.sim.redfish", faults="- {kind: bmc_503, targets: [pvs-01]}") as parts:
        sleeps: list[float] = []
        rf = RedfishClient(
            "pvs-01",
            verified(parts),
            timeout_s=5,
            backoff=Backoff(attempts=3, base_s=0.01, max_s=60.0),
            sleep=sleeps.append,
        )
        with pytest.raises(RedfishError) as ei:
            rf.open()
        assert ei.value.status == 503
        msg = str(ei.value)
        assert msg.startswith("pvs-01 BMC (https://") and "read the service root" in msg
        assert "after 3 attempts" in msg and "Retry-After 2" in msg
        assert sleeps == [2.0, 2.0]  # the server's Retry-After, not the computed 0.01 s


def test_hung_bmc_ends_at_the_timeout_with_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_secrets(tmp_path, monkeypatch)
    with endpoints(tmp_path, "labctl.sim.redfish", faults="- {kind: bmc_hang, targets: [pvs-01]}") as parts:
        rf = RedfishClient("pvs-01", verified(parts), timeout_s=0.5, backoff=FAST)
        t0 = time.monotonic()
        with pytest.raises(RedfishTimeout) as ei:
            rf.open()
        took = time.monotonic() - t0
    assert 0.4 < took < 2.0  # one timeout, not the library's ten retries
    assert "pvs-01 BMC" in str(ei.value) and "no answer within 0.5 s" in str(ei.value)


def test_wrong_password_names_the_reference_not_the_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_secrets(tmp_path, monkeypatch, {"secret:sim.bmc_password": "wrong-one"})
    with endpoints(tmp_path, "labctl.sim.redfish") as parts, pytest.raises(RedfishError) as ei:
        RedfishClient("pvs-01", verified(parts), timeout_s=5, backoff=FAST).open()
    msg = str(ei.value)
    assert "credentials rejected" in msg and "secret:sim.bmc_password" in msg and "wrong-one" not in msg


def test_tls_is_verified_unless_insecure_whatever_requests_ca_bundle_says(
    idrac, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import certifi

    # verify mode against the system store: the simulator's private CA is not in it
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    with pytest.raises(RedfishError, match="TLS verification failed") as ei:
        RedfishClient("pvs-01", bmc_of(idrac, tls=Tls()), timeout_s=5).open()
    assert "ca_file" in ei.value.fix
    # an environment bundle that does not hold the lab CA must not replace the inventory's ca_file
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", certifi.where())
    with RedfishClient("pvs-01", verified(idrac), timeout_s=5) as rf:
        assert rf.power_state() == "On"
    # ... nor turn verification on for an endpoint the inventory marks insecure
    bogus = tmp_path / "empty.pem"
    bogus.write_text("")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(bogus))
    with RedfishClient("pvs-01", bmc_of(idrac, tls=Tls(mode=TlsMode.INSECURE)), timeout_s=5) as rf:
        assert rf.power_state() == "On"
    # and with the lab CA as the environment's store, verify mode passes
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(idrac.ca_file))
    with RedfishClient("pvs-01", bmc_of(idrac, tls=Tls()), timeout_s=5) as rf:
        assert rf.power_state() == "On"


def test_unreachable_bmc_is_a_connection_error(idrac) -> None:
    bmc = verified(idrac).model_copy(update={"url": "https://127.0.0.1:1"})
    with pytest.raises(RedfishError, match="cannot connect") as ei:
        RedfishClient("pvs-01", bmc, timeout_s=2).open()
    assert "check the BMC address" in ei.value.fix


def test_reset_type_prefers_graceful_and_falls_back() -> None:
    from labctl.drivers.power_verbs import PowerVerb
    from labctl.drivers.redfish import reset_type_for

    full = ("On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart", "PowerCycle")
    assert reset_type_for(PowerVerb.ON, full) == "On"
    assert reset_type_for(PowerVerb.GRACEFUL_OFF, full) == "GracefulShutdown"
    assert reset_type_for(PowerVerb.FORCE_OFF, full) == "ForceOff"
    assert reset_type_for(PowerVerb.REBOOT, full) == "GracefulRestart"
    assert reset_type_for(PowerVerb.RESET, full) == "ForceRestart"
    assert reset_type_for(PowerVerb.GRACEFUL_OFF, ("On", "ForceOff")) == "ForceOff"
    assert reset_type_for(PowerVerb.REBOOT, ("On", "ForceOff", "PowerCycle")) == "PowerCycle"
    # not advertised: try the preferred one and let the BMC say
    assert reset_type_for(PowerVerb.GRACEFUL_OFF, ()) == "GracefulShutdown"

"""The Redfish driver against responses recorded from real iDRACs, replayed on loopback.

The resources are a PowerEdge R640's iDRAC (firmware 3.34.34.34, Redfish 1.4.0) as recorded in
sushy-oem-idrac's test data; the error bodies are iDRACs' own, quoted in public issue threads
(SOURCES.md names each). Nothing here was written from a reading of the documentation.
"""

from __future__ import annotations

import copy

import pytest

from labctl.drivers.base import Backoff
from labctl.drivers.power_verbs import PowerVerb
from labctl.drivers.redfish import RedfishClient, RedfishError
from labctl.inventory.model import BmcEndpoint
from tests.conformance.redfish.replay import Answer, recorded_error, recorded_idrac, recording, replay_server

FAST = Backoff(attempts=3, base_s=0.01, max_s=0.05, jitter=0.0)
SYSTEM = "/redfish/v1/Systems/System.Embedded.1"
RESET = f"{SYSTEM}/Actions/ComputerSystem.Reset"


@pytest.fixture
def bmc(monkeypatch: pytest.MonkeyPatch):
    def make(url: str) -> BmcEndpoint:
        return BmcEndpoint(url=url, user="root", password="env:CONF_BMC_PW")

    monkeypatch.setenv("CONF_BMC_PW", "calvin")
    return make


def test_session_at_the_uri_the_root_names_inventory_and_logout_there(bmc) -> None:
    with replay_server() as rp:
        recorded_idrac(rp)
        with RedfishClient("r640", bmc(rp.url), timeout_s=5, backoff=FAST) as rf:
            assert rf.auth_mode == "session"
            inv = rf.inventory()
            assert (inv.manufacturer, inv.model, inv.service_tag) == (
                "Dell Inc.",
                "PowerEdge R640",
                "8CYCZ23",
            )
            assert (inv.bmc_model, inv.bmc_firmware, inv.redfish_version) == (
                "14G Monolithic",
                "3.34.34.34",
                "1.4.0",
            )
            assert rf.power_state() == "On"
            target, allowed = rf.allowed_reset_types()
            assert target == RESET and {"On", "ForceOff", "GracefulShutdown"} <= set(allowed)
            assert rf.plan_reset(PowerVerb.GRACEFUL_OFF).reset_type == "GracefulShutdown"
            assert rf.plan_reset(PowerVerb.REBOOT).reset_type == "GracefulRestart"
            assert rf.boot_override() == ("None", "Disabled")
        # this firmware's sessions live at /redfish/v1/Sessions (its root's Links.Sessions)
        assert [s.path for s in rp.requests("POST")] == ["/redfish/v1/Sessions"]
        assert [s.path for s in rp.requests("DELETE")] == ["/redfish/v1/Sessions/22"]
        assert all(s.headers.get("X-Auth-Token") == "recorded-token" for s in rp.requests("GET")[1:])


@pytest.mark.parametrize("recorded", ["session-limit-idrac-2.1.json", "session-limit-idrac-2.4.json"])
def test_a_recorded_session_limit_falls_back_to_basic_auth(bmc, recorded: str) -> None:
    with replay_server() as rp:
        recorded_idrac(rp, sessions=[recorded_error(recorded)])
        slept: list[float] = []
        with RedfishClient("r640", bmc(rp.url), timeout_s=5, backoff=FAST, sleep=slept.append) as rf:
            assert rf.auth_mode == "basic (session limit reached)"
            assert rf.power_state() == "On"
        assert len(rp.requests("POST", "/redfish/v1/Sessions")) == FAST.attempts  # backed off, then gave up
        assert len(slept) == FAST.attempts - 1
        assert rp.requests("GET", SYSTEM)[-1].headers["Authorization"].startswith("Basic ")
        assert rp.requests("DELETE") == []  # basic auth holds no session to log out of


@pytest.mark.parametrize("recorded", ["already-on-idrac-1.6.json", "already-on-idrac-2.1.json"])
def test_a_recorded_already_on_is_not_an_error(bmc, recorded: str) -> None:
    with replay_server() as rp:
        recorded_idrac(rp)
        rp.on("POST", RESET, recorded_error(recorded))
        with RedfishClient("r640", bmc(rp.url), timeout_s=5, backoff=FAST) as rf:
            assert rf.reset("On") == "already"
            assert rf.fire(rf.plan_reset(PowerVerb.ON)) == "already on"


def test_a_conflict_whose_message_is_not_known_is_already_off_when_the_system_is_off(bmc) -> None:
    """ForceOff on a powered-off iDRAC9 answers 409 (openstack-k8s-operators/infra-operator#434);
    its body was not published. The driver reads PowerState instead of trusting a message id."""
    with replay_server() as rp:
        recorded_idrac(rp)
        off = copy.deepcopy(recording("idrac-r640-3.34/system.json")) | {"PowerState": "Off"}
        rp.get(SYSTEM, off)
        conflict = recorded_error("already-on-idrac-2.1.json")
        body = copy.deepcopy(conflict.body)
        info = body["error"]["@Message.ExtendedInfo"][0]
        info.update({"MessageId": "IDRAC.2.1.SYS999", "Message": "(body not published)"})
        rp.on("POST", RESET, Answer(409, body))
        with RedfishClient("r640", bmc(rp.url), timeout_s=5, backoff=FAST) as rf:
            assert rf.reset("ForceOff") == "already"
            assert rf.fire(rf.plan_reset(PowerVerb.FORCE_OFF)) == "already off"
            # a conflict while the system is where the reset would not take it stays an error
            with pytest.raises(RedfishError, match=r"HTTP 409.*SYS999"):
                rf.reset("On")


def test_a_503_while_the_bmc_is_busy_is_retried_after_its_retry_after(bmc) -> None:
    with replay_server() as rp:
        recorded_idrac(rp)
        rp.on("POST", RESET, Answer(503, None, (("Retry-After", "1"),)), Answer(204))
        slept: list[float] = []
        with RedfishClient("r640", bmc(rp.url), timeout_s=5, backoff=FAST, sleep=slept.append) as rf:
            assert rf.reset("ForceOff") == "accepted"
            assert rf.retries_503 == 1
        assert slept == [0.05]  # Retry-After 1 s, capped by this client's backoff (max 0.05 s)
        assert len(rp.requests("POST", RESET)) == 2


@pytest.mark.parametrize("location", [None, "absolute"])
def test_logout_goes_to_the_session_the_bmc_named(bmc, location: str | None) -> None:
    """Recorded session-creation headers (sushy's test data) with and without ``Location``, and a
    Location that is an absolute URL: the DELETE always reaches the session's own path."""
    with replay_server() as rp:
        headers = recording("sushy/session_creation_headers.json")
        token = headers["X-Auth-Token"]
        path = headers["Location"]
        answer_headers: tuple[tuple[str, str], ...] = (("X-Auth-Token", token),)
        if location == "absolute":
            answer_headers += (("Location", f"{rp.url}{path}"),)
        session = recording("sushy/session.json") | {"@odata.id": path}
        recorded_idrac(rp, sessions=[Answer(201, session, answer_headers)])
        rp.on("DELETE", path, Answer(204))
        with RedfishClient("r640", bmc(rp.url), timeout_s=5, backoff=FAST) as rf:
            assert rf.auth_mode == "session"
            rf.power_state()
        (delete,) = rp.requests("DELETE")
        assert delete.path == path and delete.headers.get("X-Auth-Token") == token


def _dmtf_rackmount(rp, *, without_power: bool = False) -> None:
    """DMTF's public-rackmount1 mockup (Redfish-Publications 2025.4): a service with both the
    deprecated Power resource and EnvironmentMetrics; ``without_power`` drops Power, as a service
    that follows the deprecation does."""
    d = "dmtf-rackmount1"
    root = recording(f"{d}/root.json")
    rp.get("/redfish/v1/", root)
    for name in ("systems", "system", "managers", "manager", "power", "environment_metrics"):
        doc = recording(f"{d}/{name}.json")
        rp.get(doc["@odata.id"], doc)
    chassis = recording(f"{d}/chassis.json")
    if without_power:
        chassis = {k: v for k, v in chassis.items() if k != "Power"}
    rp.get(chassis["@odata.id"], chassis)
    login = root["Links"]["Sessions"]["@odata.id"]
    rp.on(
        "POST",
        login,
        Answer(201, {"@odata.id": f"{login}/1"}, (("X-Auth-Token", "t"), ("Location", f"{login}/1"))),
    )
    rp.on("DELETE", f"{login}/1", Answer(204))


def test_power_draw_from_the_power_resource_of_dmtfs_mockup(bmc) -> None:
    with replay_server() as rp:
        _dmtf_rackmount(rp)
        with RedfishClient("rackmount1", bmc(rp.url), timeout_s=5, backoff=FAST) as rf:
            watts = rf.power_watts()
    power = recording("dmtf-rackmount1/power.json")
    assert watts == power["PowerControl"][0]["PowerConsumedWatts"] == 344  # watts, by the schema


def test_power_draw_from_environment_metrics_when_the_chassis_has_no_power_resource(bmc) -> None:
    """Redfish deprecated Power (2020.4); a service that dropped it still reports
    EnvironmentMetrics.PowerWatts. The driver once read <chassis>/Power regardless: HTTP 404."""
    with replay_server() as rp:
        _dmtf_rackmount(rp, without_power=True)
        with RedfishClient("rackmount1", bmc(rp.url), timeout_s=5, backoff=FAST) as rf:
            watts = rf.power_watts()
    env = recording("dmtf-rackmount1/environment_metrics.json")
    assert watts == env["PowerWatts"]["Reading"] == 374


def test_a_503_whose_retry_interval_is_only_in_the_body_waits_that_long(bmc) -> None:
    """iDRAC answers 503 IDRAC.2.8.SYS518 ("data sources are unavailable") with the retry interval
    in a Base ServiceTemporarilyUnavailable message ("Retry in 30 seconds", MessageArgs ["30"]), not
    in a Retry-After header. The driver once retried after its own exponential 0.5-1-2 s."""
    with replay_server() as rp:
        recorded_idrac(rp)
        system = recording("idrac-r640-3.34/system.json")
        rp.on("GET", SYSTEM, recorded_error("data-sources-unavailable-idrac-2.8.json"), Answer(200, system))
        slept: list[float] = []
        patient = Backoff(attempts=3, base_s=0.01, max_s=60.0, jitter=0.0)
        with RedfishClient("r640", bmc(rp.url), timeout_s=5, backoff=patient, sleep=slept.append) as rf:
            assert rf.power_state() == "On"
            assert rf.retries_503 == 1
        assert slept == [30.0]

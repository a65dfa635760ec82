"""The simulated iDRAC, driven over HTTPS with DMTF's python-redfish-library.

Every test runs on a fresh test lab (random 127.x addresses), verifies TLS against the CA the
simulator writes, and stops its servers even when it fails.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redfish
import requests
from redfish.rest.v1 import (
    InvalidCredentialsError,
    RetriesExhaustedError,
    ServerDownOrUnreachableError,
    SessionCreationError,
)

from labctl.clock import LabClock
from labctl.inventory import load_lab
from labctl.sim.endpoint import PortInUseError, SimContext
from labctl.sim.faults import FaultBook
from labctl.sim.redfish import IdracService, build_endpoints
from labctl.sim.twin.interface import PowerAction, PowerState
from labctl.sim.twin.placeholder import PlaceholderTwin
from tests.labfiles import make_test_lab

pytestmark = pytest.mark.integration

PASSWORD = "calvin-sim"
SECRETS = {"secret:sim.bmc_password": PASSWORD}
SYSTEM = "/redfish/v1/Systems/System.Embedded.1"
RESET = f"{SYSTEM}/Actions/ComputerSystem.Reset"
TIMEOUT = 5


class SlowForceOffTwin(PlaceholderTwin):
    """A placeholder twin whose ForceOff completes ``force_off_s`` lab seconds after the request
    (the placeholder's own ForceOff is instant), to show the BMC waits for the twin."""

    def __init__(self, *args, force_off_s: float = 60.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.force_off_s = force_off_s
        self._off_at: dict[str, float] = {}
        self._off_lock = threading.Lock()

    def power(self, machine: str, action: PowerAction) -> None:
        if action is PowerAction.FORCE_OFF:
            with self._off_lock:
                self._off_at[machine] = self.clock.now() + self.force_off_s
            return
        super().power(machine, action)

    def power_state(self, machine: str) -> PowerState:
        with self._off_lock:
            at = self._off_at.get(machine)
            if at is not None and self.clock.now() >= at:
                del self._off_at[machine]
                super().power(machine, PowerAction.FORCE_OFF)
                at = None
        if at is not None:
            return PowerState.POWERING_OFF
        return super().power_state(machine)


@contextmanager
def sim(
    tmp_path: Path,
    *,
    faults: str = "",
    twin: Callable[..., PlaceholderTwin] = PlaceholderTwin,
    time_scale: float = 60.0,
) -> Iterator[tuple[SimContext, dict[str, IdracService]]]:
    lab = load_lab(
        make_test_lab(tmp_path, clients=2, faults=faults, time_scale=time_scale), every_machine=True
    )
    clock = LabClock(scale=lab.time_scale)
    ctx = SimContext(lab, twin(lab, clock), FaultBook(lab.faults, clock), clock, tmp_path / "state", SECRETS)
    endpoints = build_endpoints(ctx)
    try:
        for e in endpoints:
            e.start()
        yield ctx, {e.machine.name: e for e in endpoints}
    finally:
        for e in endpoints:
            e.stop()


def client(ctx: SimContext, bmc: IdracService, password: str = PASSWORD, **kw):
    return redfish.redfish_client(
        base_url=bmc.base_url,
        username="root",
        password=password,
        timeout=kw.pop("timeout", TIMEOUT),
        max_retry=kw.pop("max_retry", 0),
        cafile=str(ctx.state_dir / "ca.pem"),
        **kw,
    )


def wait_for(predicate: Callable[[], bool], wall_s: float, step: float = 0.05) -> bool:
    deadline = time.monotonic() + wall_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def test_one_bmc_per_server_on_its_inventory_address(tmp_path: Path) -> None:
    with sim(tmp_path) as (ctx, bmcs):
        assert set(bmcs) == {m.name for m in ctx.lab.servers if m.bmc}
        for name, bmc in bmcs.items():
            url = ctx.lab.machine(name).bmc.url  # type: ignore[union-attr]
            assert url == f"https://{bmc.info.host}:{bmc.info.port}"
            assert bmc.info.kind == "redfish" and bmc.info.protocol == "https"
        assert (ctx.state_dir / "ca.pem").read_text().startswith("-----BEGIN CERTIFICATE-----")


def test_service_root_and_metadata_are_public_and_look_like_idrac(tmp_path: Path) -> None:
    with sim(tmp_path) as (ctx, bmcs):
        c = client(ctx, bmcs["pvs-01"])  # the constructor reads the root without credentials
        root = c.root
        assert root["Product"] == "Integrated Dell Remote Access Controller"
        assert root["Vendor"] == "Dell"
        assert re.fullmatch(r"1\.\d+\.\d+", root["RedfishVersion"])
        for link in ("Systems", "Managers", "Chassis", "SessionService"):
            assert root[link]["@odata.id"] == f"/redfish/v1/{link}"
        assert root["Links"]["Sessions"]["@odata.id"] == "/redfish/v1/SessionService/Sessions"
        assert root["@odata.type"].startswith("#ServiceRoot.v1_")
        meta = c.get("/redfish/v1/$metadata")
        assert meta.status == 200 and "<edmx:Edmx" in meta.text and "ComputerSystem_v1.xml" in meta.text
        assert c.get("/redfish/v1/odata").dict["value"]
        # everything else needs credentials
        assert c.get(SYSTEM).status == 401


def test_session_login_returns_token_and_location_and_logout_frees_it(tmp_path: Path) -> None:
    with sim(tmp_path) as (ctx, bmcs):
        bmc = bmcs["pvs-01"]
        c = client(ctx, bmc)
        c.login(auth="session")
        token, location = c.get_session_key(), c.get_session_location()
        assert token and re.fullmatch(r".*/redfish/v1/SessionService/Sessions/\d+", location)
        assert bmc.active_sessions() == 1
        system = c.get(SYSTEM)
        assert system.status == 200 and system.dict["PowerState"] == "On"
        session = c.get(location.split(bmc.base_url)[-1])
        assert session.status == 200 and session.dict["UserName"] == "root"
        c.logout()
        assert bmc.active_sessions() == 0
        stale = requests.get(
            bmc.base_url + SYSTEM,
            headers={"X-Auth-Token": token},
            verify=str(ctx.state_dir / "ca.pem"),
            timeout=TIMEOUT,
        )
        assert stale.status_code == 401


def test_basic_auth_works_without_a_session(tmp_path: Path) -> None:
    with sim(tmp_path) as (ctx, bmcs):
        c = client(ctx, bmcs["pvs-01"])
        c.login(auth="basic")
        r = c.get(SYSTEM)
        assert r.status == 200 and r.dict["Id"] == "System.Embedded.1"
        assert bmcs["pvs-01"].active_sessions() == 0
        # the right password under another user name, or a header that does not decode, is refused
        ca = str(ctx.state_dir / "ca.pem")
        url = bmcs["pvs-01"].base_url + SYSTEM
        other_user = requests.get(url, auth=("admin", PASSWORD), verify=ca, timeout=TIMEOUT)
        assert other_user.status_code == 401
        garbled = requests.get(url, headers={"Authorization": "Basic !!!"}, verify=ca, timeout=TIMEOUT)
        assert garbled.status_code == 401


@pytest.mark.parametrize("auth", ["session", "basic"])
def test_bad_password_is_401(tmp_path: Path, auth: str) -> None:
    with sim(tmp_path) as (ctx, bmcs):
        c = client(ctx, bmcs["pvs-01"], password="wrong")
        with pytest.raises(InvalidCredentialsError):
            c.login(auth=auth)
        raw = requests.get(
            bmcs["pvs-01"].base_url + SYSTEM,
            auth=("root", "wrong"),
            verify=str(ctx.state_dir / "ca.pem"),
            timeout=TIMEOUT,
        )
        assert raw.status_code == 401
        assert raw.json()["error"]["@Message.ExtendedInfo"][0]["MessageId"].startswith("IDRAC.")


def test_session_limit_answers_503_with_the_idrac_message(tmp_path: Path) -> None:
    with sim(tmp_path) as (ctx, bmcs):
        bmc = bmcs["pvs-01"]
        limit = bmc.bmc.max_sessions
        clients = []
        try:
            for _ in range(limit):
                c = client(ctx, bmc)
                c.login(auth="session")
                clients.append(c)
            extra = client(ctx, bmc)
            with pytest.raises(SessionCreationError, match="maximum number of user sessions is reached"):
                extra.login(auth="session")
            raw = requests.post(
                bmc.base_url + "/redfish/v1/SessionService/Sessions",
                json={"UserName": "root", "Password": PASSWORD},
                verify=str(ctx.state_dir / "ca.pem"),
                timeout=TIMEOUT,
            )
            assert raw.status_code == 503
            info = raw.json()["error"]["@Message.ExtendedInfo"][0]
            assert re.fullmatch(r"IDRAC\.\d+\.\d+\.RAC0218", info["MessageId"])
            assert info["Message"] == "The maximum number of user sessions is reached."
            # logging out frees a slot
            clients.pop().logout()
            extra.login(auth="session")
            clients.append(extra)
            assert bmc.active_sessions() == limit
        finally:
            for c in clients:
                c.logout()


def test_idle_sessions_time_out(tmp_path: Path) -> None:
    with sim(tmp_path) as (ctx, bmcs):
        c = client(ctx, bmcs["pvs-01"])
        c.login(auth="session")
        assert c.patch("/redfish/v1/SessionService", body={"SessionTimeout": 30}).status == 200
        assert c.get("/redfish/v1/SessionService").dict["SessionTimeout"] == 30
        time.sleep(ctx.clock.to_wall_s(45))  # idle past the 30 lab-second timeout
        assert c.get(SYSTEM).status == 401
        assert bmcs["pvs-01"].active_sessions() == 0


@pytest.mark.parametrize(
    ("reset", "twin"),
    [
        ("ForceOff", lambda lab, clock: SlowForceOffTwin(lab, clock, force_off_s=60.0)),
        ("GracefulShutdown", lambda lab, clock: PlaceholderTwin(lab, clock, shutdown_time_s=60.0)),
    ],
)
def test_power_off_takes_the_time_the_twin_says(tmp_path: Path, reset: str, twin) -> None:
    with sim(tmp_path, twin=twin) as (ctx, bmcs):
        c = client(ctx, bmcs["pvs-01"])
        c.login(auth="session")
        try:
            started = ctx.clock.now()
            r = c.post(RESET, body={"ResetType": reset})
            assert r.status == 204
            assert c.get(SYSTEM).dict["PowerState"] == "PoweringOff"  # not instantly
            # the twin applies it on its own schedule; the BMC reports it when it happens
            assert wait_for(lambda: ctx.twin.power_state("pvs-01") is PowerState.OFF, wall_s=5)
            took = ctx.clock.now() - started
            assert 55 <= took < 120, took
            assert c.get(SYSTEM).dict["PowerState"] == "Off"
        finally:
            c.logout()


def test_power_on_reports_powering_on_then_on_and_on_when_on_is_409(tmp_path: Path) -> None:
    twin = lambda lab, clock: PlaceholderTwin(lab, clock, power_on_delay_s=30.0)  # noqa: E731
    with sim(tmp_path, twin=twin) as (ctx, bmcs):
        c = client(ctx, bmcs["infra-01"])
        c.login(auth="basic")
        already = c.post(RESET, body={"ResetType": "On"})
        assert already.status == 409
        assert already.dict["error"]["@Message.ExtendedInfo"][0]["Message"] == "Server is already powered ON."
        assert c.post(RESET, body={"ResetType": "ForceOff"}).status == 204
        assert c.get(SYSTEM).dict["PowerState"] == "Off"
        assert c.post(RESET, body={"ResetType": "On"}).status == 204
        assert c.get(SYSTEM).dict["PowerState"] == "PoweringOn"
        assert wait_for(lambda: c.get(SYSTEM).dict["PowerState"] == "On", wall_s=5)


def test_reset_types_and_unknown_reset_type_rejected(tmp_path: Path) -> None:
    with sim(tmp_path) as (ctx, bmcs):
        c = client(ctx, bmcs["pvs-01"])
        c.login(auth="basic")
        action = c.get(SYSTEM).dict["Actions"]["#ComputerSystem.Reset"]
        assert action["target"] == RESET
        assert action["ResetType@Redfish.AllowableValues"] == [
            "On",
            "ForceOff",
            "ForceRestart",
            "GracefulRestart",
            "GracefulShutdown",
            "PushPowerButton",
            "Nmi",
            "PowerCycle",
        ]
        bad = c.post(RESET, body={"ResetType": "Reboot"})
        assert bad.status == 400
        info = bad.dict["error"]["@Message.ExtendedInfo"][0]
        assert re.fullmatch(r"Base\.1\.\d+\.PropertyValueNotInList", info["MessageId"])
        assert "Reboot" in info["Message"] and "ResetType" in info["Message"]
        missing = c.post(RESET, body={})
        assert missing.status == 400
        assert missing.dict["error"]["@Message.ExtendedInfo"][0]["MessageId"].endswith("PropertyMissing")
        assert ctx.twin.power_state("pvs-01") is PowerState.ON  # nothing happened
        assert c.post(RESET, body={"ResetType": "Nmi"}).status == 204
        assert ctx.twin.power_state("pvs-01") is PowerState.ON


def test_push_power_button_toggles(tmp_path: Path) -> None:
    twin = lambda lab, clock: PlaceholderTwin(lab, clock, shutdown_time_s=6.0, power_on_delay_s=6.0)  # noqa: E731
    with sim(tmp_path, twin=twin) as (ctx, bmcs):
        c = client(ctx, bmcs["pvs-01"])
        c.login(auth="basic")
        assert c.post(RESET, body={"ResetType": "PushPowerButton"}).status == 204
        assert wait_for(lambda: ctx.twin.power_state("pvs-01") is PowerState.OFF, wall_s=5)
        assert c.post(RESET, body={"ResetType": "PushPowerButton"}).status == 204
        assert wait_for(lambda: ctx.twin.power_state("pvs-01") is PowerState.ON, wall_s=5)


def test_once_boot_override_is_cleared_after_the_next_boot(tmp_path: Path) -> None:
    twin = lambda lab, clock: PlaceholderTwin(lab, clock, server_boot_time_s=30.0)  # noqa: E731
    with sim(tmp_path, twin=twin) as (ctx, bmcs):
        c = client(ctx, bmcs["pvs-01"])
        c.login(auth="session")
        try:
            boot = c.get(SYSTEM).dict["Boot"]
            assert boot["BootSourceOverrideEnabled"] == "Disabled"
            assert "Pxe" in boot["BootSourceOverrideTarget@Redfish.AllowableValues"]
            bad = c.patch(SYSTEM, body={"Boot": {"BootSourceOverrideTarget": "Tape"}})
            assert bad.status == 400
            ok = c.patch(
                SYSTEM,
                body={"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}},
            )
            assert ok.status == 200
            boot = c.get(SYSTEM).dict["Boot"]
            assert (boot["BootSourceOverrideEnabled"], boot["BootSourceOverrideTarget"]) == ("Once", "Pxe")
            boots = ctx.twin.boot_count("pvs-01")
            assert c.post(RESET, body={"ResetType": "ForceRestart"}).status == 204
            assert c.get(SYSTEM).dict["Boot"]["BootSourceOverrideEnabled"] == "Once"  # still booting
            assert wait_for(lambda: ctx.twin.boot_count("pvs-01") > boots, wall_s=5)
            boot = c.get(SYSTEM).dict["Boot"]
            assert (boot["BootSourceOverrideEnabled"], boot["BootSourceOverrideTarget"]) == (
                "Disabled",
                "None",
            )
            # Continuous survives a boot
            c.patch(
                SYSTEM,
                body={"Boot": {"BootSourceOverrideTarget": "Hdd", "BootSourceOverrideEnabled": "Continuous"}},
            )
            boots = ctx.twin.boot_count("pvs-01")
            c.post(RESET, body={"ResetType": "ForceRestart"})
            assert wait_for(lambda: ctx.twin.boot_count("pvs-01") > boots, wall_s=5)
            assert c.get(SYSTEM).dict["Boot"]["BootSourceOverrideEnabled"] == "Continuous"
        finally:
            c.logout()


def test_power_consumed_watts_follows_the_twin(tmp_path: Path) -> None:
    with sim(tmp_path) as (ctx, bmcs):
        c = client(ctx, bmcs["pvs-01"])
        c.login(auth="basic")
        power = c.get("/redfish/v1/Chassis/System.Embedded.1/Power").dict
        control = power["PowerControl"][0]
        on_watts = control["PowerConsumedWatts"]
        assert on_watts == round(ctx.twin.power_consumed_watts("pvs-01"))
        assert control["PowerCapacityWatts"] > on_watts
        metrics = control["PowerMetrics"]
        assert metrics["MinConsumedWatts"] <= metrics["AverageConsumedWatts"] <= metrics["MaxConsumedWatts"]
        assert len(power["PowerSupplies"]) == power["PowerSupplies@odata.count"] == 2
        fans_on = [f["Reading"] for f in c.get("/redfish/v1/Chassis/System.Embedded.1/Thermal").dict["Fans"]]
        assert c.post(RESET, body={"ResetType": "ForceOff"}).status == 204
        assert wait_for(lambda: ctx.twin.power_state("pvs-01") is PowerState.OFF, wall_s=5)
        off = c.get("/redfish/v1/Chassis/System.Embedded.1/Power").dict["PowerControl"][0]
        assert off["PowerConsumedWatts"] < on_watts
        assert off["PowerMetrics"]["MaxConsumedWatts"] >= on_watts  # the window still holds the On samples
        thermal = c.get("/redfish/v1/Chassis/System.Embedded.1/Thermal").dict
        assert all(f["Reading"] == 0 for f in thermal["Fans"]) and all(r > 0 for r in fans_on)
        assert {t["PhysicalContext"] for t in thermal["Temperatures"]} >= {"Intake", "Exhaust", "CPU"}


def test_manager_reports_idrac_model_firmware_and_lab_time(tmp_path: Path) -> None:
    from datetime import datetime

    with sim(tmp_path) as (ctx, bmcs):
        c = client(ctx, bmcs["pvs-01"])
        c.login(auth="basic")
        m = c.get("/redfish/v1/Managers/iDRAC.Embedded.1").dict
        assert m["ManagerType"] == "BMC"
        assert m["Model"] and re.fullmatch(r"\d+\.\d+\.\d+\.\d+", m["FirmwareVersion"])
        lab_time = datetime.fromisoformat(m["DateTime"]).timestamp()
        assert abs(lab_time - ctx.clock.now()) < 120  # lab seconds; the lab runs 60x
        system = c.get(SYSTEM).dict
        machine = ctx.lab.machine("pvs-01")
        assert system["Model"] == machine.model and system["Manufacturer"] == "Dell Inc."
        assert re.fullmatch(r"[0-9A-Z]{7}", system["SKU"])
        assert system["ProcessorSummary"]["LogicalProcessorCount"] == 2
        assert system["MemorySummary"]["TotalSystemMemoryGiB"] == 4


def test_every_resource_carries_odata_annotations(tmp_path: Path) -> None:
    with sim(tmp_path) as (ctx, bmcs):
        c = client(ctx, bmcs["nas-01"])
        c.login(auth="session")
        try:
            seen: set[str] = set()
            todo = ["/redfish/v1"]
            while todo:
                uri = todo.pop()
                if uri in seen:
                    continue
                seen.add(uri)
                r = c.get(uri)
                assert r.status == 200, uri
                body = r.dict
                assert body["@odata.id"] == uri, uri
                assert body["@odata.type"].startswith("#") and body["@odata.context"].startswith(
                    "/redfish/v1/$metadata#"
                ), uri
                assert r.getheader("OData-Version") == "4.0"

                def links(node: object) -> Iterator[str]:
                    if isinstance(node, dict):
                        for k, v in node.items():
                            if k == "@odata.id" and isinstance(v, str) and "#" not in v:
                                yield v
                            else:
                                yield from links(v)
                    elif isinstance(node, list):
                        for v in node:
                            yield from links(v)

                todo.extend(u for u in links(body) if u not in seen)
            assert {
                SYSTEM,
                "/redfish/v1/Managers/iDRAC.Embedded.1",
                "/redfish/v1/Chassis/System.Embedded.1/Power",
                "/redfish/v1/Chassis/System.Embedded.1/Thermal",
            } <= seen
        finally:
            c.logout()


def test_fault_bmc_503_answers_every_request_with_retry_after(tmp_path: Path) -> None:
    with sim(tmp_path, faults="- {kind: bmc_503, targets: [pvs-01]}") as (ctx, bmcs):
        with pytest.raises(ServerDownOrUnreachableError):
            client(ctx, bmcs["pvs-01"])
        c = client(ctx, bmcs["pvs-01"], check_connectivity=False)
        for path in ("/redfish/v1/", SYSTEM):
            r = c.get(path)
            assert r.status == 503 and r.getheader("Retry-After") == "2"
        raw = requests.post(
            bmcs["pvs-01"].base_url + "/redfish/v1/SessionService/Sessions",
            json={"UserName": "root", "Password": PASSWORD},
            verify=str(ctx.state_dir / "ca.pem"),
            timeout=TIMEOUT,
        )
        assert raw.status_code == 503
        # the other BMCs are fine
        ok = client(ctx, bmcs["infra-01"])
        ok.login(auth="basic")
        assert ok.get(SYSTEM).status == 200


def test_fault_bmc_hang_accepts_and_never_answers_until_stop(tmp_path: Path) -> None:
    with sim(tmp_path, faults="- {kind: bmc_hang, targets: [pvs-01]}") as (ctx, bmcs):
        t0 = time.monotonic()
        with pytest.raises(RetriesExhaustedError) as info:
            client(ctx, bmcs["pvs-01"], timeout=1)
        assert 0.9 <= time.monotonic() - t0 < 4
        assert isinstance(info.value.__cause__, requests.exceptions.ReadTimeout)  # connected, no answer
        ok = client(ctx, bmcs["infra-01"])  # the other BMCs answer
        ok.login(auth="basic")
        assert ok.get(SYSTEM).status == 200
        # a request still hanging is released by stop(), which frees the address promptly
        result: dict[str, object] = {}

        def hang() -> None:
            try:
                requests.get(
                    bmcs["pvs-01"].base_url + "/redfish/v1/", verify=str(ctx.state_dir / "ca.pem"), timeout=30
                )
            except requests.RequestException as exc:
                result["error"] = exc

        th = threading.Thread(target=hang, daemon=True)
        th.start()
        time.sleep(0.3)
        t0 = time.monotonic()
        bmcs["pvs-01"].stop()
        th.join(timeout=5)
        assert not th.is_alive() and "error" in result
        assert time.monotonic() - t0 < 3


def test_taken_port_is_a_clear_error_and_stop_frees_the_address(tmp_path: Path) -> None:
    with sim(tmp_path) as (ctx, bmcs):
        bmc = bmcs["pvs-01"]
        twin = IdracService(ctx, bmc.machine, bmc.bmc)
        with pytest.raises(PortInUseError, match=f"{bmc.info.host}:{bmc.info.port}"):
            twin.start()
        keep_alive = requests.Session()
        keep_alive.trust_env = False
        ca = str(ctx.state_dir / "ca.pem")
        assert keep_alive.get(bmc.base_url + "/redfish/v1/", verify=ca, timeout=TIMEOUT).status_code == 200
        bmc.stop()  # with a keep-alive connection still open
        plain = socket.socket()  # no SO_REUSEADDR: fails while the address has a TIME_WAIT left
        try:
            plain.bind((bmc.info.host, bmc.info.port))
        finally:
            plain.close()
        keep_alive.close()
        twin.start()  # the address is free again
        try:
            c = client(ctx, twin)
            c.login(auth="basic")
            assert c.get(SYSTEM).status == 200
        finally:
            twin.stop()


def test_protocol_details_the_dmtf_protocol_validator_checks(tmp_path: Path) -> None:
    with sim(tmp_path) as (ctx, bmcs):
        base, ca = bmcs["pvs-01"].base_url, str(ctx.state_dir / "ca.pem")
        auth = ("root", PASSWORD)
        assert requests.get(base + "/redfish", verify=ca, timeout=TIMEOUT).json() == {"v1": "/redfish/v1/"}
        r = requests.get(base + SYSTEM, auth=auth, verify=ca, timeout=TIMEOUT)
        assert (
            r.headers["OData-Version"] == "4.0"
            and "GET" in r.headers["Allow"]
            and "PATCH" in r.headers["Allow"]
        )
        assert r.headers["Link"].endswith("/ComputerSystem.v1_12_0.json>; rel=describedby")
        assert r.headers["Content-Type"].startswith("application/json")
        head = requests.head(base + SYSTEM, auth=auth, verify=ca, timeout=TIMEOUT)
        assert head.status_code == 200 and head.content == b""
        odata = requests.get(
            base + SYSTEM, auth=auth, headers={"OData-Version": "4.1"}, verify=ca, timeout=TIMEOUT
        )
        assert odata.status_code == 412
        query = requests.get(base + SYSTEM + "?$expand=*", auth=auth, verify=ca, timeout=TIMEOUT)
        assert query.status_code == 501
        for method in ("DELETE", "PUT", "POST"):
            r = requests.request(method, base + "/redfish/v1/Managers", auth=auth, verify=ca, timeout=TIMEOUT)
            assert r.status_code == 405 and r.headers["Allow"].startswith("GET")
        missing = requests.get(
            base + "/redfish/v1/Systems/System.Embedded.2", auth=auth, verify=ca, timeout=TIMEOUT
        )
        assert missing.status_code == 404
        assert missing.json()["error"]["@Message.ExtendedInfo"][0]["MessageId"].endswith(
            "ResourceMissingAtURI"
        )
        for bad_body in (b"not json", b"[]", b""):
            malformed = requests.post(
                base + "/redfish/v1/SessionService/Sessions", data=bad_body, verify=ca, timeout=TIMEOUT
            )
            assert malformed.status_code == 400, bad_body
            info = malformed.json()["error"]["@Message.ExtendedInfo"][0]
            assert info["MessageId"].endswith("MalformedJSON"), bad_body
        via_members = requests.post(
            base + "/redfish/v1/SessionService/Sessions/Members",
            json={"UserName": "root", "Password": PASSWORD},
            verify=ca,
            timeout=TIMEOUT,
        )
        assert via_members.status_code == 201 and via_members.headers["X-Auth-Token"]
        token = via_members.headers["X-Auth-Token"]
        gone = requests.delete(
            base + via_members.headers["Location"],
            headers={"X-Auth-Token": token},
            verify=ca,
            timeout=TIMEOUT,
        )
        assert gone.status_code == 200 and bmcs["pvs-01"].active_sessions() == 0


def test_a_starved_power_sampler_fills_the_window_it_missed(tmp_path: Path) -> None:
    """The BMC's power window (PowerMetrics min/avg/max) has a sample every POWER_SAMPLE_LAB_S even
    when the sampler did not run for 17 lab s: the missed ones lie on the line between its two
    readings, each at its own lab time."""
    from labctl.sim.redfish.idrac import POWER_SAMPLE_LAB_S
    from labctl.sim.twin.twin import FastForwardClock

    class Watts(PlaceholderTwin):
        watts = 100.0

        def power_consumed_watts(self, server: str) -> float:
            return self.watts

    lab = load_lab(make_test_lab(tmp_path, clients=2), every_machine=True)
    clock = FastForwardClock(scale=1e6)
    twin = Watts(lab, clock)
    ctx = SimContext(lab, twin, FaultBook((), clock), clock, tmp_path / "state", SECRETS)
    bmc = next(e for e in build_endpoints(ctx) if e.machine.name == "pvs-01")  # not started
    t0 = clock.now()
    bmc._sample_power()
    clock.advance(17.0)
    twin.watts = 270.0
    bmc._sample_power()
    assert POWER_SAMPLE_LAB_S == 5.0
    assert [(round(t - t0, 6), round(w, 6)) for t, w in bmc._power_samples] == [
        (0.0, 100.0),
        (5.0, 150.0),
        (10.0, 200.0),
        (17.0, 270.0),
    ]

"""The citrix connector's StoreFront client against recorded answers of real stores and Citrix's
own StoreFront Web API examples (SOURCES.md, Brokers), replayed on loopback."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from labctl.launcher.config import Connector as ConnectorConfig
from labctl.launcher.connectors.broker import BrokerError
from labctl.launcher.connectors.citrix import CitrixConnector
from labctl.launcher.connectors.storefront import Form, LaunchTimes, StoreFront, parse_ica, parse_xml
from tests.conformance.brokers.replay import Replay, recording, self_signed
from tests.conformance.brokers.storefront_replay import SITE, Store

PASSWORD = "s3cret-Pw!"


def _connector(server: Replay, sleeps: list[float], **kw: object) -> CitrixConnector:
    cfg = ConnectorConfig.model_validate(
        {"kind": "citrix", "server": server.url + SITE, "domain": "LAB", "client": "/usr/bin/true", **kw}
    )
    return CitrixConnector(cfg, sleep=sleeps.append)


def test_launch_against_a_recorded_storefront_3(tmp_path: Path) -> None:
    """StoreFront 3.x's own answers (namespaced XML), the reference's logon form, a real ICA file."""
    store = Store()
    sleeps: list[float] = []
    with Replay(store.route) as server:
        launch = _connector(server, sleeps, pool="Access 2010").launch("d1", "u1", PASSWORD, "l-1", tmp_path)
        steps = [p for _, p in server.paths()]
    ica = tmp_path / "l-1.ica"
    assert ica.read_bytes() == recording("storefront/sf3_launch.ica")
    assert stat.S_IMODE(ica.stat().st_mode) == 0o600  # a logon ticket: owner only
    assert launch.argv == ["/usr/bin/true", str(ica)] and launch.cleanup == (ica,)
    assert PASSWORD not in " ".join(launch.argv) and launch.stdin == ""
    assert [s.removeprefix(SITE) for s in steps] == [
        "Home/Configuration",
        "Authentication/GetAuthMethods",
        "ExplicitAuth/Login",
        "ExplicitAuth/LoginAttempt",
        "Resources/List",
        "Resources/GetLaunchStatus/QUhTQ1RYNjUuT2ZmaWNlIC0gQWNjZXNzIDIwMTAgLSBTb3V0aA--",
        "Resources/LaunchIca/QUhTQ1RYNjUuT2ZmaWNlIC0gQWNjZXNzIDIwMTAgLSBTb3V0aA--.ica",
    ]
    # The logon form's own requirements, filled as the reference's example posts them.
    assert store.posted_logins == [
        {
            "username": "LAB\\u1",
            "password": PASSWORD,
            "saveCredentials": "false",
            "loginBtn": "Log On",
            "StateContext": "",
        }
    ]
    start, end = launch.spans["brokering"]
    assert end >= start and launch.brokering_s is not None
    assert "machine_ready" not in launch.spans  # the desktop was ready at once: nothing waited
    assert sleeps == []
    assert parse_ica(ica.read_bytes())["ApplicationServers"] == {"Microsoft Office - Word": ""}


def test_namespaced_auth_methods_of_a_real_store_are_found() -> None:
    """A real StoreFront names its namespace; the reference's example has none. Matching by the
    plain tag name finds no method at all on the real store."""
    root = parse_xml(recording("storefront/sf3_get_auth_methods.xml"), "GetAuthMethods")
    assert root.findall("method") == []  # what a namespace-blind parser sees
    with Replay(Store().route) as server, StoreFront(server.url + SITE) as sf:
        sf.configuration()
        assert sf.auth_methods() == {
            "ExplicitForms": "ExplicitAuth/Login",
            "IntegratedWindows": "DomainPassthroughAuth/Login",
            "CitrixAuth": "CitrixAuth/Login",
        }


def test_an_expired_password_is_a_refused_logon_not_a_success(tmp_path: Path) -> None:
    """StoreFront answers a refused logon with HTTP 200 and another form (the reference's recorded
    change-password form): the launch fails with the store's words and asks for nothing more."""
    store = Store(login_answer="storefront/login_attempt_password_expired.xml")
    with Replay(store.route) as server:
        with pytest.raises(BrokerError, match="Your password has expired and must be changed"):
            _connector(server, []).launch("d1", "u1", PASSWORD, "l-2", tmp_path)
        steps = [p.removeprefix(SITE) for _, p in server.paths()]
    assert "Resources/List" not in steps and not list(tmp_path.iterdir())
    assert len(store.posted_logins) == 1  # a refused password is never tried again


def test_the_reference_resource_list_and_a_disabled_resource() -> None:
    """The reference's own enumeration: escaped slashes, launch URLs without '.ica', no
    launchstatusurl (derived from the launch URL), and a resource marked disabled."""
    store = Store(
        auth_methods="storefront/get_auth_methods.xml", resources="storefront/doc_resources_list.json"
    )
    with Replay(store.route) as server, StoreFront(server.url + SITE) as sf:
        sf.configuration()
        sf.login("acmecorp\\user1", PASSWORD)
        word = sf.find("Microsoft Word")
        assert word.launchurl == "Resources/LaunchIca/Q29udHJvbGxlci4hJCVeJl8rLQ--"
        times = LaunchTimes()
        sf.wait_ready(word, 10.0, times)
        assert times.statuses == ["success"]
        with pytest.raises(BrokerError, match="disabled"):
            sf.find("!$^$%^")
        with pytest.raises(
            BrokerError, match=r"no resource named 'Excel' \(it offers: !\$\^\$%\^, Microsoft Word\)"
        ):
            sf.find("Excel")
    assert ("POST", SITE + "Resources/GetLaunchStatus/Q29udHJvbGxlci4hJCVeJl8rLQ--") in server.paths()


def test_retry_waits_the_poll_timeout_in_seconds_and_times_the_power_on(tmp_path: Path) -> None:
    """'retry' with pollTimeout 5 (the reference's recorded answer) means: wait 5 s and ask again.
    The wait from the first retry to success is the desktop's power-on (machine_ready)."""
    store = Store(
        launch_status=[
            "storefront/doc_launch_status_retry.json",
            "storefront/doc_launch_status_retry.json",
            "storefront/sf3_launch_status_success.json",
        ]
    )
    sleeps: list[float] = []
    with Replay(store.route) as server:
        launch = _connector(server, sleeps, pool="Access 2010").launch("d1", "u1", PASSWORD, "l-3", tmp_path)
    assert sleeps == [5.0, 5.0]
    ready_start, ready_end = launch.spans["machine_ready"]
    b_start, b_end = launch.spans["brokering"]
    assert b_start <= ready_start <= ready_end <= b_end


def test_a_failed_launch_status_fails_the_session(tmp_path: Path) -> None:
    store = Store(launch_status=["storefront/doc_launch_status_failure.json"])
    with (
        Replay(store.route) as server,
        pytest.raises(BrokerError, match="could not launch 'Access 2010': status failure"),
    ):
        _connector(server, [], pool="Access 2010").launch("d1", "u1", PASSWORD, "l-4", tmp_path)
    assert not list(tmp_path.iterdir())


def test_launchica_answering_json_is_not_written_as_an_ica_file(tmp_path: Path) -> None:
    """LaunchIca answers a failed launch with a JSON status as text/plain (the reference); handing
    that to wfica as an ICA file would fail later with no reason."""
    store = Store(ica_is_json=True)
    with Replay(store.route) as server, pytest.raises(BrokerError, match="status failure"):
        _connector(server, [], pool="Access 2010").launch("d1", "u1", PASSWORD, "l-5", tmp_path)
    assert not list(tmp_path.iterdir())


def test_a_site_without_explicit_forms_says_which_methods_it_has() -> None:
    """Made: a site offering pass-through only (the namespace as the recorded StoreFront 3.x's)."""
    store = Store(
        auth_methods_body=b'<authMethods xmlns="http://citrix.com/delivery-services/webAPI/2-6/authMethods">'
        b'<method name="IntegratedWindows" url="DomainPassthroughAuth/Login"/></authMethods>'
    )
    with Replay(store.route) as server, StoreFront(server.url + SITE) as sf:
        sf.configuration()
        with pytest.raises(BrokerError, match=r"no ExplicitForms .* only \['IntegratedWindows'\]"):
            sf.login("u", PASSWORD)


def test_the_recorded_change_password_form_is_read_as_the_reference_defines_it() -> None:
    form = Form.parse(parse_xml(recording("storefront/login_attempt_password_expired.xml"), "form"))
    assert form.result == "update-credentials" and form.postback == "ExplicitAuth/SendForm"
    assert form.messages == ("Your password has expired and must be changed.",)
    assert [f[0] for f in form.fields] == [
        "oldPassword",
        "newPassword",
        "confirmPassword",
        "changePasswordBtn",
    ]


def test_a_post_without_the_csrf_header_is_refused_with_the_reason() -> None:
    with (
        Replay(Store().route) as server,
        StoreFront(server.url + SITE) as sf,
        pytest.raises(BrokerError, match="403: the CSRF token"),
    ):
        sf.auth_methods()  # before Home/Configuration: no CsrfToken to echo


def test_a_real_stores_namespaced_authentication_status_is_read() -> None:
    """StoreFront 3.x's AuthenticationStatus (recorded after pass-through logon) carries a namespace;
    its Result is still found, and its AuthType returned."""
    store = Store(login_answer="storefront/sf3_auth_status_success.xml")
    with Replay(store.route) as server, StoreFront(server.url + SITE) as sf:
        sf.configuration()
        assert sf.login("LAB\\u1", PASSWORD) == "IntegratedWindows"
        assert [r.name for r in sf.resources()] == ["Access 2010"]


@pytest.mark.filterwarnings(
    "ignore::urllib3.exceptions.InsecureRequestWarning"
)  # the insecure case, on purpose
def test_tls_is_verified_unless_the_connector_says_insecure(tmp_path: Path) -> None:
    """A store with a self-signed certificate: refused by default with the reason and the fix,
    accepted only with verify_tls: false, also when REQUESTS_CA_BUNDLE is set in the environment
    (it silently overrides a requests Session's verify=False: psf/requests#3829)."""
    with Replay(Store().route, tls=self_signed(tmp_path)) as server:
        assert server.url.startswith("https://")
        with pytest.raises(BrokerError, match="TLS certificate is not trusted"):
            _connector(server, [], pool="Access 2010").launch("d1", "u1", PASSWORD, "l-6", tmp_path)
        launch = _connector(server, [], pool="Access 2010", verify_tls=False).launch(
            "d1", "u1", PASSWORD, "l-7", tmp_path
        )
    assert Path(launch.argv[1]).read_bytes() == recording("storefront/sf3_launch.ica")


def test_plain_http_carries_no_password_unless_marked_insecure(tmp_path: Path) -> None:
    """The users' passwords go to StoreFront: an http:// store is refused by the configuration and
    the client, and works only with verify_tls: false."""
    with pytest.raises(ValueError, match="plain http: use https, or set verify_tls: false"):
        ConnectorConfig.model_validate({"kind": "citrix", "server": "http://sf.lab.local/Citrix/StoreWeb"})
    with pytest.raises(BrokerError, match="plain http"):
        StoreFront("http://sf.lab.local/Citrix/StoreWeb")
    with Replay(Store().route, plain=True) as server:
        assert server.url.startswith("http://")
        launch = _connector(server, [], pool="Access 2010", verify_tls=False).launch(
            "d1", "u1", PASSWORD, "l-8", tmp_path
        )
    assert Path(launch.argv[1]).read_bytes() == recording("storefront/sf3_launch.ica")


def test_a_wrong_password_form_fails_with_its_error_label(tmp_path: Path) -> None:
    """Made from the recorded logon form: the same form again with an error label, as the Common
    Forms Language marks a refused attempt (no capture of a wrong-password answer was found)."""
    form = recording("storefront/explicit_login_form.xml")
    error = (
        b"<Requirement><Credential><Type>none</Type></Credential><Label>"
        b"<Text>Incorrect user name or password.</Text><Type>error</Type></Label><Input /></Requirement>"
    )
    store = Store(login_answer_body=form.replace(b"<Requirements>", b"<Requirements>" + error, 1))
    with Replay(store.route) as server, pytest.raises(BrokerError, match="Incorrect user name or password"):
        _connector(server, []).launch("d1", "u1", "wrong", "l-9", tmp_path)
    assert len(store.posted_logins) == 1 and not list(tmp_path.iterdir())


def test_a_desktop_that_never_becomes_ready_fails_after_launch_wait_s(tmp_path: Path) -> None:
    store = Store(launch_status=["storefront/doc_launch_status_retry.json"])  # retry, for ever
    sleeps: list[float] = []
    with (
        Replay(store.route) as server,
        pytest.raises(BrokerError, match=r"'Access 2010' was not ready after 12 s \(4 retries\)"),
    ):
        _connector(server, sleeps, pool="Access 2010", launch_wait_s=12).launch(
            "d1", "u1", PASSWORD, "l-10", tmp_path
        )
    assert sleeps == [5.0, 5.0, 2.0]  # pollTimeout, cut at the deadline

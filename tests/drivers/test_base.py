from __future__ import annotations

import email.utils
import random
import time

import pytest

from labctl.drivers.base import Backoff, parse_retry_after, requests_verify, retry_call, ssl_context
from labctl.inventory.model import Tls, TlsMode


def test_backoff_grows_caps_and_honours_retry_after() -> None:
    b = Backoff(attempts=5, base_s=1.0, factor=2.0, max_s=5.0, jitter=0.0)
    assert [b.delay(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 5.0]
    assert b.delay(1, retry_after_s=3.0) == 3.0
    assert b.delay(1, retry_after_s=3600.0) == 5.0  # capped: a BMC cannot stall a storm for an hour
    jb = Backoff(base_s=1.0, jitter=0.1)
    rng = random.Random(1)
    assert all(0.9 <= jb.delay(1, rng=rng) <= 1.1 for _ in range(50))


def test_retry_after_seconds_and_http_date() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    now = time.time()
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after(date, now=now) == pytest.approx(30, abs=1.5)


def test_retry_call_is_bounded() -> None:
    calls = []

    def fn() -> int:
        calls.append(1)
        raise RuntimeError("busy")

    with pytest.raises(RuntimeError):
        retry_call(
            fn, backoff=Backoff(attempts=3, base_s=0), should_retry=lambda e: 0.0, sleep=lambda s: None
        )
    assert len(calls) == 3
    calls.clear()
    with pytest.raises(RuntimeError):
        retry_call(fn, backoff=Backoff(attempts=3), should_retry=lambda e: False, sleep=lambda s: None)
    assert len(calls) == 1


def test_verify_follows_the_inventory_not_the_environment(monkeypatch, tmp_path) -> None:
    bundle = tmp_path / "corp.pem"
    bundle.write_text("")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(bundle))
    assert requests_verify(Tls(mode=TlsMode.INSECURE)) is False
    assert requests_verify(Tls(ca_file="/etc/idrac-ca.pem")) == "/etc/idrac-ca.pem"
    assert requests_verify(Tls()) == str(bundle)  # verify with the default store: the env names it
    monkeypatch.delenv("REQUESTS_CA_BUNDLE")
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    default = requests_verify(Tls())
    assert isinstance(default, str) and default.endswith(".pem")


def test_ssl_context_modes() -> None:
    import ssl

    assert ssl_context(Tls(mode=TlsMode.INSECURE)).verify_mode is ssl.CERT_NONE
    ctx = ssl_context(Tls())
    assert ctx.verify_mode is ssl.CERT_REQUIRED and ctx.check_hostname


def test_one_ssl_context_per_tls_setting() -> None:
    import ssl

    from labctl.drivers.base import TlsAdapter, shared_ssl_context

    insecure = shared_ssl_context(Tls(mode=TlsMode.INSECURE))
    assert insecure is shared_ssl_context(Tls(mode=TlsMode.INSECURE))
    assert insecure.verify_mode is ssl.CERT_NONE and not insecure.check_hostname
    verified = shared_ssl_context(Tls())
    assert verified is not insecure and verified.verify_mode is ssl.CERT_REQUIRED
    a = TlsAdapter(Tls())
    assert a.poolmanager.connection_pool_kw["ssl_context"] is verified

"""Every replayed broker speaks HTTPS with a certificate the test's trust store holds
(REQUESTS_CA_BUNDLE), so the clients run with TLS verified, as on a real lab."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conformance.brokers.replay import Replay, self_signed


@pytest.fixture(scope="session")
def broker_ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, Path]:
    d = tmp_path_factory.mktemp("broker-tls")
    return self_signed(d), d / "cert.pem"


@pytest.fixture(autouse=True)
def trusted_replay_tls(
    broker_ca: tuple[ssl.SSLContext, Path], monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    ctx, ca = broker_ca
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca))
    monkeypatch.setattr(Replay, "default_tls", ctx)
    yield

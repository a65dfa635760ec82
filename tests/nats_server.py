"""pytest fixtures: a real nats-server with JetStream on loopback, and a hub with a leaf node.

Each server listens on free loopback ports it picks, keeps its store under the test's tmp path and
is stopped by its pid at the end (see :mod:`labctl.agents.nats_server`). Use them from a conftest:

    from tests.nats_server import nats_hub, nats_hub_and_leaf  # noqa: F401  (fixtures)

    def test_x(nats_hub):       # NatsServer: nats_hub.url, .leaf_url, .restart(), .kill()
        store = NatsLeaseStore(nats_hub.url, bucket=unique_bucket())

The hub's JetStream domain is ``hub`` (:data:`HUB_DOMAIN`); clients behind a leaf node name it
(``js_domain=HUB_DOMAIN``) to reach the hub's streams and buckets.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from labctl.agents.nats_server import NatsServer, start_hub_and_leaf, start_nats_server

HUB_DOMAIN = "hub"


def unique_bucket(prefix: str = "t") -> str:
    """A bucket (or stream) name no other test uses, so tests can share one server."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def start_hub(workdir: Path) -> NatsServer:
    return start_nats_server(workdir, name="hub", js_domain=HUB_DOMAIN, leaf_listen=True)


@pytest.fixture
def nats_hub(tmp_path: Path) -> Iterator[NatsServer]:
    """A hub of its own for this test (restart or kill it freely)."""
    server = start_hub(tmp_path / "nats-hub")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def shared_nats_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    """One hub for the whole session (tests keep apart by bucket: :func:`unique_bucket`)."""
    server = start_hub(tmp_path_factory.mktemp("nats-hub"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=[True, False], ids=["leaf-with-jetstream", "leaf-without-jetstream"])
def nats_hub_and_leaf(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[NatsServer, NatsServer]]:
    """A hub and a leaf node dialling out to it (connected), with and without the leaf's own
    JetStream (an agent's site server)."""
    hub, leaf = start_hub_and_leaf(tmp_path / "nats", hub_domain=HUB_DOMAIN, leaf_jetstream=request.param)
    try:
        yield hub, leaf
    finally:
        leaf.stop()
        hub.stop()

"""The NATS backend against a real nats-server: expiry is the server's (a dead holder's key goes
from the bucket with no client deleting it), leases taken through a site's leaf node live at the
hub, a hub restart shorter than the TTL costs no lease, and an unreachable hub is one line."""

from __future__ import annotations

import asyncio
import time

import nats
import nats.js.errors
import pytest

from labctl.agents.nats_server import NatsServer
from labctl.errors import EndpointError
from labctl.lab.lease import MAX_TTL_S, LeaseHeld, open_lease_store
from labctl.lab.lease.hub import DEFAULT_BUCKET, NatsLeaseStore, display_url, resource_key
from tests.lease.conftest import wait_until
from tests.nats_server import HUB_DOMAIN, unique_bucket

LAB = "lab:sim-2007"


async def _raw_key_present(url: str, bucket: str, key: str) -> bool:
    """Whether the bucket holds a value for ``key``, read with plain nats-py (not our store)."""
    nc = await nats.connect(url, connect_timeout=2)
    try:
        kv = await nc.jetstream(timeout=2).key_value(bucket)
        try:
            await kv.get(key)
        except nats.js.errors.KeyNotFoundError:
            return False
        return True
    finally:
        await nc.close()


def raw_key_present(url: str, bucket: str, key: str) -> bool:
    return asyncio.run(_raw_key_present(url, bucket, key))


def test_a_dead_holders_key_is_removed_by_the_server_on_its_own(shared_nats_hub: NatsServer, holders) -> None:
    bucket = unique_bucket()
    h = holders(f"nats:{shared_nats_hub.url}#{bucket}", LAB, name="doomed", ttl=1, hold=600)
    h.wait_for("ready")
    h.wait_for("taken")
    assert raw_key_present(shared_nats_hub.url, bucket, resource_key(LAB))
    h.kill()
    # nobody deletes it: the per-message TTL of its last renewal runs out on the server
    wait_until(lambda: not raw_key_present(shared_nats_hub.url, bucket, resource_key(LAB)), 15, "key expired")
    with NatsLeaseStore(shared_nats_hub.url, bucket=bucket) as store:
        assert store.list() == []
        assert store.take(LAB, "next run", ttl_s=2).first_user


def test_the_bucket_caps_every_lease_at_a_week_and_allows_per_message_ttls(
    shared_nats_hub: NatsServer,
) -> None:
    bucket = unique_bucket()
    with NatsLeaseStore(shared_nats_hub.url, bucket=bucket) as store:
        store.take(LAB, "run", ttl_s=2).release()

    async def config() -> tuple[float | None, bool | None, int | None]:
        nc = await nats.connect(shared_nats_hub.url)
        try:
            info = await nc.jetstream().stream_info(f"KV_{bucket}")
            return info.config.max_age, info.config.allow_msg_ttl, info.config.max_msgs_per_subject
        finally:
            await nc.close()

    assert asyncio.run(config()) == (MAX_TTL_S, True, 1)


def test_a_lease_taken_through_a_leaf_node_is_seen_and_enforced_at_the_hub(
    nats_hub_and_leaf: tuple[NatsServer, NatsServer],
) -> None:
    hub, leaf = nats_hub_and_leaf
    bucket = unique_bucket()
    with (
        NatsLeaseStore(leaf.url, bucket=bucket, js_domain=HUB_DOMAIN) as at_site,
        NatsLeaseStore(hub.url, bucket=bucket) as at_hub,
    ):
        lease = at_site.take(LAB, "run at site a", ttl_s=2)
        assert [i.holder for i in at_hub.list()] == ["run at site a"]
        with pytest.raises(LeaseHeld, match="run at site a"):
            at_hub.take(LAB, "run at the hub", ttl_s=2)
        time.sleep(3)  # renewals through the leaf keep it alive at the hub past its TTL
        assert [i.holder for i in at_hub.list()] == ["run at site a"]
        lease.release()
        assert at_hub.list() == []
        assert at_hub.take(LAB, "run at the hub", ttl_s=2).first_user


def test_a_hub_restart_shorter_than_the_ttl_costs_no_lease(nats_hub: NatsServer) -> None:
    bucket = unique_bucket()
    with NatsLeaseStore(nats_hub.url, bucket=bucket) as store:
        lease = store.take(LAB, "run", ttl_s=6)
        nats_hub.restart()  # same ports, same JetStream store
        renewed_before = lease.info.renewed_at
        wait_until(lambda: lease.info.renewed_at > renewed_before, 10, "a renewal after the restart")
        assert not lease.lost.is_set()
    with NatsLeaseStore(nats_hub.url, bucket=bucket) as other:
        assert other.list() == []  # released on close


def test_a_lease_is_lost_when_the_hub_stays_away_longer_than_its_ttl(nats_hub: NatsServer) -> None:
    store = NatsLeaseStore(nats_hub.url, bucket=unique_bucket(), call_timeout_s=0.5)
    try:
        lease = store.take(LAB, "run", ttl_s=1)
        nats_hub.kill()
        assert lease.lost.wait(timeout=15), "a lease that could not be renewed was still trusted"
        assert "not renewed" in lease.lost_reason
    finally:
        store.close()


def test_an_unreachable_hub_is_one_line_naming_it_without_credentials() -> None:
    with pytest.raises(EndpointError) as err:
        NatsLeaseStore("nats://labctl:s3cret@127.0.0.1:1", connect_timeout_s=1)
    message = str(err.value)
    assert message.startswith("nats://127.0.0.1:1: connect to the lease hub: ")
    assert "s3cret" not in message and "\n" not in message
    assert "LABCTL_HUB" in message


def test_open_lease_store_picks_the_hub_from_the_environment(
    shared_nats_hub: NatsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LABCTL_HUB", shared_nats_hub.url)
    store = open_lease_store()
    try:
        assert isinstance(store, NatsLeaseStore) and store.bucket == DEFAULT_BUCKET
        assert store.where == f"{shared_nats_hub.url} bucket {DEFAULT_BUCKET}"
    finally:
        store.close()


def test_display_url_hides_credentials() -> None:
    assert (
        display_url(["nats://u:p@h:4222", "tls://tok@h2:4222", "nats://h3"])
        == "nats://h:4222,tls://h2:4222,nats://h3"
    )


def test_a_server_without_jetstream_is_one_line_with_the_fix(tmp_path) -> None:
    from labctl.agents.nats_server import start_nats_server

    plain = start_nats_server(tmp_path / "plain", name="plain", jetstream=False)
    try:
        with pytest.raises(EndpointError) as err:
            NatsLeaseStore(plain.url, bucket=unique_bucket())
        assert str(err.value).startswith(f"{plain.url}: open the lease bucket: no JetStream answers")
        assert "LABCTL_HUB_DOMAIN" in str(err.value) and "\n" not in str(err.value)
    finally:
        plain.stop()
    assert plain.pid is None  # stopped by its pid, reaped

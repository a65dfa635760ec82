"""The hub goes away and comes back mid-run: no order is lost or repeated (counted on both sides);
and the lab lease on the hub: a second controller waits or is refused, a killed holder's lease
expires and the next run proceeds."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections import Counter

import pytest

from labctl.drivers.hub.connection import HubConnection
from labctl.drivers.hub.protocol import RESULTS_STREAM
from labctl.lab.lease import LeaseHeld
from labctl.lab.lease.hub import NatsLeaseStore
from labctl.lab.power.model import MachineState, State
from labctl.lab.sites import link_for
from tests.agents.conftest import CLIENTS_PER_SITE, SiteLab
from tests.agents.labs import REPO, SITES, clients_of
from tests.agents.storm import storm
from tests.nats_server import unique_bucket

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def SITE_LAB_EDIT(text: str) -> str:  # an agent counts as down after 6 s: longer than the outage
    return text.replace("heartbeat_s: 0.5", "heartbeat_s: 2")


ALL = [n for k in range(1, 4) for n in clients_of(k, CLIENTS_PER_SITE)]
ROUNDS = 12


def test_the_hub_restarting_mid_run_loses_and_repeats_no_order(site_lab: SiteLab) -> None:
    s = site_lab.session()
    link_dropped = threading.Event()
    answers: list[dict[str, MachineState]] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            for i in range(ROUNDS):
                if i == 3:
                    link_dropped.set()
                answers.append(s.power.state(ALL))
        except BaseException as exc:  # reported below
            errors.append(exc)

    t = threading.Thread(target=run)
    t.start()
    assert link_dropped.wait(60)
    site_lab.hub.restart()  # every client and leaf link drops; JetStream keeps its store
    t.join(180)
    assert not t.is_alive() and not errors, errors
    assert link_for(s).conn().reconnects >= 1  # type: ignore[attr-defined]  # the link did drop mid-run
    # no order lost: every round got every machine's state from its agent
    assert len(answers) == ROUNDS
    for states in answers:
        assert {n: st.state for n, st in states.items()} == dict.fromkeys(ALL, State.OFF)
    # none repeated: each agent started each of those orders once ...
    order_ids = set()
    for name in SITES:
        journal = site_lab.agents[name].log.parent / name / "journal.jsonl"
        recs = [json.loads(x) for x in journal.read_text().splitlines()]
        starts = Counter(r["order"] for r in recs if r["op"] == "start" and r["order"].endswith("-state"))
        assert len(starts) == ROUNDS and set(starts.values()) == {1}, starts
        order_ids |= set(starts)
    # ... and the hub stored each result once (a result re-sent across the outage was a duplicate)
    conn = HubConnection(site_lab.hub.url, name="count", js_domain="hub")
    try:

        async def subjects() -> dict[str, int]:
            assert conn.js is not None
            info = await conn.js.stream_info(RESULTS_STREAM, subjects_filter="labctl.result.>")
            return dict(info.state.subjects or {})

        per_subject = conn.call(subjects(), "count")
    finally:
        conn.close()
    assert len(order_ids) == ROUNDS
    state_subjects = {
        k: v for k, v in per_subject.items() if k.split(".")[-1] in {_token(o) for o in order_ids}
    }
    assert len(state_subjects) == ROUNDS * len(SITES)
    assert set(state_subjects.values()) == {CLIENTS_PER_SITE + 1}  # each machine once, and the done


def _token(order_id: str) -> str:
    from labctl.drivers.hub.protocol import order_token

    return order_token(order_id)


def _holder(hub_url: str, bucket: str, resource: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.lease.holder",
            f"nats:{hub_url}#{bucket}",
            resource,
            "--name",
            "run-a",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stdin=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )


def _event(proc: subprocess.Popen[str]) -> dict[str, object]:
    assert proc.stdout is not None
    return json.loads(proc.stdout.readline())


def test_a_second_controller_is_refused_or_waits_and_a_killed_holders_lease_expires(
    site_lab: SiteLab,
) -> None:
    s = site_lab.session()
    bucket = unique_bucket("agents")
    resource = f"lab:{s.lab.name}"
    holder = _holder(site_lab.hub.url, bucket, resource, "--ttl", "1", "--hold", "120")
    try:
        assert _event(holder)["event"] == "ready"
        assert _event(holder)["event"] == "taken"
        store = NatsLeaseStore(site_lab.hub.url, bucket=bucket)
        try:
            with pytest.raises(LeaseHeld) as err:  # another controller, not waiting: refused by name
                store.take(resource, "run-b", ttl_s=5)
            assert "run-a" in str(err.value) and "\n" not in str(err.value)
            holder.kill()  # the first run dies without letting go
            holder.wait(10)
            with store.take(resource, "run-b", ttl_s=5, wait_s=30) as lease:  # its lease lapses; we proceed
                assert not lease.lost.is_set()
                result = storm(s, ALL, ready_timeout_s=600)
                assert result.on.ok and {c.outcome for c in result.clients} == {"ready"}
        finally:
            store.close()
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait(10)

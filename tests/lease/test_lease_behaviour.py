"""The lease's behaviour, the same on both backends (a lease folder; a bucket on a real NATS hub):
one owner at a time between processes, waiting, expiry of a dead holder's lease, renewal, shared
reference counts, all-or-none take_all, break, and reservations from the shell."""

from __future__ import annotations

import time

import pytest

from labctl.errors import BadInputError
from labctl.lab.lease import LeaseHeld, LeaseLost
from tests.lease.conftest import Backend, wait_until

LAB = "lab:sim-2007"


def test_two_processes_racing_for_a_lab_exactly_one_wins_and_the_other_names_it(
    backend: Backend, holders
) -> None:
    a = holders(backend.spec, LAB, name="a", ttl=2, hold=30, on_go=True)
    b = holders(backend.spec, LAB, name="b", ttl=2, hold=30, on_go=True)
    a.wait_for("ready")
    b.wait_for("ready")
    a.go()  # both loaded and connected: now both try at once
    b.go()
    outcomes = {p.pid: p.event() for p in (a, b)}
    taken = [e for e in outcomes.values() if e["event"] == "taken"]
    held = [e for e in outcomes.values() if e["event"] == "held"]
    assert len(taken) == 1 and len(held) == 1, outcomes
    winner = taken[0]["holder"]
    assert held[0]["by"] == winner
    assert held[0]["message"].startswith(f"{LAB} is leased by {winner} (")
    assert " left, renewed while its run lives) (wait for it with --lease-wait S," in held[0]["message"]
    assert f"`labctl lease break {LAB}`" in held[0]["message"]
    # and the store agrees with the winner
    (info,) = backend.store().list()
    assert (info.resource, info.holder, info.holder_pid) == (LAB, winner, taken[0]["pid"])


def test_a_waiting_taker_gets_the_lease_once_the_holder_releases_it(backend: Backend, holders) -> None:
    first = holders(backend.spec, LAB, name="first", ttl=2, hold=1.5)
    first.wait_for("ready")
    first.wait_for("taken")
    second = holders(backend.spec, LAB, name="second", ttl=2, wait=60, hold=0)
    second.wait_for("ready")
    released = first.wait_for("released")
    taken = second.wait_for("taken")
    assert taken["at"] >= released["at"]  # it got the lab only after the first gave it back
    assert released["last_user"] == [True]


def test_without_waiting_a_second_taker_is_refused_while_the_first_holds(backend: Backend) -> None:
    store = backend.store()
    with store.take(LAB, "run one", ttl_s=2) as lease:
        with pytest.raises(LeaseHeld) as refused:
            backend.store().take(LAB, "run two", ttl_s=2)
        assert refused.value.info.holder == "run one"
        assert refused.value.exit_code == 2  # bad input: one line, no traceback
        assert "\n" not in str(refused.value)
        with pytest.raises(LeaseHeld, match=r"still after waiting 0\.3 s"):
            backend.store().take(LAB, "run two", ttl_s=2, wait_s=0.3)
        assert not lease.lost.is_set()
    assert backend.store().take(LAB, "run two", ttl_s=2).first_user


def test_a_killed_holders_lease_expires_and_the_next_take_succeeds(backend: Backend, holders) -> None:
    h = holders(backend.spec, LAB, name="doomed", ttl=1, hold=600)
    h.wait_for("ready")
    taken = h.wait_for("taken")
    h.kill()
    store = backend.store()
    # file store: at once (its pid is gone); NATS: when the server drops it after its TTL
    lease = store.take(LAB, "next run", ttl_s=2, wait_s=20)
    assert lease.first_user
    assert [i.holder for i in store.list()] == ["next run"]
    assert taken["holder"] not in [i.holder for i in store.list()]


def test_a_holder_that_exits_without_releasing_frees_the_lab_at_exit(backend: Backend, holders) -> None:
    h = holders(backend.spec, LAB, name="sloppy", ttl=60, hold=0, exit_without_release=True)
    h.wait_for("ready")
    h.wait_for("taken")
    assert h.proc.wait(timeout=30) == 0
    # no waiting: a one-minute TTL has not run out, and its pid alone would not free it on NATS
    assert backend.store().take(LAB, "next run", ttl_s=2).first_user


def test_renewal_keeps_a_lease_alive_well_past_its_ttl(backend: Backend) -> None:
    lease = backend.store().take(LAB, "long run", ttl_s=2)
    other = backend.store()
    time.sleep(5.0)  # two and a half TTLs: without renewal it would have lapsed
    with pytest.raises(LeaseHeld, match="long run"):
        other.take(LAB, "intruder", ttl_s=2)
    assert not lease.lost.is_set()
    (info,) = other.list()
    assert info.renewed_at > info.taken_at + 2.0  # renewed after the first TTL had run out
    lease.release()
    assert other.list() == []


def test_a_reservation_nobody_renews_lapses_after_its_ttl(backend: Backend) -> None:
    store = backend.store()
    store.reserve(LAB, "alice@bench", "alice@bench (by hand)", ttl_s=2)
    with pytest.raises(LeaseHeld, match="alice@bench"):
        store.take(LAB, "run", ttl_s=2)
    assert store.take(LAB, "run", ttl_s=2, wait_s=20).first_user  # free once its TTL ran out


def test_shared_resource_counts_references_and_names_first_and_last_user(backend: Backend) -> None:
    switch = "switch:pc6248"
    a = backend.store().take(switch, "lab A run", ttl_s=2, shared=True)
    b = backend.store().take(switch, "lab B run", ttl_s=2, shared=True)
    assert (a.first_user, b.first_user) == (True, False)  # A powers the switch on
    (info,) = backend.store().list()
    assert (info.shared, info.refs, info.holders) == (True, 2, ("lab A run", "lab B run"))
    with pytest.raises(LeaseHeld):  # an exclusive taker is refused while any shared holder remains
        backend.store().take(switch, "maintenance", ttl_s=2)
    a.release()
    assert not a.last_user  # B still uses it: leave it on
    assert backend.store().list()[0].refs == 1
    b.release()
    assert b.last_user  # B powers it off
    assert backend.store().list() == []


def test_a_shared_taker_is_refused_while_the_resource_is_held_exclusively(backend: Backend) -> None:
    with (
        backend.store().take("array:unity-01", "firmware update", ttl_s=2),
        pytest.raises(LeaseHeld, match="firmware update"),
    ):
        backend.store().take("array:unity-01", "run", ttl_s=2, shared=True)


def test_a_killed_shared_holder_drops_only_its_own_reference(backend: Backend, holders) -> None:
    switch = "switch:pc6248"
    mine = backend.store().take(switch, "survivor", ttl_s=2, shared=True)
    h = holders(backend.spec, switch, name="doomed", ttl=1, hold=600, shared=True)
    h.wait_for("ready")
    assert h.wait_for("taken")["first_user"] == [False]
    assert backend.store().list()[0].refs == 2
    h.kill()
    store = backend.store()
    wait_until(lambda: store.list()[0].refs == 1, 20, "the killed holder's reference lapses")
    assert store.list()[0].holders == ("survivor",)
    assert not mine.lost.is_set()
    mine.release()
    assert mine.last_user


def test_take_all_is_all_or_none(backend: Backend) -> None:
    store = backend.store()
    blocker = backend.store().take("switch:pc6248", "another lab", ttl_s=2)
    wanted = ["lab:sim-2007", "switch:pc6248", "array:unity-01"]
    with pytest.raises(LeaseHeld, match="switch:pc6248 is leased by another lab"):
        store.take_all(wanted, "run", ttl_s=2)
    assert [i.resource for i in store.list()] == ["switch:pc6248"]  # the two it had taken went back
    blocker.release()
    leases = store.take_all(wanted, "run", ttl_s=2)
    assert [lease.resource for lease in leases] == sorted(wanted)
    assert {i.holder for i in store.list()} == {"run"} and len(store.list()) == 3
    for lease in leases:
        lease.release()
    assert store.list() == []


def test_two_take_all_in_opposite_orders_do_not_deadlock(backend: Backend, holders) -> None:
    a = holders(backend.spec, "lab:x", "switch:y", name="a", ttl=2, wait=60, hold=0.5, on_go=True)
    b = holders(backend.spec, "switch:y", "lab:x", name="b", ttl=2, wait=60, hold=0.5, on_go=True)
    for p in (a, b):
        p.wait_for("ready")
    a.go()
    b.go()
    # sorted order: both go for lab:x first, so neither holds one while waiting for the other's
    for p in (a, b):
        p.wait_for("taken")
    for p in (a, b):
        assert p.wait_for("released")["lost"] == [False, False]


def test_break_takes_a_lease_away_and_its_holder_sees_it_lost(backend: Backend) -> None:
    lease = backend.store().take(LAB, "stuck run", ttl_s=1)
    broken = backend.store().break_lease(LAB)
    assert broken is not None and broken.holder == "stuck run"
    newcomer = backend.store().take(LAB, "newcomer", ttl_s=2)
    assert lease.lost.wait(timeout=10), "the broken holder never noticed"
    with pytest.raises(LeaseLost, match="lease lost"):
        lease.raise_if_lost()
    lease.release()  # releasing a lost lease must not release the newcomer's
    assert [i.holder for i in backend.store().list()] == ["newcomer"]
    assert not lease.last_user
    newcomer.release()
    assert backend.store().break_lease(LAB) is None


def test_reservation_is_extended_by_its_owner_refused_to_others_and_released(backend: Backend) -> None:
    store = backend.store()
    first = store.reserve(LAB, "alice@bench", "alice@bench (by hand: firmware)", ttl_s=60)
    time.sleep(0.05)
    again = store.reserve(LAB, "alice@bench", "alice@bench (by hand: firmware)", ttl_s=120)
    assert again.taken_at == first.taken_at and again.ttl_s == 120 and again.refs == 1
    with pytest.raises(LeaseHeld, match=r"alice@bench \(by hand: firmware\)"):
        store.reserve(LAB, "bob@bench", "bob@bench (by hand)", ttl_s=60)
    with pytest.raises(BadInputError, match="not reserved by bob@bench"):
        store.unreserve(LAB, "bob@bench")
    assert store.unreserve(LAB, "alice@bench") is None
    assert store.list() == []
    with pytest.raises(BadInputError, match="is not leased"):
        store.unreserve(LAB, "alice@bench")


def test_release_is_idempotent_and_a_context_manager_releases(backend: Backend) -> None:
    store = backend.store()
    with store.take(LAB, "run", ttl_s=2) as lease:
        assert [i.holder for i in store.list()] == ["run"]
    assert lease.released and lease.last_user and store.list() == []
    lease.release()
    lease.release()
    assert store.list() == []


def test_close_releases_what_the_store_still_holds(backend: Backend) -> None:
    store = backend.make()
    store.take(LAB, "forgetful run", ttl_s=2)
    store.close()
    assert backend.store().list() == []


@pytest.mark.parametrize(
    "resource",
    [
        "sim-2007",
        "lab:",
        "lab:a..b",
        "lab:a/",
        "LAB:x",
        "lab:a b",
        "lab:a;rm",
        "lab:$(x)",
        "lab:x\n",
        "lab:" + "a" * 300,
    ],
)
def test_bad_resource_names_are_refused_in_one_line(backend: Backend, resource: str) -> None:
    with pytest.raises(BadInputError, match="is not kind:name") as err:
        backend.store().take(resource, "run")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("ttl_s", [0, 0.5, -1, float("nan"), float("inf"), 8 * 24 * 3600])
def test_ttls_out_of_range_are_refused(backend: Backend, ttl_s: float) -> None:
    with pytest.raises(BadInputError, match="lease TTL"):
        backend.store().take(LAB, "run", ttl_s=ttl_s)


def test_the_owner_of_a_reservation_takes_under_it_and_nobody_else_does(backend: Backend) -> None:
    store = backend.store()
    store.reserve(LAB, "alice@bench", "alice@bench (by hand: firmware)", ttl_s=60)
    with pytest.raises(LeaseHeld, match=r"leased by alice@bench \(by hand: firmware\)"):
        store.take(LAB, "bob's run", owner="bob@bench")
    with store.take(LAB, "alice's run", owner="alice@bench") as run:
        (info,) = store.list()
        assert info.refs == 2 and info.reserved_by == ("alice@bench",) and not info.shared
        with pytest.raises(LeaseHeld, match="leased by alice"):  # her own second run waits its turn
            store.take(LAB, "alice's second run", owner="alice@bench")
        with pytest.raises(LeaseHeld):  # under an exclusive reservation, no shared taker joins
            store.take(LAB, "shared run", owner="carol@bench", shared=True)
        assert not run.lost.is_set()
    (info,) = store.list()
    assert (info.refs, info.holder) == (1, "alice@bench (by hand: firmware)")  # the reservation stays

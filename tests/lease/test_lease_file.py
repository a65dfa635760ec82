"""The single-machine backend: a dead holder's lease goes as soon as its pid does (long before its
TTL), a reused pid is not mistaken for the holder, a damaged record is named and breakable, many
threads and processes taking at once never share a lease, and the folder follows $LABCTL_LEASE_DIR."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from labctl.lab.lease import LEASE_DIR_VAR, LeaseHeld, default_lease_dir, open_lease_store
from labctl.lab.lease.file import FileLeaseStore
from labctl.lab.lease.record import LeaseRef, LeaseStoreError, process_start_ticks

LAB = "lab:sim-2007"


def test_a_killed_holder_lets_go_at_once_not_a_ttl_later(tmp_path: Path, holders, file_stores) -> None:
    h = holders(f"file:{tmp_path}", LAB, name="doomed", ttl=600, hold=600)
    h.wait_for("ready")
    h.wait_for("taken")
    store = file_stores()
    with pytest.raises(LeaseHeld, match="holder doomed"):
        store.take(LAB, "next run")
    h.kill()
    lease = store.take(LAB, "next run", wait_s=0)  # no waiting: a ten-minute TTL had not run out
    assert lease.first_user
    lease.release()


def test_a_reused_pid_is_not_mistaken_for_the_holder(file_stores) -> None:
    store = file_stores()
    me = os.getpid()
    live = LeaseRef(token="t", holder="h", holder_pid=me, pid_start=process_start_ticks(me),
                    holder_host=store._host, taken_at=0, renewed_at=9e9, ttl_s=60)  # fmt: skip
    assert store._ref_live(live, now=9e9)
    reused = live.model_copy(update={"pid_start": (live.pid_start or 0) + 1})  # same pid, other start
    assert not store._ref_live(reused, now=9e9)
    elsewhere = reused.model_copy(update={"holder_host": "another-host"})  # not ours to judge: TTL only
    assert store._ref_live(elsewhere, now=9e9)
    assert not store._ref_live(elsewhere, now=9e9 + 61)


def test_a_damaged_record_is_named_and_break_removes_it(tmp_path: Path, file_stores) -> None:
    store = file_stores()
    store.take(LAB, "run", ttl_s=60).release()
    store.take(LAB, "run", ttl_s=60)
    (path,) = tmp_path.glob("*.lease.json")
    path.write_text('{"resource": "lab:sim-2007", "refs": [{"token": 1')
    with pytest.raises(LeaseStoreError) as err:
        file_stores().take(LAB, "other")
    assert str(err.value).startswith(f"{path}: unreadable lease record (")
    assert "labctl lease break" in str(err.value)
    assert file_stores().list() == []  # listed as nothing, with a warning
    assert file_stores().break_lease(LAB) is None
    assert not path.exists()
    assert file_stores().take(LAB, "other").first_user


def test_many_threads_taking_at_once_get_exactly_one_lease(file_stores) -> None:
    store = file_stores()
    barrier = threading.Barrier(8)
    won: list[str] = []
    refused: list[str] = []

    def attempt(i: int) -> None:
        barrier.wait(timeout=10)
        try:
            store.take(LAB, f"thread {i}", ttl_s=30)
            won.append(f"thread {i}")
        except LeaseHeld as exc:
            refused.append(exc.info.holder)

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(won) == 1 and len(refused) == 7
    assert set(refused) == set(won)
    store.close()


def test_the_lease_folder_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LABCTL_HUB", raising=False)
    monkeypatch.setenv(LEASE_DIR_VAR, str(tmp_path / "elsewhere"))
    assert default_lease_dir() == tmp_path / "elsewhere"
    store = open_lease_store()
    store.close()
    assert isinstance(store, FileLeaseStore) and store.where == str(tmp_path / "elsewhere")
    monkeypatch.delenv(LEASE_DIR_VAR)
    assert default_lease_dir().parts[-2:] == (".labctl", "leases")


def test_an_unwritable_lease_folder_is_one_line_with_the_fix(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(LeaseStoreError, match=r"cannot create the lease folder .*LABCTL_LEASE_DIR"):
        FileLeaseStore(blocker / "leases")


def test_lease_resource_builds_checked_names() -> None:
    from labctl.errors import BadInputError
    from labctl.lab.lease import lease_resource

    assert lease_resource("lab", "sim-2007") == "lab:sim-2007"
    assert lease_resource("group", "sim-2007", "first-25") == "group:sim-2007/first-25"
    with pytest.raises(BadInputError, match="is not kind:name"):
        lease_resource("group", "sim-2007", 'first"25')

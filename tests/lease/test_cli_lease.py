"""`labctl lease list|take|release|break`: reserving a lab from the shell, seeing who holds what and
for how long, being refused in one line by a run's lease, and the same against a NATS hub."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from labctl.agents.nats_server import NatsServer
from labctl.cli import cli
from labctl.cli.common import run_cli
from labctl.lab.lease import this_host, this_user
from labctl.lab.lease.file import FileLeaseStore
from tests.nats_server import unique_bucket

ME = f"{this_user()}@{this_host()}"


@pytest.fixture
def lease_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("LABCTL_HUB", raising=False)
    monkeypatch.setenv("LABCTL_LEASE_DIR", str(tmp_path / "leases"))
    monkeypatch.setenv("COLUMNS", "200")
    return tmp_path / "leases"


@pytest.fixture
def labctl(capsys: pytest.CaptureFixture[str]):
    def run(*args: str) -> tuple[int, str, str]:
        code = run_cli(cli, ["lease", *args])
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def listed(labctl) -> list[dict]:
    code, out, err = labctl("list", "--json")
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines()]


def test_reserve_list_extend_and_release_a_lab_from_the_shell(lease_dir: Path, labctl) -> None:
    code, out, err = labctl("take", "sim-2007", "--ttl", "8h", "--note", "firmware update")
    assert code == 0, err
    assert out.startswith(f"leased lab:sim-2007 to {ME} until ")
    assert "`labctl lease release lab:sim-2007`" in out
    (row,) = listed(labctl)
    assert row["resource"] == "lab:sim-2007" and row["ttl_s"] == 8 * 3600
    assert row["holder"] == f"{ME} (by hand: firmware update)" and row["holder_pid"] is None
    code, out, _ = labctl("list")
    assert out.startswith(f"leases in {lease_dir}:\n")
    (line,) = [x for x in out.splitlines() if x.startswith("lab:sim-2007")]
    assert f"{ME} (by hand: firmware update)" in line and line.rstrip().endswith("8 h")  # the TTL
    # the command's process has exited: the reservation is still there; taking it again extends it
    code, _, err = labctl("take", "lab:sim-2007", "--ttl", "1h30m")
    assert code == 0, err
    (again,) = listed(labctl)
    assert again["ttl_s"] == 5400 and again["taken_at"] == row["taken_at"]
    code, out, err = labctl("release", "sim-2007")
    assert (code, out.strip()) == (0, "released lab:sim-2007"), err
    assert listed(labctl) == []
    code, _, err = labctl("release", "sim-2007")
    assert code == 2 and "lab:sim-2007 is not leased" in err


def test_a_runs_lease_refuses_a_reservation_in_one_line_naming_the_run(lease_dir: Path, labctl) -> None:
    with (
        FileLeaseStore(lease_dir) as store,
        store.take("lab:sim-2007", "ci@runner pid 4242 (labctl run boot_storm)", ttl_s=30),
    ):
        code, out, err = labctl("take", "sim-2007")
        assert code == 2 and out == ""
        assert err.count("\n") == 1
        assert err.startswith("error: lab:sim-2007 is leased by ci@runner pid 4242 (labctl run boot_storm) (")
        # the time it has left (a run's: renewed while it lives), and the flag that waits for it
        assert " left, renewed while its run lives)" in err and "(wait for it with --wait S," in err
        code, _, err = labctl("release", "sim-2007")  # not ours to release
        assert code == 2 and "not reserved by" in err and "labctl lease break lab:sim-2007" in err
        code, out, err = labctl("break", "lab:sim-2007")
        assert code == 0, err
        assert out.startswith("broke the lease of lab:sim-2007: held by ci@runner pid 4242")
        assert listed(labctl) == []


def test_shared_reservations_show_every_holder(lease_dir: Path, labctl) -> None:
    with FileLeaseStore(lease_dir) as store:
        store.take("switch:pc6248", "lab A run", ttl_s=30, shared=True)
        code, out, err = labctl("take", "switch:pc6248", "--shared", "--ttl", "10m")
        assert code == 0, err
        assert "(shared with 1 other holder(s))" in out
        code, out, _ = labctl("list")
        assert "switch:pc6248 (shared)" in out and "2 holders: lab A run;" in out
        code, out, _ = labctl("release", "switch:pc6248")
        assert out.strip() == "released switch:pc6248 (still held by lab A run)"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["take", "lab:a b"], "is not kind:name"),
        (["take", "sim-2007", "--ttl", "3 weeks"], "is not a duration"),
        (["take", "sim-2007", "--ttl", "8d"], "lease TTL 691200.0 s is out of range"),
        (["take", "sim-2007", "--ttl", "0s"], "out of range"),
        (["break", "lab:$(reboot)"], "is not kind:name"),
    ],
)
def test_bad_input_exits_2_with_one_line(lease_dir: Path, labctl, args: list[str], message: str) -> None:
    code, _, err = labctl(*args)
    assert code == 2 and message in err


def test_break_of_a_free_resource_says_so(lease_dir: Path, labctl) -> None:
    code, out, _ = labctl("break", "sim-2007")
    assert (code, out.strip()) == (0, "lab:sim-2007 was not leased")


def test_the_same_commands_against_a_nats_hub(
    lease_dir: Path, labctl, shared_nats_hub: NatsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket = unique_bucket()
    monkeypatch.setenv("LABCTL_LEASE_BUCKET", bucket)
    code, out, err = labctl("take", "sim-2007", "--hub", shared_nats_hub.url, "--ttl", "2h")
    assert code == 0, err
    assert not lease_dir.exists() or not list(lease_dir.iterdir())  # on the hub, not in this machine's folder
    monkeypatch.setenv("LABCTL_HUB", shared_nats_hub.url)
    (row,) = listed(labctl)
    assert row["holder"] == f"{ME} (by hand)" and row["ttl_s"] == 7200
    code, out, _ = labctl("list")
    assert out.startswith(f"leases in {shared_nats_hub.url} bucket {bucket}:")
    code, out, err = labctl("release", "sim-2007")
    assert code == 0, err
    assert listed(labctl) == []


def test_the_owner_of_a_reservation_goes_ahead_under_it_and_others_are_refused(
    lease_dir: Path, labctl
) -> None:
    from labctl.cli.nightly import _check_lease
    from labctl.inventory import load_lab
    from labctl.lab.lease import LeaseHeld, holder_description, lease_store_for
    from labctl.lab.lease.guard import check_not_leased

    code, _, err = labctl("take", "sim-2007", "--ttl", "1h", "--note", "firmware")
    assert code == 0, err
    lab = load_lab()
    # what a run (the pytest plugin) and nightly do: take the lab's lease from the lab's store
    with (
        lease_store_for(lab) as store,
        store.take("lab:sim-2007", holder_description("labctl run boot_storm")),
    ):
        check_not_leased(lab, list(lab.machines.values())[:1], "power on")  # and `labctl power`
        (row,) = listed(labctl)
        assert row["refs"] == 2 and row["reserved_by"] == [ME]  # the run holds it under the reservation
    _check_lease(lab, 0.0)  # the nightly's look before it runs: free for its owner
    (row,) = listed(labctl)
    assert row["refs"] == 1 and row["holder"] == f"{ME} (by hand: firmware)"  # the reservation stays
    code, _, _ = labctl("release", "sim-2007")
    # someone else's reservation refuses the run, naming the run's own wait flag and the time left
    with FileLeaseStore(lease_dir) as other:
        other.reserve("lab:sim-2007", "ann@rig-7", "ann@rig-7 (by hand: cabling)", ttl_s=1800)
        with lease_store_for(lab) as store, pytest.raises(LeaseHeld) as refused:
            store.take("lab:sim-2007", holder_description("labctl run boot_storm"))
    message = str(refused.value)
    assert message.startswith("lab:sim-2007 is leased by ann@rig-7 (by hand: cabling) (")
    assert re.search(r" \((30 min|29 min \d+ s) left\) \(wait for it with --lease-wait S,", message), message


def test_extending_a_reservation_keeps_its_note_unless_a_new_one_is_given(lease_dir: Path, labctl) -> None:
    assert labctl("take", "sim-2007", "--note", "firmware update")[0] == 0
    assert labctl("take", "sim-2007", "--ttl", "2h")[0] == 0
    (row,) = listed(labctl)
    assert row["holder"] == f"{ME} (by hand: firmware update)" and row["ttl_s"] == 7200
    assert labctl("take", "sim-2007", "--note", "cabling")[0] == 0
    (row,) = listed(labctl)
    assert row["holder"] == f"{ME} (by hand: cabling)"


def test_unknown_lab_names_are_refused(lease_dir: Path, labctl) -> None:
    for resource in ("sim-2008", "group:sim-2008/first-25"):
        code, out, err = labctl("take", resource)
        assert code == 2 and out == "" and err.count("\n") == 1
        assert "no lab named 'sim-2008' (known: " in err and "sim-2007" in err and "--lab FILE" in err
    assert listed(labctl) == []
    assert labctl("take", "switch:pc6248")[0] == 0  # other kinds name no lab


HOSTILE = "\x1b[2J\x1b]0;owned\x07\x1b[31m[red]x[/red]\x1b[0m\r\nrm -rf /\t\x07" + "y" * 500


def test_lease_notes_are_made_safe_before_they_are_stored_or_printed(lease_dir: Path, labctl) -> None:
    code, out, err = labctl("take", "sim-2007", "--note", HOSTILE)
    assert code == 0, err
    (row,) = listed(labctl)
    stored = row["holder"]
    assert "\x1b" not in stored and "\x07" not in stored and "\n" not in stored and "\r" not in stored
    assert stored.startswith(f"{ME} (by hand: [red]x[/red] rm -rf / yyy") and len(stored) <= 260
    with FileLeaseStore(lease_dir) as store:  # a note another tool wrote raw into the store
        store.reserve("switch:pc6248", "ann@rig-7", f"ann@rig-7 (by hand: {HOSTILE})", ttl_s=60)
    code, out, err = labctl("list")
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out
    assert "[red]x[/red]" in out  # shown as written, never taken as markup
    code, out, err = labctl("break", "switch:pc6248")
    assert code == 0 and "\x1b" not in out and "\x07" not in out

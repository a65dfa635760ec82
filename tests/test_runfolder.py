"""Run folders: metadata at start and end, the resolved inventory, redaction, atomic writes."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from labctl import __version__
from labctl.inventory import credentials, load_lab
from labctl.inventory.load import default_lab_file
from labctl.inventory.model import Lab
from labctl.recorder import runfolder
from labctl.recorder.redact import MASK, Redactor
from labctl.recorder.runfolder import RESOLVED_INVENTORY_FILE, RUN_FILE, RunFolder, make_run_id

ROOT = Path(__file__).resolve().parents[1]

SECRETS = {  # what a secrets file for the simulated lab holds
    "sim.client_password": "Cl1ent-Pw-7781",
    "sim.server_password": "Srv-Pw-99120",
    "sim.bmc_password": "Bmc-Calvin-4471",
    "sim.vcenter_password": "Vc-Pw-55310",
}
ENV_SECRET = "Unity-Env-Pw-30771"  # the Unity password, through an env: reference


@pytest.fixture
def lab_with_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Lab:
    """sim-2007 with the Unity password as env:LABCTL_TEST_UNITY_PW and the rest in a secrets file."""
    secrets_file = tmp_path / "secrets.yaml"
    secrets_file.write_text(yaml.safe_dump(SECRETS))
    monkeypatch.setenv(credentials.SECRETS_FILE_VAR, str(secrets_file))
    monkeypatch.setenv("LABCTL_TEST_UNITY_PW", ENV_SECRET)
    text = default_lab_file().read_text().replace('"secret:sim.unity_password"', "env:LABCTL_TEST_UNITY_PW")
    lab_file = tmp_path / "lab.yaml"
    lab_file.write_text(text)
    return load_lab(lab_file)


def read_run(run: RunFolder) -> dict[str, Any]:
    return json.loads((run.path / RUN_FILE).read_text())


def test_run_id_is_sortable_by_start_time_and_names_the_plan() -> None:
    a = make_run_id("Boot Storm/quick", when=datetime(2026, 12, 31, 23, 59, 59).timestamp())
    b = make_run_id("boot_storm", when=datetime(2027, 1, 1, 0, 0, 1).timestamp())
    assert re.fullmatch(r"\d{8}-\d{6}-boot_storm_quick-[0-9a-f]{4}", a)
    assert a < b


def test_create_writes_run_json_with_what_ran_on_what(tmp_path: Path) -> None:
    lab = load_lab(default_lab_file())
    run = RunFolder.create(tmp_path / "results", lab, "boot_storm", {"group_sizes": [1, 5]})
    assert run.path.parent == tmp_path / "results"
    assert re.fullmatch(r"\d{8}-\d{6}-boot_storm-[0-9a-f]{4}", run.path.name)
    info = read_run(run)
    assert info["run_id"] == run.path.name
    assert info["outcome"] == "running" and info["ended"] is None
    assert info["plan"] == "boot_storm" and info["parameters"] == {"group_sizes": [1, 5]}
    assert info["lab"] == "sim-2007" and info["configuration"] == "standalone"
    assert info["inventory_file"] == str(default_lab_file())
    assert info["inventory_sha256"] == hashlib.sha256(default_lab_file().read_bytes()).hexdigest()
    assert info["labctl_version"] == __version__
    assert info["time_scale"] == 60 and info["simulated"] is True
    started = datetime.fromisoformat(info["started"]["wall_utc"])
    assert abs(started.timestamp() - datetime.now().timestamp()) < 60
    assert info["started"]["lab_time"].endswith("Z") and info["started"]["lab_ts"] > 0
    lab_time = datetime.fromisoformat(info["started"]["lab_time"]).timestamp()
    assert lab_time == pytest.approx(info["started"]["lab_ts"], abs=1e-6)  # the same instant


def test_a_stamps_lab_time_and_lab_ts_name_the_same_millisecond() -> None:
    class Clock:
        def now(self) -> float:
            return 1194256805.0006  # rounds up to .001; truncating would say .000

    stamp = runfolder.Stamp.now(Clock())  # type: ignore[arg-type]
    assert stamp.lab_ts == 1194256805.001 and stamp.lab_time == "2007-11-05T10:00:05.001Z"


@pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs a git checkout"
)
def test_run_json_records_the_project_commit(tmp_path: Path) -> None:
    runfolder.git_state.cache_clear()
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    run = RunFolder.create(tmp_path, load_lab(), "x", {})
    assert read_run(run)["git_commit"] == head.stdout.strip()
    assert isinstance(read_run(run)["git_dirty"], bool)


def test_finish_records_end_and_outcome_once(tmp_path: Path) -> None:
    run = RunFolder.create(tmp_path, load_lab(), "boot_storm", {})
    run.finish("failed")
    info = read_run(run)
    assert info["outcome"] == "failed"
    assert info["ended"]["wall_utc"] >= info["started"]["wall_utc"]
    assert info["ended"]["lab_ts"] >= info["started"]["lab_ts"]
    assert info["duration_s"] >= 0
    run.finish("passed")  # e.g. a second hook: the first outcome stands
    assert read_run(run)["outcome"] == "failed"
    assert RunFolder.open(run.path).info.outcome.value == "failed"


def test_finish_refuses_an_unknown_outcome(tmp_path: Path) -> None:
    run = RunFolder.create(tmp_path, load_lab(), "boot_storm", {})
    with pytest.raises(ValueError):
        run.finish("great")
    assert read_run(run)["outcome"] == "running"


def test_resolved_inventory_expands_every_machine_and_keeps_references(tmp_path: Path) -> None:
    run = RunFolder.create(tmp_path, load_lab(configuration="ha"), "x", {})
    resolved = yaml.safe_load((run.path / RESOLVED_INVENTORY_FILE).read_text())
    machines = resolved["machines"]
    assert len([m for m in machines.values() if m["kind"] == "client"]) == 100
    assert machines["optiplex-100"]["ip"] == "127.20.1.100"
    assert machines["nas-01"]["server_hardware"]["volumes"][1]["disks"] == 8
    assert machines["pvs-01"]["bmc"]["password"] == "secret:sim.bmc_password"
    assert resolved["configuration"]["name"] == "ha"


def test_nothing_in_the_run_folder_holds_a_secret_value(tmp_path: Path, lab_with_secrets: Lab) -> None:
    run = RunFolder.create(
        tmp_path / "results",
        lab_with_secrets,
        "boot_storm",
        {"note": f"logged in with {SECRETS['sim.bmc_password']}"},
    )
    # what writers do: error text, device answers, parameters, URLs with credentials
    run.write_text(
        "error.log", f"auth failed for root:{SECRETS['sim.bmc_password']} at pvs-01\n{ENV_SECRET}\n"
    )
    run.write_json(
        "detail.json",
        {"vcenter": {"password": SECRETS["sim.vcenter_password"]}, "url": "https://admin:whatever@10.0.0.1/"},
    )
    run.annotate(bmc_answer=f"session token for {SECRETS['sim.server_password']}")
    run.finish("passed")
    assert MASK in (run.path / "error.log").read_text()  # the writes happened, masked
    assert "whatever" not in (run.path / "detail.json").read_text()
    for value in [*SECRETS.values(), ENV_SECRET]:
        found = subprocess.run(["grep", "-r", "-F", value, str(tmp_path / "results")], capture_output=True)
        assert found.returncode == 1, f"{value!r} found: {found.stdout.decode()}"


def test_writes_are_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = RunFolder.create(tmp_path, load_lab(), "x", {})
    run.write_text("notes.txt", "first\n")

    def crash(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        run.write_text("notes.txt", "second\n")
    assert (run.path / "notes.txt").read_text() == "first\n"  # never half a file
    assert sorted(p.name for p in run.path.iterdir()) == ["inventory.resolved.yaml", "notes.txt", "run.json"]


def test_files_cannot_escape_the_run_folder(tmp_path: Path) -> None:
    run = RunFolder.create(tmp_path / "results", load_lab(), "x", {})
    with pytest.raises(ValueError):
        run.write_text("../outside.txt", "x")
    run.write_text("cells/boot_storm-001/summary.txt", "ok")
    assert (run.path / "cells" / "boot_storm-001" / "summary.txt").read_text() == "ok"


# --- the redactor ---------------------------------------------------------------------------------


def test_redactor_masks_longest_secret_first_and_passwords_in_urls() -> None:
    r = Redactor(["abcd", "abcdefgh"])
    assert r.text("x abcdefgh y abcd z") == "x *** y *** z"
    assert r.text("https://root:calvin@10.0.0.1:443/redfish") == "https://root:***@10.0.0.1:443/redfish"
    assert r.text("nothing to hide") == "nothing to hide"


def test_redactor_obj_masks_values_and_keys_but_keeps_references_and_numbers() -> None:
    r = Redactor(["s3cret-value"])
    data = {
        "password": "typed-in-plain",
        "bmc_password": "env:BMC_PASSWORD",
        "api_key": "k-123",
        "s3cret-value": [1, 2.5, None, True, "a s3cret-value b"],
        "criteria": {"pass": "< 20 ms", "fail": ">= 30 ms"},
    }
    assert r.obj(data) == {
        "password": MASK,
        "bmc_password": "env:BMC_PASSWORD",
        "api_key": MASK,
        MASK: [1, 2.5, None, True, f"a {MASK} b"],
        "criteria": {"pass": "< 20 ms", "fail": ">= 30 ms"},
    }


def test_redactor_from_lab_knows_env_and_secrets_file_values(lab_with_secrets: Lab) -> None:
    r = Redactor.from_lab(lab_with_secrets)
    text = " ".join([*SECRETS.values(), ENV_SECRET])
    assert r.text(text) == " ".join([MASK] * (len(SECRETS) + 1))


def test_redactor_learns_secrets_added_later() -> None:
    r = Redactor()
    assert r.text("generated-pw-1") == "generated-pw-1"
    r.add("generated-pw-1")
    assert r.text("generated-pw-1") == MASK

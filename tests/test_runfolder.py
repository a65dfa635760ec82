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

    stamp = runfolder.stamp_now(Clock())  # type: ignore[arg-type]
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


# --- the typed run record on disk ------------------------------------------------------------------


def test_run_json_reads_back_through_the_model_with_reason_and_cells(tmp_path: Path) -> None:
    from labctl.recorder.runfolder import read_run_info
    from labctl.records.run_record import RunOutcome

    run = RunFolder.create(tmp_path, load_lab(), "boot_storm", {})
    run.add_cell("boot_storm-standalone-001")
    run.add_cell("boot_storm-standalone-001")  # once
    info = run.finish(RunOutcome.FAILED, "boot_storm-standalone-001: queue: mean 24 outside\nsecond line")
    assert info.reason == "boot_storm-standalone-001: queue: mean 24 outside"  # one line
    back = read_run_info(run.path)
    assert back == info and back is not None and back.cells == ["boot_storm-standalone-001"]
    assert RunFolder.open(run.path).info == info
    other = info.model_copy(update={"run_id": "20070101-000000-x-0000"})
    with pytest.raises(ValueError, match="handed to the run folder"):
        run.set_info(other)


def test_a_format_1_run_json_and_a_torn_folder_still_read(tmp_path: Path) -> None:
    from labctl.recorder.runfolder import BadRunFolder, read_run_info

    old = tmp_path / "20071105-100000-boot_storm-0001"
    old.mkdir()
    stamp = {
        "wall_utc": "2007-11-05T10:00:00.000Z",
        "lab_time": "2007-11-05T10:00:00.000Z",
        "lab_ts": 1194256800.0,
    }
    v1 = {
        "run_id": old.name,
        "plan": "boot_storm",
        "parameters": {},
        "lab": "sim-2007",
        "configuration": None,
        "inventory_file": "/x.yaml",
        "inventory_sha256": "0" * 64,
        "simulated": True,
        "time_scale": 60,
        "labctl_version": "0.1.0",
        "git_commit": None,
        "git_dirty": None,
        "host": "h",
        "python": "3.11",
        "started": stamp,
        "ended": None,
        "duration_s": None,
        "outcome": "running",
        "extra": {},
        "format": 1,
        "something_old": 1,
    }
    (old / "run.json").write_text(json.dumps(v1))
    info = RunFolder.open(old).info
    assert info.format == 1 and info.outcome.value == "running" and info.cells == []
    assert read_run_info(tmp_path / "nowhere") is None  # a folder without run.json
    (old / "run.json").write_text('{"run_id": "x", "plan"')  # torn by hand (labctl never writes half)
    assert read_run_info(old) is None
    with pytest.raises(BadRunFolder, match=r"run\.json: not JSON"):
        RunFolder.open(old)


def test_cell_files_read_typed_upgrade_format_1_and_skip_what_is_torn(tmp_path: Path) -> None:
    from labctl.recorder.atomic import write_json_atomic
    from labctl.recorder.cell_files import read_cell_summaries, read_cell_verdicts, write_cell_files
    from labctl.records.run_record import CellRecord, CellSummary, ClientOutcome, Outcome, Window

    typed = CellSummary(
        cell="boot_storm-standalone-050",
        plan="boot_storm",
        scenario="boot_storm",
        configuration="standalone",
        parameters={"group_size": 50},
        outcome=Outcome.MARGINAL,
        reason="CPU peak 100 %",
        window=Window(start_ts_s=10.0, end_ts_s=370.0),
        entities={"streaming_server": "pvs-01", "write_cache_disk": "pvs-01/D:"},
        clients={
            "optiplex-001": ClientOutcome(name="optiplex-001", outcome="ready", boot_time_s=31.0, retries=2)
        },
        extra={"wake_spread_s": 0.2},
    )
    write_cell_files(tmp_path, CellRecord(summary=typed))
    write_json_atomic(  # a format-1 summary, as labctl wrote them before the typed record
        tmp_path / "cells" / "boot_storm-standalone-005" / "summary.json",
        {
            "cell": "boot_storm-standalone-005",
            "plan": "boot_storm",
            "scenario": "boot_storm",
            "configuration": "standalone",
            "group_size": 5,
            "storm_start_ts_s": 100.0,
            "window_s": 360,
            "server": "pvs-01",
            "write_cache_disk": "pvs-01/D:",
            "clients": {
                "optiplex-001": {"boot_time_s": 30.0, "retries": 3, "ready": True},
                "optiplex-002": {"ready": False},
            },
            "metrics": {
                "typeperf/pvs-01/D:/disk_queue_len": {
                    "unit": "requests",
                    "samples": 72,
                    "peak": 9.0,
                    "mean": 3.0,
                }
            },
        },
    )
    (tmp_path / "cells" / "boot_storm-standalone-005" / "verdicts.json").write_text(
        json.dumps(
            {
                "cell": "boot_storm-standalone-005",
                "outcome": "lab_fault",
                "criteria": [
                    {
                        "name": "boot",
                        "outcome": "lab_fault",
                        "statistic": "last",
                        "selector": "result/*/boot_time_s",
                        "window": [100.0, 460.0],
                        "missing": ["optiplex-002"],
                        "entities": [],
                        "series": [],
                        "message": "m",
                    }
                ],
            }
        )
    )
    (tmp_path / "cells" / "boot_storm-standalone-075").mkdir()  # killed before its summary
    torn = tmp_path / "cells" / "boot_storm-standalone-100"
    torn.mkdir()
    (torn / "summary.json").write_text('{"format": 2, "cell": "boot_storm-standalone-100", "plan"')
    summaries = read_cell_summaries(tmp_path)
    assert list(summaries) == ["boot_storm-standalone-005", "boot_storm-standalone-050"]
    assert summaries["boot_storm-standalone-050"] == typed
    old = summaries["boot_storm-standalone-005"]
    assert old.format == 1 and old.outcome is Outcome.LAB_FAULT  # from its verdicts: format 1 had no other
    assert old.parameters == {"group_size": 5} and old.window == Window(start_ts_s=100.0, end_ts_s=460.0)
    assert old.entities == {"streaming_server": "pvs-01", "write_cache_disk": "pvs-01/D:"}
    assert old.never_booted() == ["optiplex-002"] and old.clients["optiplex-001"].retries == 3
    assert old.metric("typeperf", "pvs-01/D:", "disk_queue_len").mean == 3.0  # type: ignore[union-attr]
    verdicts = read_cell_verdicts(tmp_path)
    assert verdicts["boot_storm-standalone-005"].criteria[0].missing == ["optiplex-002"]

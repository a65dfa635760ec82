"""The nightly as a library (:func:`labctl.cli.nightly.run_night`), called as a scheduler would:
a night judged against a real PostgreSQL store, and the same night when PostgreSQL goes away after
the night started (stopped by its pid): the summary the docs promise, the store named, exit 3."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from labctl.cli.nightly import NightLabFault, NightRequest, run_night
from labctl.report.summary_text import Verdict
from tests.nightly.nights import make_run
from tests.store.postgres_server import pg_bin, postgres_server

pytestmark = pytest.mark.skipif(pg_bin() is None, reason="PostgreSQL server binaries not installed")


def test_a_night_that_loses_postgresql_ends_with_its_summary_and_exit_3(tmp_path: Path) -> None:
    results = tmp_path / "results"
    run = make_run(results, seed=1, night=1)
    stages: list[str] = []
    with contextlib.ExitStack() as server:
        dsn = server.enter_context(postgres_server(tmp_path))

        def stage(name: str) -> None:
            stages.append(name)
            if name == "judging":
                server.close()  # PostgreSQL stopped by its pid, mid-night

        result = run_night(
            NightRequest(existing_run=run.name, store_url=dsn, results_dir=results, report=False),
            on_stage=stage,
        )
    assert stages == ["store checked", "ran", "judging", "judged"]
    assert result.exit_code == 3 and result.run_dir == run.resolve()
    assert result.verdict is not None and result.verdict.verdict is Verdict.LAB_FAULT
    assert "(store)" in result.verdict.lab_faults and "127.0.0.1" in result.verdict.lab_faults["(store)"]
    assert result.summary == (run / "nightly.txt").read_text() and "LAB FAULT" in result.summary
    assert "(store)" in result.summary and (run / "nightly.md").is_file()
    assert any(f"labctl runs import {run.resolve()}" in n for n in result.notes)
    nightly = json.loads((run / "run.json").read_text())["extra"]["nightly"]
    assert nightly["exit_code"] == 3 and nightly["verdict"] == "lab_fault"


def test_a_store_that_never_answers_is_a_lab_fault_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(NightLabFault, match="nothing was run") as err:
        run_night(NightRequest(store_url="postgresql://labctl@127.0.0.1:1/none", results_dir=tmp_path))
    assert err.value.exit_code == 3

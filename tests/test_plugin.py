"""The pytest plugin, exercised through pytester: it is loaded by the pytest11 entry point."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from labctl.inventory.load import default_lab_file

pytest_plugins = ["pytester"]
PLANS = Path(__file__).resolve().parents[1] / "testplans" / "criteria"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LABCTL_LAB", "LABCTL_CONFIG", "LABCTL_RESULTS"):
        monkeypatch.delenv(var, raising=False)


def runs(results: Path) -> list[dict[str, Any]]:
    """The run.json of every run folder under ``results``."""
    if not results.exists():
        return []
    return [json.loads((p / "run.json").read_text()) for p in sorted(results.iterdir()) if p.is_dir()]


def test_lab_fixture_loads_the_simulated_lab_by_default(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_lab(lab):
            assert lab.name == "sim-2007"
            assert len(lab.clients) == 100
            assert lab.configuration.name == "standalone"
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)


def test_lab_and_configuration_from_options(pytester: pytest.Pytester) -> None:
    lab_file = pytester.path / "mylab.yaml"
    lab_file.write_text(default_lab_file().read_text().replace("name: sim-2007", "name: my-lab"))
    pytester.makepyfile(
        """
        def test_lab(lab):
            assert lab.name == "my-lab"
            assert lab.configuration.name == "ha"
        """
    )
    pytester.runpytest("--lab", "mylab.yaml", "--lab-config", "ha").assert_outcomes(passed=1)


def test_lab_from_environment_and_from_ini_file_relative_to_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    (pytester.path / "labs").mkdir()
    for name in ("env-lab", "ini-lab"):
        text = default_lab_file().read_text().replace("name: sim-2007", f"name: {name}")
        (pytester.path / "labs" / f"{name}.yaml").write_text(text)
    pytester.makeini("[pytest]\nlabctl_lab = labs/ini-lab.yaml\nlabctl_lab_config = ha\n")
    pytester.makepyfile(
        """
        import os
        def test_lab(lab):
            assert lab.name == os.environ.get("EXPECT", "ini-lab")
            assert lab.configuration.name == "ha"
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)
    monkeypatch.setenv("LABCTL_LAB", str(pytester.path / "labs" / "env-lab.yaml"))
    monkeypatch.setenv("EXPECT", "env-lab")
    pytester.runpytest().assert_outcomes(passed=1)  # environment beats the ini file
    monkeypatch.setenv("EXPECT", "ini-lab")
    pytester.runpytest("--lab", "labs/ini-lab.yaml").assert_outcomes(passed=1)  # option beats both


def test_bad_inventory_stops_the_session_with_its_problem_lines(pytester: pytest.Pytester) -> None:
    bad = pytester.path / "bad.yaml"
    bad.write_text(default_lab_file().read_text().replace("raid: 10, disks: 4", "raid: 10, disks: 3"))
    pytester.makepyfile(
        """
        def test_lab(lab):
            raise AssertionError("must not run")
        def test_other():
            pass
        """
    )
    result = pytester.runpytest("--lab", str(bad))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    # pytester runs in the test's folder, so the file shows relative to it, as for a user
    assert "\nbad.yaml:69: servers[0].hardware.volumes[1].disks: RAID 10 cannot be formed" in err
    assert "Traceback" not in err and "must not run" not in result.stdout.str()


def test_bad_inventory_does_not_matter_to_tests_that_do_not_use_the_lab(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_other():\n    pass\n")
    pytester.runpytest("--lab", "no-such-file.yaml").assert_outcomes(passed=1)


def test_no_run_folder_unless_a_test_asks_for_one(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_lab(lab):\n    assert lab.name\n")
    pytester.runpytest().assert_outcomes(passed=1)
    assert not (pytester.path / "results").exists()


def test_one_run_folder_per_session_in_rootdir_results_by_default(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_boot_storm="""
        import pytest

        @pytest.mark.parametrize("size", [1, 5])
        def test_cell(run_folder, size):
            run_folder.write_text(f"cell-{size}.txt", str(size))
        """
    )
    pytester.runpytest().assert_outcomes(passed=2)
    [run] = runs(pytester.path / "results")
    assert run["outcome"] == "passed" and run["ended"] is not None
    assert run["plan"] == "boot_storm"  # from the module name
    folder = pytester.path / "results" / run["run_id"]
    assert (folder / "cell-1.txt").exists() and (folder / "cell-5.txt").exists()
    assert (folder / "inventory.resolved.yaml").exists()


def test_failed_session_finishes_the_run_as_failed_with_plan_from_marker(pytester: pytest.Pytester) -> None:
    results = pytester.path / "out"
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.plan("copy_reboot")
        def test_a(run_folder):
            pass

        @pytest.mark.plan("copy_reboot")
        def test_b(run_folder):
            assert False, "threshold crossed"
        """
    )
    pytester.runpytest("--results-dir", str(results)).assert_outcomes(passed=1, failed=1)
    [run] = runs(results)
    assert run["outcome"] == "failed" and run["plan"] == "copy_reboot"
    assert "copy_reboot" in run["run_id"]


def test_results_dir_from_environment(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    results = pytester.path / "env-results"
    monkeypatch.setenv("LABCTL_RESULTS", str(results))
    pytester.makepyfile("def test_a(run_folder):\n    pass\n")
    pytester.runpytest().assert_outcomes(passed=1)
    assert len(runs(results)) == 1


def test_ctrl_c_finishes_the_run_as_interrupted_and_keeps_what_was_written(pytester: pytest.Pytester) -> None:
    results = pytester.path / "results"
    pytester.makepyfile(
        """
        def test_storm(run_folder):
            run_folder.write_text("measured.csv", "t,v\\n0,1\\n")
            raise KeyboardInterrupt
        """
    )
    result = pytester.runpytest("--results-dir", str(results), no_reraise_ctrlc=True)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    [run] = runs(results)
    assert run["outcome"] == "interrupted"
    assert (results / run["run_id"] / "measured.csv").read_text() == "t,v\n0,1\n"


def test_run_folder_records_the_lab_configuration_and_pytest_args(pytester: pytest.Pytester) -> None:
    results = pytester.path / "results"
    pytester.makepyfile("def test_a(run_folder):\n    pass\n")
    pytester.runpytest("--results-dir", str(results), "--lab-config", "ha", "-k", "test_a")
    [run] = runs(results)
    assert run["configuration"] == "ha" and run["lab"] == "sim-2007"
    assert "-k" in run["parameters"]["pytest_args"]


def test_progress_in_a_log_prints_a_line_per_phase_and_per_quarter_of_the_window() -> None:
    import io

    from labctl.plugin.live import CellDisplay, Terminal
    from labctl.scenarios.base import Progress

    out = io.StringIO()
    latest = {"cpu_pct": 87.4, "nic_sent_util_pct": 61.0, "disk_queue_len": 12.34}
    display = CellDisplay(Terminal(out, interactive=False), "boot_storm-standalone-004", lambda: latest)
    display.update(Progress("wake", 0, 4, 360.0))
    for left in (350.0, 300.0, 260.0, 250.0, 170.0, 160.0, 80.0, 0.0):
        display.update(Progress("window", 4, 4, left))
    display.update(Progress("restore"))
    display.update(Progress("restore"))
    display.close()
    lines = out.getvalue().split("\n")
    assert lines[0] == ""  # the first line of a cell leaves pytest's dots alone
    m = "CPU 87 % · NIC 61 % · queue 12.3"
    assert lines[1:] == [
        f"[boot_storm-standalone-004] wake · 0/4 up · window 0/360 s · {m}",
        f"[boot_storm-standalone-004] window · 4/4 up · window 10/360 s · {m}",
        f"[boot_storm-standalone-004] window · 4/4 up · window 100/360 s · {m}",
        f"[boot_storm-standalone-004] window · 4/4 up · window 190/360 s · {m}",
        f"[boot_storm-standalone-004] window · 4/4 up · window 280/360 s · {m}",
        f"[boot_storm-standalone-004] window · 4/4 up · window 360/360 s · {m}",
        "[boot_storm-standalone-004] restore",
        "",
    ]


def test_a_log_gets_a_heartbeat_with_the_runs_progress_and_the_criterias_peaks_when_a_phase_is_long() -> None:
    """A VDI login phase prints no new phase for minutes: the log still hears from the cell at
    least every heartbeat (wall seconds), with cell n of N, elapsed, ETA and the peaks so far."""
    import io

    from labctl.plugin.live import CellDisplay, RunProgress, Terminal, verdict_line
    from labctl.records.run_record import Outcome
    from labctl.scenarios.base import Progress

    now = [1000.0]
    run = RunProgress(total=3, clock=lambda: now[0])
    run.cell_started()
    now[0] += 240.0  # the first cell took four wall minutes
    run.cell_finished()
    run.cell_started()
    out = io.StringIO()
    peaks = [("latency_ms", 14.234, "ms"), ("host CPU", 87.0, "%")]
    display = CellDisplay(
        Terminal(out, interactive=False),
        "vdi_storm-default-050",
        run=run,
        peaks=lambda: peaks,
        heartbeat_s=15.0,
        clock=lambda: now[0],
    )
    display.update(Progress("login", 120, 315, note="40 waiting, 3 booting"))
    now[0] += 10.0
    display.update(Progress("login", 200, 315, note="20 waiting, 0 booting"))
    display.beat()  # 10 s since the last line: nothing yet
    now[0] += 6.0
    display.beat()  # 16 s: a heartbeat
    display.beat()  # just printed: nothing
    display.close()
    lines = [x for x in out.getvalue().split("\n") if x]
    assert lines == [
        "[vdi_storm-default-050] login · 120/315 · 40 waiting, 3 booting · cell 2 of 3 · 4:00 elapsed"
        " · ETA 8:00 · peak so far: latency_ms 14.2 ms, host CPU 87 %",
        "[vdi_storm-default-050] login · 200/315 · 20 waiting, 0 booting · cell 2 of 3 · 4:16 elapsed"
        " · ETA 7:44 · peak so far: latency_ms 14.2 ms, host CPU 87 %",
    ]
    assert verdict_line("vdi_storm-default-050", Outcome.NO_DATA, "t7: not judged\nmore", run) == (
        "vdi_storm-default-050: NO DATA: t7: not judged  [cell 2 of 3 · 4:16 elapsed · ETA 7:44]"
    )
    run.skipped()  # the third test reused a cell: no time left for it
    assert run.total == 2 and run.text() == "cell 2 of 2 · 4:16 elapsed · ETA 3:44"


def test_the_live_peaks_are_the_criterias_series_once_each_with_their_variables() -> None:
    from labctl.criteria.variables import Names
    from labctl.plugin.runner import _figures

    figures = _figures(PLANS / "boot_storm.yaml", Names({"write_cache_disk": "pvs-01/D:",
        "streaming_server": "pvs-01"}))  # fmt: skip
    assert [f[:4] for f in figures][:4] == [
        ("disk_queue_len", "typeperf", "pvs-01/D:", "disk_queue_len"),
        ("cpu_pct", "typeperf", "pvs-01", "cpu_pct"),  # CPU average and CPU peak: one series
        ("nic_sent_util_pct", "typeperf", "pvs-01/*", "nic_sent_util_pct"),
        ("memory_used_mb", "typeperf", "pvs-01", "memory_used_mb"),
    ]
    vdi = {f[0] for f in _figures(PLANS / "vdi_storm.yaml", Names())}
    assert {"latency_ms", "host CPU", "response_s group:A", "response_s group:B"} <= vdi


def test_progress_on_a_terminal_is_a_live_display_with_the_servers_latest_figures() -> None:
    import io

    from labctl.plugin.live import CellDisplay, Terminal
    from labctl.scenarios.base import Progress

    out = io.StringIO()
    latest = {"cpu_pct": 87.4, "nic_sent_util_pct": 61.0, "disk_queue_len": 12.34}
    display = CellDisplay(Terminal(out, interactive=True), "boot_storm-standalone-050", lambda: latest)
    display.update(Progress("wake", 0, 50, 360.0))  # the window's length: its first "left"
    display.update(Progress("window", 48, 50, 148.0))
    display.update(Progress("window", 50, 50, 100.0))
    display.note("SIGINT: stopping the cell")
    display.close()
    text = out.getvalue()
    assert "\x1b[" in text, "redrawn in place with terminal control sequences"
    assert "boot_storm-standalone-050" in text and "50/50 up" in text and "260 of 360 s" in text
    assert "CPU 87 %" in text and "NIC 61 %" in text and "queue 12.3" in text
    assert "SIGINT: stopping the cell" in text


def test_the_terminal_is_found_past_pytest_capture_and_ci_means_plain_lines(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside a test pytest has redirected the standard output: the terminal is a duplicate of the
    one taken before, so it is a TTY when the session's output is; CI=true keeps lines plain."""
    import io
    import os
    import pty
    import sys

    from labctl.plugin.live import Terminal

    master, slave = pty.openpty()
    try:
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.FileIO(slave, "w", closefd=False)))
        monkeypatch.delenv("CI", raising=False)
        monkeypatch.setenv("TERM", "xterm")
        term = Terminal.for_session()
        assert term.interactive
        term.line("through the pty")
        term.close()
        assert b"through the pty" in os.read(master, 1024)
        monkeypatch.setenv("CI", "true")
        term = Terminal.for_session()
        assert not term.interactive
        term.close()
    finally:
        os.close(master)
        os.close(slave)


def test_signals_during_a_cell_stop_it_then_abort_the_restore_and_outside_a_cell_raise() -> None:
    import os
    import signal

    from labctl.plugin.interrupts import Interrupts

    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    said: list[str] = []
    it = Interrupts(said.append).install()
    try:
        with it.busy():
            os.kill(os.getpid(), signal.SIGTERM)  # a cancelled CI job
            assert it.stop.wait(5) and not it.abort.is_set()
            os.kill(os.getpid(), signal.SIGHUP)  # a second one: stop waiting for the restore
            assert it.abort.wait(5)
        assert it.requested and it.reason == "interrupted by SIGTERM"
        assert any("SIGTERM" in line and "restoring the lab" in line for line in said)
        with pytest.raises(KeyboardInterrupt):  # a third: leave at once
            os.kill(os.getpid(), signal.SIGINT)
    finally:
        it.uninstall()
    fresh = Interrupts().install()
    try:
        with pytest.raises(KeyboardInterrupt):  # nothing to stop gracefully: unwind now
            os.kill(os.getpid(), signal.SIGTERM)
        assert fresh.requested and fresh.stop.wait(5)
    finally:
        fresh.uninstall()
    assert {sig: signal.getsignal(sig) for sig in before} == before, "the previous handlers are back"


def _summary(outcome: str = "pass", reason: str = "") -> Any:
    from labctl.records.run_record import CellSummary, Window

    return CellSummary(
        cell="boot_storm-standalone-005",
        plan="boot_storm",
        scenario="boot_storm",
        outcome=outcome,
        reason=reason,
        window=Window(start_ts_s=0.0, end_ts_s=360.0),
    )


def _verdict(*criteria: tuple[str, str, bool]) -> Any:
    from labctl.criteria.evaluate import cell_outcome
    from labctl.records.run_record import CellVerdict, CriterionVerdict

    items = [
        CriterionVerdict(name=n, outcome=o, statistic="peak", selector="x", required=r, message=f"{n}: {o}")
        for n, o, r in criteria
    ]
    return CellVerdict(cell="boot_storm-standalone-005", outcome=cell_outcome(items), criteria=items)


class _Criteria:
    """Stands in for a criteria file: hands back a fixed verdict (what the runner's seam consumes)."""

    def __init__(self, verdict: Any):
        self.verdict = verdict

    def judge(self, data: Any, summary: Any, *, names: Any, window: Any = None) -> Any:
        return self.verdict


def _recorder(tmp_path: Path) -> Any:
    from labctl.recorder import Recorder

    return Recorder(tmp_path, [], cell="boot_storm-standalone-005")


def test_a_cells_outcome_is_the_worst_and_its_reason_names_the_lab_first(tmp_path: Path) -> None:
    from labctl.recorder.cell_record import broken_record, judged_record
    from labctl.records.run_record import Outcome, RestoreOutcome

    rec = _recorder(tmp_path)
    # the scenario named the endpoint: its reason comes before the criteria's echo of it
    blame = (
        "streaming server pvs-01 could not be read (auth): boot time and retries unknown for 5 of 5 clients"
    )
    v = _verdict(("boot time", "lab_fault", True), ("CPU", "fail", True))
    record = judged_record(_summary("lab_fault", blame), rec, _Criteria(v))
    assert record.outcome is Outcome.LAB_FAULT and record.summary.reason.startswith(blame)
    # a threshold failure: the criterion first, a failed restore beside it, the verdict kept
    failed_restore = _summary().model_copy(
        update={
            "restore": RestoreOutcome(ok=False, started_ts_s=360, ended_ts_s=400, detail="1 of 5 not off")
        }
    )
    record = judged_record(failed_restore, rec, _Criteria(_verdict(("CPU peak", "fail", True))))
    assert record.outcome is Outcome.FAIL and record.verdict is not None
    assert record.summary.reason == "CPU peak: fail; restore failed: 1 of 5 not off"
    # no data for an optional criterion is reported, not counted; marginal passes with its reason
    record = judged_record(
        _summary(), rec, _Criteria(_verdict(("memory", "no_data", False), ("queue", "marginal", True)))
    )
    assert record.outcome is Outcome.MARGINAL and record.summary.reason == "queue: marginal"
    record = judged_record(_summary(), rec, _Criteria(_verdict(("CPU", "no_data", True))))
    assert record.outcome is Outcome.NO_DATA
    # an interrupt wins over everything; a scenario that broke on the lab is a lab fault
    head = _summary()
    record = broken_record(head, rec, Outcome.INTERRUPTED, "SIGTERM during window")
    assert record.outcome is Outcome.INTERRUPTED and "SIGTERM during window" in record.summary.reason
    from labctl.errors import EndpointError

    record = broken_record(
        head, rec, Outcome.LAB_FAULT, EndpointError("pvs-01", "read device status", "timed out")
    )
    assert (
        record.outcome is Outcome.LAB_FAULT
        and "pvs-01: read device status: timed out" in record.summary.reason
    )


def test_a_lost_lease_is_a_lab_fault_of_the_cell(tmp_path: Path) -> None:
    from labctl.recorder.cell_record import judged_record
    from labctl.records.run_record import Outcome

    record = judged_record(
        _summary(),
        _recorder(tmp_path),
        _Criteria(_verdict(("CPU", "pass", True))),
        lab_faults=["the lease on the lab was lost during the cell (broken by `labctl lease break`)"],
    )
    assert record.outcome is Outcome.LAB_FAULT
    assert (
        "lease on the lab was lost" in record.summary.reason and "labctl lease break" in record.summary.reason
    )

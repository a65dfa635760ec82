"""`--lab` takes a file or a lab's name everywhere, and a plan run writes the results store by default.

- commands that drive a lab (`inventory`, `check`, `run`, the pytest plugin) turn a name into its
  inventory in hardware/ (by the file's `lab.name`); those that read the store (`runs`, `baseline`)
  turn a file into its lab name; an unknown one is one line naming the labs there are;
- the plugin's store: the embedded one in <results-dir>/store unless --no-store / LABCTL_STORE=none;
  a store URL with a password is a usage error that does not print it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from labctl.cli import cli
from labctl.cli.common import run_cli
from labctl.errors import BadInputError
from labctl.inventory.lab_ref import HARDWARE_DIR, file_of_lab, resolve_lab_file, resolve_lab_name
from labctl.inventory.load import default_lab_file

pytest_plugins = ["pytester"]


def test_a_name_resolves_to_its_inventory_and_a_file_to_its_name(tmp_path: Path) -> None:
    assert resolve_lab_file("sim-2007") == default_lab_file()
    assert resolve_lab_file("vdi-mcs-sc40-1000") == HARDWARE_DIR / "vdi-mcs-sc40-1000.yaml"
    assert resolve_lab_file("hardware/none.yaml") == Path("hardware/none.yaml")  # a path stays a path
    assert resolve_lab_file(None) is None
    assert resolve_lab_name(str(default_lab_file())) == "sim-2007"
    assert resolve_lab_name("lab-2007") == "lab-2007"  # hardware/lab-2007.example.yaml carries it
    assert file_of_lab("lab-2007") == HARDWARE_DIR / "lab-2007.example.yaml"  # found by the name field
    assert resolve_lab_name("team-lab", known=["team-lab"]) == "team-lab"  # e.g. runs in the store
    # a file whose name is not its lab's name: the name field decides
    renamed = tmp_path / "mine.yaml"
    renamed.write_text(default_lab_file().read_text().replace("name: sim-2007", "name: my-lab", 1))
    assert resolve_lab_name(str(renamed)) == "my-lab"
    for bad in ("no-such-lab", "sim2007"):
        with pytest.raises(BadInputError, match=r"not an inventory file.*sim-2007") as caught:
            resolve_lab_file(bad)
        assert "\n" not in str(caught.value)
    with pytest.raises(BadInputError, match="file not found"):
        resolve_lab_name("labs/none.yaml")


def test_commands_that_drive_a_lab_take_its_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(cli, ["inventory", "show", "--lab", "vdi-mcs-sc40-1000"]) == 0
    by_name = capsys.readouterr().out
    assert run_cli(cli, ["inventory", "show", "--lab", str(HARDWARE_DIR / "vdi-mcs-sc40-1000.yaml")]) == 0
    assert capsys.readouterr().out == by_name and "vdi-mcs-sc40-1000" in by_name
    assert run_cli(cli, ["inventory", "show", "--lab", "no-such-lab"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no-such-lab" in err and "vdi-mcs-sc40-1000" in err


def _settings_test(pytester: pytest.Pytester, expect: str) -> None:
    pytester.makepyfile(
        f"""
        from labctl.plugin.options import settings

        def test_settings(pytestconfig):
            s = settings(pytestconfig)
            print("STORE", s.store_url)
            print("LAB", s.lab_file)
            assert {expect}
        """
    )


def test_the_plugin_writes_the_embedded_store_by_default_and_not_with_no_store(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("LABCTL_STORE", "LABCTL_RESULTS", "LABCTL_LAB"):
        monkeypatch.delenv(var, raising=False)
    results = pytester.path / "out"
    _settings_test(pytester, f"s.store_url == 'duckdb:{results}/store'")
    pytester.runpytest("--results-dir", "out").assert_outcomes(passed=1)
    _settings_test(pytester, "s.store_url is None")
    pytester.runpytest("--no-store").assert_outcomes(passed=1)
    monkeypatch.setenv("LABCTL_STORE", "none")
    pytester.runpytest().assert_outcomes(passed=1)
    monkeypatch.setenv("LABCTL_STORE", "duckdb:/elsewhere")
    _settings_test(pytester, "s.store_url == 'duckdb:/elsewhere'")
    pytester.runpytest().assert_outcomes(passed=1)
    # a lab by its name, through the plugin too
    _settings_test(
        pytester, f"s.lab_file == __import__('pathlib').Path('{HARDWARE_DIR}/vdi-mcs-sc40-1000.yaml')"
    )
    pytester.runpytest("--lab", "vdi-mcs-sc40-1000").assert_outcomes(passed=1)
    result = pytester.runpytest("--lab", "no-such-lab")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and "no-such-lab" in result.stderr.str()


def test_a_store_url_with_a_password_stops_the_session_without_printing_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LABCTL_STORE", raising=False)
    _settings_test(pytester, "False")
    for url in (
        "postgresql://labctl:hunter2-pw@db/labctl",
        "postgresql://labctl@db/labctl?password=hunter2-pw",
    ):
        result = pytester.runpytest("--store", url)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        text = result.stdout.str() + result.stderr.str()
        assert "hunter2" not in text and "PGPASSWORD" in text

"""`labctl --version`, `labctl inventory validate|show`, and the CLI's exit codes."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from labctl import __version__
from labctl.cli import cli
from labctl.cli.common import run_cli
from labctl.errors import BadInputError, EndpointError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "hardware" / "lab-2007.example.yaml"


class Run:
    def __init__(self, capsys: pytest.CaptureFixture[str]):
        self.capsys = capsys

    def __call__(self, *args: str) -> tuple[int, str, str]:
        code = run_cli(cli, list(args))
        out = self.capsys.readouterr()
        return code, out.out, out.err


@pytest.fixture
def labctl(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    monkeypatch.setenv("COLUMNS", "80")
    for var in ("LABCTL_LAB", "LABCTL_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    return Run(capsys)


def test_version(labctl: Run) -> None:
    code, out, _ = labctl("--version")
    assert code == 0 and out.strip() == f"labctl, version {__version__}"


def test_validate_default_lab_prints_a_summary(labctl: Run) -> None:
    code, out, err = labctl("inventory", "validate")
    assert code == 0, err
    assert "lab 'sim-2007' (simulated, time scale 60x)" in out
    assert "machines: 100 clients, 2 servers, 10 VMs" in out
    assert "first-25 (25)" in out and "last-50 (50)" in out and "streaming (1)" in out
    assert "configuration: standalone; also checked: ha" in out
    assert "2 BMCs, 1 vCenter, 1 storage array, 1 share" in out


def test_validate_takes_the_lab_as_every_other_command_does(labctl: Run, tmp_path: Path) -> None:
    code, out, err = labctl("inventory", "validate", "--lab", str(EXAMPLE))
    assert code == 0 and "lab 'lab-2007' (real hardware)" in out, err
    bad = tmp_path / "bad.yaml"
    bad.write_text(EXAMPLE.read_text().replace("name: lab-2007", "name: 'lab 2007'"))
    code, out, err = labctl("inventory", "validate", "--lab", str(bad))
    assert code == 2 and err.count("\n") == 1 and "lab name 'lab 2007' has a space" in err
    code, out, err = labctl("inventory", "validate", str(EXAMPLE), "--lab", str(bad))
    assert code == 2 and "two files given" in err


def test_validate_ha_configuration_counts_its_servers(labctl: Run) -> None:
    code, out, _ = labctl("inventory", "validate", "--config", "ha")
    assert code == 0 and "100 clients, 4 servers" in out and "streaming (2)" in out


def test_example_lab_for_real_hardware_validates(labctl: Run) -> None:
    code, out, err = labctl("inventory", "validate", str(EXAMPLE))
    assert code == 0, err
    assert "lab 'lab-2007' (real hardware)" in out


def test_example_lab_is_written_the_way_a_real_lab_must_be() -> None:
    from labctl.inventory import load_lab
    from labctl.inventory.model import HostKeyPolicy, TlsMode

    lab = load_lab(EXAMPLE, "ha", every_machine=True)
    assert lab.time_scale == 1 and not lab.simulated
    assert all(n.wol_port == 9 for n in lab.networks.values())
    assert all(m.ip and m.ip.startswith("10.") for m in lab.machines.values() if m.ip)
    ssh = [m.ssh for m in lab.machines.values() if m.ssh]
    assert ssh and all(s.host_key_policy is HostKeyPolicy.STRICT and s.known_hosts for s in ssh)
    bmcs = [m.bmc for m in lab.machines.values() if m.bmc]
    assert bmcs and all(b.tls.mode is TlsMode.VERIFY for b in bmcs)  # ca_file: where the CA is
    refs = [b.password for b in bmcs] + [s.password for s in ssh if s.password]
    refs += [v.password for v in lab.vcenters.values()] + [a.password for a in lab.storage.values()]
    assert all(r.startswith("env:") for r in refs)


def test_show_lists_clients_as_one_range_and_servers_with_hardware_in_80_columns(labctl: Run) -> None:
    code, out, _ = labctl("inventory", "show")
    assert code == 0
    lines = out.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80
    assert "…" not in out, "a cell was cut off"
    client_rows = [line for line in lines if "optiplex-" in line and "100" in line]
    assert len(client_rows) >= 1 and "optiplex-[001-100]" in client_rows[0]
    assert "00:1a:a0:07:00:01..64" in client_rows[0] and "127.20.1.1..100" in client_rows[0]
    assert "optiplex-002" not in out  # compact: no row per client
    pvs = next(line for line in lines if line.lstrip().startswith("pvs-01 ") and "PowerEdge 2950" in line)
    assert "127.20.0.11" in pvs and "Xeon 5160" in pvs and "4 GB" in pvs and "2x 1G" in pvs
    assert any("D: cache" in line and "RAID10" in line and "4x 300 GB SAS 10K" in line for line in lines)
    assert "https://127.21.0.11:8443" in out
    assert "nas-01" not in out  # HA only; standalone is the default configuration


def test_show_group_lists_only_its_members(labctl: Run) -> None:
    code, out, _ = labctl("inventory", "show", "--group", "first-25")
    assert code == 0
    assert "optiplex-[001-025]" in out and "25" in out
    assert "pvs-01" not in out and "optiplex-026" not in out


def test_show_ha_configuration(labctl: Run) -> None:
    code, out, _ = labctl("inventory", "show", "--config", "ha", "--group", "streaming")
    assert code == 0 and "pvs-02" in out and "optiplex" not in out


def test_show_unknown_group_exits_2_with_did_you_mean(labctl: Run) -> None:
    code, out, err = labctl("inventory", "show", "--group", "frist-25")
    assert code == 2 and out == ""
    assert err.startswith("error: unknown group 'frist-25'") and "did you mean 'first-25'?" in err
    assert "Traceback" not in err


def test_show_bad_lab_file_exits_2_with_the_problem_line(labctl: Run, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("lab: {name: x}\nnetworks: []\n")
    code, _, err = labctl("inventory", "show", "--lab", str(bad))
    assert code == 2
    assert err.splitlines() == [f"{bad}:2: networks: must not be empty (give at least 1 item(s))"]


@pytest.mark.parametrize(
    "args",
    [["inventory", "validate", "--bogus"], ["inventory", "frobnicate"], ["inventory", "show", "--group"]],
)
def test_usage_errors_exit_2(labctl: Run, args: list[str]) -> None:
    code, _, err = labctl(*args)
    assert code == 2 and "Error:" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["inventory"],
        ["inventory", "validate"],
        ["inventory", "show"],
        ["run"],
        ["report"],
        ["compare"],
        ["check"],
        ["power"],
        ["sim"],
        ["sim", "calibrate"],
    ],
)
def test_help_says_what_the_command_does_with_an_example(labctl: Run, args: list[str]) -> None:
    code, out, _ = labctl(*args, "--help")
    assert code == 0
    usage, description, *_ = out.split("\n\n")
    assert usage.startswith("Usage: labctl") and len(description.split()) >= 4
    marker = "Example" if "Example" in out else "Quick start"
    assert marker in out, "no example in the help"
    assert "  labctl " in out.split(marker, 1)[1], "the example is not a labctl command line"


def _group_raising(exc: BaseException) -> click.Group:
    @click.group()
    def g() -> None:
        pass

    @g.command()
    def go() -> None:
        raise exc

    return g


@pytest.mark.parametrize(
    ("exc", "code", "first_line"),
    [
        (
            EndpointError("pvs-01 BMC", "power on", "503 Service Unavailable"),
            1,
            "error: pvs-01 BMC: power on",
        ),
        (BadInputError("unknown plan 'x'"), 2, "error: unknown plan 'x'"),
        (KeyboardInterrupt(), 130, "interrupted"),
    ],
)
def test_exit_codes_and_one_line_errors(
    capsys: pytest.CaptureFixture[str], exc: BaseException, code: int, first_line: str
) -> None:
    assert run_cli(_group_raising(exc), ["go"]) == code
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]  # click prints a blank line on ^C
    assert len(lines) == 1 and lines[0].startswith(first_line) and "Traceback" not in err


def test_run_keeps_its_exit_code_and_names_the_run_folder_when_the_report_fails(
    labctl: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import labctl.report.build as build

    results = tmp_path / "results"

    def interrupted_run(args: list[str]) -> int:
        assert args[args.index("--results-dir") + 1] == str(results)
        (results / "20261121-020000-boot_storm-a1b2").mkdir(parents=True)
        (results / "20261121-020000-boot_storm-a1b2" / "run.json").write_text("{}")
        return pytest.ExitCode.INTERRUPTED

    def no_allure(run: Path, **_: object) -> None:
        raise build.ReportError("cannot run Allure (no such file); run `make install`")

    monkeypatch.setattr(pytest, "main", interrupted_run)
    monkeypatch.setattr(build, "build_report", no_allure)
    monkeypatch.setenv("LABCTL_RESULTS", str(results))  # as `labctl report` would look for it
    code, out, err = labctl("run", "boot_storm")
    assert code == 130, err
    assert f"run folder: {results / '20261121-020000-boot_storm-a1b2'}" in out
    assert "error: report: cannot run Allure" in err and "what was measured is kept" in err
    assert "Traceback" not in err

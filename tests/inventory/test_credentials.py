"""Credentials are references; a missing value is reported when an endpoint is used, naming the
variable or key and the endpoint, never when the inventory is loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from labctl.errors import MissingCredentialError
from labctl.inventory import credentials, load_lab, resolve_credential
from labctl.inventory.credentials import lab_credential_refs, secrets_file_values

EXAMPLE = Path(__file__).resolve().parents[2] / "hardware" / "lab-2007.example.yaml"


@pytest.fixture(autouse=True)
def no_ambient_secrets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Neither the developer's $LABCTL_SECRETS_FILE nor a running `labctl sim up` may leak in."""
    monkeypatch.delenv(credentials.SECRETS_FILE_VAR, raising=False)
    monkeypatch.setattr(credentials, "SIM_SECRETS_FILE", tmp_path / "no-sim-secrets.yaml")


def test_lab_with_unset_credentials_loads_and_fails_only_when_an_endpoint_is_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LAB2007_IDRAC_PASSWORD", raising=False)
    lab = load_lab(EXAMPLE)  # no error: nothing was used yet
    bmc = lab.machine("pvs-01").bmc
    assert bmc is not None
    with pytest.raises(MissingCredentialError) as err:
        resolve_credential(bmc.password, "pvs-01 BMC https://10.21.0.11")
    message = str(err.value)
    assert "LAB2007_IDRAC_PASSWORD" in message
    assert "pvs-01 BMC" in message
    assert "export LAB2007_IDRAC_PASSWORD=" in message
    assert err.value.exit_code == 2


def test_env_reference_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAB2007_IDRAC_PASSWORD", "calvin-42")
    assert resolve_credential("env:LAB2007_IDRAC_PASSWORD", "pvs-01 BMC") == "calvin-42"


def test_secret_reference_reads_the_secrets_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    secrets = tmp_path / "secrets.yaml"
    secrets.write_text("bmc.password: s3cr3t-bmc\nunity: 12345\n")
    monkeypatch.setenv(credentials.SECRETS_FILE_VAR, str(secrets))
    assert resolve_credential("secret:bmc.password", "pvs-01 BMC") == "s3cr3t-bmc"
    assert resolve_credential("secret:unity", "unity-01") == "12345"


def test_missing_secret_key_names_the_key_and_the_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    secrets = tmp_path / "secrets.yaml"
    secrets.write_text("other: x\n")
    monkeypatch.setenv(credentials.SECRETS_FILE_VAR, str(secrets))
    with pytest.raises(MissingCredentialError) as err:
        resolve_credential("secret:vc.password", "vc-01 https://vc-01/sdk")
    assert "vc.password" in str(err.value) and str(secrets) in str(err.value)
    assert "vc-01" in str(err.value)


def test_secret_reference_without_a_secrets_file_says_which_variable_to_set() -> None:
    with pytest.raises(MissingCredentialError) as err:
        resolve_credential("secret:bmc.password", "pvs-01 BMC")
    assert credentials.SECRETS_FILE_VAR in str(err.value) and "bmc.password" in str(err.value)


def test_unreadable_secrets_file_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    secrets = tmp_path / "secrets.yaml"
    secrets.write_text("a: [unclosed\n")
    monkeypatch.setenv(credentials.SECRETS_FILE_VAR, str(secrets))
    with pytest.raises(MissingCredentialError) as err:
        resolve_credential("secret:a", "pvs-01 BMC")
    assert str(secrets) in str(err.value)


def test_yaml_error_in_the_secrets_file_names_the_line_but_never_quotes_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    secrets = tmp_path / "secrets.yaml"
    secrets.write_text("a: fine\nbmc.password: Hunter2: oops\n")
    monkeypatch.setenv(credentials.SECRETS_FILE_VAR, str(secrets))
    with pytest.raises(MissingCredentialError) as err:
        resolve_credential("secret:a", "pvs-01 BMC")
    message = str(err.value)
    assert "Hunter2" not in message
    assert "\n" not in message  # one line, as every error labctl prints
    assert str(secrets) in message and "line 2" in message


def test_lab_credential_refs_lists_every_password_reference_once() -> None:
    lab = load_lab(EXAMPLE, "ha")
    assert set(lab_credential_refs(lab)) == {
        "env:LAB2007_CLIENT_PASSWORD",
        "env:LAB2007_SERVER_PASSWORD",
        "env:LAB2007_IDRAC_PASSWORD",
        "env:LAB2007_VCENTER_PASSWORD",
        "env:LAB2007_UNITY_PASSWORD",
    }
    assert len(lab_credential_refs(lab)) == 5


def test_secrets_file_values_are_all_values_but_not_booleans(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    secrets = tmp_path / "secrets.yaml"
    secrets.write_text("a: alpha-secret\nb: 4242\nc: true\nd: ''\n")
    monkeypatch.setenv(credentials.SECRETS_FILE_VAR, str(secrets))
    assert sorted(secrets_file_values()) == ["4242", "alpha-secret"]

"""VDI launcher credentials: references only, resolved for the redactor like every other
credential, and a value that slipped past validation masked wherever the run writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labctl.inventory.credentials import lab_credential_refs, plain_credentials
from labctl.inventory.load import load_lab
from labctl.inventory.vdi import LAUNCHER_KINDS
from labctl.lab.launchers.registry import BACKENDS
from labctl.recorder.redact import Redactor, redact_patterns

VDI = Path(__file__).resolve().parents[2] / "hardware" / "vdi-mcs-sc40-1000.yaml"
VALUE = "Launch-pw-4711"


def test_launcher_kinds_the_inventory_accepts_are_the_backends_labctl_has() -> None:
    # a `local` launcher is hosted by its site agent (labctl/agents/launchers.py); `agent` is how the
    # controller reaches any launcher placed at one
    assert (set(LAUNCHER_KINDS) - {"local"}) | {"agent"} == set(BACKENDS)


def test_a_launcher_password_is_redacted_from_everything_the_run_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = tmp_path / "secrets.yaml"
    secrets.write_text(f"sim.launcher_password: {VALUE}\n")
    monkeypatch.setenv("LABCTL_SECRETS_FILE", str(secrets))
    lab = load_lab(VDI)
    assert "secret:sim.launcher_password" in lab_credential_refs(lab)
    # a redactor that knows only the lab's references (not the secrets file) still masks it
    monkeypatch.setattr("labctl.recorder.redact.secrets_file_values", lambda: [])
    redactor = Redactor.from_lab(lab)
    record = {"reason": f"vsi-01: logon as vsi-launcher/{VALUE} refused", "detail": [VALUE]}
    assert VALUE not in json.dumps(redactor.obj(record))
    assert VALUE not in redactor.text(f"ssh vsi-launcher:{VALUE}@127.27.2.1")


def test_a_plain_text_launcher_password_that_slipped_through_is_masked_too() -> None:
    lab = load_lab(VDI)
    assert lab.vdi is not None
    launcher = lab.vdi.launchers[0]
    assert launcher.access is not None
    # validation refuses this; a lab built another way (an old run's inventory, code) may hold it
    leaky = launcher.model_copy(update={"access": launcher.access.model_copy(update={"password": VALUE})})
    vdi = lab.vdi.model_copy(update={"launchers": (leaky, *lab.vdi.launchers[1:])})
    lab = lab.model_copy(update={"vdi": vdi})
    assert plain_credentials(lab) == [VALUE]
    assert VALUE not in lab_credential_refs(lab)
    assert Redactor.from_lab(lab).text(f"password {VALUE}!") == "password ***!"


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        (f"postgresql://u:{VALUE}@127.0.0.1:5432/labctl", "postgresql://u:***@127.0.0.1:5432/labctl"),
        (f"postgresql://127.0.0.1/labctl?sslmode=require&password={VALUE}", "?sslmode=require&password=***"),
        (f"host=db password={VALUE} dbname=labctl", "host=db password=*** dbname=labctl"),
        (f"https://hub/x?token={VALUE}#f", "https://hub/x?token=***#f"),
        ("pass: {max: 20}", "pass: {max: 20}"),  # criteria bands are not secrets
    ],
)
def test_pattern_redaction_masks_what_looks_like_a_credential(text: str, masked: str) -> None:
    out = redact_patterns(text)
    assert VALUE not in out and masked in out

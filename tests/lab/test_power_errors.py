"""A backend that stops before reporting its machines still tells each of them why."""

from __future__ import annotations

import pytest

from labctl.inventory import load_lab
from labctl.inventory.credentials import SECRETS_FILE_VAR
from labctl.lab.session import LabSession
from tests.lab.conftest import FAST
from tests.labfiles import make_test_lab


def test_a_credential_not_set_is_the_reason_each_machine_gets(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = tmp_path / "secrets.yaml"
    secrets.write_text("{}\n")  # readable, but holds none of the lab's credentials
    monkeypatch.setenv(SECRETS_FILE_VAR, str(secrets))
    with LabSession(load_lab(make_test_lab(tmp_path, clients=2)), settings=FAST) as s:
        report = s.power.off("optiplex-001,optiplex-002")
    assert not report.ok and set(report.failed) == {"optiplex-001", "optiplex-002"}
    for o in report.failed.values():
        assert o.detail.startswith("no outcome from the backend: MissingCredentialError")
        assert f"to {secrets}" in o.detail  # what to do: add the key to that file
    assert [e.kind for e in s.timeline.events("power.error")] == ["power.error"] * 2

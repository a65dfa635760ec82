"""Where the in-session workload does its file operations: the user's own folder, never a fixed
name in TEMP that a deleted user's leftover (owned by another uid) could make unwritable."""

from __future__ import annotations

import stat
import tempfile
from pathlib import Path

import pytest

from labctl.workload.agent import default_workdir


def test_the_users_home_when_it_is_writable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_workdir("alice") == tmp_path / ".labctl-workload"
    assert (tmp_path / ".labctl-workload").is_dir()


def test_a_fresh_private_folder_in_temp_when_home_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    not_a_folder = tmp_path / "home-is-a-file"
    not_a_folder.write_text("")
    monkeypatch.setenv("HOME", str(not_a_folder))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    # a leftover of the fixed name the workload used to take is never reused
    (tmp_path / "tmp" / "labctl-workload-alice").mkdir(mode=0o500)
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    first, second = default_workdir("alice"), default_workdir("alice")
    assert first != second and first.parent == second.parent == tmp_path / "tmp"
    assert first.name.startswith("labctl-workload-alice-") and first.name != "labctl-workload-alice"
    assert stat.S_IMODE(first.stat().st_mode) == 0o700

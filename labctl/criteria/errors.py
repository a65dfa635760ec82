"""How a cell fails, as exceptions for the test that ran it (the cell's outcome is in its record;
these give pytest the matching status):

- :class:`ThresholdFailure` (an ``AssertionError``: Allure status *failed*): the lab worked and a
  measured value is outside its band. Carries the evidence.
- :class:`LabFault` (Allure status *broken*): the lab did not do what the plan needs, e.g. a
  client never booted. Not a verdict on the system under test.
- :class:`NoDataError` (broken): a criterion had nothing to judge: its metric was not recorded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from labctl.errors import BadInputError

if TYPE_CHECKING:
    from labctl.records.run_record import CriterionVerdict


class CriteriaFileError(BadInputError):
    """A criteria file is malformed; the message names the file, the criterion and the fix."""


class ThresholdFailure(AssertionError):
    def __init__(self, message: str, evidence: list[CriterionVerdict] | None = None):
        super().__init__(message)
        self.evidence = list(evidence or [])

    def evidence_dict(self) -> list[dict[str, Any]]:
        return [r.as_dict() if hasattr(r, "as_dict") else r.model_dump(mode="json") for r in self.evidence]


class LabFault(Exception):
    def __init__(self, message: str, evidence: list[CriterionVerdict] | None = None, **detail: Any):
        super().__init__(message)
        self.evidence = list(evidence or [])
        self.detail = detail


class NoDataError(Exception):
    def __init__(self, message: str, evidence: list[CriterionVerdict] | None = None):
        super().__init__(message)
        self.evidence = list(evidence or [])

"""Acceptance criteria as data: pass / marginal / fail bands over recorded series and per-machine
results. Pure: they judge and return a :class:`~labctl.records.run_record.CellVerdict`.

- :mod:`labctl.criteria.model`: the criteria file format, checked completely by :func:`load_criteria`.
- :mod:`labctl.criteria.evaluate`: :func:`evaluate` -> :class:`CellVerdict` with evidence.
- :mod:`labctl.criteria.variables`: names limits may use, from the inventory (:func:`lab_names`).
- :mod:`labctl.criteria.errors`: :class:`ThresholdFailure`, :class:`LabFault`, :class:`NoDataError`.
"""

from labctl.criteria.errors import CriteriaFileError, LabFault, NoDataError, ThresholdFailure
from labctl.criteria.evaluate import evaluate, raise_for_outcome
from labctl.criteria.model import CriteriaFile, Criterion, load_criteria, parse_criteria
from labctl.criteria.variables import Names, lab_names
from labctl.records.run_record import CellVerdict, CriterionVerdict, Outcome

__all__ = [
    "CellVerdict",
    "CriteriaFile",
    "CriteriaFileError",
    "Criterion",
    "CriterionVerdict",
    "LabFault",
    "Names",
    "NoDataError",
    "Outcome",
    "ThresholdFailure",
    "evaluate",
    "lab_names",
    "load_criteria",
    "parse_criteria",
    "raise_for_outcome",
]

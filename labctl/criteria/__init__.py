"""Acceptance criteria as data: pass / marginal / fail bands over recorded series.

- :mod:`labctl.criteria.model`: the criteria file format and :func:`load_criteria`.
- :mod:`labctl.criteria.evaluate`: :func:`evaluate` -> :class:`Verdict` with evidence.
- :mod:`labctl.criteria.variables`: names limits may use, from the inventory (:func:`lab_names`).
- :mod:`labctl.criteria.errors`: :class:`ThresholdFailure`, :class:`LabFault`, :class:`NoDataError`.
"""

from labctl.criteria.errors import CriteriaFileError, LabFault, NoDataError, ThresholdFailure
from labctl.criteria.evaluate import CriterionResult, Outcome, Verdict, evaluate
from labctl.criteria.model import CriteriaFile, Criterion, load_criteria, parse_criteria
from labctl.criteria.variables import Names, lab_names

__all__ = [
    "CriteriaFile",
    "CriteriaFileError",
    "Criterion",
    "CriterionResult",
    "LabFault",
    "Names",
    "NoDataError",
    "Outcome",
    "ThresholdFailure",
    "Verdict",
    "evaluate",
    "lab_names",
    "load_criteria",
    "parse_criteria",
]

"""What every calculator returns: its inputs, its outputs and the formula with the numbers filled in."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from labctl.sizing.exact import exact_fields, to_json


class SizingResult(ABC):
    """Base of the calculators' frozen result dataclasses.

    ``text()`` is the human output (the formula, then the same with numbers, then the answer and how
    it was rounded); ``as_json()`` is the ``--json`` output: ``calculator``, ``inputs``, ``outputs``
    (whole numbers as ints, others as floats), ``exact`` (every non-whole output as ``"p/q"``) and
    ``formula`` (the lines of ``text()``).
    """

    calculator: ClassVar[str]

    @abstractmethod
    def inputs(self) -> dict[str, Any]: ...

    @abstractmethod
    def outputs(self) -> dict[str, Any]: ...

    @abstractmethod
    def lines(self) -> list[str]: ...

    def text(self) -> str:
        return "\n".join(self.lines())

    def as_json(self) -> dict[str, Any]:
        outputs = self.outputs()
        return {
            "calculator": self.calculator,
            "inputs": to_json(self.inputs()),
            "outputs": to_json(outputs),
            "exact": exact_fields(outputs),
            "formula": self.lines(),
        }

"""Exact numbers for the sizing calculators: parsing, validation, whole-unit rounding and display.

Every calculator computes with :class:`fractions.Fraction`, so ``0.15 * 2539`` is 380.85 and not
380.84999999999997, and a paper's worked example comes out digit for digit. Inputs may be given as
``int``, ``Fraction``, ``Decimal``, ``str`` (``"1.5"``, ``"3/2"``, ``"87%"``) or ``float``; a float
is read as the decimal it prints as (``0.1`` is 1/10), i.e. as the number its writer typed.

Rounding to whole units happens once, at the end, and always in the safe direction:

- things you must buy or provision (drives, arrays, NIC ports) round **up** (:func:`whole_up`):
  2.01 arrays' worth of load needs 3 arrays;
- things that must fit (desktops per array) round **down** (:func:`whole_down`): 642.6 desktops'
  worth of capacity holds 642 desktops.
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from labctl.errors import BadInputError

Number = Fraction | Decimal | int | float | str
"""What the calculators accept for a quantity (see the module docstring for how each is read)."""

ONE = Fraction(1)
PERCENT = Fraction(1, 100)
MAX_EXPONENT = 30  # decimal exponents accepted in text input


class SizingInputError(BadInputError):
    """A calculator input out of its domain. Names the parameter, the value, what is wrong and the fix.

    ``field`` is the Python parameter name; the CLI reports it as the option ``--field-name``.
    """

    def __init__(self, field: str, shown: str, problem: str, fix: str):
        self.field = field
        self.shown = shown
        self.problem = problem
        self.fix = fix
        super().__init__(self.message(field))

    def message(self, name: str) -> str:
        """The one-line message with the parameter called ``name`` (e.g. an option ``--raid``)."""
        return f"{name} {self.shown}: {self.problem} ({self.fix})"


def exact(value: Number, field: str) -> Fraction:
    """``value`` as an exact fraction; a value that is not a finite number names ``field``.

    >>> exact("2539.5", "array_capacity_gb"), exact(0.15, "x"), exact("87%", "x")
    (Fraction(5079, 2), Fraction(3, 20), Fraction(87, 100))
    """
    if isinstance(value, bool):  # bool is an int; True GB is a typo, not a quantity
        raise SizingInputError(field, repr(value), "is not a number", "give a number such as 1.5")
    try:
        if isinstance(value, Fraction | int):
            return Fraction(value)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError
            return Fraction(repr(value))
        if isinstance(value, Decimal):
            if not value.is_finite():
                raise ValueError
            return Fraction(value)
        text = str(value).strip().replace("_", "")
        scale = ONE
        if text.endswith("%"):
            text, scale = text[:-1].strip(), PERCENT
        if "/" in text:
            return Fraction(text) * scale
        number = Decimal(text)
        if not number.is_finite() or abs(number.adjusted()) > MAX_EXPONENT:
            # 1e999999999 would take minutes to expand into a fraction, and sizes nothing real
            raise SizingInputError(
                field,
                str(value),
                "is out of range",
                f"give a number between 1e-{MAX_EXPONENT} and 1e{MAX_EXPONENT}",
            )
        return Fraction(number) * scale
    except (ValueError, ZeroDivisionError, InvalidOperation, TypeError):
        raise SizingInputError(
            field,
            repr(value) if not isinstance(value, str) else value,
            "is not a number",
            "give a number such as 1.5",
        ) from None


def positive(value: Number, field: str, unit: str = "") -> Fraction:
    """A quantity that must be more than zero (a capacity, an IOPS rate per drive)."""
    x = exact(value, field)
    if x <= 0:
        raise SizingInputError(
            field, show(x, unit), "must be more than 0", f"give a positive number{_of(unit)}"
        )
    return x


def non_negative(value: Number, field: str, unit: str = "") -> Fraction:
    """A quantity that may be zero but not negative (a load, a vDisk count)."""
    x = exact(value, field)
    if x < 0:
        raise SizingInputError(
            field, show(x, unit), "must not be negative", f"give 0 or more {unit}".rstrip()
        )
    return x


def count(value: Number, field: str, *, minimum: int = 1) -> int:
    """A whole count (desktops, drives, ports) of at least ``minimum``."""
    x = exact(value, field)
    if x.denominator != 1:
        raise SizingInputError(field, show(x), "is not a whole number", "give a whole count such as 4")
    if x < minimum:
        raise SizingInputError(
            field, show(x), f"must be at least {minimum}", f"give a count of {minimum} or more"
        )
    return int(x)


def share(value: Number, field: str) -> Fraction:
    """A share from 0 to 1 (0 % to 100 %): ``0.87``, ``"0.87"`` or ``"87%"``.

    A bare number over 1 is refused rather than guessed at: ``87`` might mean 87 % or a typo.

    >>> share("99.8%", "write_share")
    Fraction(499, 500)
    """
    x = exact(value, field)
    if x < 0:
        raise SizingInputError(
            field, show_share(x), "must not be negative", "give a share from 0 to 100 %, e.g. 87%"
        )
    if x > 1:
        raise SizingInputError(
            field,
            str(value) if isinstance(value, str) else show(x),
            "is over 100 %",
            "give a share from 0 to 100 %, e.g. 87% or 0.87",
        )
    return x


def whole_up(x: Fraction) -> int:
    """Round up to a whole unit: what must be provisioned (drives, arrays, ports).

    >>> whole_up(Fraction(1270 * 50, 7 * 4500)), whole_up(Fraction(2))
    (3, 2)
    """
    return math.ceil(x)


def whole_down(x: Fraction) -> int:
    """Round down to a whole unit: what must fit (desktops per array).

    >>> whole_down(Fraction("642.608"))
    642
    """
    return math.floor(x)


def _terminates(x: Fraction) -> bool:
    d = x.denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    return d == 1


def show(x: Fraction | int, unit: str = "", places: int = 4) -> str:
    """``x`` for people: exact when its decimal ends (``642.608``), else ``≈`` and ``places`` decimals.

    >>> show(Fraction("642.608"), "desktops"), show(Fraction(50, 7), "IOPS")
    ('642.608 desktops', '≈7.1429 IOPS')
    """
    x = Fraction(x)
    if _terminates(x):
        text = _decimal_text(x)
    else:
        text = "≈" + _decimal_text(Fraction(round(x * 10**places), 10**places))
    return f"{text} {unit}" if unit else text


def show_share(x: Fraction) -> str:
    """A share as a percentage: ``Fraction(499, 500)`` -> ``"99.8 %"``."""
    return show(x * 100, "%")


def _decimal_text(x: Fraction) -> str:
    """A terminating fraction as its exact decimal, without trailing zeros."""
    sign = "-" if x < 0 else ""
    x = abs(x)
    whole, rest = divmod(x.numerator, x.denominator)
    if rest == 0:
        return f"{sign}{whole}"
    digits = ""
    while rest and len(digits) < 40:
        rest *= 10
        digit, rest = divmod(rest, x.denominator)
        digits += str(digit)
    return f"{sign}{whole}.{digits}"


def to_json(value: Any) -> Any:
    """A result field as JSON: whole fractions as ints, others as floats (``exact_fields`` keeps them exact)."""
    if isinstance(value, Fraction):
        return int(value) if value.denominator == 1 else float(value)
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    return value


def exact_fields(values: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Every non-whole fraction in ``values`` (nested dicts flattened with dots) as ``"p/q"``."""
    out: dict[str, str] = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, Fraction) and value.denominator != 1:
            out[name] = f"{value.numerator}/{value.denominator}"
        elif isinstance(value, dict):
            out.update(exact_fields(value, f"{name}."))
    return out


def _of(unit: str) -> str:
    return f" of {unit}" if unit else ""

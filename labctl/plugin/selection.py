"""Cell ids, and ``-k`` that selects cells by them.

A cell's pytest id is its cell id, the one shown everywhere else (run folder, Allure, figures):
``test_boot_storm[boot_storm-standalone-050]``. pytest's ``-k`` matches substrings, so ``-k 5``
would also select 25, 50 and 75; for plan cells a number in a ``-k`` expression matches a cell
parameter *equal* to it instead (``-k 5``, ``-k "50 or 75"``), and ``AxB`` a pair of them
(``-k 50x50``: 50 copiers and 50 rebooters). Every other word keeps pytest's meaning, so
``-k boot_storm-standalone-050`` or ``-k "boot_storm and share_to_share"`` work as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

import pytest
from _pytest.mark import KeywordMatcher  # pytest's own -k matcher, for every word but numbers
from _pytest.mark.expression import Expression

from labctl.recorder.cell_files import cell_id

_NUMBER = re.compile(r"^\d+$")
_PAIR = re.compile(r"^(\d+)x(\d+)$", re.IGNORECASE)


@dataclass(frozen=True)
class CellSpec:
    """What the plugin knows of a cell at collection: its id, configuration and parameters."""

    cell_id: str
    plan: str
    configuration: str | None
    params: dict[str, Any]

    @property
    def numbers(self) -> frozenset[int]:
        return frozenset(
            v for v in _flat(self.params.values()) if isinstance(v, int) and not isinstance(v, bool)
        )

    @property
    def pairs(self) -> frozenset[tuple[int, int]]:
        return frozenset(
            (int(v[0]), int(v[1]))
            for v in self.params.values()
            if isinstance(v, tuple | list) and len(v) == 2 and all(isinstance(x, int) for x in v)
        )


def _flat(values: Iterable[Any]) -> Iterable[Any]:
    for v in values:
        if isinstance(v, tuple | list):
            yield from _flat(v)
        elif isinstance(v, Enum):
            yield v.value
        else:
            yield v


def cell_spec(plan: str, params: Mapping[str, Any], default_configuration: str | None) -> CellSpec:
    """``<plan>-<configuration>-<parameters>``: a ``configuration`` parameter names the configuration,
    the others follow in their order (pairs flattened, numbers zero-padded)."""
    cfg = params.get("configuration", default_configuration)
    rest = [v for k, v in params.items() if k != "configuration"]
    return CellSpec(cell_id(plan, cfg or "default", *_flat(rest)), plan, cfg, dict(params))


class _CellMatcher:
    """pytest's matcher, except that numbers and ``AxB`` pairs match cell parameters exactly."""

    def __init__(self, item: pytest.Item, spec: CellSpec | None):
        self.spec = spec
        self.words = KeywordMatcher.from_item(item)

    def __call__(self, word: str, /, **kwargs: Any) -> bool:
        if self.spec is not None:
            if _NUMBER.match(word):
                return int(word) in self.spec.numbers
            pair = _PAIR.match(word)
            if pair:
                return (int(pair.group(1)), int(pair.group(2))) in self.spec.pairs
        return self.words(word, **kwargs)


def deselect(items: list[pytest.Item], config: pytest.Config, specs: Mapping[str, CellSpec]) -> None:
    """Apply ``-k`` with the cell rule above, then blank it so pytest does not apply it again
    (the caller restores it)."""
    expr_text = (config.option.keyword or "").strip()
    if not expr_text or not specs:
        return
    try:
        expr = Expression.compile(expr_text)
    except SyntaxError as exc:
        raise pytest.UsageError(
            f"Wrong expression passed to '-k': {exc.text}: at column {exc.offset}: {exc.msg}"
        ) from None
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        (keep if expr.evaluate(_CellMatcher(item, specs.get(item.nodeid))) else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep

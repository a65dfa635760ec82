"""Type-check an inventory item by item, so that one run reports every problem.

Validating the whole file as one :class:`~labctl.inventory.model.InventorySpec` stops at the type
errors: the cross-reference checks (duplicates, unknown machines, RAID geometry) only ran once
those were fixed, so a file needed two rounds of `labctl inventory validate`. Here each list item
and each mapping entry is validated on its own; the items that pass make up the spec that is
resolved, and the names of the items that failed are kept as *broken* so that a reference to
one of them (a group naming a server whose entry has a typo) is not reported a second time as
"unknown".
"""

from __future__ import annotations

import functools
import typing
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import TypeAdapter, ValidationError

from labctl.inventory.model import InventorySpec, LabSpec
from labctl.inventory.ranges import RangeError, expand_names

Loc = tuple[str | int, ...]


@dataclass
class Checked:
    spec: InventorySpec
    errors: list[dict[str, Any]] = field(default_factory=list)  # pydantic errors, loc from the file's top
    broken: set[str] = field(default_factory=set)  # names of items that failed their types
    # list section -> the file's index of each item the spec kept (items that failed are left
    # out, so the spec's indices shift: locations are translated back with file_loc)
    positions: dict[str, list[int]] = field(default_factory=dict)


@functools.cache
def _adapter(tp: Any) -> TypeAdapter[Any]:
    return TypeAdapter(tp)


def validate_spec(data: dict[str, Any]) -> Checked:
    errors: list[dict[str, Any]] = []
    broken: set[str] = set()
    good: dict[str, Any] = {}
    positions: dict[str, list[int]] = {}
    fields = InventorySpec.model_fields
    for key, value in data.items():
        if key not in fields:
            errors.append(
                {
                    "type": "extra_forbidden",
                    "loc": (key,),
                    "msg": "Extra inputs are not permitted",
                    "input": value,
                }
            )
    for name, info in fields.items():
        if name not in data:
            if info.is_required():
                errors.append({"type": "missing", "loc": (name,), "msg": "Field required", "input": data})
            continue
        value = data[name]
        ann = info.annotation
        origin = typing.get_origin(ann)
        if origin is tuple and isinstance(value, list):
            (item_type, _) = typing.get_args(ann)
            items = []
            kept = positions.setdefault(name, [])
            for i, item in enumerate(value):
                try:
                    items.append(_adapter(item_type).validate_python(item))
                    kept.append(i)
                except ValidationError as exc:
                    errors.extend(_at(e, (name, i)) for e in exc.errors())
                    broken.update(_names_of(item))
            min_length = next((m.min_length for m in info.metadata if hasattr(m, "min_length")), None)
            if min_length and len(value) < min_length:
                errors.append(
                    {
                        "type": "too_short",
                        "loc": (name,),
                        "msg": "too short",
                        "input": value,
                        "ctx": {"min_length": min_length},
                    }
                )
            good[name] = tuple(items)
        elif origin is dict and isinstance(value, dict):
            (_, value_type) = typing.get_args(ann)
            entries = {}
            for key, entry in value.items():
                if not isinstance(key, str):
                    errors.append(
                        {
                            "type": "string_type",
                            "loc": (name, key),
                            "msg": "keys should be strings",
                            "input": key,
                        }
                    )
                    continue
                try:
                    entries[key] = _adapter(value_type).validate_python(entry)
                except ValidationError as exc:
                    errors.extend(_at(e, (name, key)) for e in exc.errors())
                    broken.add(key)
            good[name] = entries
        else:
            try:
                tp: Any = Annotated[ann, *info.metadata] if info.metadata else ann
                good[name] = _adapter(tp).validate_python(value)
            except ValidationError as exc:
                errors.extend(_at(e, (name,)) for e in exc.errors())
                if name == "lab":  # resolve the rest under a stand-in
                    lab_name = value.get("name") if isinstance(value, dict) else None
                    good[name] = LabSpec.model_construct(
                        name=lab_name if isinstance(lab_name, str) else "lab"
                    )
    if "lab" not in good:
        good["lab"] = LabSpec.model_construct(name="lab")
    return Checked(InventorySpec.model_construct(**good), errors, broken, positions)


def file_loc(loc: Loc, positions: dict[str, list[int]]) -> Loc:
    """A location in the spec as a location in the file (``servers[2]`` may be the file's 3rd)."""
    if len(loc) >= 2 and isinstance(loc[0], str) and isinstance(loc[1], int) and loc[0] in positions:
        kept = positions[loc[0]]
        if 0 <= loc[1] < len(kept):
            return (loc[0], kept[loc[1]], *loc[2:])
    return loc


def _at(err: Any, prefix: Loc) -> dict[str, Any]:
    e = dict(err)
    e["loc"] = (*prefix, *err["loc"])
    return e


def _names_of(item: Any) -> list[str]:
    """The names a list item that failed its types would have declared."""
    name = item.get("name") if isinstance(item, dict) else None
    if not isinstance(name, str):
        return []
    try:
        return expand_names(name)
    except RangeError:
        return [name]

"""Whole files of a run folder, written so that a reader never sees half of one: to a temporary
name in the same folder, flushed to disk, then renamed into place (a rename is atomic on POSIX).

Append-only files (``series.csv``, ``events.jsonl``) are not written here: they are flushed batch
by batch instead (see :mod:`labctl.recorder.series`).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel


def atomic_write_text(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def jsonable(x: Any) -> Any:
    """``x`` as plain JSON data: models dumped, and NaN / Infinity (not JSON; pandas and browsers
    choke on them) as null."""
    if isinstance(x, BaseModel):
        x = x.model_dump(mode="json")
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [jsonable(v) for v in x]
    return x


def json_text(data: Any) -> str:
    """Indented JSON text (UTF-8, no NaN) of ``data``, ending with a newline."""
    return json.dumps(jsonable(data), indent=2, ensure_ascii=False, default=str, allow_nan=False) + "\n"


def write_json_atomic(path: Path, data: Any) -> Path:
    """``data`` (JSON-like, or a pydantic model) as a JSON file, atomically."""
    return atomic_write_text(path, json_text(data))

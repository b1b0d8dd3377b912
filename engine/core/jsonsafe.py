"""Strict JSON for every file and database field the project writes.

`jsonable` turns numpy values into Python ones and non-finite floats into the strings
"inf", "-inf", "nan"; `dumps`/`write_json` then refuse any bare NaN / Infinity token
(`allow_nan=False`), which strict readers (browsers, jq, other languages) reject. A
score that cannot be computed is written as null with a reason beside it
(engine/evaluation/utility.py), not as a NaN.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np


def jsonable(obj: Any) -> Any:
    """A copy of `obj` that json.dumps writes as strict JSON ("inf" and "nan" as strings)."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (np.integer, int)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        x = float(obj)
        return x if math.isfinite(x) else str(x)
    if obj is None or isinstance(obj, str):
        return obj
    try:
        json.dumps(obj, allow_nan=False)
        return obj
    except (TypeError, ValueError):
        return str(obj)


def dumps(obj: Any, **kwargs) -> str:
    """json.dumps of `jsonable(obj)` that can never hold a NaN / Infinity token."""
    return json.dumps(jsonable(obj), allow_nan=False, **kwargs)


def write_json(path: str | Path, obj: Any, *, atomic: bool = False, **kwargs) -> None:
    """Write `obj` to `path` as strict JSON (see `dumps`). `atomic`: written whole to a
    file of its own, then renamed, so a reader in another process never sees half."""
    path = Path(path)
    if not atomic:
        path.write_text(dumps(obj, **kwargs))
        return
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(dumps(obj, **kwargs))
    tmp.replace(path)


def _refuse(token: str):
    raise ValueError(f"non-standard JSON token {token!r}")


def strict_loads(text: str) -> Any:
    """json.loads that refuses NaN / Infinity / -Infinity: how a strict reader sees a file."""
    return json.loads(text, parse_constant=_refuse)

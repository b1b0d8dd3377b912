"""Plain JSON for run files and the store: numpy → Python, non-finite floats → strings."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np


def jsonable(obj: Any) -> Any:
    """A copy of `obj` that json.dumps writes as strict JSON ("inf" and "nan" as strings)."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
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
        json.dumps(obj)
        return obj
    except TypeError:
        return str(obj)

"""Column kinds beyond numeric/categorical, and the one post-processing step that makes
synthetic values respect them (every tabular method calls `restore`).

A numeric column may be
* integer       — synthetic values are whole numbers;
* non-negative  — synthetic values are ≥ 0;
* zero-inflated — a point mass at one value (`mass`, 0 for a capital-gain-like column)
                  plus a continuous part; the mass is reproduced as that exact value;
* bounded       — public bounds [lo, hi]; nothing falls outside them.

Where kinds come from. The user's schema (`schema=` data option: a JSON file or mapping,
`{"age": {"kind": "integer", "bounds": [17, 90]}, "gain": {"kind": ["zero-inflated",
"integer"], "mass": 0}, "education": {"determines": ["education_num"]}}`) is public
metadata; "determines" declares a functional dependency, which fidelity's `rules_broken`
checks in the synthetic table. Kinds the user does not give are read from
the TRAINING records (whole numbers → integer, no negative value → non-negative, one
value held by ≥ `MASS_SHARE` of the records → a point mass there): NOT private, and
metrics.json's `disclosures` says so (as for category lists read from the data).

How a method reproduces a point mass. `model_view` appends, for every zero-inflated
column, a categorical flag "is at the mass" (two categories) to the data the method
sees; the method models and releases it like any other categorical column (so DP-MERF
and the marginals baseline learn how often, and in which class, a record sits at the
mass). `restore` drops the flags and sets the flagged values to the mass exactly.
Privacy: the flag is a function of one record's own value, so replace-one neighbours
stay replace-one neighbours of the view, and each method's stated sensitivity, computed
on the view's columns, holds. `restore` and `apply_kinds` are post-processing.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from engine.data.dataset import Column, Dataset
from engine.core.errors import InputError

KINDS = ("numeric", "categorical", "integer", "non-negative", "zero-inflated", "bounded",
         "date")  # date: engine/data/dates.py
MASS_SHARE = 0.25  # a value held by this share of training records is read as a point mass
FLAG_SUFFIX = " (at point mass)"
FLAG_CATEGORIES = ["no", "yes"]


# ------------------------------------------------------------------------ the schema
def parse_schema(value) -> dict[str, dict]:
    """The user's schema as {column: {"kinds": set, "bounds": (lo, hi)|None, "mass":
    float|None, "categories": list|None}}. `value`: a mapping, JSON text, or the path of
    a JSON file. Every problem is a one-line InputError."""
    if value is None or value == "" or value == {}:
        return {}
    if isinstance(value, (str, Path)):
        text = str(value).strip()
        if not text.startswith("{"):
            path = Path(text).expanduser()
            if not path.is_file():
                raise InputError(f"schema file {text!r} does not exist; give a JSON file or "
                                 'JSON text such as {"age": {"kind": "integer"}}.')
            text = path.read_text()
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"the schema is not valid JSON ({exc.msg} at line {exc.lineno}); "
                             'write it as {"column": {"kind": "integer", "bounds": [lo, hi]}}.'
                             ) from None
    if not isinstance(value, dict):
        raise InputError(f"the schema must map column names to their kinds. Got {value!r}.")
    return {str(name): _entry(str(name), spec) for name, spec in value.items()}


def _entry(name: str, spec) -> dict:
    if isinstance(spec, str):
        spec = {"kind": spec}
    if not isinstance(spec, dict):
        raise InputError(f"schema entry of {name!r} must be an object such as "
                         f'{{"kind": "integer"}}. Got {spec!r}.')
    unknown = sorted(set(spec) - {"kind", "bounds", "mass", "categories", "determines"})
    if unknown:
        raise InputError(f"schema entry of {name!r} has unknown keys {unknown}; use kind, "
                         "bounds, mass, categories, determines.")
    kinds = spec.get("kind", [])
    kinds = {kinds} if isinstance(kinds, str) else set(kinds)
    bad = sorted(kinds - set(KINDS))
    if bad:
        raise InputError(f"schema entry of {name!r} has unknown kinds {bad}; known: "
                         f"{', '.join(KINDS)}.")
    bounds = spec.get("bounds")
    if bounds is not None:
        bounds = check_bounds(name, bounds)
        kinds.add("bounded")
    elif "bounded" in kinds:
        raise InputError(f"schema entry of {name!r} is bounded but gives no bounds: "
                         "add \"bounds\": [lo, hi].")
    mass = spec.get("mass")
    if mass is not None:
        try:
            mass = float(mass)
        except (TypeError, ValueError):
            raise InputError(f"the point mass of {name!r} must be a number. Got {mass!r}."
                             ) from None
        kinds.add("zero-inflated")
    elif "zero-inflated" in kinds:
        mass = 0.0
    if "categorical" in kinds and kinds & {"integer", "non-negative", "zero-inflated",
                                           "bounded", "numeric", "date"}:
        raise InputError(f"schema entry of {name!r} mixes categorical with numeric kinds "
                         f"{sorted(kinds)}; pick one.")
    determines = spec.get("determines", [])
    determines = [determines] if isinstance(determines, str) else determines
    if not isinstance(determines, list) or name in determines:
        raise InputError(f"\"determines\" of {name!r} must list other columns, such as "
                         f'["education_num"]. Got {spec.get("determines")!r}.')
    return {"kinds": kinds, "bounds": bounds, "mass": mass,
            "categories": spec.get("categories"), "determines": tuple(map(str, determines))}


def check_bounds(col: str, b) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in b)
    except (TypeError, ValueError):
        raise InputError(f"bounds for {col!r} must be [lo, hi] numbers. Got {b!r}.") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise InputError(f"bounds for {col!r} must be finite with lo < hi. Got {b!r}.")
    return lo, hi


def is_numeric_in(entry: dict | None) -> bool | None:
    """True/False when the schema decides the column's type, else None."""
    if not entry or not entry["kinds"]:
        return None
    return "categorical" not in entry["kinds"]


# ------------------------------------------------------------- kinds of one column
def describe(values: np.ndarray, col: Column, entry: dict | None) -> tuple[Column, list[str]]:
    """`col` with its kinds set: from the schema `entry` where given, else read from the
    training `values` (returned as the list of kinds that were read, which are NOT
    private). `values`: the column's training values (numeric)."""
    entry = entry or {"kinds": set(), "bounds": None, "mass": None}
    given = entry["kinds"]
    read = []
    integer = "integer" in given
    nonneg = "non-negative" in given
    mass = entry["mass"]
    if not given - {"numeric", "bounded", "date"}:  # nothing but numeric/bounds: read the rest
        integer = bool(np.all(values == np.round(values)))
        nonneg = bool(np.all(values >= 0))
        uniq, counts = np.unique(values, return_counts=True)
        top = int(np.argmax(counts))
        if counts[top] >= MASS_SHARE * len(values) and len(uniq) > 2:
            mass = float(uniq[top])
        read = [k for k, on in (("integer", integer), ("non-negative", nonneg),
                                (f"point mass at {mass:g}" if mass is not None else "", mass
                                 is not None)) if on]
    return replace(col, integer=integer, nonneg=nonneg, mass=mass), read


# ------------------------------------------------------ the view a method models
def model_view(data: Dataset) -> Dataset:
    """`data` with one categorical flag column per zero-inflated column appended (1 =
    the record sits at the mass); `data` itself when there is none. Idempotent."""
    if data.kind != "tabular" or data.notes.get("_model_view"):
        return data
    massed = [(j, c) for j, c in enumerate(data.columns) if c.kind == "num" and c.mass is not None]
    if not massed:
        return data

    def flags(x):
        return np.column_stack([(x[:, j] == c.mass).astype(np.float64) for j, c in massed])

    cols = list(data.columns) + [Column(c.name + FLAG_SUFFIX, "cat",
                                        categories=list(FLAG_CATEGORIES),
                                        bounds_source="public (two values)")
                                 for _, c in massed]
    return replace(data, x_train=np.hstack([data.x_train, flags(data.x_train)]),
                   x_test=np.hstack([data.x_test, flags(data.x_test)]), columns=cols,
                   notes={**data.notes, "_model_view": str(len(massed))})


def original_columns(data: Dataset) -> list[Column]:
    """The dataset's own columns, without the flags `model_view` appended."""
    return data.columns[:len(data.columns) - int(data.notes.get("_model_view", 0))]


def mass_flags(data: Dataset) -> list[tuple[int, int]]:
    """(value column, its flag column in the model view) for every zero-inflated column;
    `data`: the dataset or its model view."""
    columns = original_columns(data)
    massed = [j for j, c in enumerate(columns) if c.kind == "num" and c.mass is not None]
    return [(j, len(columns) + k) for k, j in enumerate(massed)]


def restore(x: np.ndarray, data: Dataset) -> np.ndarray:
    """Synthetic records of `model_view(data)` back in the original columns: flagged
    values set to the mass exactly, flags dropped, then `enforce` (post-processing).
    `data`: the dataset or its model view."""
    if data.kind != "tabular":
        return x
    columns = original_columns(data)
    d = len(columns)
    x = np.array(x, dtype=np.float64, copy=True)
    if x.shape[1] > d:
        for j, flag in mass_flags(data):
            x[np.rint(x[:, flag]) >= 1, j] = columns[j].mass
        x = x[:, :d]
    return enforce(x, columns)


def enforce_values(v: np.ndarray, col: Column) -> np.ndarray:
    """One numeric column's values made to respect its kinds: inside its public bounds,
    ≥ 0 when non-negative, whole when integer (rounded, then kept inside the bounds)."""
    v = np.asarray(v, dtype=np.float64)
    lo, hi = col.bounds if col.bounds is not None else (-np.inf, np.inf)
    if col.nonneg:
        lo = max(lo, 0.0)
    if col.integer:
        v = np.rint(v)
        lo, hi = math.ceil(lo) if math.isfinite(lo) else lo, math.floor(hi) if math.isfinite(hi) else hi
    return np.clip(v, lo, hi)


def enforce(x: np.ndarray, columns: list[Column]) -> np.ndarray:
    """Every numeric column of the matrix `x` through `enforce_values` (a copy)."""
    x = np.array(x, dtype=np.float64, copy=True)
    for j, col in enumerate(columns):
        if col.kind == "num":
            x[:, j] = enforce_values(x[:, j], col)
    return x


def apply_kinds(frame, columns: list[Column]):
    """The same post-processing on a synthetic DataFrame (numeric columns by name); a
    copy. For a caller holding a frame rather than a matrix (no method does today)."""
    out = frame.copy()
    for col in columns:
        if col.kind == "num" and col.name in out.columns:
            out[col.name] = enforce_values(out[col.name].to_numpy(np.float64), col)
    return out

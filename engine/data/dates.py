"""Date columns of a user's CSV: read as numeric days since 1970-01-01, written back as
dates (YYYY-MM-DD) in the synthetic CSV.

A column is a date column when every training value is an ISO date (2020-03-01, with an
optional time), or when the user says it is numeric (`numeric=` or the schema's
"date"/"numeric" kind) and every value parses as a date. That decision is read from the
training records and, like numeric-versus-categorical, is NOT private (metrics.json's
`column_kinds` note says so). Once read as days it is an ordinary numeric column: its
bounds are public only when the user gives them (as days or as dates), else the method
releases them privately (engine/privacy/dp_bounds.py, on its grid of whole days: the
relative grid of other columns has cells years wide at days since 1970) and draws the
synthetic days inside them; writing them back as dates is post-processing. A one-year
column of 3,200 training records gets bounds of about 400 days at ε = 1
(tests/test_date_bounds.py); public bounds as dates are tighter still.
"""

from __future__ import annotations

import re

import numpy as np

from engine.core.errors import InputError

EPOCH = np.datetime64("1970-01-01", "D")
DAY_NS = 86_400 * 10**9
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?$")


def as_days(series, *, iso_only: bool = True):
    """The series as float days since 1970-01-01 (a time of day is a fraction), or None
    when a value is not a date. `iso_only`: only YYYY-MM-DD[ hh:mm[:ss]] counts (the
    automatic reading: a category such as "May" must stay a category); otherwise any
    spelling pandas reads as a date (the user said the column is numeric)."""
    import pandas as pd

    text = series.astype(str).str.strip()
    if len(text) == 0 or (iso_only and not text.map(lambda v: bool(_ISO.match(v))).all()):
        return None
    if not text.str.contains(r"\d").all():
        return None
    parsed = pd.to_datetime(text, errors="coerce", format="ISO8601" if iso_only else "mixed")
    if parsed.isna().any():
        return None
    ns = parsed.to_numpy("datetime64[ns]").astype(np.int64)
    return pd.Series(ns / DAY_NS, index=series.index, dtype=np.float64)


def days_or_nan(series) -> np.ndarray:
    """Values of a date column (test records, a synthetic CSV read back) as days; NaN
    where a value is not a date."""
    import pandas as pd

    parsed = pd.to_datetime(series.astype(str).str.strip(), errors="coerce", format="mixed")
    days = parsed.to_numpy("datetime64[ns]").astype(np.int64) / DAY_NS
    return np.where(parsed.isna().to_numpy(), np.nan, days)


def to_dates(days: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 → 'YYYY-MM-DD' strings (rounded to the nearest day)."""
    whole = np.rint(np.asarray(days, dtype=np.float64)).astype(np.int64)
    return np.datetime_as_string(EPOCH + whole.astype("timedelta64[D]"), unit="D").astype(object)


def bound_days(name: str, bounds) -> list:
    """User bounds of a date column: dates become days; numbers are taken as days."""
    import pandas as pd

    try:
        return [float(v) if isinstance(v, (int, float)) else
                float(as_days(pd.Series([str(v)]), iso_only=False).iloc[0]) for v in bounds]
    except (TypeError, AttributeError):
        raise InputError(f"bounds for date column {name!r} must be two dates such as "
                         f'["2020-01-01", "2020-12-31"]. Got {bounds!r}.') from None

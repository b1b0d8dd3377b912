"""The user's own files: a CSV (tabular) or an NPZ of images, validated at the boundary.

Every problem with a file is answered by an InputError that names the file, the column or
array, and the fix. Category domains of a CSV are read from the file and declared public
(`Dataset.notes["category_domain"]`); numeric columns without user bounds get
`bounds=None`, so the method must release their range privately.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from engine.dataset import MAX_CATEGORIES, MIN_RECORDS, Column, Dataset, split_train_test
from engine.errors import InputError


# ----------------------------------------------------------------------------- user CSV
def _as_strings(values) -> list[str]:
    """One spelling per category value, shared by loading and writing (3.0 -> '3')."""
    out = []
    for v in values:
        if isinstance(v, (bool, np.bool_)):
            out.append(str(bool(v)))
        elif isinstance(v, (int, float, np.integer, np.floating)):
            f = float(v)
            out.append(str(int(f)) if f.is_integer() else repr(f))
        else:
            out.append(str(v))
    return out


def _domain(series) -> list[str]:
    """Sorted category strings: numeric order for numbers, text order otherwise."""
    import pandas as pd

    uniq = series.unique()
    if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
        uniq = np.sort(uniq.astype(float))
        return list(dict.fromkeys(_as_strings(uniq)))
    return sorted(set(_as_strings(uniq)))


def _codes(series, categories: list[str], what: str) -> np.ndarray:
    index = {c: i for i, c in enumerate(categories)}
    strings = _as_strings(series.tolist())
    unknown = sorted({s for s in strings if s not in index})
    if unknown:
        raise InputError(f"column {what!r} has values outside its category domain: "
                         f"{unknown[:5]}; known: {categories[:10]}.")
    return np.array([index[s] for s in strings], dtype=np.float64)


def _name_list(value, option: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):  # the app's text box: "a, b, c"
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, (list, tuple, set)):
        return [str(v) for v in value]
    raise InputError(f"option {option!r} must be a list of column names. Got {value!r}.")


def _existing_file(path, kind: str) -> Path:
    """The user's file as a Path, or an InputError saying what is missing."""
    if path is None:
        raise InputError(f"dataset '{kind}' needs option path=<your .{kind} file>.")
    p = Path(path).expanduser()
    if not p.is_file():
        raise InputError(f"{kind.upper()} file {str(p)!r} does not exist; check the path.")
    return p


def _read_csv(path):
    import pandas as pd

    p = _existing_file(path, "csv")
    try:
        df = pd.read_csv(p, encoding="utf-8-sig")  # -sig: Excel writes a BOM
    except pd.errors.EmptyDataError:
        raise InputError(f"CSV file {str(p)!r} is empty; it needs a header row and "
                         "records.") from None
    except (pd.errors.ParserError, UnicodeDecodeError, OSError) as exc:
        raise InputError(f"CSV file {str(p)!r} could not be read as CSV ({exc}); save it as "
                         "comma-separated UTF-8 text with one header row.") from None
    df.columns = [str(c).strip() for c in df.columns]
    return p, df


def load_csv(seed: int = 0, path: str | None = None, label: str | None = None,
             categorical=None, numeric=None, bounds: dict | None = None) -> Dataset:
    """A user's CSV: `label` names the class column, the rest become features.

    Privacy assumptions: the category domain of each categorical column is read from the
    file and treated as public; numeric columns have public bounds only when the user
    gives them (`bounds={col: [lo, hi]}`), else bounds=None and the method must release
    them privately.
    """
    import pandas as pd

    p, df = _read_csv(path)
    cols = list(df.columns)
    if label is None:
        raise InputError(f"dataset 'csv' needs option label=<class column>; columns: {cols}.")
    if label not in cols:
        raise InputError(f"label column {label!r} is not in {p.name}; columns: {cols}.")
    if len(cols) < 2:
        raise InputError(f"{p.name} has only the label column; it needs at least one feature.")
    if len(df) == 0:
        raise InputError(f"CSV file {p.name!r} has a header but no records.")
    missing = [c for c in cols if df[c].isna().any()]
    if missing:
        raise InputError(f"columns {missing} have missing values; drop or impute those rows "
                         "before loading (e.g. df.dropna() or sklearn SimpleImputer).")
    if len(df) < MIN_RECORDS:
        raise InputError(f"{p.name} has {len(df)} records; at least {MIN_RECORDS} are needed.")
    force_cat, force_num = _name_list(categorical, "categorical"), _name_list(numeric, "numeric")
    bounds = dict(bounds or {})
    overrides = (("categorical", force_cat), ("numeric", force_num), ("bounds", list(bounds)))
    for opt, names in overrides:
        bad = [n for n in names if n not in cols or n == label]
        if bad:
            raise InputError(f"option {opt!r} names {bad}, which are not feature columns of "
                             f"{p.name}; feature columns: {[c for c in cols if c != label]}.")
    both = sorted(set(force_cat) & set(force_num))
    if both:
        raise InputError(f"columns {both} are forced both categorical and numeric; pick one.")

    feats, columns = [], []
    for c in (c for c in cols if c != label):
        s = df[c]
        if c in force_num:
            num = pd.to_numeric(s, errors="coerce")
            if num.isna().any():
                bad_v = s[num.isna()].iloc[0]
                raise InputError(f"column {c!r} is forced numeric but holds text such as "
                                 f"{bad_v!r}; fix the values or make it categorical.")
            s = num
        numeric_dtype = pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
        is_num = c in force_num or (c not in force_cat and numeric_dtype and s.nunique() > 10)
        if c in bounds and not is_num:
            raise InputError(f"bounds were given for {c!r}, which is categorical; add it to "
                             "numeric=[...] or drop its bounds.")
        if is_num:
            values = s.to_numpy(np.float64)
            if not np.isfinite(values).all():
                raise InputError(f"column {c!r} holds inf values; replace them first.")
            col = Column(c, "num")
            if c in bounds:
                col.bounds, col.bounds_source = _check_bounds(c, bounds[c]), "user"
            feats.append(values)
        else:
            cats = _domain(s)
            if len(cats) > MAX_CATEGORIES:
                raise InputError(f"categorical column {c!r} has {len(cats)} categories "
                                 f"(max {MAX_CATEGORIES}); drop it (an ID?) or force it numeric.")
            col = Column(c, "cat", categories=cats, bounds_source="public (read from file)")
            feats.append(_codes(s, cats, c))
        columns.append(col)

    class_names = _domain(df[label])
    if len(class_names) < 2:
        raise InputError(f"label column {label!r} has one class only ({class_names[0]!r}); "
                         "a classifier needs at least two.")
    y = _codes(df[label], class_names, label).astype(np.int64)
    xtr, xte, ytr, yte = split_train_test(np.column_stack(feats), y, seed)
    notes = {
        "source": str(p), "label": label,
        "category_domain": "category lists (and class names) are read from the file and "
                           "treated as public, not protected by DP; merge rare values if "
                           "their presence is sensitive",
        "bounds": "user bounds where given; other numeric columns need private release",
    }
    return Dataset("csv", "tabular", xtr, ytr, xte, yte, class_names, columns=columns, notes=notes)


def _check_bounds(col: str, b) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in b)
    except (TypeError, ValueError):
        raise InputError(f"bounds for {col!r} must be [lo, hi] numbers. Got {b!r}.") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise InputError(f"bounds for {col!r} must be finite with lo < hi. Got {b!r}.")
    return lo, hi


# ----------------------------------------------------------------------------- user NPZ
def load_npz(seed: int = 0, path: str | None = None) -> Dataset:
    """A user's images: NPZ with `x` (n,h,w) or (n,c,h,w), c in (1, 3), and integer `y`.

    uint8 pixels are scaled by 1/255; float pixels must already lie in [0, 1]. The image
    shape and the label set are treated as public.
    """
    p = _existing_file(path, "npz")
    try:
        with np.load(p, allow_pickle=False) as z:
            names = list(z.files)
            missing = [k for k in ("x", "y") if k not in names]
            if missing:
                raise InputError(f"{p.name} lacks array(s) {missing}; it holds {names}. Save "
                                 "with np.savez(path, x=images, y=labels).")
            x, y = z["x"], z["y"]
    except InputError:
        raise
    except Exception as exc:  # zipfile, pickle and format errors
        raise InputError(f"{p.name} could not be read as .npz ({exc}); save it with "
                         "np.savez(path, x=images, y=labels).") from None
    if x.ndim == 3:
        x = x[:, None]
    if x.ndim != 4:
        raise InputError(f"x must have shape (n, h, w) or (n, c, h, w); got {x.shape}.")
    if x.shape[1] not in (1, 3):
        last = x.shape[3] in (1, 3)
        hint = " It looks channels-last: use x.transpose(0, 3, 1, 2)." if last else ""
        raise InputError(f"x must have 1 or 3 channels on axis 1; got shape {x.shape}.{hint}")
    if y.ndim != 1 or len(y) != len(x):
        raise InputError(f"y must be one label per image: x has {len(x)} images, "
                         f"y has shape {y.shape}.")
    if len(x) < MIN_RECORDS:
        raise InputError(f"{p.name} has {len(x)} images; at least {MIN_RECORDS} are needed.")
    if x.dtype == np.uint8:
        x = x.astype(np.float32) / 255.0
    elif np.issubdtype(x.dtype, np.floating):
        if not np.isfinite(x).all():
            raise InputError("x holds NaN or inf values; replace them before loading.")
        if x.min() < 0 or x.max() > 1:
            raise InputError(f"float pixels must lie in [0, 1]; got [{x.min():g}, {x.max():g}]. "
                             "Divide by 255 or save them as uint8.")
        x = x.astype(np.float32)
    else:
        raise InputError(f"x has dtype {x.dtype}; use uint8 (0..255) or floats in [0, 1].")
    if np.issubdtype(y.dtype, np.floating) and np.isfinite(y).all() and (y == np.round(y)).all():
        y = y.astype(np.int64)  # 3.0 is a fine label
    if not np.issubdtype(y.dtype, np.integer):
        raise InputError(f"y must hold integer class labels; got dtype {y.dtype}.")
    values, y = np.unique(y, return_inverse=True)
    if len(values) < 2:
        raise InputError(f"y has one class only ({values[0]}); a classifier needs at least two.")
    xtr, xte, ytr, yte = split_train_test(x, y.astype(np.int64), seed)
    return Dataset("npz", "image", xtr, ytr, xte, yte, [str(v) for v in values],
                   tuple(x.shape[1:]), notes={"source": str(p)})


# ----------------------------------------------------------------------------- frames
def tabular_to_frame(x: np.ndarray, columns: list[Column], *, y=None, class_names=None,
                     label: str = "label"):
    """Matrix -> DataFrame with category strings; synthetic codes are rounded and clipped."""
    import pandas as pd

    data = {}
    for j, col in enumerate(columns):
        v = np.asarray(x[:, j], dtype=np.float64)
        if col.kind == "cat":
            codes = np.clip(np.rint(v), 0, len(col.categories) - 1).astype(int)
            data[col.name] = np.asarray(col.categories, dtype=object)[codes]
        else:
            data[col.name] = v
    if y is not None:
        y = np.asarray(y, dtype=int)
        data[label] = np.asarray(class_names, dtype=object)[y] if class_names else y
    return pd.DataFrame(data)


def frame_to_tabular(df, columns: list[Column]) -> np.ndarray:
    """DataFrame -> float64 matrix in `columns` order (category strings -> codes)."""
    missing = [c.name for c in columns if c.name not in df.columns]
    if missing:
        raise InputError(f"frame lacks columns {missing}.")
    return np.column_stack([
        _codes(df[c.name], c.categories, c.name) if c.kind == "cat"
        else df[c.name].to_numpy(np.float64) for c in columns])


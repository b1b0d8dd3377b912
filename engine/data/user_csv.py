"""The user's own CSV (tabular), validated at the boundary; NPZ images are in user_npz.

Every problem with a file is answered by an InputError that names the file, the column or
array, and the fix. Files are split by record position only (`split_indices`), so one
replaced record changes at most one training record. Category lists and class names are
public when the user gives them; otherwise they are read from the training records and
`Dataset.notes` says plainly that they are not private. Numeric columns without user
bounds get `bounds=None`, so the method must release their range privately.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from engine.data import column_kinds, dates
from engine.data.dataset import (MAX_CATEGORIES, MIN_RECORDS, POSITIONAL_SPLIT, Column, Dataset,
                                 split_indices)
from engine.core.errors import InputError


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


def _as_numbers(series):
    """The series as floats when every value reads as a number (bools do not), else None."""
    import pandas as pd

    if pd.api.types.is_bool_dtype(series):
        return None
    num = pd.to_numeric(series, errors="coerce")
    return None if num.isna().any() else num.astype(np.float64)


def _domain(series) -> list[str]:
    """Sorted category strings: numeric order for numbers, text order otherwise."""
    num = _as_numbers(series)
    if num is not None:
        return list(dict.fromkeys(_as_strings(np.sort(num.unique()))))
    return sorted(set(_as_strings(series.unique())))


def _spelled(series, numeric_domain: bool) -> list[str]:
    """Each value's category string; a numeric domain spells '3.0' and 3 alike ('3')."""
    import pandas as pd

    if not numeric_domain:
        return _as_strings(series.tolist())
    num = pd.to_numeric(series, errors="coerce")
    return [_as_strings([v])[0] if math.isfinite(v) else str(o)
            for v, o in zip(num.tolist(), series.tolist())]


def _codes(series, categories: list[str], what: str) -> np.ndarray:
    index = {c: i for i, c in enumerate(categories)}
    strings = _as_strings(series.tolist())
    unknown = sorted({s for s in strings if s not in index})
    if unknown:
        raise InputError(f"column {what!r} has values outside its category domain: "
                         f"{unknown[:5]}; known: {categories[:10]}.")
    return np.array([index[s] for s in strings], dtype=np.float64)


def _encode(strings: list[str], categories: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(codes, known): codes into `categories`, -1 and known=False for other values."""
    index = {c: i for i, c in enumerate(categories)}
    codes = np.array([index.get(s, -1) for s in strings], dtype=np.int64)
    return codes, codes >= 0


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


def _category_lists(value) -> dict[str, list[str]]:
    """Public category lists: {column: [values]} or the app's text, one
    'column: a, b, c' per line (or separated by ';')."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        out = {}
        for part in (p.strip() for p in value.replace(";", "\n").splitlines()):
            if not part:
                continue
            if ":" not in part:
                raise InputError(f"category lists go one per line as 'column: a, b, c'. "
                                 f"Got {part!r}.")
            name, _, vals = part.partition(":")
            out[name.strip()] = _name_list(vals, "categories")
        value = out
    if not isinstance(value, dict):
        raise InputError(f"option 'categories' must map column names to lists of values. "
                         f"Got {value!r}.")
    out = {str(k): _name_list(v, "categories") for k, v in value.items()}
    for name, cats in out.items():
        if len(cats) < 1 or len(set(cats)) != len(cats):
            raise InputError(f"the public category list of {name!r} must hold distinct values. "
                             f"Got {cats!r}.")
    return out


def _all_numbers(values: list[str]) -> bool:
    try:
        [float(v) for v in values]
    except ValueError:
        return False
    return True


def load_csv(seed: int = 0, path: str | None = None, label: str | None = None,
             categorical=None, numeric=None, bounds: dict | None = None,
             categories=None, classes=None, schema=None) -> Dataset:
    """A user's CSV: `label` names the class column, the rest become features.

    Privacy assumptions (replace-one neighbours, n public):
    * the rows are split into training and test parts by position only (`split_indices`);
      only the training part is protected by DP, and only it shapes what is released;
    * category lists (`categories={col: [...]}`) and class names (`classes=[...]`) given
      by the user are public. Those not given are read from the TRAINING records and are
      NOT private: a value that occurs once in training appears in the released domain
      (and may appear in the synthetic CSV); `notes["treated_as_public"]` says which;
    * whether a column is numeric (> 10 distinct values) is decided from the training
      records unless `categorical=`/`numeric=` say so, and is not private either;
    * numeric columns have public bounds only when the user gives them
      (`bounds={col: [lo, hi]}` or the schema), else bounds=None and the method releases
      them privately;
    * `schema=` (a JSON file or mapping, engine/data/column_kinds.py) gives public column kinds
      (integer, non-negative, zero-inflated with its mass, bounded, categorical); kinds of
      numeric columns it does not describe are read from the training records and are NOT
      private (`notes["column_kinds"]` lists them).
    Test records with a value outside the training domain are dropped (the count is in
    `notes["test_rows_dropped"]`): the test split only scores, it is not released.
    """
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
    public_cats = _category_lists(categories)
    kinds = column_kinds.parse_schema(schema)
    bad = sorted(n for n in kinds if n not in cols or n == label)
    if bad:
        raise InputError(f"the schema names {bad}, which are not feature columns of {p.name}; "
                         f"feature columns: {[c for c in cols if c != label]}.")
    for name, entry in kinds.items():
        numeric_kind = column_kinds.is_numeric_in(entry)
        if numeric_kind is True and name not in force_num:
            force_num.append(name)
        elif numeric_kind is False and name not in force_cat:
            force_cat.append(name)
        if entry["categories"] is not None and name not in public_cats:
            public_cats[name] = _name_list(entry["categories"], "categories")
        if entry["bounds"] is not None:  # the schema's bounds win over bounds=
            bounds[name] = entry["bounds"]
    public_classes = _name_list(classes, "classes")
    overrides = (("categorical", force_cat), ("numeric", force_num), ("bounds", list(bounds)),
                 ("categories", list(public_cats)))
    for opt, names in overrides:
        bad = [n for n in names if n not in cols or n == label]
        if bad:
            raise InputError(f"option {opt!r} names {bad}, which are not feature columns of "
                             f"{p.name}; feature columns: {[c for c in cols if c != label]}.")
    both = sorted(set(force_cat) & set(force_num))
    if both:
        raise InputError(f"columns {both} are forced both categorical and numeric; pick one.")
    listed_num = sorted(set(public_cats) & set(force_num))
    if listed_num:
        raise InputError(f"columns {listed_num} have a public category list but are forced "
                         "numeric; pick one.")
    for c in force_num:
        if _as_numbers(df[c]) is None and dates.as_days(df[c], iso_only=False) is None:
            import pandas as pd

            bad_v = df[c][pd.to_numeric(df[c], errors="coerce").isna()].iloc[0]
            raise InputError(f"column {c!r} is forced numeric but holds text such as "
                             f"{bad_v!r}, neither a number nor a date; fix the values or make "
                             "it categorical.")

    train_pos, test_pos = split_indices(len(df), seed)
    tr, te = df.iloc[train_pos], df.iloc[test_pos]
    keep = np.ones(len(te), bool)  # test rows whose every value is in the training domain
    feats_tr, feats_te, columns = [], [], []
    kinds_read: dict[str, list[str]] = {}
    for c in (c for c in cols if c != label):
        num_tr, is_date = None, False
        if not (c in force_cat or c in public_cats):
            num_tr = _as_numbers(tr[c])
            if num_tr is None:  # dates read as days (ISO ones unasked: engine/data/dates.py)
                num_tr = dates.as_days(tr[c], iso_only=c not in force_num)
                is_date = num_tr is not None
        is_num = num_tr is not None and (c in force_num or num_tr.nunique() > 10)
        if c in bounds and not is_num:
            raise InputError(f"bounds were given for {c!r}, which is categorical; add it to "
                             "numeric=[...] or drop its bounds.")
        if is_num:
            import pandas as pd

            if not np.isfinite(num_tr.to_numpy()).all():
                raise InputError(f"column {c!r} holds inf values; replace them first.")
            num_te = (dates.days_or_nan(te[c]) if is_date else
                      pd.to_numeric(te[c], errors="coerce").to_numpy(np.float64))
            keep &= np.isfinite(num_te)
            col = Column(c, "num", date=is_date)
            if c in bounds:
                given = dates.bound_days(c, bounds[c]) if is_date else bounds[c]
                col.bounds, col.bounds_source = column_kinds.check_bounds(c, given), "user"
            col, read = column_kinds.describe(num_tr.to_numpy(np.float64), col, kinds.get(c))
            if is_date:
                read = ["date (read as days since 1970-01-01)", *read]
            if read:
                kinds_read[c] = read
            feats_tr.append(num_tr.to_numpy(np.float64))
            feats_te.append(np.nan_to_num(num_te))
        else:
            given = c in public_cats
            cats = public_cats[c] if given else _domain(tr[c])
            if len(cats) > MAX_CATEGORIES:
                raise InputError(f"categorical column {c!r} has {len(cats)} categories "
                                 f"(max {MAX_CATEGORIES}); drop it (an ID?) or force it numeric.")
            codes_tr, codes_te = _encode_split(tr[c], te[c], cats, c, given)
            keep &= codes_te >= 0
            col = Column(c, "cat", categories=cats, bounds_source=(
                "public (given by the user)" if given else
                "read from the training records (not private)"))
            feats_tr.append(codes_tr.astype(np.float64))
            feats_te.append(codes_te.astype(np.float64))
        columns.append(col)

    names = {col.name for col in columns}
    for col in columns:  # functional dependencies declared in the schema
        col.determines = kinds.get(col.name, {}).get("determines", ())
        if set(col.determines) - names:
            raise InputError(f"the schema says {col.name!r} determines "
                             f"{sorted(set(col.determines) - names)}, which are not feature "
                             f"columns; feature columns: {sorted(names)}.")
    class_names = public_classes or _domain(tr[label])
    if len(class_names) < 2:
        raise InputError(f"label column {label!r} has one class only ({class_names[0]!r}) in "
                         "the training part; a classifier needs at least two (give the public "
                         "class list with classes=[...] if a class is rare).")
    y_tr, y_te = _encode_split(tr[label], te[label], class_names, label, bool(public_classes))
    keep &= y_te >= 0
    cat_cols = [c.name for c in columns if c.kind == "cat"]
    from_file = [n for n in cat_cols if n not in public_cats]
    notes = {
        "source": str(p), "label": label,
        "split": POSITIONAL_SPLIT,
        "category_domain": _domain_note(cat_cols, from_file, bool(public_classes)),
        "column_kinds": _kinds_note(kinds_read),
        "bounds": "user bounds where given; other numeric columns need private release",
    }
    if not keep.all():
        notes["test_rows_dropped"] = (f"{int((~keep).sum())} test records hold a value outside "
                                      "the training domain and were left out of scoring")
    return Dataset("csv", "tabular", np.column_stack(feats_tr), y_tr,
                   np.column_stack(feats_te)[keep], y_te[keep], class_names,
                   columns=columns, notes=notes)


def _encode_split(s_tr, s_te, cats: list[str], what: str, given: bool):
    """Training and test codes into `cats`; test values outside it get -1. A training
    value outside a *given* (public) list is the user's to fix."""
    numeric_domain = _all_numbers(cats)
    codes_tr, known = _encode(_spelled(s_tr, numeric_domain), cats)
    if not known.all():
        odd = sorted(set(np.asarray(_spelled(s_tr, numeric_domain), dtype=object)[~known]))
        raise InputError(f"column {what!r} holds values outside its public list {cats[:10]}, "
                         f"such as {odd[:3]}; add them to the list or fix the records.")
    codes_te, _ = _encode(_spelled(s_te, numeric_domain), cats)
    return codes_tr, codes_te


def _kinds_note(read: dict[str, list[str]]) -> str:
    """metrics.json's statement of where column kinds came from."""
    out = ("given by the user (schema=/categorical=/numeric=/categories=) where set; other "
           "columns: numeric when the training records hold > 10 distinct numbers (a "
           "decision read from the training records, not private)")
    if read:
        out += ("; kinds read from the training records (NOT private; give them in a "
                "schema to avoid this): " + "; ".join(f"{c}: {', '.join(k)}"
                                                      for c, k in read.items()))
    return out


def _domain_note(cat_cols: list[str], from_file: list[str], classes_given: bool) -> str:
    """The plain statement of metrics.json: which lists are public, which came from data."""
    parts = []
    if from_file:
        parts.append(f"category lists of {from_file} were read from the training records: NOT "
                     "private (a value that occurs once in training is in the released "
                     "domain and may appear in the synthetic CSV); give public lists with "
                     "categories= to avoid this")
    elif cat_cols:
        parts.append("all category lists were given by the user and are treated as public")
    parts.append("class names were given by the user and are treated as public" if classes_given
                 else "class names were read from the training records: NOT private (give "
                      "them with classes= to avoid this)")
    return "; ".join(parts)


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
        elif col.date:
            data[col.name] = dates.to_dates(v)
        elif col.integer and np.all(v == np.rint(v)):
            data[col.name] = v.astype(np.int64)  # "39", not "39.0", in the CSV
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
        else dates.days_or_nan(df[c.name]) if c.date
        else df[c.name].to_numpy(np.float64) for c in columns])


"""Datasets: each loader returns a `Dataset` with train/test splits and its domain.

Images are float32 in [0, 1] with shape (n, c, h, w). Tabular data is a float64 matrix
whose numeric columns are in raw units and whose categorical columns hold integer codes
into `Column.categories`. Everything a DP method may use *without* spending budget (image
shape, column kinds, category domains, numeric bounds) is public metadata and says where
it came from in `Column.bounds_source` / `Dataset.notes`. Loaders never compute bounds
from the private records: a numeric column without public bounds gets `bounds=None` and
the method must release its range privately.

`load(name, seed=, options=)` is the one entry point; `list_datasets()` says what can be
loaded on this machine without loading anything.
"""

from __future__ import annotations

import functools
import gzip
import inspect
import math
import os
import re
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.errors import InputError

MIN_RECORDS = 20  # below this an 80/20 split leaves nothing to learn or to test on
MAX_CATEGORIES = 1000  # more than this is an identifier or free text, not a category


@dataclass
class Column:
    name: str
    kind: str  # "num" or "cat"
    # cat: the public domain of values; a record's code indexes this list.
    categories: list[str] | None = None
    # num: public clipping bounds (lo, hi), or None when they must be released privately.
    bounds: tuple[float, float] | None = None
    bounds_source: str = ""  # "public metadata", "user", or "" when unknown


@dataclass
class Dataset:
    name: str
    kind: str  # "image" or "tabular"
    x_train: np.ndarray
    y_train: np.ndarray  # int64 in [0, n_classes)
    x_test: np.ndarray
    y_test: np.ndarray
    class_names: list[str]
    image_shape: tuple[int, int, int] | None = None  # (c, h, w) for images
    columns: list[Column] | None = None  # for tabular
    notes: dict[str, str] = field(default_factory=dict)

    @property
    def n_classes(self) -> int:
        return len(self.class_names)

    @property
    def n_train(self) -> int:
        return len(self.y_train)


def _split(x, y, seed: int, test_size: float = 0.2):
    """80/20 split, stratified when every class has enough records, else plain random."""
    from sklearn.model_selection import train_test_split

    try:
        return train_test_split(x, y, test_size=test_size, random_state=seed, stratify=y)
    except ValueError:  # a class with a single record cannot be stratified
        return train_test_split(x, y, test_size=test_size, random_state=seed)


# ----------------------------------------------------------------------------- bundled
def load_digits(seed: int = 0) -> Dataset:
    """scikit-learn's 8x8 digits (1,797 images), split 80/20 stratified; the embedded default."""
    from sklearn.datasets import load_digits as _load

    bunch = _load()
    x = (bunch.images / 16.0).astype(np.float32)[:, None, :, :]  # pixels 0..16 -> [0, 1]
    y = bunch.target.astype(np.int64)
    xtr, xte, ytr, yte = _split(x, y, seed)
    return Dataset("digits", "image", xtr, ytr, xte, yte, [str(i) for i in range(10)], (1, 8, 8))


_DESCR_ROW = re.compile(r"^([a-z ]+) \((mean|standard error|worst)\):\s+(\S+)\s+(\S+)\s*$")


def _descr_bounds(descr: str) -> dict[str, tuple[float, float]]:
    """Parse the Min/Max table of sklearn's breast-cancer DESCR into {feature name: (lo, hi)}.

    The table is printed rounded (0.05263 shows as 0.053), so each bound is widened by one
    unit of its last printed digit; the lower bound stays >= 0 because every feature is a
    length, area or ratio. Uses only the shipped text, never the records.
    """
    out = {}
    for line in descr.splitlines():
        m = _DESCR_ROW.match(line.strip())
        if not m:
            continue
        feat, stat, lo_s, hi_s = m.groups()
        name = {"mean": f"mean {feat}", "standard error": f"{feat} error",
                "worst": f"worst {feat}"}[stat]
        lo, hi = float(lo_s), float(hi_s)
        ulp_lo = 10.0 ** -len(lo_s.partition(".")[2])
        ulp_hi = 10.0 ** -len(hi_s.partition(".")[2])
        out[name] = (max(0.0, lo - ulp_lo) if lo >= 0 else lo - ulp_lo, hi + ulp_hi)
    return out


def load_breast_cancer(seed: int = 0) -> Dataset:
    """Wisconsin breast cancer (569 records, 30 numeric columns), split 80/20 stratified.

    Bounds come from the public summary table shipped in sklearn's DESCR; if that text
    cannot be parsed every column gets bounds=None (released privately by the method).
    """
    from sklearn.datasets import load_breast_cancer as _load

    bunch = _load()
    names = [str(n) for n in bunch.feature_names]
    table = _descr_bounds(bunch.DESCR)
    parsed = all(n in table for n in names)
    columns = [
        Column(n, "num", bounds=table[n] if parsed else None,
               bounds_source="public metadata (sklearn DESCR)" if parsed else "")
        for n in names
    ]
    x, y = bunch.data.astype(np.float64), bunch.target.astype(np.int64)
    xtr, xte, ytr, yte = _split(x, y, seed)
    notes = {"bounds": "public metadata (sklearn DESCR summary table)" if parsed
             else "DESCR table not parsed; bounds must be released privately"}
    return Dataset("breast_cancer", "tabular", xtr, ytr, xte, yte,
                   [str(t) for t in bunch.target_names], columns=columns, notes=notes)


# ----------------------------------------------------------------------------- idx files
IDX_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
             "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
# Order from the dataset's own documentation (github.com/zalandoresearch/fashion-mnist).
FASHION_CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                   "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
# name -> (system folders, sub-folders of a data dir or torchvision root, torchvision
# class, (host, port) probed before any download)
_IDX = {
    "fashion_mnist": (["/usr/share/datasets/fashion-mnist"],
                      ["FashionMNIST/raw", "fashion-mnist", "fashion_mnist"], "FashionMNIST",
                      ("fashion-mnist.s3-website.eu-central-1.amazonaws.com", 80)),
    "mnist": (["/usr/share/datasets/mnist"], ["MNIST/raw", "mnist"], "MNIST",
              ("ossci-datasets.s3.amazonaws.com", 443)),
}


def _idx_file(folder: Path, stem: str) -> Path | None:
    for name in (stem + ".gz", stem):  # torchvision keeps both; the Debian package only .gz
        if (folder / name).is_file():
            return folder / name
    return None


def _idx_candidates(name: str, root) -> list[Path]:
    """Folders searched, in order: root option, $DPSYNTH_DATA_DIR, the Debian package."""
    system, subdirs, _, _ = _IDX[name]
    out: list[Path] = []
    for base in (root, os.environ.get("DPSYNTH_DATA_DIR")):
        if base:
            out += [Path(base).expanduser() / s for s in subdirs] + [Path(base).expanduser()]
    return out + [Path(p) for p in system]


def _find_idx(name: str, root) -> tuple[Path | None, list[Path]]:
    looked = _idx_candidates(name, root)
    for folder in looked:
        if all(_idx_file(folder, s) for s in IDX_FILES):
            return folder, looked
    return None, looked


def _read_idx(path: Path, ndim: int) -> np.ndarray:
    raw = gzip.open(path, "rb").read() if path.suffix == ".gz" else path.read_bytes()
    magic = int.from_bytes(raw[:4], "big")
    if magic != 0x0800 + ndim:  # 0x08 = unsigned byte, then the number of dimensions
        raise InputError(f"{path} is not an idx file of {ndim} dimension(s) (magic {magic:#x}); "
                         "re-download it or remove it.")
    shape = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    data = np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim)
    if data.size != math.prod(shape):
        raise InputError(f"{path} is truncated: header says {shape}, found {data.size} bytes.")
    return data.reshape(shape)


@functools.lru_cache(maxsize=4)
def _parse_idx_set(folder: str, stamp: tuple) -> tuple[np.ndarray, ...]:
    """Parsed uint8 arrays (cached: the app reloads often; `stamp` invalidates on change)."""
    paths = [_idx_file(Path(folder), s) for s in IDX_FILES]
    arrays = tuple(_read_idx(p, 3 if "images" in p.name else 1) for p in paths)
    for a in arrays:
        a.flags.writeable = False  # shared by every caller of the cache
    return arrays


def _network_reachable(host: str, port: int, timeout: float = 3.0) -> bool:
    """Probe in a thread so a hanging DNS lookup cannot stall the app past `timeout`."""
    ok = []

    def probe():
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            ok.append(True)
        except OSError:
            pass

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(timeout + 0.5)
    return bool(ok)


def _load_idx(name: str, seed: int, root, download: bool, class_names: list[str]) -> Dataset:
    folder, looked = _find_idx(name, root)
    why = "download=False"
    if folder is None and download:
        _, subdirs, tv_class, host = _IDX[name]
        target = Path(root or os.environ.get("DPSYNTH_DATA_DIR") or "~/.cache/dpsynth").expanduser()
        if not _network_reachable(*host):
            why = f"no network to {host[0]}"
        else:
            try:
                import torchvision

                for train in (True, False):
                    getattr(torchvision.datasets, tv_class)(str(target), train=train, download=True)
                folder, _ = _find_idx(name, target)
                why = "torchvision download left no files" if folder is None else why
            except Exception as exc:  # network errors come in many types; say what happened
                why = f"torchvision download to {target} failed: {exc}"
    if folder is None:
        raise InputError(
            f"{name} not found. Looked for {', '.join(IDX_FILES)} (.gz or plain) in: "
            f"{'; '.join(str(p) for p in looked)}. Not downloaded ({why}). Fix: pass "
            f"options root=<folder>, set DPSYNTH_DATA_DIR, or install the Debian package "
            f"dataset-fashion-mnist (Fashion-MNIST)."
        )
    paths = [_idx_file(folder, s) for s in IDX_FILES]
    stamp = tuple((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in paths)
    xtr, ytr, xte, yte = _parse_idx_set(str(folder), stamp)
    to_img = lambda a: (a.astype(np.float32) / 255.0)[:, None, :, :]  # noqa: E731  (n,1,h,w)
    h, w = xtr.shape[1:]
    return Dataset(name, "image", to_img(xtr), ytr.astype(np.int64), to_img(xte),
                   yte.astype(np.int64), list(class_names), (1, h, w),
                   notes={"source": str(folder), "split": "official train/test split"})


def load_fashion_mnist(seed: int = 0, root: str | None = None, download: bool = True) -> Dataset:
    """Fashion-MNIST 60k/10k (official split; `seed` unused) from local idx files.

    Looks in `root` (a torchvision root or a folder with the idx files), $DPSYNTH_DATA_DIR
    and the Debian package folder; downloads with torchvision only if none has the files
    and the network answers.
    """
    return _load_idx("fashion_mnist", seed, root, download, FASHION_CLASSES)


def load_mnist(seed: int = 0, root: str | None = None, download: bool = True) -> Dataset:
    """MNIST 60k/10k (official split) from `root`, $DPSYNTH_DATA_DIR/mnist, or a download."""
    return _load_idx("mnist", seed, root, download, [str(i) for i in range(10)])


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


def _read_csv(path):
    import pandas as pd

    if path is None:
        raise InputError("dataset 'csv' needs option path=<your .csv file>.")
    p = Path(path).expanduser()
    if not p.is_file():
        raise InputError(f"CSV file {str(p)!r} does not exist; check the path.")
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
    xtr, xte, ytr, yte = _split(np.column_stack(feats), y, seed)
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
    if path is None:
        raise InputError("dataset 'npz' needs option path=<your .npz file>.")
    p = Path(path).expanduser()
    if not p.is_file():
        raise InputError(f"NPZ file {str(p)!r} does not exist; check the path.")
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
    xtr, xte, ytr, yte = _split(x, y.astype(np.int64), seed)
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


# ----------------------------------------------------------------------------- registry
DATASETS = {
    "digits": load_digits,
    "fashion_mnist": load_fashion_mnist,
    "mnist": load_mnist,
    "breast_cancer": load_breast_cancer,
    "csv": load_csv,
    "npz": load_npz,
}
_INFO = {  # name -> (kind, description)
    "digits": ("image", "scikit-learn 8x8 handwritten digits, 1,797 images, 10 classes"),
    "fashion_mnist": ("image", "Fashion-MNIST 28x28 clothing, 60k train / 10k test, 10 classes"),
    "mnist": ("image", "MNIST 28x28 handwritten digits, 60k train / 10k test, 10 classes"),
    "breast_cancer": ("tabular", "Wisconsin breast cancer, 569 records, 30 numeric columns"),
    "csv": ("tabular", "your own CSV (options: path, label, categorical, numeric, bounds)"),
    "npz": ("image", "your own images as .npz with arrays x and y (option: path)"),
}


def list_datasets() -> list[dict]:
    """What can be loaded here: file-existence checks only, nothing is read."""
    out = []
    for name in DATASETS:
        kind, desc = _INFO[name]
        available, where = True, "bundled with scikit-learn"
        if name in _IDX:
            folder, looked = _find_idx(name, None)
            available = folder is not None
            where = str(folder) if available else (
                f"not found in {'; '.join(map(str, looked))}; set DPSYNTH_DATA_DIR, pass "
                "root=, or go online to download via torchvision")
        elif name in ("csv", "npz"):
            where = f"needs a .{name} file you provide (option path=)"
        out.append({"name": name, "kind": kind, "description": desc, "available": available,
                    "where": where, "needs_file": name in ("csv", "npz")})
    return out


def load(name: str, *, seed: int = 0, options: dict | None = None) -> Dataset:
    """Load a dataset by name (see `DATASETS`); raise InputError naming the fix."""
    if name not in DATASETS:
        raise InputError(f"unknown dataset {name!r}; choose one of {', '.join(DATASETS)}.")
    loader = DATASETS[name]
    valid = [k for k in inspect.signature(loader).parameters if k != "seed"]
    unknown = sorted(set(options or {}) - set(valid))
    if unknown:
        raise InputError(f"unknown option(s) {unknown} for dataset {name!r}; "
                         f"valid options: {valid or 'none'}.")
    return loader(seed=seed, **(options or {}))

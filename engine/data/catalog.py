"""Datasets by name: `load(name, seed=, options=)` is the one entry point and
`list_datasets()` says what can be loaded on this machine without loading anything.

Bundled sets (digits, breast_cancer) come with scikit-learn; Fashion-MNIST and MNIST are
read from idx files (the Debian package, a torchvision root, or $DPSYNTH_DATA_DIR) and
downloaded only when none is found and a network is reachable; a user's CSV or NPZ is
handled by engine.data.user_csv and engine.data.user_npz. Loaders never compute bounds from the private records.
"""

from __future__ import annotations

import functools
import gzip
import inspect
import math
import os
import socket
import threading
from pathlib import Path

import numpy as np

# Re-exported: callers use engine.data.catalog as the one place for datasets.
from engine.data.dataset import (MAX_CATEGORIES, MIN_RECORDS, POSITIONAL_SPLIT, Column,  # noqa: F401
                                 Dataset, split_train_test)
from engine.core.errors import InputError
from engine.data.user_csv import frame_to_tabular, load_csv, tabular_to_frame  # noqa: F401
from engine.data.user_npz import load_npz


# ----------------------------------------------------------------------------- bundled
# The bundled sets are public, but the workshop treats them as stand-ins for private data,
# so they get the same value-independent split as the user's files (POSITIONAL_SPLIT).
def load_digits(seed: int = 0) -> Dataset:
    """scikit-learn's 8x8 digits (1,797 images), split 80/20 by position; the embedded default."""
    from sklearn.datasets import load_digits as _load

    bunch = _load()
    x = (bunch.images / 16.0).astype(np.float32)[:, None, :, :]  # pixels 0..16 -> [0, 1]
    y = bunch.target.astype(np.int64)
    xtr, xte, ytr, yte = split_train_test(x, y, seed)
    return Dataset("digits", "image", xtr, ytr, xte, yte, [str(i) for i in range(10)], (1, 8, 8),
                   notes={"split": POSITIONAL_SPLIT})


def load_breast_cancer(seed: int = 0) -> Dataset:
    """Wisconsin breast cancer (569 records, 30 numeric columns), split 80/20 by position.

    No column gets public bounds: DP-MERF and AIM release them privately (engine/privacy/dp_bounds.py's
    noisy histogram, charged to ε and listed under privacy.releases); the marginals
    baseline bins on dp_bounds' public geometric grid. The Min/Max table in
    sklearn's DESCR, used here before, is these very records' own minimum and maximum
    (25 of 30 columns within 1 % of the data's range), i.e. a statistic of the private
    records released without noise; and no documented domain range for the 30 derived
    image features exists that does not come from them.
    """
    from sklearn.datasets import load_breast_cancer as _load

    bunch = _load()
    columns = [Column(str(n), "num", bounds=None, bounds_source="") for n in bunch.feature_names]
    x, y = bunch.data.astype(np.float64), bunch.target.astype(np.int64)
    xtr, xte, ytr, yte = split_train_test(x, y, seed)
    notes = {"bounds": BREAST_CANCER_BOUNDS, "split": POSITIONAL_SPLIT}
    return Dataset("breast_cancer", "tabular", xtr, ytr, xte, yte,
                   [str(t) for t in bunch.target_names], columns=columns, notes=notes)


BREAST_CANCER_BOUNDS = ("released privately by the method and charged to epsilon (sklearn's "
                        "DESCR min/max table is the records' own range, so it is not used)")


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
    "csv": ("tabular", "your own CSV (options: path, label, categorical, numeric, bounds, categories, classes)"),
    "npz": ("image", "your own images as .npz with arrays x and y (options: path, classes)"),
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

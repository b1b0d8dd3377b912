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


# --------------------------------------------------------------- public stand-ins
# Tuning on public data spends no privacy (engine/runs/public_tuning.py). digits is cut
# once into two disjoint halves by a FIXED permutation of positions (values never read;
# public, so anyone can redo it): digits_public is declared public, and the ledger
# charges nothing for it; digits_private is the private one, charged as digits (its
# records are digits' records: engine.core.config.SAME_RECORDS). Each half is then split
# 80/20 by the run's seed like any dataset, so digits_private's test part is held out
# from every run on it, and no digits_public record is in it.
HALVES_SEED = 20260
PUBLIC_STAND_IN_SIZE = 1797  # fashion_public: as many images as digits has


def digits_halves(n: int = 1797) -> tuple[np.ndarray, np.ndarray]:
    """(public positions, private positions) of digits: disjoint, together all of them."""
    perm = np.random.default_rng(HALVES_SEED).permutation(n)
    return np.sort(perm[: n // 2]), np.sort(perm[n // 2:])


def _digits_half(seed: int, half: int, name: str) -> Dataset:
    from sklearn.datasets import load_digits as _load

    bunch = _load()
    pos = digits_halves(len(bunch.target))[half]
    x = (bunch.images[pos] / 16.0).astype(np.float32)[:, None, :, :]
    y = bunch.target[pos].astype(np.int64)
    xtr, xte, ytr, yte = split_train_test(x, y, seed)
    return Dataset(name, "image", xtr, ytr, xte, yte, [str(i) for i in range(10)], (1, 8, 8),
                   notes={"split": POSITIONAL_SPLIT, "half": f"{name}: {len(pos)} of digits' "
                          f"{len(bunch.target)} images by a fixed permutation (seed {HALVES_SEED})"})


def load_digits_public(seed: int = 0) -> Dataset:
    """Half of digits (898 images), declared public: runs on it are not charged."""
    return _digits_half(seed, 0, "digits_public")


def load_digits_private(seed: int = 0) -> Dataset:
    """The other half of digits (899 images), private: charged to digits' ledger row."""
    return _digits_half(seed, 1, "digits_private")


def load_fashion_public(seed: int = 0, root: str | None = None, download: bool = True) -> Dataset:
    """Fashion-MNIST made digits-like, a public stand-in for tuning 8×8 digits: the first
    PUBLIC_STAND_IN_SIZE training images and a quarter as many test images (digits'
    80/20), each 28×28 image averaged down to 8×8 (area weights, torch's adaptive average
    pooling: 28 is no multiple of 8) so settings tuned on it fit digits' shape; pixels
    stay in [0, 1]. Its own `seed` split is Fashion's official one (seed unused)."""
    import torch

    full = load_fashion_mnist(seed, root=root, download=download)
    n, m = PUBLIC_STAND_IN_SIZE, math.ceil(PUBLIC_STAND_IN_SIZE / 4)
    shrink = lambda a: torch.nn.functional.adaptive_avg_pool2d(  # noqa: E731
        torch.from_numpy(np.ascontiguousarray(a)), 8).numpy().astype(np.float32)
    return Dataset("fashion_public", "image", shrink(full.x_train[:n]), full.y_train[:n].copy(),
                   shrink(full.x_test[:m]), full.y_test[:m].copy(), list(FASHION_CLASSES),
                   (1, 8, 8), notes={"source": full.notes.get("source", ""), "split":
                                     "official train/test split, first images of each",
                                     "adapted": "28×28 averaged down to 8×8"})


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
    "digits_public": load_digits_public,
    "digits_private": load_digits_private,
    "fashion_public": load_fashion_public,
    "csv": load_csv,
    "npz": load_npz,
}
_INFO = {  # name -> (kind, description)
    "digits": ("image", "scikit-learn 8x8 handwritten digits, 1,797 images, 10 classes"),
    "fashion_mnist": ("image", "Fashion-MNIST 28x28 clothing, 60k train / 10k test, 10 classes"),
    "mnist": ("image", "MNIST 28x28 handwritten digits, 60k train / 10k test, 10 classes"),
    "breast_cancer": ("tabular", "Wisconsin breast cancer, 569 records, 30 numeric columns"),
    "digits_public": ("image", "half of digits (898 images), declared public: tune here, "
                               "no privacy charged"),
    "digits_private": ("image", "the other half of digits (899 images), private: charged as "
                                "digits"),
    "fashion_public": ("image", "Fashion-MNIST averaged down to 8x8, 1,797 images, public: "
                                "a digits-like stand-in to tune on, no privacy charged"),
    "csv": ("tabular", "your own CSV (options: path, label, categorical, numeric, bounds, categories, classes)"),
    "npz": ("image", "your own images as .npz with arrays x and y (options: path, classes)"),
}


_IDX_SOURCE = {"fashion_public": "fashion_mnist"}


def list_datasets() -> list[dict]:
    """What can be loaded here: file-existence checks only, nothing is read."""
    out = []
    for name in DATASETS:
        kind, desc = _INFO[name]
        available, where = True, "bundled with scikit-learn"
        source = _IDX_SOURCE.get(name, name)  # the stand-in reads Fashion-MNIST's files
        if source in _IDX:
            folder, looked = _find_idx(source, None)
            available = folder is not None
            where = str(folder) if available else (
                f"not found in {'; '.join(map(str, looked))}; set DPSYNTH_DATA_DIR, pass "
                "root=, or go online to download via torchvision")
        elif name in ("csv", "npz"):
            where = f"needs a .{name} file you provide (option path=)"
        out.append({"name": name, "kind": kind, "description": desc, "available": available,
                    "where": where, "needs_file": name in ("csv", "npz")})
    return out


def dataset_kind(name: str) -> str:
    """"image" or "tabular", without loading anything (InputError for an unknown name)."""
    if name not in _INFO:
        raise InputError(f"unknown dataset {name!r}; choose one of {', '.join(DATASETS)}.")
    return _INFO[name][0]


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

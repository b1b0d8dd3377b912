"""What the web server knows of a dataset without loading it: its public shape.

The app needs a dataset's sizes, image shape, columns and classes to derive a method's
defaults, knob bounds and cost preview; none of those read a record. `describe` loads the
dataset in a short-lived child process and hands back a `Dataset` whose arrays are
read-only zeros of the real shapes (`np.broadcast_to`: no memory), so the server never
parses a file or holds Fashion-MNIST's 200 MB (issue 40) and every shape-reading function
works unchanged. Any code that read a value from it would read zeros: a defaults or
preview function that depended on the records would show it at once.

The one real part is `peek`, for the person at the screen (NOT private; metrics.json's
"not private" says so): the first PEEK_IMAGES training images and labels of an image set,
or up to PEEK_ROWS training rows of a table for the live real-vs-synthetic marginal chart.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from engine.core.errors import InputError
from engine.data.dataset import Dataset

PEEK_IMAGES = 100
PEEK_ROWS = 20_000  # the marginal chart's histograms; a census-sized table fits whole
DESCRIBE_TIMEOUT_S = 300  # a large CSV on a slow disk; a hang is an error, not a wait


@dataclass(frozen=True)
class Peek:
    """Real training records shown to the person at the screen (never released)."""
    x: np.ndarray
    y: np.ndarray


def shape_of(data: Dataset) -> tuple[Dataset, Peek]:
    """`data` with zero arrays of the same shapes and dtypes, and its peek."""
    def zeros(a: np.ndarray) -> np.ndarray:
        return np.broadcast_to(np.zeros((), dtype=a.dtype), a.shape)

    k = PEEK_IMAGES if data.kind == "image" else PEEK_ROWS
    peek = Peek(np.array(data.x_train[:k]), np.array(data.y_train[:k]))
    shape = replace(data, x_train=zeros(data.x_train), y_train=zeros(data.y_train),
                    x_test=zeros(data.x_test), y_test=zeros(data.y_test))
    return shape, peek


def _portable(data: Dataset, peek: Peek) -> dict:
    """What crosses the pipe: the metadata, the arrays' shapes and dtypes, the peek."""
    arrays = {k: (getattr(data, k).shape, getattr(data, k).dtype.str)
              for k in ("x_train", "y_train", "x_test", "y_test")}
    meta = replace(data, x_train=None, y_train=None, x_test=None, y_test=None)
    return {"meta": meta, "arrays": arrays, "peek": peek}


def _rebuild(msg: dict) -> tuple[Dataset, Peek]:
    arrays = {k: np.broadcast_to(np.zeros((), dtype=np.dtype(dt)), shape)
              for k, (shape, dt) in msg["arrays"].items()}
    return replace(msg["meta"], **arrays), msg["peek"]


def describe(name: str, options: dict | None = None) -> tuple[Dataset, Peek]:
    """(the public shape of dataset `name`, its peek), loaded in a child process.
    A loader's InputError (a missing file, a bad schema) is raised here with its message."""
    root = str(Path(__file__).resolve().parents[2])  # the folder holding engine/
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    try:
        done = subprocess.run([sys.executable, "-m", "engine.data.view"],
                              input=pickle.dumps((name, options or {})), capture_output=True,
                              env=env, timeout=DESCRIBE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise InputError(f"Reading dataset {name!r} took over {DESCRIBE_TIMEOUT_S} s; "
                         "is its file on a slow or network disk?") from None
    if done.returncode != 0 or not done.stdout:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-3:]
        raise RuntimeError(f"reading dataset {name!r} failed in its process: " + " | ".join(tail))
    kind, payload = pickle.loads(done.stdout)
    if kind == "error":
        raise InputError(payload)
    return _rebuild(payload)


def _main() -> None:
    """Child process: load the dataset, write its portable shape (or its InputError)."""
    from engine.data.catalog import load
    from engine.data.view import _portable, shape_of  # under its own name, not __main__, for pickle

    name, options = pickle.loads(sys.stdin.buffer.read())
    try:
        out = ("ok", _portable(*shape_of(load(name, options=options))))
    except InputError as e:
        out = ("error", str(e))
    sys.stdout.buffer.write(pickle.dumps(out))


if __name__ == "__main__":
    from engine.data.view import _main as main

    main()

"""What every loader returns: a `Dataset` with train/test splits and its public domain.

Images are float32 in [0, 1] with shape (n, c, h, w). Tabular data is a float64 matrix
whose numeric columns are in raw units and whose categorical columns hold integer codes
into `Column.categories`. Everything a DP method may use *without* spending budget (image
shape, column kinds, category domains, numeric bounds) is public metadata and says where
it came from in `Column.bounds_source` / `Dataset.notes`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

MIN_RECORDS = 20  # below this an 80/20 split leaves nothing to learn or to test on
MAX_CATEGORIES = 1000  # more than this is an identifier or free text, not a category
POSITIONAL_SPLIT = "80/20 by record position (seeded permutation), independent of the values"


@dataclass
class Column:
    name: str
    kind: str  # "num" or "cat"
    # cat: the public domain of values; a record's code indexes this list.
    categories: list[str] | None = None
    # num: public clipping bounds (lo, hi), or None when they must be released privately.
    bounds: tuple[float, float] | None = None
    bounds_source: str = ""  # "public metadata", "user", or "" when unknown
    # num: richer kinds (engine/data/column_kinds.py enforces them on synthetic values).
    integer: bool = False  # whole numbers only
    nonneg: bool = False  # never below 0
    mass: float | None = None  # zero-inflated: a point mass at this exact value
    date: bool = False  # days since 1970-01-01, written back as dates (engine/data/dates.py)
    # names of the columns this one determines (a functional dependency the user declared
    # in the schema, e.g. education → education_num); fidelity's rules_broken checks them
    determines: tuple[str, ...] = ()


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


def split_indices(n: int, seed: int, test_size: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    """(train positions, test positions): a seeded permutation of 0..n-1, cut 80/20.

    Privacy: the split looks at record *positions* only, never at their values, so two
    files that differ in one record (replace-one) get the same positions in training and
    in test, and their training sets differ in that one record at most. A stratified
    split would not: one changed label moves other records between the parts. The test
    part holds ceil(n·test_size) records (as scikit-learn's split).
    """
    perm = np.random.default_rng(seed).permutation(n)
    n_test = math.ceil(n * test_size)
    return perm[n_test:], perm[:n_test]


def split_train_test(x, y, seed: int, test_size: float = 0.2):
    """x_train, x_test, y_train, y_test by `split_indices` (values never consulted)."""
    train, test = split_indices(len(y), seed, test_size)
    return x[train], x[test], y[train], y[test]

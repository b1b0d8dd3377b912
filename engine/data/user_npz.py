"""The user's images: an NPZ file, validated at the boundary (see engine.data.user_csv).

Split by record position only, like every dataset; the label set is public when the user
gives it, else read from the training records and marked not private in `Dataset.notes`.
"""

from __future__ import annotations

import math

import numpy as np

from engine.data.dataset import MIN_RECORDS, POSITIONAL_SPLIT, Dataset, split_indices
from engine.core.errors import InputError
from engine.data.user_csv import _existing_file, _name_list


def load_npz(seed: int = 0, path: str | None = None, classes=None) -> Dataset:
    """A user's images: NPZ with `x` (n,h,w) or (n,c,h,w), c in (1, 3), and integer `y`.

    uint8 pixels are scaled by 1/255; float pixels must already lie in [0, 1]. The split
    is by record position only. The image shape is public; the label set is public when
    given (`classes=[0, 1, ...]`), else read from the training records (not private,
    says `notes["treated_as_public"]`). Test images with another label are dropped.
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
    train, test = split_indices(len(y), seed)
    given = _name_list(classes, "classes")
    try:
        values = np.array([int(v) for v in given]) if given else np.unique(y[train])
    except ValueError:
        raise InputError(f"option 'classes' must list integer labels. Got {classes!r}.") from None
    if len(values) < 2:
        raise InputError(f"y has one class only ({values[0]}) in the training part; a "
                         "classifier needs at least two.")
    index = {int(v): i for i, v in enumerate(values)}
    codes = np.array([index.get(int(v), -1) for v in y], dtype=np.int64)
    if (codes[train] < 0).any():
        raise InputError(f"y holds labels outside the public list {values.tolist()}, such as "
                         f"{int(y[train][codes[train] < 0][0])}; add them to classes=.")
    test = test[codes[test] >= 0]
    notes = {"source": str(p),
             "split": POSITIONAL_SPLIT,
             "category_domain": "class labels were given by the user and are treated as public"
             if given else "class labels were read from the training records: NOT private "
                           "(give them with classes= to avoid this)"}
    if len(test) < math.ceil(len(y) * 0.2):
        notes["test_rows_dropped"] = (f"{math.ceil(len(y) * 0.2) - len(test)} test images carry "
                                      "a label outside the training domain; left out of scoring")
    return Dataset("npz", "image", x[train], codes[train], x[test], codes[test],
                   [str(v) for v in values], tuple(x.shape[1:]), notes=notes)

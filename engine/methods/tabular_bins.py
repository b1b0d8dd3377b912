"""How a table's (or an image's) columns are binned for histograms, from public metadata
only: shared by the marginals baseline and AIM (engine/methods/marginals, engine/methods/aim)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.data.dataset import Dataset
from engine.privacy import dp_bounds


@dataclass(frozen=True)
class Column:
    """How one column is binned: `edges` (numeric, len = bins + 1) or `size` categories.
    `floor`: cells whose noisy count is under dp_bounds' noise floor are dropped before
    sampling (a table's numeric columns: see `_probabilities`)."""

    edges: np.ndarray | None
    size: int
    floor: bool = False


def n_columns(data: Dataset) -> int:
    """Histograms released: one per column (per pixel for images)."""
    return int(np.prod(data.image_shape)) if data.kind == "image" else len(data.columns)


def public_columns(data: Dataset, bins: int, *, released: dict | None = None,
                   steps_per_octave: int | None = None,
                   day_width: int | None = None) -> list[Column]:
    """The bins of every column, from public metadata only. A numeric column without
    public bounds is binned on bounds released for it (`released`: column index → (lo,
    hi), as AIM releases them) or else on dp_bounds' grid with `steps_per_octave` (its
    non-negative half for a column declared non-negative: the kind is public, and cells
    below 0 would only hold noise that `enforce` then clips to exactly 0); a date column
    on dp_bounds' day grid of `day_width` days instead (the geometric grid's cells are
    years wide at days since 1970)."""
    if data.kind == "image":
        edges = np.linspace(0.0, 1.0, bins + 1)
        return [Column(edges, bins)] * n_columns(data)
    out = []
    for j, c in enumerate(data.columns):
        bounds = c.bounds if c.bounds is not None else (released or {}).get(j)
        if c.kind == "cat":
            out.append(Column(None, len(c.categories)))
        elif bounds is not None:
            out.append(Column(np.linspace(bounds[0], bounds[1], bins + 1), bins, floor=True))
        elif c.date and day_width is not None:
            edges = dp_bounds.day_grid(day_width)
            out.append(Column(edges, len(edges) - 1, floor=True))
        elif steps_per_octave is not None:
            edges = dp_bounds.grid(steps_per_octave)
            if c.nonneg:
                edges = edges[edges >= 0.0]
            out.append(Column(edges, len(edges) - 1, floor=True))
        else:
            raise ValueError(f"column {c.name!r}: no public bounds, none released, no grid")
    return out


def bin_codes(x: np.ndarray, columns: list[Column]) -> np.ndarray:
    """(n, d) bin index of every value; row i depends on record i only (clipped into
    range, so any value lands in exactly one bin of each column)."""
    x = x.reshape(len(x), -1).astype(np.float64)
    codes = np.empty(x.shape, dtype=np.int64)
    for j, col in enumerate(columns):
        if col.edges is None:
            codes[:, j] = np.clip(np.nan_to_num(x[:, j]), 0, col.size - 1).astype(np.int64)
        else:
            inner = col.edges[1:-1]  # searchsorted over inner edges: 0 … size-1
            codes[:, j] = np.searchsorted(inner, np.nan_to_num(x[:, j]), side="right")
    return codes

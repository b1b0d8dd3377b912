"""Private clipping bounds for numeric columns whose range is not public.

Scaling data by its own min/max would leak the extremes (one record can move them), so
when the user gives no bounds (the schema or the upload form offers them first) we
*release* them: a noisy histogram over a fine public grid, the standard "noisy
histogram" quantile release (Dwork & Roth 2014, §3.3 histogram queries, with the
Gaussian mechanism; cf. the DP quantile/range estimation of Karwa & Vadhan 2018, whose
coarse-then-fine search over a public grid this mirrors):

* Grid (public): signed geometric cells 0, ±2^-10 … ±2^30 with 1, 2 or 4 cells per
  doubling (`steps_per_octave`), chosen from public figures only — the number of
  records n and the noise σ: a finer grid spreads the same records over more cells, so
  it is used only when n is large against σ (4 cells, edges ≈ 19 % apart, instead of
  the one cell per power of two that made an age column's bounds [16, 128]).
* Release: for every numeric column, its count per cell plus Gaussian noise (one
  release for all columns, its σ calibrated by engine.privacy.accountant with the sensitivity below).
* Bounds (post-processing of the noisy counts only): cells whose noisy count clears
  z·σ·√(cells merged) are kept, z chosen so that pure noise puts any of a column's cells
  above it with probability 1 % (`_z`); when none clears, adjacent cells are merged in pairs
  (their noisy counts summed: coarser but clearer) up to `MAX_MERGE` fine cells at once;
  the bounds are the outer edges of the outermost kept cells widened by `PAD` cell on
  each side (the tails that stay under the threshold: clipping them loses records'
  information, a wider range only costs resolution), and when nothing clears even then,
  the edges of the heaviest merged cell.
* Zero-inflated columns (engine/data/column_kinds.py) are binned without the records
  at their point mass, which come back as the mass itself (the flag column): nine
  records in ten in the mass's cell kept that cell above the threshold while the
  continuous part's thin cells stayed under it, so the bounds were ±2^-10 around the
  mass and every synthetic value ≈ 0 (a capital-gain-like column, n = 400, ε = 3: every
  draw). Where still no cell clears, the bounds are the mass's own cell, not the
  heaviest cell of noise.
* Date columns (days since 1970-01-01, engine/data/dates.py) get a grid of their own:
  the geometric one is relative (cells ≈ 19 % of the value), and 19 % of ≈ 19,000 days
  is ten years. Their cells are whole days, `day_width` days wide (a public power of
  two from n and σ), from 1900-01-01 to 2100-01-01 (`DAY_SPAN`; dates beyond fall in
  the end cells), merged up to `DATE_MAX_MERGE` cells where a column is spread thin:
  the released bounds are whole days.
* Measured on breast_cancer's training records at DP-MERF's ε = 1 noise (σ = 91, n = 455,
  20 draws each): records inside the released bounds 44 % with the old power-of-two
  ladder (threshold 3σ, else the heaviest single bucket), 66 % now; columns with under
  half their records inside 55 % → 33 %; the price is width (median bounds width over
  the data's range 0.45 → 1.98). At ε = 3 (σ = 34): 81 % → 95 % inside, 8.7 % → 0.7 % of
  columns, width 0.44 → 1.09.

Sensitivity: each record lands in at most one cell per column (values beyond the grid in
the end cells, a value at its column's public point mass in none), so replacing one
record changes at most two counts per column by one:
L2 sensitivity √(2·d_num) for all columns together (tests/test_sensitivity.py and
engine/methods/bounds_audit.py try to break it). Merging, thresholds and edges are
post-processing.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.stats import norm

from engine.privacy.noise import gaussian_noise

MAX_MERGE = 4  # grid cells merged at most before falling back to the heaviest
FALSE_CELL = 0.01  # chance that noise alone puts a cell above the threshold, per column
PAD = 1  # cells added beyond the outermost kept ones: the tails under the threshold
# Date columns: the public calendar span of the day grid (days since 1970-01-01:
# 1900-01-01 and 2100-01-01), the spread `day_width` is sized for, and how far cells merge.
DAY_SPAN = (-25_567.0, 47_482.0)
DATE_SPREAD_DAYS = 365.0  # a year of dates puts DATE_CELL_SIGMAS·σ records in a cell
DATE_CELL_SIGMAS = 8.0
DATE_MAX_WIDTH = 1024  # days: one cell at most ≈ 2.8 years before merging
DATE_MAX_MERGE = 64  # cells merged at most (a column spread over decades)


def columns_without_bounds(data) -> list[int]:
    """Indices of the numeric columns of a table whose bounds must be released (none
    public); none for images, whose [0, 1] range is public."""
    return [j for j, c in enumerate(data.columns or []) if c.kind != "cat" and c.bounds is None]


def grid(steps_per_octave: int) -> np.ndarray:
    """The public signed geometric grid with `steps_per_octave` cells per doubling."""
    fine = 2.0 ** (np.arange(-10 * steps_per_octave, 30 * steps_per_octave + 1)
                   / steps_per_octave)
    return np.concatenate([-fine[::-1], [0.0], fine])


def day_width(n: int, noise_std: float) -> int:
    """Days per cell of a date column's grid, from public n and σ: the smallest power of
    two (≤ DATE_MAX_WIDTH) at which n records spread evenly over DATE_SPREAD_DAYS would
    put DATE_CELL_SIGMAS·σ in each cell (a column spread wider merges cells, one spread
    narrower keeps a cell's width of slack)."""
    need = DATE_CELL_SIGMAS * noise_std * DATE_SPREAD_DAYS / max(n, 1)
    width = 1
    while width < need and width < DATE_MAX_WIDTH:
        width *= 2
    return width


def day_grid(width: int) -> np.ndarray:
    """Edges of whole-day cells `width` days wide over DAY_SPAN (public)."""
    lo, hi = DAY_SPAN
    return np.arange(lo, hi + width, width, dtype=np.float64)


def steps_per_octave(n: int, noise_std: float) -> int:
    """Cells per doubling from public n and σ: 4 when n ≥ 100σ, 2 when n ≥ 30σ, else 1
    (a cell then still holds many records against the 3σ threshold)."""
    return 4 if n >= 100 * noise_std else 2 if n >= 30 * noise_std else 1


GRID = grid(4)


def sensitivity(n_numeric: int) -> float:
    return math.sqrt(2.0 * n_numeric)


def bucket_counts(x_num: np.ndarray, edges: np.ndarray = GRID, masses=None) -> np.ndarray:
    """(d_num, n_cells) counts; values outside the grid fall into the end cells.
    `masses`: per column, its public point mass or None; values equal to it are not
    counted (each record still adds one to one cell at most)."""
    x_num = np.nan_to_num(x_num)
    clipped = np.clip(x_num, edges[0], edges[-1])
    idx = np.clip(np.searchsorted(edges, clipped, side="right") - 1, 0, len(edges) - 2)
    counts = np.zeros((x_num.shape[1], len(edges) - 1))
    for j, mass in enumerate(masses if masses is not None else [None] * x_num.shape[1]):
        off_mass = idx[:, j] if mass is None else idx[x_num[:, j] != mass, j]
        counts[j] = np.bincount(off_mass, minlength=len(edges) - 1)
    return counts


def noisy_histogram(x_num: np.ndarray, *, noise_std: float, edges: np.ndarray = GRID,
                    masses=None) -> np.ndarray:
    """The DP release itself: cell counts + N(0, noise_std²), sensitivity `sensitivity`."""
    counts = bucket_counts(x_num, edges, masses)
    return counts + gaussian_noise(counts.shape, noise_std, dtype=torch.float64).numpy()


def _z(n_cells: int) -> float:
    """Threshold in σ for `n_cells` cells of pure noise: any of them clears it with
    probability FALSE_CELL (a false cell far out would stretch the bounds by orders of
    magnitude); ≈ 4.0 for the 4-per-octave grid, 3.7 for one cell per octave."""
    return float(norm.isf(FALSE_CELL / n_cells))


def noise_floor(n_cells: int, noise_std: float) -> float:
    """A count above this is data, not noise (at least one record): pure noise in any of
    `n_cells` cells clears it with probability FALSE_CELL."""
    return max(_z(n_cells) * noise_std, 1.0)


def _kept_cells(noisy: np.ndarray, noise_std: float, edges: np.ndarray,
                max_merge: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The cells (merged in pairs up to `max_merge` fine cells) and their edges at the
    first merge where some cell clears the noise floor, with the indices that clear
    (empty when none does even at `max_merge`)."""
    cells, merged = np.asarray(noisy, dtype=np.float64), 1
    while True:
        keep = np.flatnonzero(cells > noise_floor(len(cells), noise_std * math.sqrt(merged)))
        if len(keep) or merged >= max_merge or len(cells) == 1:
            return cells, edges, keep
        cells = np.bincount(np.arange(len(cells)) // 2, weights=cells)
        edges = edges[::2] if len(edges) % 2 else np.append(edges[::2], edges[-1])
        merged *= 2


def bounds_from_counts(noisy: np.ndarray, noise_std: float, edges: np.ndarray = GRID,
                       max_merge: int = MAX_MERGE, mass: float | None = None) -> tuple[float, float]:
    """One column's (lo, hi) from its noisy counts (post-processing, see the docstring).
    When no cell clears: the heaviest merged cell, or for a zero-inflated column (`mass`)
    the grid cell of its mass — too few records off the mass to see where they lie, so
    the continuous part comes back at the mass instead of at a scale noise picked."""
    cells, merged_edges, keep = _kept_cells(noisy, noise_std, edges, max_merge)
    if len(keep):
        lo_i, hi_i = max(keep[0] - PAD, 0), min(keep[-1] + 1 + PAD, len(merged_edges) - 1)
        return float(merged_edges[lo_i]), float(merged_edges[hi_i])
    if mass is not None:  # the fine cell the mass lies in
        i = int(np.clip(np.searchsorted(edges, mass, side="right") - 1, 0, len(edges) - 2))
        return float(edges[i]), float(edges[i + 1])
    top = int(np.argmax(cells))
    return float(merged_edges[top]), float(merged_edges[top + 1])


def release_bounds(x_num: np.ndarray, *, noise_std: float, dates=None,
                   masses=None) -> list[tuple[float, float]]:
    """Noisy grid histogram → per-column (lo, hi). `noise_std` = z · sensitivity; the
    grid's resolution depends on the public n = len(x_num) and σ only. `dates`: per
    column, whether it is a date column (public: the column's kind), binned on the day
    grid instead. `masses`: per column, its public point mass or None (records at it are
    not binned). Each record still lands in one cell per column at most: the sensitivity
    holds."""
    n = len(x_num)
    dates = [bool(d) for d in (dates if dates is not None else [False] * x_num.shape[1])]
    masses = list(masses) if masses is not None else [None] * x_num.shape[1]
    out: list = [None] * x_num.shape[1]
    groups = ((grid(steps_per_octave(n, noise_std)), MAX_MERGE, [not d for d in dates]),
              (day_grid(day_width(n, noise_std)), DATE_MAX_MERGE, dates))
    for edges, merge, mine in groups:
        cols = [j for j, m in enumerate(mine) if m]
        if cols:
            noisy = noisy_histogram(x_num[:, cols], noise_std=noise_std, edges=edges,
                                    masses=[masses[j] for j in cols])
            for j, row in zip(cols, noisy):
                out[j] = bounds_from_counts(row, noise_std, edges, merge, masses[j])
    return out

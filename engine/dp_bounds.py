"""Private clipping bounds for numeric columns whose range is not public.

Scaling data by its own min/max would leak the extremes (one record can move them), so
when the user gives no bounds we *release* them: for every numeric column, a histogram of
records over a fixed, public ladder of signed power-of-two buckets, plus Gaussian noise;
the bounds are the edges of the outermost buckets whose noisy count clears a threshold.

Sensitivity: each record lands in exactly one bucket per column, so replacing one record
changes at most two counts per column by one: L2 sensitivity √(2·d_num) for all columns
together. The threshold and the edges are post-processing.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from engine.noise import gaussian_noise

# Public bucket edges: 0, ±2^-10 … ±2^30 (covers micro-units to billions).
_POWERS = 2.0 ** np.arange(-10, 31)
EDGES = np.concatenate([-_POWERS[::-1], [0.0], _POWERS])


def sensitivity(n_numeric: int) -> float:
    return math.sqrt(2.0 * n_numeric)


def bucket_counts(x_num: np.ndarray) -> np.ndarray:
    """(d_num, n_buckets) counts; values outside the ladder fall into the end buckets."""
    clipped = np.clip(x_num, EDGES[0], EDGES[-1])
    idx = np.clip(np.searchsorted(EDGES, clipped, side="right") - 1, 0, len(EDGES) - 2)
    counts = np.zeros((x_num.shape[1], len(EDGES) - 1))
    for j in range(x_num.shape[1]):
        counts[j] = np.bincount(idx[:, j], minlength=len(EDGES) - 1)
    return counts


def noisy_histogram(x_num: np.ndarray, *, noise_std: float) -> np.ndarray:
    """The DP release itself: bucket counts + N(0, noise_std²), sensitivity `sensitivity`."""
    counts = bucket_counts(x_num)
    return counts + gaussian_noise(counts.shape, noise_std, dtype=torch.float64).numpy()


def release_bounds(x_num: np.ndarray, *, noise_std: float) -> list[tuple[float, float]]:
    """Noisy bucket histogram → per-column (lo, hi). `noise_std` = z · sensitivity."""
    noisy = noisy_histogram(x_num, noise_std=noise_std)
    # Keep buckets clearly above the noise floor; otherwise the single heaviest one.
    threshold = max(3.0 * noise_std, 1.0)
    bounds = []
    for row in noisy:
        keep = np.flatnonzero(row > threshold)
        if len(keep) == 0:
            keep = np.array([int(np.argmax(row))])
        bounds.append((float(EDGES[keep[0]]), float(EDGES[keep[-1] + 1])))
    return bounds

"""Stand-in data for timing a run before it starts: public random numbers of the run's
shape, never a record. Cost modules time the method's own code on it
(engine/methods/aim/cost.py, engine/methods/marginals/cost.py) and scoring times the
classifiers on it (engine/methods/scoring_cost.py). Reading nothing private, a timing
costs no privacy.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from engine.data.dataset import Dataset


def design_matrix(n: int, width: int, classes: int, seed: int = 0, *,
                  latent: int = 16, blocks: tuple[int, ...] | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """A design matrix of real data's texture, in [0, 1]: each row a point of a
    `latent`-dimensional space (its class's public random centre plus unit noise) seen
    through a random map and a sigmoid, plus a little pixel noise. With `blocks` (a
    table's layout, engine/evaluation/utility.design_matrix: 1 for a numeric column, k for
    a column of k categories, summing to `width`), each block of k > 1 is one-hot, the
    category whose mapped value is largest, as a real table's categories come in.

    Why not uniform noise: the classifiers' fit times depend on how learnable the rows
    are. On noise a random forest grows a leaf per row (12x its time on the real
    Fashion-MNIST records at 4,000 rows) and LogReg stops early. On this low-rank
    texture, at Fashion-MNIST's shape, the three fits together took 5.6 CPU s against
    the real records' 6.2 (-10 %), though not one by one: the forest 1.8x slower, LogReg
    and the MLP 3x faster (docs/results.md, "Cost before Train"). Why one-hot blocks: a
    forest splits a 0/1 column once; on continuous stand-ins for them it took 2.4x its
    time on the census bench table's real records at 4,000 rows (1.0x with the blocks)."""
    if blocks is not None and sum(blocks) != width:
        raise ValueError(f"blocks {blocks} do not add up to the width {width}")
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    centres = rng.standard_normal((classes, latent))
    z = centres[y] + rng.standard_normal((n, latent))
    mix = rng.standard_normal((latent, width)) * (2 / np.sqrt(latent))
    x = 1 / (1 + np.exp(-(z @ mix + rng.standard_normal(width))))
    x += 0.05 * rng.standard_normal(x.shape)
    x = np.clip(x, 0, 1)
    start = 0
    for k in blocks or ():
        if k > 1:
            block = x[:, start:start + k]
            x[:, start:start + k] = np.eye(k)[np.argmax(block, axis=1)]
        start += k
    return x.astype(np.float32), y


def like(data: Dataset, n: int, seed: int = 0) -> Dataset:
    """`data`'s public shape (its columns' kinds, categories and bounds, or its image
    shape; its classes) with `n` rows drawn uniformly: categories from their list, numbers
    within their public bounds (or [0, 1] where there are none, as a run would release
    bounds for them), a zero-inflated column at its mass in half the rows, pixels in
    [0, 1], labels uniform."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, data.n_classes, n)
    if data.kind == "image":
        x = rng.random((n, *data.x_train.shape[1:]), dtype=np.float32)
        return _named(data, x, y)
    x = np.empty((n, len(data.columns)))
    for j, c in enumerate(data.columns):
        if c.kind == "cat":
            x[:, j] = rng.integers(0, len(c.categories), n)
            continue
        lo, hi = c.bounds if c.bounds is not None else (0.0, 1.0)
        x[:, j] = lo + rng.random(n) * (hi - lo)
        if c.mass is not None:
            x[rng.random(n) < 0.5, j] = c.mass
    return _named(data, x, y)


def _named(data: Dataset, x, y) -> Dataset:
    k = min(len(y), 64)
    return replace(data, name=f"{data.name} (stand-in)", x_train=x, y_train=y,
                   x_test=x[:k], y_test=y[:k])

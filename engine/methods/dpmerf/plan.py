"""DP-MERF's preparation, before anything is released: how records become features.

A `Plan` holds the records in the form the release reads (images, or a table's numeric
block and one-hot categorical block), the random frequencies (drawn from the model's
seed: public, like any weight), the kernel's length scale (the user's, a public
per-dataset default, or a heuristic on the public [0, 1] box), and each numeric column's
bounds: public ones, or a slot for the private release that engine/methods/dpmerf/
method._release makes. Nothing here releases anything or draws noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from engine.data.catalog import Dataset
from engine.methods.dpmerf import features as fx
from engine.methods.dpmerf.params import Params

# The official code's fixed Gaussian-kernel length scales (ℓ², pixels in [0, 1]).
# digits (8×8) has no official value: ℓ² = 4 gave LogReg .82 at ε=1 against .77 for
# MNIST's value scaled by pixel count (8.6) and .70 for 16 (3 runs each, public data).
# Other image sets scale MNIST's ℓ² by their pixel count.
# digits' halves and the 8×8 Fashion stand-in (engine/data/catalog.py) are 8×8 like digits.
IMAGE_LENGTH_SCALE_SQ = {"mnist": 105.0, "fashion_mnist": 127.0, "digits": 4.0,
                         "digits_public": 4.0, "digits_private": 4.0, "fashion_public": 4.0}


@dataclass
class Plan:
    """What the release needs: how records become features, and what is released."""

    kind: str
    x: torch.Tensor  # images (n, c, h, w) or scaled numeric block (n, d_num)
    x_cat: torch.Tensor | None  # one-hot categorical block (n, d_cat) or None
    w: torch.Tensor  # random frequencies (d_num or pixels, D/2)
    length_scale: float
    length_scale_source: str
    bounds: list[tuple[float, float]] | None  # numeric bounds (tabular)
    bounds_source: str
    private_bounds_cols: list[int]  # numeric columns whose bounds must be released
    pixel_weight: float = 0.0  # images: share of the linear pixel kernel
    private_dates: tuple = ()  # per private-bounds column: a date (dp_bounds' day grid)
    private_masses: tuple = ()  # per private-bounds column: its point mass or None

    def features(self, x: torch.Tensor, x_cat: torch.Tensor | None = None) -> torch.Tensor:
        if self.kind == "image":
            return fx.rff_and_pixels(x, self.w, self.pixel_weight)
        return fx.heterogeneous_features(x, x_cat, self.w)


def tabular_parts(data: Dataset):
    num = [i for i, c in enumerate(data.columns) if c.kind == "num"]
    cat = [i for i, c in enumerate(data.columns) if c.kind == "cat"]
    sizes = [len(data.columns[i].categories) for i in cat]
    return num, cat, sizes


def one_hot_block(x: np.ndarray, cat: list[int], sizes: list[int]) -> torch.Tensor | None:
    if not cat:
        return None
    blocks = [F.one_hot(torch.as_tensor(x[:, i], dtype=torch.long), s).float()
              for i, s in zip(cat, sizes)]
    return torch.cat(blocks, dim=1)


def make_plan(data: Dataset, params: Params, model_gen: torch.Generator,
          projection: str = "float32") -> Plan:
    if data.kind == "image":
        d_in = int(np.prod(data.image_shape))
        if params.length_scale is not None:
            ls, src = params.length_scale, "user"
        else:
            sq = IMAGE_LENGTH_SCALE_SQ.get(data.name, 105.0 * d_in / 784)
            ls, src = math.sqrt(sq), "public default (fixed per dataset, see IMAGE_LENGTH_SCALE_SQ)"
        w = fx.draw_frequencies(d_in, params.n_features, ls, generator=model_gen)
        w = w.to(getattr(torch, projection))
        return Plan("image", torch.as_tensor(data.x_train), None, w, ls, src, None, "", [],
                     params.pixel_weight)

    num, cat, sizes = tabular_parts(data)
    cols = [data.columns[i] for i in num]
    private_cols = [j for j, c in enumerate(cols) if c.bounds is None]
    sources = sorted({c.bounds_source for c in cols if c.bounds is not None})
    if private_cols:
        sources.append("DP release (noisy histogram over a public geometric grid, "
                       "engine/privacy/dp_bounds.py, part of the budget)")
    if params.length_scale is not None:
        ls, src = params.length_scale, "user"
    else:
        # Data-independent stand-in for the median heuristic: the median distance
        # between uniform points in the public [0,1]^d box is about √(d/6).
        ls = math.sqrt(max(len(num), 1) / 6.0)
        src = "public heuristic: median distance of uniform points in the scaled box, sqrt(d_num/6)"
    w = fx.draw_frequencies(len(num), params.n_features, ls, generator=model_gen)
    return Plan("tabular", torch.as_tensor(data.x_train[:, num], dtype=torch.float32),
                 one_hot_block(data.x_train, cat, sizes), w, ls, src,
                 [c.bounds for c in cols], "; ".join(sources) or "no numeric columns",
                 private_cols, private_dates=tuple(cols[j].date for j in private_cols),
                 # as float32, the precision of plan.x the histogram compares them with
                 private_masses=tuple(None if cols[j].mass is None
                                      else float(np.float32(cols[j].mass)) for j in private_cols))

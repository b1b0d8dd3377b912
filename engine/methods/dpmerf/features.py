"""Random Fourier features and the mean embeddings DP-MERF releases.

Privacy facts used by the accountant (tests/test_sensitivity.py tries to break each):
* `rff(x)` has unit L2 norm for every x, because cos²+sin² = 1 and the scale is √(2/D).
* The labelled embedding (1/m) Σ φ(x_i) y_iᵀ (one-hot y) moves by at most 2/m under
  replace-one: one column loses φ(x)/m, one (maybe the same) gains φ(x')/m.
* The heterogeneous feature [φ(x_num); x_cat/√d_cat] has norm ≤ √2 when x_cat holds one
  one-hot block per categorical column and d_cat is the total one-hot length, so its
  embedding's sensitivity is 2√2/m.
* Class counts change in at most two entries by one: sensitivity √2.
"""

from __future__ import annotations

import math

import torch

EMBEDDING_SENSITIVITY = 2.0  # times 1/m, for unit-norm features
HETEROGENEOUS_SENSITIVITY = 2.0 * math.sqrt(2.0)  # times 1/m
COUNTS_SENSITIVITY = math.sqrt(2.0)


def draw_frequencies(d_in: int, n_features: int, length_scale: float, *,
                     generator: torch.Generator | None = None) -> torch.Tensor:
    """W of shape (d_in, D/2) with columns ~ N(0, I/ℓ²): the Gaussian kernel's spectrum.

    The frequencies are data-independent, so they may be seeded and published.
    """
    if n_features % 2:
        raise ValueError("n_features must be even (cos and sin halves).")
    return torch.randn(d_in, n_features // 2, generator=generator) / length_scale


def rff(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """φ(x) = √(2/D)·[cos(xW), sin(xW)], shape (n, D), each row of norm exactly 1.

    If `w` is bfloat16 the projection runs in bfloat16 (5× faster matmuls on CPUs with
    AMX, and on GPUs); cos/sin stay in float32, so the unit norm — which the sensitivity
    rests on — holds whatever the projection's rounding.
    """
    proj = (x.flatten(1).to(w.dtype) @ w).float()  # (n, D/2)
    scale = math.sqrt(1.0 / w.shape[1])  # √(2/D) with D = 2·(D/2)
    return torch.cat([torch.cos(proj), torch.sin(proj)], dim=1) * scale


def rff_and_pixels(x: torch.Tensor, w: torch.Tensor, pixel_weight: float) -> torch.Tensor:
    """[√(1−a)·φ(x); √a·x/√d]: the Gaussian kernel plus a linear kernel on pixels in [0,1].

    The linear part makes the embedding carry each class's mean image directly, a strong,
    low-noise signal. Norm² ≤ (1−a)·1 + a·‖x‖²/d ≤ 1 for pixels in [0, 1], so the
    embedding's sensitivity stays 2/m. Pixels outside [0, 1] are clipped first, so the
    bound holds for any input.
    """
    flat = x.flatten(1).clamp(0, 1)
    phi = rff(flat, w)
    if pixel_weight == 0:
        return phi
    return torch.cat([phi * math.sqrt(1 - pixel_weight),
                      flat * math.sqrt(pixel_weight / flat.shape[1])], dim=1)


def heterogeneous_features(x_num: torch.Tensor, x_cat: torch.Tensor | None,
                           w: torch.Tensor) -> torch.Tensor:
    """[φ(x_num); x_cat/√d_cat]: Gaussian kernel on numbers plus a normalised linear
    kernel on one-hot categories (paper §4.3). Norm ≤ √2."""
    phi = rff(x_num, w) if x_num.shape[1] else x_num.new_zeros(len(x_num), 0)
    if x_cat is None or x_cat.shape[1] == 0:
        return phi
    return torch.cat([phi, x_cat / math.sqrt(x_cat.shape[1])], dim=1)


def chunked_embedding(x: torch.Tensor, y_onehot: torch.Tensor, feature_fn,
                      chunk: int = 4096) -> torch.Tensor:
    """(1/m) Σ_i f(x_i) y_iᵀ, shape (D, C) (with C = 1, all-ones y: the plain mean),
    without holding all m×D features at once (60k×10k floats would need 2.4 GB): sum
    f(x)ᵀy chunk by chunk, divide by m once."""
    total = None
    for start in range(0, len(x), chunk):
        part = feature_fn(x[start:start + chunk]).T @ y_onehot[start:start + chunk]
        total = part if total is None else total + part
    return total / len(x)

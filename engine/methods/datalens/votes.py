"""DataLens's Algorithms 2–3 (Wang et al., CCS 2021): the disjoint teacher partition,
each teacher's compressed vote (`topk_sto_sign`) and the noisy aggregate (`top_agg`).

Privacy assumption (replace-one): `partition` is disjoint, so one record changes at
most one teacher's k-sparse ±1 vote per synthetic record (L2 ≤ 2√k,
engine/methods/datalens/accounting.py). The vote sum is the only data-dependent release; its
noise comes from `gaussian_noise` (engine/privacy/noise.py: OS entropy, never the seed), called
through this module's name so the audit can record or batch it.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from engine.core.errors import InputError
from engine.privacy.noise import gaussian_noise


def partition(n_records: int, n_teachers: int, seed: int = 0, size: int | None = None) -> np.ndarray:
    """Disjoint equal parts: (n_teachers, size) record indices, each record at most once.

    `size` defaults to n_records // n_teachers; the remainder is left unused (equal sizes
    keep the teachers stackable). A random permutation split into blocks can never put a
    record in two teachers — the official code's overlap broke the 2√k bound. The seed is
    model randomness, not DP noise.
    """
    size = size or n_records // n_teachers
    if n_teachers < 1 or size < 1 or size * n_teachers > n_records:
        raise InputError(f"cannot split {n_records} records into {n_teachers} parts of {size}.")
    perm = np.random.default_rng(seed).permutation(n_records)
    return perm[: n_teachers * size].reshape(n_teachers, size)


def topk_sto_sign(grads: torch.Tensor, k: int, c, *, gen: torch.Generator | None = None) -> torch.Tensor:
    """Algorithm 2 on the last dimension: keep the k largest |g|, clip to [−c, c], and
    replace each kept g by +1 with probability ½ + g/(2c), else −1.

    Returns an int8 tensor of grads' shape with exactly k nonzeros (±1) per vector;
    E[vote · c] = g for |g| ≤ c. `c` is a float or a tensor broadcastable to
    grads[..., :1] (per-teacher clip). Not DP noise: its randomness may come from a
    seeded generator.
    """
    _, idx = grads.abs().topk(k, dim=-1, sorted=False)  # order is irrelevant; unsorted is faster
    g = grads.gather(-1, idx)
    c = torch.as_tensor(c, dtype=g.dtype, device=g.device)
    p_plus = 0.5 + torch.clamp(g, -c, c) / (2 * c)
    u = torch.rand(g.shape, generator=gen, device=g.device, dtype=g.dtype)
    signs = torch.where(u < p_plus, 1, -1).to(torch.int8)
    return torch.zeros(grads.shape, dtype=torch.int8, device=grads.device).scatter_(-1, idx, signs)


def top_agg(votes: torch.Tensor, sigma: float, beta: float) -> torch.Tensor:
    """Algorithm 3's aggregation: ṽ = Σ_i votes_i + N(0, σ²) on every coordinate, then
    sign(ṽ_j) where |ṽ_j| ≥ β·N, else 0. `votes` is (N, ..., d); returns float (..., d).

    The sum is the only data-dependent release (sensitivity 2√k per record); the threshold
    is post-processing. σ = 0 means no noise (non-private runs only).
    """
    n = votes.shape[0]
    total = votes.sum(dim=0, dtype=torch.float32)
    noisy = total + gaussian_noise(total.shape, sigma, device=total.device)
    return torch.where(noisy.abs() >= beta * n, torch.sign(noisy), torch.zeros_like(noisy))


def unpool(g_hat: torch.Tensor, pool: int, image_shape: tuple[int, int, int]) -> torch.Tensor:
    """Votes on pool×pool blocks, (batch, d / pool²), back to (batch, c, h, w): every
    pixel of a block gets its block's aggregate."""
    c, h, w = image_shape
    return F.interpolate(g_hat.view(-1, c, h // pool, w // pool), scale_factor=pool, mode="nearest")

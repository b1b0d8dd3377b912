"""Gaussian noise that is DP as computed in floating point: the project's only noise
drawing (accounting is engine/privacy/accountant.py, which imports no torch). Methods from-import
`gaussian_noise`, and every call ends in `gaussian` here, so the audit can record or
replace every draw, per method module or at this one place (engine/methods/audit_harness.py).

Why not `torch.randn`: its CPU float32 path is Box–Muller on 24-bit uniforms, so the noise
takes few, structured values (each pair's radius² is −2·log of a multiple of 2^-24). From
released x + noise an attacker who guesses x can check that structure, and the wrong guess
fails it: a distinguishing test on DP-MERF's raw noisy embedding reached ε ≥ 4.6 where
1 was claimed (Mironov 2012 broke textbook Laplace noise the same way).

What this draws instead: the Gaussian *rounded to a public grid*. For std σ and the
caller's dtype, the grid step is the power of two γ = min(1, 2^(⌊log2 σ⌋ − G)), G = 8 for
float32 and 32 for float64 (`grid`), and the noise is γ·K with

    P(K = k) = Φ((k + ½)/s) − Φ((k − ½)/s),   s = σ/γ ∈ [2^G, 2^(G+1)) (σ when γ = 1).

Privacy argument. When the statistic x lies on the grid (every count, vote sum and
histogram does, γ being a power of two ≤ 1; DP-MERF's embedding is snapped to it first,
`snap`), the exact sum x + γK equals γ·round((x + N(0, σ²))/γ): a deterministic function
of the Gaussian mechanism's output, i.e. post-processing, so its privacy is exactly the
Gaussian mechanism's that the accountant composes. γK is exact in the dtype (|K| < 2^24
while σ < 2^20 in float32) and IEEE addition is correctly rounded, so the computed sum is
the exact one rounded to the dtype (the exact one itself while |x|/γ < 2^24, resp. 2^53):
post-processing too. Every output is a point of the public grid whatever x is, so its
position reveals nothing; the rounding adds variance γ²/12 ≤ σ²·2^-2G/12, nothing.

The sampler's own error, and what it costs. K is drawn from tail probabilities
(`scipy.special.ndtr`, relative error ~1e-15) compared with uniforms of relative precision
2^-52 down to 2^-139: the coarse bucket (≈ σ/2048 wide, or one integer for s < 4096) by
inverse tail probability, the point inside it by rejection with the exact within-bucket
shape. Every k up to the table's end (|k| ≲ 13.6·s; the mass beyond, τ ≤ 2^-139, is put
in the last bucket) is drawn with probability within a factor (1 ± η) of the exact one,
η ≤ 1e-11 (conservative; the differences of tail probabilities that give a bucket's mass,
≤ 4096× the relative error of each, dominate). For d independent coordinates a mechanism
that is (ε, δ)-DP with exact noise is then (ε + 2dη, (1 + η)^d·δ + d·τ·(1 + e^ε))-DP as
computed: for the largest release here (d = 100,000 values) ε grows by 2e-6 and δ by a
factor 1 + 1e-6 plus ≤ 1e-36·e^ε. Randomness: Philox keyed per draw with 128 bits from
os.urandom (OS entropy), never a seed.

DP-MERF's embedding is not on the grid; `snap` rounds it (in float64) first. That changes
each coordinate by at most γ/2, so the snapped embedding's sensitivity is Δ + γ√d ≤
Δ·(1 + z·√d·2^-32) for multiplier z = σ/Δ: for d = 100,000 and z ≤ 100, a relative
increase below 8e-6 of Δ, left uncharged and disclosed (docs/privacy.md, "The releases").
"""

from __future__ import annotations

import math
import os
import secrets
from functools import lru_cache

import numpy as np
import torch

GRID_BITS = {torch.float32: 8, torch.float64: 32}  # s = σ/γ ≥ 2^G: fine against σ
_COARSE = 2048  # coarse buckets per σ (at least): the acceptance rate stays above 99 %
_TAIL_BITS = 139  # the uniform's relative precision (2^-52) holds down to 2^-139


def grid(std: float, dtype=torch.float32) -> float:
    """The public grid step γ of `gaussian(…, std, dtype=dtype)`: a power of two ≤ 1."""
    bits = GRID_BITS.get(dtype, 32)
    return min(1.0, math.ldexp(1.0, math.floor(math.log2(std)) - bits))


def snap(x: torch.Tensor, std: float) -> torch.Tensor:
    """x (float64) rounded to the grid of float64 noise of this std, so that x + noise is
    exact (see the module docstring for the sensitivity this costs)."""
    if std == 0:
        return x.double()
    g = grid(std, torch.float64)
    return torch.round(x.double() / g) * g


def gaussian(shape, std: float, *, device="cpu", dtype=torch.float32) -> torch.Tensor:
    """γ·K with K the Gaussian N(0, (std/γ)²) rounded to the integers (module docstring)."""
    shape = tuple(int(n) for n in (shape if isinstance(shape, (tuple, list, torch.Size))
                                   else (shape,)))
    if std == 0:
        return torch.zeros(shape, device=device, dtype=dtype)
    if not (std > 0 and math.isfinite(std)):
        raise ValueError(f"noise std must be a finite number >= 0. Got {std!r}.")
    g = grid(std, dtype)
    k = rounded_gaussian(int(np.prod(shape, dtype=np.int64)), std / g)
    return torch.from_numpy((k * g).reshape(shape)).to(device=device, dtype=dtype)


def gaussian_noise(shape, std: float, *, device="cpu", dtype=torch.float32) -> torch.Tensor:
    """N(0, std²) noise rounded to a public power-of-two grid, from OS entropy: DP as
    computed in floating point for statistics on that grid (module docstring). The one
    entry every method calls."""
    return gaussian(shape, std, device=device, dtype=dtype)


def noise_generator(device: torch.device | str = "cpu") -> torch.Generator:
    """A torch generator seeded from OS entropy, for noise that must not be predictable
    (the audit's own draws). Model seeds may be fixed for reproducibility; such noise
    never shares the model's generator and is never seeded from a config."""
    gen = torch.Generator(device=device)
    gen.manual_seed(secrets.randbits(63))  # os.urandom underneath
    return gen


# ------------------------------------------------------------------ the sampler


class _Bits:
    """uint64 words from Philox keyed with 128 bits of OS entropy (os.urandom), a new key
    per draw: never a seed a user or config can set. (os.urandom itself is 6× slower,
    and the audit draws millions of values.)"""

    def __init__(self):
        self._gen = np.random.Philox(key=int.from_bytes(os.urandom(16), "little"))

    def words(self, n: int) -> np.ndarray:
        return self._gen.random_raw(n)

    def uniform(self, n: int) -> np.ndarray:
        """n uniforms on (0, 1) with relative precision 2^-52 down to 2^-139: one word,
        refined by two more where it is small (w < 2^53, u < 2^-11) so that the float
        rounding of each term stays relative to the whole."""
        w = self.words(n)
        u = w.astype(np.float64) * 2.0 ** -64
        small = np.flatnonzero(w < np.uint64(2 ** 53))
        if len(small):
            extra = self.words(2 * len(small)).reshape(2, -1).astype(np.float64)
            u[small] += (extra[0] + extra[1] * 2.0 ** -64) * 2.0 ** -128
        # Never 0; never 1 either: a word ≥ 2^64 − 1024 rounds to 2^64 in float64, and
        # u = 1 would step past the table's first entry (rounded_gaussian). Those 1024
        # words (probability 2^-54) go to the largest double below 1, within η.
        return np.minimum(u + 2.0 ** -193, 1.0 - 2.0 ** -53)

    def uniform53(self, n: int) -> np.ndarray:
        """n uniforms on [0, 1) on the 2^-53 grid: enough against probabilities ≥ ½."""
        return (self.words(n) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


@lru_cache(maxsize=64)
def _table(s: float, width: int) -> np.ndarray:
    """P(|J| ≥ j) for j = 0, 1, …: J the coarse bucket (of `width` integers, odd, bucket j
    centred on j·width) of K = round(s·Z); ends where it drops below 2^-139."""
    from scipy.special import ndtr

    z_end = math.sqrt(2 * _TAIL_BITS * math.log(2)) + 1
    j = np.arange(1, int(z_end * s / width) + 2)
    tail = 2 * ndtr(-(j * width - width / 2) / s)  # both sides, edges at ±(j·w − w/2)/s
    return np.concatenate([[1.0], tail[tail >= 2.0 ** -_TAIL_BITS]])


def rounded_gaussian(n: int, s: float) -> np.ndarray:
    """n draws of K = round(s·Z), Z ~ N(0, 1), as float64 integers (s ≥ 1)."""
    from scipy.special import ndtri

    bits = _Bits()
    width = 1 if s < 2 * _COARSE else 2 * int(s // (2 * _COARSE)) + 1  # odd: symmetric
    table = _table(float(s), width)
    last = len(table) - 1
    # |J| = the largest j with u < P(|J| ≥ j). The inverse normal gives it to within a
    # step or two; the comparisons with the table then make it exact.
    u = bits.uniform(n)
    guess = np.ceil((-ndtri(u / 2) * s + width / 2) / width) - 1
    mag = np.clip(np.nan_to_num(guess), 0, last).astype(np.int64)
    while (down := table[mag] <= u).any():
        mag[down] -= 1
    while (up := (mag < last) & (table[np.minimum(mag + 1, last)] > u)).any():
        mag[up] += 1
    sign = np.where(bits.words(n) & np.uint64(1), 1.0, -1.0)
    j = np.where(mag == 0, 0.0, sign * mag)
    if width == 1:
        return j
    return _inside(bits, j, mag.astype(np.float64), width, s)


def _inside(bits: _Bits, j: np.ndarray, mag: np.ndarray, width: int, s: float) -> np.ndarray:
    """The point of each coarse bucket, by rejection: offset o uniform in the bucket,
    accepted with P(K = k)/max over the bucket, k = j·width + o. For small a = |k|/s²,
    P(K = k) = φ(k/s)/s · sinhc(a/2) · c, c the same for every k (to O(k²/s⁶)), so the
    ratio is exp(−(k² − k_lo²)/2s²) · sinhc(|k|/2s²) / sinhc(k_hi/2s²)."""
    half = width // 2
    k_lo = np.where(mag == 0, 0.0, mag * width - half)  # |k| nearest 0 in the bucket
    k_hi = mag * width + half
    two_s2 = 2 * s * s
    # sinhc(x) = 1 to double precision when x²/6 < 2^-54: skip it (always, for float64).
    curved = (k_hi.max(initial=0.0) / two_s2) ** 2 / 6 > 2.0 ** -54
    out = np.empty_like(j)
    todo = np.arange(len(j))
    while len(todo):
        o = (bits.words(len(todo)) % np.uint64(width)).astype(np.float64) - half
        k = j[todo] * width + o
        a = np.abs(k)
        lo = k_lo[todo]
        accept_p = np.exp((a - lo) * (a + lo) / -two_s2)
        if curved:
            accept_p *= _sinhc(a / two_s2) / _sinhc(k_hi[todo] / two_s2)
        ok = bits.uniform53(len(todo)) < accept_p
        out[todo[ok]] = k[ok]
        todo = todo[~ok]
    return out


def _sinhc(x: np.ndarray) -> np.ndarray:
    """sinh(x)/x for small x ≥ 0 (here x ≤ 14/s), to double precision."""
    x2 = x * x
    return 1.0 + x2 / 6.0 * (1.0 + x2 / 20.0 * (1.0 + x2 / 42.0))

"""What a method's audit (engine/methods/<method>/audit.py) drives its own release with.

engine/audit/lower_bound.py turns scores into a lower bound on ε; a method's audit runs
the method's own release code on a worst-case neighbouring pair and hands back (scores
on D0, scores on D1, claimed noise multiplier z). Only the noise call is wrapped, to
draw all trials at once (a leading axis: `batched_noise`) or none (the exact mean:
`no_noise`) — through whatever function the method module holds, so a bug planted
anywhere on the path (σ, sensitivity, partition, step count, feature map) shows up in
the audit. The claim comes from the (ε, δ) the run *targets* (`target_multiplier`),
never from the σ or multiplier a run reports: a run that calibrates for the wrong δ
reports a consistent but wrong multiplier.

`Draws` and `twice` serve the noise checks (engine/audit/noise.py): the same releases
repeated, their noise compared with the exact statistic. No privacy claim is made here;
this module only tests the claims of the others.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from engine.privacy import noise
from engine.privacy import accountant as privacy

# The setting of the noise checks' releases (engine/audit/noise.py).
EPSILON, DELTA = 3.0, 1e-5

# ------------------------------------------------------------------ the noise switch


@contextmanager
def batched_noise(module, trials: int):
    """Inside the block, `module.gaussian_noise(shape, std)` draws `trials` independent
    copies at once (a new leading axis), through whatever function the module holds — so
    a bug planted there stays in the audit. Not thread-safe: for tests and benchmarks."""
    current = module.gaussian_noise

    def batched(shape, std, **kw):
        return current((trials, *tuple(shape)), std, **kw)

    module.gaussian_noise = batched
    try:
        yield
    finally:
        module.gaussian_noise = current


@contextmanager
def no_noise(module):
    """Inside the block, `module.gaussian_noise` returns zeros: the release's exact mean."""
    current = module.gaussian_noise

    def zeros(shape, std, *, device="cpu", dtype=torch.float32):
        return torch.zeros(tuple(shape), device=device, dtype=dtype)

    module.gaussian_noise = zeros
    try:
        yield
    finally:
        module.gaussian_noise = current


@contextmanager
def fast_sampler():
    """Inside the block the sampler under `engine.privacy.noise.gaussian_noise` is float64
    `torch.randn`·std cast to the dtype: the same distribution to the audit's resolution,
    10–50× faster on millions of trials. Everything above it — each module's
    `gaussian_noise`, σ, sensitivity — stays on the audited path; the sampler itself is
    checked by tests/test_noise.py (its distribution, grid and exactness)."""
    current = noise.gaussian

    def fast(shape, std, *, device="cpu", dtype=torch.float32):
        gen = noise.noise_generator("cpu")
        out = torch.randn(tuple(shape), generator=gen, dtype=torch.float64) * std
        return out.to(device=device, dtype=dtype)

    noise.gaussian = fast
    try:
        yield
    finally:
        noise.gaussian = current


# ------------------------------------------------------------------ scores and claim


def audit_pair(release, module, d0, d1, trials: int):
    """Scores of `trials` runs of the real `release(data)` on each dataset of the pair,
    projected on the direction between its exact (noise-free) outputs."""
    with no_noise(module):
        mean0, mean1 = release(d0), release(d1)
    with batched_noise(module, trials):
        out0, out1 = release(d0), release(d1)
    return project(torch.as_tensor(out0), torch.as_tensor(mean0), torch.as_tensor(mean1)), \
        project(torch.as_tensor(out1), torch.as_tensor(mean0), torch.as_tensor(mean1))


def project(out: torch.Tensor, mean0: torch.Tensor, mean1: torch.Tensor) -> np.ndarray:
    """Score = projection of each trial's output on the unit direction mean1 − mean0."""
    u = (mean1 - mean0).double().flatten()
    u = u / u.norm()
    return ((out.double().flatten(1) - mean0.double().flatten()) @ u).numpy()


def audit_config(method: str, epsilon: float, delta: float, **kw):
    """The RunConfig an audited release runs under (dataset "audit": the pair's)."""
    from engine.core.config import RunConfig

    return RunConfig(method=method, dataset="audit", epsilon=epsilon, delta=delta, **kw)


def target_multiplier(epsilon: float, delta: float, plan=(), name: str | None = None) -> float:
    """The claim, from the target (ε, δ) alone: the one Gaussian mechanism (multiplier z*)
    that spends exactly the target, whole runs must be no more revealing than it. For one
    release of a composed plan audited on its own, its public share of z*'s μ² (a
    `privacy.Release`'s share, over its count): z = z*·√(count·Σshares/share)."""
    z = privacy.calibrate_noise_multiplier(epsilon=epsilon, delta=delta)
    if name is None:
        return z
    rel = next(r for r in plan if r.name == name)
    return z * math.sqrt(rel.count * sum(r.share for r in plan) / rel.share)


def tabular_pair(m: int, d: int):
    """d numeric columns with public bounds [0, 1], 2 classes. Record 0 is class 0 with
    every value 0 in D0, class 1 with every value 1 in D1: it moves one cell of every
    column's histogram (and across rows) and one class count, the stated √2 each (and
    one cell of every 2-way marginal)."""
    from engine.data.dataset import Column, Dataset

    cols = [Column(f"v{j}", "num", bounds=(0.0, 1.0), bounds_source="public") for j in range(d)]
    x0 = np.full((m, d), 0.5)
    y0 = np.arange(m) % 2
    x1, y1 = x0.copy(), y0.copy()
    x0[0], y0[0] = 0.0, 0
    x1[0], y1[0] = 1.0, 1
    return tuple(Dataset("audit", "tabular", x, y, x[:2], y[:2], ["0", "1"], columns=cols)
                 for x, y in ((x0, y0), (x1, y1)))


# ------------------------------------------------------------------ the noise checks


@dataclass(frozen=True)
class Draws:
    """`trials` releases of one statistic, flattened to (trials, d)."""

    name: str
    out: np.ndarray  # (trials, d) the released values, float64
    exact: np.ndarray  # (d,) the statistic itself (the release with the noise off)
    std: np.ndarray  # (d,) the noise std each coordinate is stated to get
    grid: np.ndarray  # (d,) the public grid step of each coordinate's noise


def draws(name, out, exact, std, dtype) -> Draws:
    """`Draws` of released values `out` around the statistic `exact` (any shapes)."""
    out = np.asarray(torch.as_tensor(out).double()).reshape(len(out), -1)
    exact = np.asarray(torch.as_tensor(exact).double()).reshape(-1)
    std = np.broadcast_to(np.asarray(std, np.float64), exact.shape)
    grid = np.array([noise.grid(s, dtype) for s in std])
    return Draws(name, out, exact, std, grid)


def twice(release, module, data, trials):
    """(`trials` noisy releases, the exact one) of `release(data)`."""
    with no_noise(module):
        exact = release(data)
    with batched_noise(module, trials):
        out = release(data)
    return out, exact

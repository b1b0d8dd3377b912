"""Small computations behind the Learn page's live pictures (the pages stay math-free).

Each function returns plain numpy arrays and numbers for plotting. Epsilons and noise
multipliers come from `engine.privacy.accountant`; the aggregation noise in the voting demo comes
from `engine.privacy.noise.gaussian_noise`, like the real method's (imported when drawn: torch is
heavy, and the pages that only read a curve need none).
"""

from __future__ import annotations

import math

import numpy as np

from engine.methods.datalens import accounting as datalens_accounting
from engine.privacy import accountant as privacy
from engine.core.errors import InputError

# A toy dataset for "neighbouring datasets": ten people's scores in [0, 1]. Its
# neighbour is the worst case DP must cover: the person who scored 0 is replaced by
# someone who scored 1, which moves the mean by the full sensitivity Δ = 1/n.
TOY_SCORES = np.array([0.0, 0.35, 0.81, 0.44, 0.57, 0.29, 0.73, 0.50, 0.66, 0.38])
TOY_REPLACEMENT = 1.0
# The Learn page's ε slider spans this range; the picture's axes are sized for it once,
# so moving ε changes the curves, not the scale they are drawn on.
DEMO_EPSILONS = (0.1, 10.0)


def gaussian_mechanism(epsilon: float, delta: float, *, n_grid: int = 400,
                       epsilon_range: tuple[float, float] = DEMO_EPSILONS) -> dict:
    """Output densities of a noisy mean on two neighbouring toy datasets.

    D and D' are the worst-case neighbours (replace-one): scores are in [0, 1], and D'
    swaps a 0 for a 1, so the means differ by exactly Δ = 1/n. Noise σ = z·Δ with z
    calibrated by the exact Gaussian accountant to (ε, δ). The smaller ε, the more the
    two bell curves overlap, i.e. the less one output tells about which dataset produced
    it. `x_range` and `y_max` are fixed for every ε in `epsilon_range` (the x axis shows
    the curves at the range's middle ε to ±4σ, the y axis fits the tallest peak), so a
    plot drawn with them keeps its axes as ε moves.
    """
    if not epsilon > 0 or math.isinf(epsilon):
        raise InputError(f"epsilon must be a finite number > 0 for this demo. Got {epsilon!r}.")
    d = TOY_SCORES
    d2 = d.copy()
    d2[int(np.argmin(d))] = TOY_REPLACEMENT
    n = len(d)
    sensitivity = 1.0 / n
    z = privacy.calibrate_noise_multiplier(epsilon=epsilon, delta=delta)
    sigma = z * sensitivity
    m1, m2 = float(d.mean()), float(d2.mean())
    lo_eps, hi_eps = epsilon_range
    mid_sigma = privacy.calibrate_noise_multiplier(
        epsilon=math.sqrt(lo_eps * hi_eps), delta=delta) * sensitivity
    x_range = (min(m1, m2) - 4 * mid_sigma, max(m1, m2) + 4 * mid_sigma)
    min_sigma = privacy.calibrate_noise_multiplier(epsilon=hi_eps, delta=delta) * sensitivity
    y_max = 1.05 / (min_sigma * math.sqrt(2 * math.pi))
    # The densities are evaluated wide enough for the TV distance, then drawn clipped.
    x = np.linspace(min(x_range[0], min(m1, m2) - 6 * sigma),
                    max(x_range[1], max(m1, m2) + 6 * sigma), n_grid)

    def pdf(mu):
        return np.exp(-0.5 * ((x - mu) / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))

    p, q = pdf(m1), pdf(m2)
    # Total-variation distance: how often an observer could tell D from D' at best.
    tv = float(0.5 * np.trapezoid(np.abs(p - q), x))
    return {"x": x, "p": p, "q": q, "mean_d": m1, "mean_d2": m2, "sigma": sigma,
            "noise_multiplier": z, "sensitivity": sensitivity, "tv_distance": tv,
            "scores": d, "scores_neighbour": d2, "x_range": x_range, "y_max": y_max}


def kernel_approximation(n_features: int, length_scale: float = 1.0, *, seed: int = 0,
                         n_grid: int = 200, d_in: int = 2) -> dict:
    """Gaussian kernel k(x, x') = exp(-|x-x'|²/(2ℓ²)) against its random-feature
    approximation φ(x)·φ(x') with D features, as a function of the distance |x-x'|.

    Uses the same frequencies and feature map as DP-MERF (`engine.methods.dpmerf.features`). The
    approximation's error shrinks like 1/√D, which is why DP-MERF uses thousands.
    """
    import torch

    from engine.methods.dpmerf.features import draw_frequencies, rff

    if n_features < 2 or n_features % 2:
        raise InputError(f"n_features must be an even number >= 2. Got {n_features!r}.")
    if not length_scale > 0:
        raise InputError(f"length_scale must be > 0. Got {length_scale!r}.")
    r = np.linspace(0.0, 4.0 * length_scale, n_grid)
    gen = torch.Generator().manual_seed(int(seed))  # frequencies are public, seeding is fine
    w = draw_frequencies(d_in, n_features, length_scale, generator=gen).double()
    x0 = torch.zeros(1, d_in, dtype=torch.float64)
    pts = torch.zeros(n_grid, d_in, dtype=torch.float64)
    pts[:, 0] = torch.from_numpy(r)
    approx = (rff(pts, w) @ rff(x0, w).T).squeeze(1).numpy()
    exact = np.exp(-(r ** 2) / (2 * length_scale ** 2))
    return {"distance": r, "exact": exact, "approx": approx,
            "max_error": float(np.max(np.abs(approx - exact)))}


def top_k_voting(*, n_teachers: int = 50, dim: int = 40, top_k: int = 10, sigma: float = 5.0,
                 beta: float = 0.3, clip: float = 1.0, seed: int = 0) -> dict:
    """DataLens's TopAgg on a toy gradient: teachers each see a noisy copy of a true
    gradient, keep their top-k coordinates, turn them into stochastic signs, and the sum
    of votes gets Gaussian noise; coordinates whose |noisy vote| < β·N are dropped.

    Returns the clean and noisy vote sums, the threshold, the released signs and how many
    released signs agree with the true gradient's.
    """
    for name, v, lo in (("n_teachers", n_teachers, 1), ("dim", dim, 1), ("top_k", top_k, 1)):
        if int(v) < lo:
            raise InputError(f"{name} must be >= {lo}. Got {v!r}.")
    if top_k > dim:
        raise InputError(f"top_k ({top_k}) cannot exceed dim ({dim}).")
    if sigma < 0 or not 0 <= beta <= 1 or clip <= 0:
        raise InputError("sigma must be >= 0, beta in [0, 1] and clip > 0.")
    rng = np.random.default_rng(seed)  # the teachers' data, not DP noise
    true_grad = rng.normal(0, 1, dim) * (rng.random(dim) < 0.3)  # a few coordinates matter
    grads = true_grad + rng.normal(0, 0.7, (n_teachers, dim))
    votes = np.zeros((n_teachers, dim))
    for t in range(n_teachers):
        idx = np.argsort(-np.abs(grads[t]))[:top_k]
        g = np.clip(grads[t, idx], -clip, clip)
        p_plus = 0.5 + g / (2 * clip)
        votes[t, idx] = np.where(rng.random(top_k) < p_plus, 1.0, -1.0)
    clean = votes.sum(0)
    import torch

    from engine.privacy.noise import gaussian_noise

    noise = gaussian_noise((dim,), sigma, dtype=torch.float64).numpy()
    noisy = clean + noise
    threshold = beta * n_teachers
    released = np.where(np.abs(noisy) >= threshold, np.sign(noisy), 0.0)
    kept = released != 0
    agree = int(np.sum(released[kept] == np.sign(true_grad[kept])))
    return {"true_grad": true_grad, "clean": clean, "noisy": noisy, "threshold": threshold,
            "released": released, "n_released": int(kept.sum()), "n_agree": agree,
            "sensitivity": 2 * math.sqrt(top_k)}


# ------------------------------------------------------------ accountant curves


def _log_grid(lo: int, hi: int, n: int) -> list[int]:
    return sorted({max(lo, int(round(v))) for v in np.geomspace(lo, hi, n)})


def composition_curve(*, noise_multiplier: float, delta: float, max_compositions: int,
                      n_points: int = 25) -> dict:
    """ε after T Gaussian releases of one multiplier z, tight (exact) vs RDP accounting."""
    if not noise_multiplier > 0:
        raise InputError(f"noise multiplier must be > 0. Got {noise_multiplier!r}.")
    if int(max_compositions) < 1:
        raise InputError(f"compositions must be >= 1. Got {max_compositions!r}.")
    ts = _log_grid(1, int(max_compositions), n_points)
    return {"T": ts,
            "exact": [privacy.epsilon_for(noise_multiplier, delta=delta, compositions=t,
                                          accountant="exact") for t in ts],
            "rdp": [privacy.epsilon_for(noise_multiplier, delta=delta, compositions=t,
                                        accountant="rdp") for t in ts]}


def sigma_epsilon_curve(*, delta: float, sensitivity: float, n_points: int = 40,
                        eps_range: tuple[float, float] = (0.05, 20.0)) -> dict:
    """One Gaussian release: the noise std needed for each ε (exact calibration)."""
    if not sensitivity > 0:
        raise InputError(f"sensitivity must be > 0. Got {sensitivity!r}.")
    eps = list(np.geomspace(*eps_range, n_points))
    sig = [privacy.calibrate_noise_multiplier(epsilon=float(e), delta=delta) * sensitivity
           for e in eps]
    return {"epsilon": [float(e) for e in eps], "sigma": sig}


def datalens_curve(*, top_k: int, sigma: float, batch: int, delta: float, max_steps: int,
                   n_points: int = 25) -> dict:
    """DataLens: ε spent against training steps for (k, σ, records per step)."""
    if int(max_steps) < 1:
        raise InputError(f"steps must be >= 1. Got {max_steps!r}.")
    ts = _log_grid(1, int(max_steps), n_points)
    out = {"steps": ts}
    for acc in ("exact", "rdp"):
        out[acc] = [datalens_accounting.spent_epsilon(steps=t, top_k=top_k, sigma=sigma,
                                                      batch=batch, delta=delta, accountant=acc)
                    for t in ts]
    return out

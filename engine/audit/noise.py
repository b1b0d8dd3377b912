"""Each release's noise as computed: what a run released minus the exact statistic, over
repeated releases on a tiny dataset, through the code paths the audit drives (DP-MERF's
`_release`, `dp_bounds.noisy_histogram`, the marginals baseline's and AIM's `train`,
DataLens's `top_agg` under `train`). Only the noise call is batched or switched off.

The audit's projection score (engine/audit/lower_bound.py) sees a release's noise along one
direction only; these draws let tests/test_release_noise.py check the rest of what the
privacy argument assumes (engine/privacy/noise.py): the noise is independent across coordinates
and rows with the stated variance σ²·I, no coordinate comes out exactly at its true value
more often than the rounded Gaussian allows (≤ 1/(256·√(2π)) per value), and every
released value lies on its public grid (a statistic not snapped to it shows). No privacy
claim is made here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from engine.privacy import noise
from engine.audit.releases import (_batched_noise, _config, _dpmerf_release, _no_noise,
                                   _noisy_vote_sum)

EPSILON, DELTA = 3.0, 1e-5


@dataclass(frozen=True)
class Draws:
    """`trials` releases of one statistic, flattened to (trials, d)."""

    name: str
    out: np.ndarray  # (trials, d) the released values, float64
    exact: np.ndarray  # (d,) the statistic itself (the release with the noise off)
    std: np.ndarray  # (d,) the noise std each coordinate is stated to get
    grid: np.ndarray  # (d,) the public grid step of each coordinate's noise


def _draws(name, out, exact, std, dtype) -> Draws:
    out = np.asarray(torch.as_tensor(out).double()).reshape(len(out), -1)
    exact = np.asarray(torch.as_tensor(exact).double()).reshape(-1)
    std = np.broadcast_to(np.asarray(std, np.float64), exact.shape)
    grid = np.array([noise.grid(s, dtype) for s in std])
    return Draws(name, out, exact, std, grid)


def _twice(release, module, data, trials):
    with _no_noise(module):
        exact = release(data)
    with _batched_noise(module, trials):
        out = release(data)
    return out, exact


def dpmerf_draws(trials: int) -> list[Draws]:
    """The mean embedding and the class counts, as `dpmerf._release` released them. The
    pixels are tiny (< 1e-5), so the sine features are far below σ/512, where a float32
    value has bits finer than the grid (larger ones lie on it anyway): a missing `snap`
    then leaves them in the release."""
    from engine.methods.dpmerf import method as dpmerf
    from engine.data.dataset import Dataset

    params = dpmerf.Params(n_features=16, labels="counts")
    config = _config("dpmerf", EPSILON, DELTA)
    gen = torch.Generator().manual_seed(0)
    x = 1e-5 * torch.rand((20, 1, 1, 1), generator=gen).numpy()
    y = np.arange(20) % 3
    d0 = Dataset("audit", "image", x, y, x[:2], y[:2], ["0", "1", "2"], (1, 1, 1))
    w = 3 * torch.randn((1, 8), generator=gen)
    sigmas = dpmerf._calibrate(config, d0, params)[1]
    out = []
    for name in ("mean embedding", "class counts"):
        release = _dpmerf_release(config, params, w, name)
        out.append(_draws(f"DP-MERF {name}", *_twice(release, dpmerf, d0, trials),
                          sigmas[name], torch.float64))
    return out


def bounds_draws(trials: int) -> list[Draws]:
    """The numeric-bounds histogram (mostly empty cells) with σ from DP-MERF's plan."""
    from engine.privacy import dp_bounds
    from engine.methods.dpmerf import method as dpmerf
    from engine.audit.releases import bounds_pair

    d0, _ = bounds_pair(30)
    sigma = dpmerf._calibrate(_config("dpmerf", EPSILON, DELTA), d0,
                              dpmerf.Params(bounds_share=0.9))[1]["numeric bounds histogram"]

    def release(data):
        return dp_bounds.noisy_histogram(data.x_train, noise_std=sigma)
    return [_draws("numeric bounds histogram", *_twice(release, dp_bounds, d0, trials), sigma,
                   torch.float64)]


def marginals_draws(trials: int) -> list[Draws]:
    """The class counts and every class's column histograms, from `marginals.train`."""
    from engine.methods.marginals import method as marginals
    from engine.audit.train import _marginals_pair, _marginals_release

    params = marginals.Params(bins=4, conditional=True)
    config = _config("marginals", EPSILON, DELTA)
    d0, _ = _marginals_pair(20, 3)
    s_counts, s_hist = (r.sigma for r in marginals._calibrate(config, params, d0).releases)

    def release(data):
        return _marginals_release(config, params, data)
    out, exact = _twice(release, marginals, d0, trials)
    std = np.where(np.arange(exact.shape[-1]) < d0.n_classes, s_counts, s_hist)
    return [_draws("marginals counts and histograms", out, exact, std, torch.float64)]


def aim_draws(trials: int) -> list[Draws]:
    """Every count vector `aim.train` measured, measured again through `aim._measure`."""
    from engine.methods.aim import method as aim
    from engine.audit.aim import _pair, _params, _record

    d = 2
    calls, _ = _record(_config("aim", EPSILON, DELTA), _params(d), _pair(20, d)[0])
    out = np.concatenate([aim._measure(np.tile(x, (trials, 1)), s) for x, s, _ in calls], 1)
    exact = np.concatenate([x for x, _, _ in calls])
    std = np.concatenate([np.full(len(x), s) for x, s, _ in calls])
    return [_draws("AIM measurements", out, exact, std, torch.float64)]


def datalens_draws(trials: int) -> list[Draws]:
    """The noisy vote sums `top_agg` released under `datalens.train` (first release)."""
    from engine.audit.train import _datalens_pair, _datalens_params, _record_votes
    from engine.core.config import RunConfig

    params, _ = _datalens_params(EPSILON, DELTA, 4, 16)
    config = RunConfig(method="datalens", dataset="audit", epsilon=EPSILON, delta=DELTA,
                       n_synthetic=4)
    votes, sigma, beta, _ = _record_votes(config, params, _datalens_pair(4, 0)[0])[0]
    out = _noisy_vote_sum(votes, sigma, beta, trials)
    exact = votes.reshape(len(votes), -1).sum(0, dtype=torch.float32)
    return [_draws("DataLens vote sums", out, exact, sigma, torch.float32)]


DRAWS = {"dpmerf": dpmerf_draws, "numeric bounds": bounds_draws, "marginals": marginals_draws,
         "aim": aim_draws, "datalens": datalens_draws}

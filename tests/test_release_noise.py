"""Each release's noise as computed (engine/audit/noise.py), on repeated releases of a tiny
dataset through the code a run runs, with the shipped sampler:

- independent across coordinates and rows, with the stated variance: the normalised
  residuals (released − exact)/σ have variance ≈ 1 and no correlation (a noise row shared
  by every class's histogram has correlation 1);
- no coordinate released at exactly its true value more often than the rounded Gaussian
  allows (noise skipped on zero or empty cells comes out exact every time);
- every released value on its public grid (engine/privacy/noise.py: a statistic not snapped to
  the grid leaves its low bits in the release).

Thresholds, with T = 4,000 releases: a sample variance has sd √(2/T) = .022, so [.85,
1.15] is 6.7 sd; a null correlation has sd 1/√T, so 6.5/√T fails by chance with
probability < 1e-10 per pair (< 1e-5 over the 52,000 pairs of the largest release); an
exact value has probability ≤ 1/(256·√(2π)) = .0016, so 1 % of T is 25 sd above it.
"""

import numpy as np
import pytest
import torch

from engine.audit import noise as audit_noise

torch.set_num_threads(1)
TRIALS = 4000


@pytest.fixture(scope="module", params=list(audit_noise.draws()))
def draws(request):
    return audit_noise.draws()[request.param](TRIALS)


def _residuals(d):
    return (d.out - d.exact) / d.std


def test_the_noise_has_the_stated_variance_on_every_coordinate(draws):
    for d in draws:
        var = _residuals(d).var(0)
        assert 0.85 < var.min() and var.max() < 1.15, (d.name, var.min(), var.max())


def test_the_noise_is_uncorrelated_across_coordinates_and_rows(draws):
    for d in draws:
        corr = np.corrcoef(_residuals(d).T)
        np.fill_diagonal(corr, 0.0)
        worst = np.unravel_index(np.abs(corr).argmax(), corr.shape)
        assert np.abs(corr).max() < 6.5 / np.sqrt(TRIALS), (d.name, worst, corr[worst])


def test_no_coordinate_comes_out_exact_more_often_than_the_noise_allows(draws):
    for d in draws:
        exact = (d.out == d.exact).mean(0)
        assert exact.max() <= 0.01, (d.name, int(exact.argmax()), exact.max())


def test_every_released_value_lies_on_its_public_grid(draws):
    for d in draws:
        off = np.mod(d.out, d.grid) != 0
        assert not off.any(), (d.name, f"{off.mean():.1%} of values off the grid")

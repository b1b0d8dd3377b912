"""The audit of the numeric-bounds histogram (`engine.privacy.dp_bounds.noisy_histogram`),
the release every method that reads a column without public bounds makes through the
same code (DP-MERF, AIM): their audit modules both list it.

Privacy assumption under test: one replaced record moves two counts of the grid
histogram by one each, L2 change √2 = `dp_bounds.sensitivity(1)`, and the histogram gets
Gaussian noise of std σ = z·sensitivity where the release takes the public share
`SHARE` of the target's μ² (z = z*/√SHARE, the claim: engine/methods/audit_harness.py).
That is the σ each method's own plan gives the release at that share (DP-MERF's
`_calibrate`, AIM's `plan_budget`); that their runs draw the σ they report is the
method contract's check (tests/test_method_contract.py). No privacy claim is made here.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from engine.methods.audit_harness import (DELTA, EPSILON, audit_pair, draws, target_multiplier,
                                          twice)
from engine.privacy import dp_bounds

SHARE = 0.9  # most of the budget on the histogram: a sharp claim


def bounds_pair(m: int):
    """One numeric column without public bounds, all 0.5; record 0 is 1000 in D1."""
    from engine.data.dataset import Column, Dataset

    x0 = np.full((m, 1), 0.5)
    x1 = x0.copy()
    x1[0] = 1000.0
    cols = [Column("v", "num")]  # bounds=None: released privately
    y = np.arange(m) % 2
    return tuple(Dataset("audit", "tabular", x, y, x[:2], y[:2], ["0", "1"], columns=cols)
                 for x in (x0, x1))


def _claim_and_sigma(epsilon: float, delta: float) -> tuple[float, float]:
    z = target_multiplier(epsilon, delta) / math.sqrt(SHARE)
    return z, z * dp_bounds.sensitivity(1)


def _release(sigma: float):
    def release(data):
        return dp_bounds.noisy_histogram(data.x_train, noise_std=sigma)
    return release


def bounds_histogram_scores(trials: int, *, epsilon: float, delta: float, m: int = 30):
    """Record 0 moves from the bucket of 0.5 to that of 1000: two counts change by one
    (√2 = the stated `dp_bounds.sensitivity(1)`)."""
    d0, d1 = bounds_pair(m)
    z, sigma = _claim_and_sigma(epsilon, delta)
    s0, s1 = audit_pair(_release(sigma), dp_bounds, d0, d1, trials)
    return s0, s1, z


def bounds_draws(trials: int) -> list:
    """The numeric-bounds histogram (mostly empty cells), repeated."""
    d0, _ = bounds_pair(30)
    sigma = _claim_and_sigma(EPSILON, DELTA)[1]
    return [draws("numeric bounds histogram", *twice(_release(sigma), dp_bounds, d0, trials),
                  sigma, torch.float64)]

"""The audit's pure statistics (no torch): Clopper–Pearson bounds on error rates, and the
ε that (ε, δ)-DP forces for a test with given error rates (engine/audit/lower_bound.py explains the
inequalities). Also read by the Learn page's membership game (engine/teaching/game.py).
"""

from __future__ import annotations

import math


def clopper_pearson_upper(k: int, n: int, alpha: float) -> float:
    """One-sided (1 − alpha) upper confidence bound on a binomial rate with k of n."""
    from scipy.stats import beta

    if n <= 0:
        return 1.0
    if k >= n:
        return 1.0
    return float(beta.ppf(1.0 - alpha, k + 1, n - k))


def epsilon_from_rates(fpr: float, fnr: float, delta: float) -> float:
    """The ε the (ε, δ) inequalities force for one test with these error rates (≥ 0)."""
    best = 0.0
    for a, b in ((fpr, fnr), (fnr, fpr)):
        if b <= 0:
            return math.inf if 1 - delta - a > 0 else best
        if 1 - delta - a > 0:
            best = max(best, math.log((1 - delta - a) / b))
    return best


def epsilon_lower_bound(fp: int, n0: int, fn: int, n1: int, *, delta: float,
                        confidence: float = 0.95) -> float:
    """High-confidence lower bound on ε from fp false positives in n0 trials on D0 and
    fn false negatives in n1 trials on D1 (Clopper–Pearson, union bound over the two)."""
    alpha = (1.0 - confidence) / 2
    return epsilon_from_rates(clopper_pearson_upper(fp, n0, alpha),
                              clopper_pearson_upper(fn, n1, alpha), delta)

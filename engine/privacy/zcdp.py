"""Zero-concentrated DP (zCDP) accounting, and the Gaussian DP bound of an exponential
mechanism: the arithmetic AIM (engine/methods/aim/method.py) composes. Pure math, no torch.

* ρ-zCDP (Bun & Steinke 2016): a Gaussian release of L2 sensitivity Δ with std σ is
  Δ²/(2σ²)-zCDP; an ε-bounded-range selection (the exponential mechanism with
  exp(ε·q/(2Δ_q)), Durfee & Rogers 2019) is ε²/8-zCDP (Cesar & Rogers 2021). ρ's add up
  under adaptive composition, also when each ρ_t is chosen from past outputs and the
  run stops before a fixed total (a privacy filter: Feldman & Zrnic 2021, for every
  Rényi order at once).
* `epsilon(ρ, δ)`: the tight conversion of Canonne, Kamath & Steinke 2020 (Prop. 12 /
  Cor. 13 of arXiv 2004.00010, the one private-pgm's `cdp2adp` uses):
  ε = min over α > 1 of αρ + log(1 − 1/α) − (log δ + log α)/(α − 1). Any α gives a valid
  bound, so an inexact minimiser only errs on the safe side.
* `bounded_range_mu(ε)`: the μ of a Gaussian DP curve (Dong, Roth & Su) that an ε-BR
  mechanism satisfies, so a selection can be charged to this project's ledger, which
  composes Gaussian mechanisms exactly. Argument: for neighbours, the privacy loss of an
  ε-BR mechanism takes values in [t − ε, t] for some t ∈ [0, ε]; any pair of
  distributions whose log-ratio lies in [a, b] is a post-processing (Blackwell garbling)
  of the two-point pair whose log-ratios are exactly a and b (each outcome's (P, Q) mass
  is a non-negative combination of the two points'; the weights sum to 1). The two-point
  pair's trade-off curve is two segments through (1 − p, q); the convex Gaussian curve
  G_μ lies under both segments iff it passes under that corner, i.e. μ ≥ Φ⁻¹(p) − Φ⁻¹(q)
  (and the same with P and Q swapped). The worst t is ε/2 (checked on a fine grid in
  tests/test_aim.py), where p = sigmoid(ε/2), q = 1 − p: μ = 2Φ⁻¹(sigmoid(ε/2)), at most
  √(π/8)·ε. Gaussian DP composes adaptively and under a filter too (Smith & Thakurta 2022).
"""

from __future__ import annotations

import math

from scipy.optimize import minimize_scalar
from scipy.special import expit
from scipy.stats import norm

from engine.core.errors import InputError

# μ_BR(ε)² ≤ (π/8)·ε² for every ε (the two curves agree to first order at 0).
BR_MU2_PER_EPS2 = math.pi / 8


def gaussian_rho(sensitivity: float, sigma: float) -> float:
    """ρ of one Gaussian release (∞ without noise)."""
    if sensitivity == 0:
        return 0.0
    return math.inf if sigma <= 0 else sensitivity ** 2 / (2.0 * sigma ** 2)


def selection_rho(epsilon: float) -> float:
    """ρ of one ε-bounded-range selection (an exponential mechanism at ε)."""
    return epsilon ** 2 / 8.0


def _eps_at(alpha: float, rho: float, delta: float) -> float:
    return alpha * rho + math.log1p(-1.0 / alpha) - (math.log(delta) + math.log(alpha)) / (alpha - 1.0)


def epsilon(rho: float, delta: float) -> float:
    """The smallest ε (to the minimiser's precision, never below the true optimum) such
    that ρ-zCDP implies (ε, δ)-DP, by Canonne–Kamath–Steinke's conversion."""
    if not 0 < delta < 1:
        raise InputError(f"delta must be in (0, 1). Got {delta!r}.")
    if rho <= 0:
        return 0.0
    if math.isinf(rho):
        return math.inf
    # Search log(α − 1): the optimum α is ≈ 1 + √(log(1/δ)/ρ), from barely above 1 to huge.
    res = minimize_scalar(lambda u: _eps_at(1.0 + math.exp(u), rho, delta),
                          bounds=(-12.0, 30.0), method="bounded",
                          options={"xatol": 1e-10, "maxiter": 500})
    # A guard point from the closed-form guess: the minimiser is only ever improved on.
    guess = 1.0 + math.sqrt(math.log(1.0 / delta) / rho)
    return max(0.0, min(float(res.fun), _eps_at(guess, rho, delta)))


def rho_for(eps: float, delta: float) -> float:
    """The largest ρ (to 1e-9 relative) whose `epsilon(ρ, δ)` is at most `eps`; bisection
    keeps epsilon(lo) ≤ eps and returns lo, so it never overshoots."""
    if not eps > 0:
        raise InputError(f"epsilon must be > 0. Got {eps!r}.")
    if math.isinf(eps):
        return math.inf
    lo, hi = 0.0, eps + 1.0  # epsilon(ρ) ≥ ρ·… grows past eps by ρ = eps + 1
    while epsilon(hi, delta) <= eps:
        lo, hi = hi, 2 * hi
    while hi - lo > 1e-9 * hi:
        mid = 0.5 * (lo + hi)
        if epsilon(mid, delta) <= eps:
            lo = mid
        else:
            hi = mid
    return lo


def bounded_range_mu(eps: float) -> float:
    """μ of the Gaussian DP curve an ε-bounded-range mechanism satisfies (module doc)."""
    if eps <= 0:
        return 0.0
    if math.isinf(eps):
        return math.inf
    return 2.0 * float(norm.ppf(expit(eps / 2.0)))


def two_point_mu(eps: float, t: float) -> float:
    """μ needed to dominate the two-point pair with log-ratios {t − ε, t} (0 < t < ε):
    what `bounded_range_mu` maximises over t (exposed for its test)."""
    a, b = t - eps, t
    q = -math.expm1(a) / (math.exp(b) - math.exp(a))
    p = math.exp(b) * q
    return max(float(norm.ppf(p) - norm.ppf(q)), float(norm.isf(q) - norm.isf(p)))

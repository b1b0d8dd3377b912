"""What ε means to an attacker: the hypothesis-testing bound DP guarantees, and its figures.

DP is a limit on every membership test (Kairouz, Oh & Viswanath 2015; Dong, Roth & Su
2019, f-DP). Whatever an attacker does with a release to decide "was record x used?",
its true-positive rate at false-positive rate α is at most

* for an (ε, δ) claim:   TPR ≤ min(1, e^ε·α + δ, 1 − e^−ε·(1 − δ − α));
* for a Gaussian mechanism with μ = Δ/σ (its own, exact and tighter curve):
  TPR ≤ Φ(Φ⁻¹(α) + μ); Gaussians compose into one with μ = √(Σ μᵢ²).

A `Tradeoff` is one such curve; `summary` turns it into the figures people can read
(maximum advantage, best accuracy from a 50/50 guess, TPR at small FPRs, the posterior
from a prior) and `in_words` into the one sentence every page uses for ε.

Privacy assumption: none is made here; the curves are only as true as the claim they are
given. A run's μ comes from the accountant (`engine.privacy.accountant.gaussian_mu`), never from a
page; these numbers describe the release, they read no record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from engine.privacy import accountant as privacy
from engine.core.errors import InputError


@dataclass(frozen=True)
class Tradeoff:
    """The most any membership test can achieve against one release: the largest TPR at
    each FPR (f-DP trade-off, as 1 - beta(alpha))."""

    epsilon: float        # the (epsilon, delta) the run claims (inf for non-private)
    delta: float
    mu: float | None      # set when the curve is a Gaussian mechanism's own (GDP), else None
    source: str           # plain words: which curve and from where

    def tpr(self, fpr) -> np.ndarray:
        """The largest TPR any test can reach at each FPR in [0, 1] (vectorised)."""
        a = np.asarray(fpr, dtype=float)
        if np.any(~np.isfinite(a)) or np.any((a < 0) | (a > 1)):
            raise InputError(f"a false-positive rate must be in [0, 1]. Got {fpr!r}.")
        if self.mu is not None:
            if math.isinf(self.mu):
                return np.ones_like(a)
            with np.errstate(all="ignore"):  # Φ⁻¹(0) = −∞ and Φ⁻¹(1) = ∞ map to 0 and 1
                return norm.cdf(norm.ppf(a) + self.mu)
        if math.isinf(self.epsilon):
            return np.ones_like(a)
        e = math.exp(self.epsilon)
        out = np.minimum(e * a + self.delta, 1.0 - (1.0 - self.delta - a) / e)
        return np.clip(out, a, 1.0)  # a test can always reach TPR = FPR by guessing

    @property
    def gaussian(self) -> bool:
        return self.mu is not None


# ------------------------------------------------------------------ the curves


def _check_budget(epsilon: float, delta: float) -> None:
    if math.isnan(epsilon) or epsilon < 0:
        raise InputError(f"epsilon must be a number >= 0 (or inf). Got {epsilon!r}.")
    if not 0 <= delta < 1:
        raise InputError(f"delta must be in [0, 1). Got {delta!r}.")


def eps_text(epsilon: float) -> str:
    return "∞" if math.isinf(epsilon) else f"{epsilon:.3g}"


def for_epsilon(epsilon: float, delta: float) -> Tradeoff:
    """The curve every (ε, δ)-DP release stays under (Kairouz et al. 2015)."""
    epsilon, delta = float(epsilon), float(delta)
    _check_budget(epsilon, delta)
    return Tradeoff(epsilon, delta, None,
                    f"the (ε, δ) = ({eps_text(epsilon)}, {delta:g}) bound, which holds for "
                    "any mechanism with that claim (Kairouz, Oh & Viswanath 2015)")


def for_gaussian(mu: float, *, epsilon: float = math.nan, delta: float = 0.0) -> Tradeoff:
    """A Gaussian mechanism's own curve, TPR(α) = Φ(Φ⁻¹(α) + μ), μ = Δ/σ (f-DP)."""
    mu = float(mu)
    if math.isnan(mu) or mu < 0:
        raise InputError(f"mu must be a number >= 0 (or inf). Got {mu!r}.")
    if not 0 <= delta < 1:
        raise InputError(f"delta must be in [0, 1). Got {delta!r}.")
    return Tradeoff(float(epsilon), float(delta), mu,
                    f"the Gaussian mechanism's own curve, μ = {eps_text(mu)} "
                    "(Gaussian DP, Dong, Roth & Su 2019)")


def _number(value) -> float:
    """A figure from metrics.json: floats, or the strings "inf"/"nan" jsonsafe writes."""
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InputError(f"the privacy report holds {value!r} where a number belongs.") from None


def for_report(privacy_report: dict) -> Tradeoff:
    """The curve of a finished run, from its metrics.json "privacy" dict.

    Every release in this project is a Gaussian mechanism, so the run's exact curve is the
    Gaussian one with μ from the accountant (`privacy.gaussian_mu`); a report without
    releases falls back to its (ε, δ) bound.
    """
    if not isinstance(privacy_report, dict) or "delta" not in privacy_report:
        raise InputError("this run has no privacy report (metrics.json lacks 'privacy').")
    eps = _number(privacy_report.get("epsilon_spent", privacy_report.get("epsilon_target")))
    delta = _number(privacy_report["delta"])
    releases = privacy_report.get("releases") or []
    if not releases:
        return for_epsilon(eps, delta)
    mu = privacy.gaussian_mu(releases)
    names = ", ".join(f"{r.get('name', 'release')} ×{int(r.get('count', 1)):,}" for r in releases)
    return Tradeoff(eps, delta, mu,
                    f"the run's own Gaussian releases ({names}) composed by the accountant: "
                    f"μ = {eps_text(mu)} (Gaussian DP, Dong, Roth & Su 2019)")


# ------------------------------------------------------------------ the figures


def _max_advantage(t: Tradeoff) -> float:
    """max over α of TPR(α) − α, in closed form for both kinds of curve."""
    if t.mu is not None:
        return 1.0 if math.isinf(t.mu) else float(2 * norm.cdf(t.mu / 2) - 1)
    if math.isinf(t.epsilon):
        return 1.0
    # (e^ε − 1 + 2δ)/(e^ε + 1), written so that large ε does not overflow.
    return min(1.0, math.tanh(t.epsilon / 2) + 2 * t.delta / (math.exp(min(t.epsilon, 700)) + 1))


def _posterior_epsilon(t: Tradeoff) -> float:
    """The ε whose odds ratio caps the posterior: the claim's, or the Gaussian's at δ."""
    if not math.isnan(t.epsilon):
        return t.epsilon
    if t.mu == 0:
        return 0.0
    if math.isinf(t.mu) or t.delta <= 0:
        return math.inf  # a Gaussian has no finite ε at δ = 0
    return privacy.epsilon_for(1.0 / t.mu, delta=t.delta)


def posterior(prior: float, epsilon: float) -> float:
    """The most an attacker's belief "x was used" can reach from `prior`: the odds grow at
    most e^ε-fold (this holds except with probability about δ)."""
    if not 0 < prior < 1:
        raise InputError(f"prior must be in (0, 1). Got {prior!r}.")
    if math.isinf(epsilon):
        return 1.0
    return 1.0 / (1.0 + (1.0 - prior) / prior * math.exp(-epsilon))


def summary(t: Tradeoff, *, prior: float = 0.01) -> dict:
    """The curve's figures: max advantage (TPR − FPR), best accuracy at a 50/50 prior,
    TPR at 1 % and 0.1 % FPR, and the posterior reachable from `prior`."""
    adv = _max_advantage(t)
    at = t.tpr([0.01, 0.001])
    return {"max advantage": adv, "best accuracy": (1 + adv) / 2,
            "TPR at 1% FPR": float(at[0]), "TPR at 0.1% FPR": float(at[1]),
            "posterior": posterior(prior, _posterior_epsilon(t)), "prior": prior}


def _percent(x: float) -> str:
    """73.1 % → "73"; 99.995 % → "99.995", never "100" unless it is 100."""
    for digits in range(7):
        text = f"{100 * x:.{digits}f}"
        if float(text) < 100 or x >= 1:
            return text
    return f"{100 * x:.7f}"


def in_words(epsilon: float, delta: float) -> str:
    """ε in one plain sentence: the best accuracy of guessing "in or out" from 50/50."""
    t = for_epsilon(epsilon, delta)
    if math.isinf(t.epsilon):
        return ("at ε = ∞, nothing limits an attacker: whether your record was used can be "
                "told every time")
    acc = summary(t)["best accuracy"]
    return (f"at ε = {t.epsilon:g}, no one can tell whether your record was used better than "
            f"{_percent(acc)} % of the time, from a 50/50 guess")

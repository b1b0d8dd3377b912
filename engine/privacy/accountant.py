"""Privacy accounting for every method: calibrate noise, report epsilon spent.

Pure accounting: no torch, nothing drawn (noise is engine/privacy/noise.py). All epsilons in DP
Synth Lab come from here, computed by autodp; every method reports its releases as
`NoisyRelease`s and gets back a `PrivacyReport`. Every method releases statistics with
the Gaussian mechanism, so one vocabulary covers them:

* a *release* is one Gaussian mechanism on a statistic with L2 sensitivity `Δ`
  (replace-one neighbouring datasets), noise std `σ = z·Δ`, where `z` is the
  *noise multiplier*;
* T releases with the same multiplier `z` compose **exactly** into one Gaussian
  mechanism with multiplier `z/√T` (Gaussian DP composes in closed form); autodp's
  `ComposeGaussian` + `ExactGaussianMechanism` (Balle & Wang's analytic Gaussian)
  turn that into the tightest (ε, δ);
* `accountant="rdp"` instead composes Rényi-DP curves (autodp `GaussianMechanism` +
  `Composition`), as the DataLens paper did; it is valid but looser.

Privacy assumption: the stated sensitivities hold (tests in tests/test_sensitivity.py try
to break them) and noise is drawn by `gaussian_noise` (engine/privacy/noise.py) — OS entropy,
never a seed.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from engine.core.errors import InputError

ACCOUNTANTS = {
    "exact": "autodp ComposeGaussian + ExactGaussianMechanism (analytic Gaussian, tight)",
    "rdp": "autodp GaussianMechanism RDP composition (Renyi DP, optimal RDP->DP conversion)",
    # The conversion eps = RDP(a) + log(1/delta)/(a-1) used by the papers' code; kept so
    # their step counts and sigmas can be reproduced and compared.
    "rdp-classic": "autodp GaussianMechanism RDP composition (classic RDP->DP conversion)",
}

# δ below 1/(STRICT_FACTOR·n²) is flagged as stricter than needed (delta_warning).
STRICT_FACTOR = 100
# Calibration stops when the bracket is this tight, relative to z.
_REL_TOL = 1e-6
_Z_MAX = 1e7


# ------------------------------------------------------------------ budget sanity

def delta_warning(delta: float, n: int) -> str | None:
    """A warning when δ ≥ 1/n: an (ε, δ) guarantee then allows a mechanism that publishes
    one whole training record in the clear (each with probability δ, so n·δ ≥ 1 of them
    expected). A note when δ < 1/(100·n²): δ is then far below what any record needs
    (the usual advice is δ well below 1/n), and a smaller δ only buys more noise at the
    same ε. None in between."""
    if n > 0 and delta >= 1.0 / n:
        return (f"delta={delta:g} is not below 1/n = 1/{n:,} ({1.0 / n:.2g}): at this delta "
                "the guarantee would allow publishing a whole training record; choose a "
                f"delta well below 1/n, e.g. {_suggested_delta(n):g}.")
    if n > 0 and delta < 1.0 / (STRICT_FACTOR * n * n):
        return (f"delta={delta:g} is far below 1/n² = 1/{n:,}² ({1.0 / (n * n):.2g}): "
                "stricter than needed, and it costs accuracy (more noise for the same "
                f"epsilon); delta={_suggested_delta(n):g} is well below 1/n already.")
    return None


def _suggested_delta(n: int) -> float:
    """A power of ten at most a tenth of 1/n."""
    return 10.0 ** math.floor(math.log10(0.1 / n))


# ------------------------------------------------------------------ pure accounting


def _check(delta: float, accountant: str) -> None:
    if not 0 < delta < 1:
        raise InputError(f"delta must be in (0, 1). Got {delta!r}.")
    if accountant not in ACCOUNTANTS:
        raise InputError(f"accountant must be one of {', '.join(ACCOUNTANTS)}. Got {accountant!r}.")


@lru_cache(maxsize=4096)
def epsilon_for(noise_multiplier: float, *, delta: float, compositions: int = 1,
                accountant: str = "exact") -> float:
    """ε after `compositions` Gaussian releases, each with std = noise_multiplier·Δ."""
    return composed_epsilon(((noise_multiplier, compositions),), delta=delta,
                            accountant=accountant)


@lru_cache(maxsize=4096)
def composed_epsilon(mechanisms: tuple[tuple[float, int], ...], *, delta: float,
                     accountant: str = "exact") -> float:
    """ε of a composition of Gaussian mechanisms given as ((multiplier, count), ...)."""
    _check(delta, accountant)
    mechanisms = tuple((z, int(n)) for z, n in mechanisms if n > 0)
    if not mechanisms:
        return 0.0
    if any(z <= 0 for z, _ in mechanisms):
        return math.inf
    counts = [n for _, n in mechanisms]
    if accountant == "exact":
        from autodp.mechanism_zoo import ExactGaussianMechanism
        from autodp.transformer_zoo import ComposeGaussian

        parts = [ExactGaussianMechanism(z, name="GM") for z, _ in mechanisms]
        mech = ComposeGaussian()(parts, counts)
    else:
        from autodp.converter import rdp_to_approxdp
        from autodp.mechanism_zoo import GaussianMechanism
        from autodp.transformer_zoo import Composition

        parts = [GaussianMechanism(z, name="GM", approxDP_off=True) for z, _ in mechanisms]
        mech = Composition()(parts, counts)
        if accountant == "rdp-classic":
            convert = rdp_to_approxdp(mech.RenyiDP, BBGHS_conversion=False)
            return _quiet(lambda: convert(delta))
    return _quiet(lambda: mech.get_approxDP(delta))


def _quiet(fn) -> float:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # autodp's inner scalar optimiser warns on flat regions; the result is still valid.
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(fn())


@lru_cache(maxsize=1024)
def calibrate_noise_multiplier(*, epsilon: float, delta: float, compositions: int = 1,
                               accountant: str = "exact") -> float:
    """Smallest z (to 1e-6 relative) whose composed ε is at most `epsilon`.

    Bisection keeps the invariant ε(hi) ≤ target and returns `hi`, so the returned
    multiplier never overshoots the budget.
    """
    _check(delta, accountant)
    if not epsilon > 0:
        raise InputError(f"epsilon must be > 0. Got {epsilon!r}.")
    if math.isinf(epsilon):
        return 0.0

    def eps(z: float) -> float:
        return epsilon_for(z, delta=delta, compositions=compositions, accountant=accountant)

    return _smallest_multiplier(eps, epsilon, lo=1e-3, too_small=(
        f"epsilon={epsilon} is too small to reach with delta={delta}."))


def _smallest_multiplier(eps, epsilon: float, *, lo: float, too_small: str) -> float:
    """Bisection for the smallest z (to 1e-6 relative) with eps(z) ≤ epsilon, eps
    decreasing in z. It keeps the invariant eps(hi) ≤ epsilon and returns `hi`, so the
    multiplier never overshoots the budget; InputError(`too_small`) if none is in reach."""
    hi = 1.0
    while eps(hi) > epsilon:
        lo, hi = hi, hi * 2
        if hi > _Z_MAX:
            raise InputError(too_small)
    while eps(lo) <= epsilon and lo > 1e-9:
        lo /= 2
    while hi - lo > _REL_TOL * hi:
        mid = 0.5 * (lo + hi)
        if eps(mid) <= epsilon:
            hi = mid
        else:
            lo = mid
    return hi


# ------------------------------------------------------------ what methods call

NON_PRIVATE = "none (non-private run: no noise added)"  # the accountant of an ε = ∞ run


@dataclass(frozen=True)
class Release:
    """One Gaussian release of a statistic, planned before its noise is known.

    `sensitivity` is its L2 sensitivity under replace-one; `count` how many times it is
    released; `share` its relative part of the budget (in GDP terms, μ² = 1/z²): a
    statistic that tolerates noise well (class counts in the thousands) can take a small
    share so the one that matters (the embedding) gets almost the whole budget.
    """

    name: str
    sensitivity: float
    count: int = 1
    share: float = 1.0


@dataclass(frozen=True)
class NoisyRelease:
    """A release as it ran: `count` Gaussian mechanisms on a statistic of L2 sensitivity
    `sensitivity`, each with noise std `sigma` (0 in a non-private run). The one thing
    every method reports its noise through; ε is composed from these here, never by a
    method. `noise_multiplier` is written to the report when the method calibrated it."""

    name: str
    sensitivity: float
    count: int
    sigma: float
    noise_multiplier: float | None = None
    # what else the method records of this release (AIM: its kind, clique, round, ρ),
    # written after the fields above; never read by the accountant
    details: dict = field(default_factory=dict)

    @property
    def multiplier(self) -> float:
        """z = σ/Δ, as calibrated when known (0 for a non-private release: ε ∞)."""
        if self.noise_multiplier is not None:
            return self.noise_multiplier
        return self.sigma / self.sensitivity if self.sensitivity else math.inf

    def to_dict(self) -> dict:
        out = {"name": self.name, "sensitivity": self.sensitivity, "count": self.count}
        if self.noise_multiplier is not None:
            out["noise_multiplier"] = self.noise_multiplier
        out["sigma"] = self.sigma
        return {**out, **self.details}


def releases_epsilon(releases, *, delta: float, accountant: str = "exact") -> float:
    """ε at `delta` of NoisyReleases composed (∞ when any has no noise)."""
    return composed_epsilon(tuple((r.multiplier, r.count) for r in releases),
                            delta=delta, accountant=accountant)


@dataclass(frozen=True)
class PrivacyReport:
    """What every method's final TrainResult carries: the releases as they ran and the ε
    the accountant composed from them. `to_dict` is the "privacy" entry of metrics.json
    (its keys are a stored format: the gallery and older runs read them).

    `noise_multiplier` and `steps` are written only when set (DataLens: one multiplier
    for every vote, and the iterations that ran)."""

    epsilon_target: float
    epsilon_spent: float
    delta: float
    accountant: str
    releases: tuple[NoisyRelease, ...] = field(default_factory=tuple)
    noise_multiplier: float | None = None
    steps: int | None = None
    # a method's further figures (AIM: both bounds, ρ, the number of selections), written
    # after the fields above; the spent ε above is what the ledger and the pages read
    details: dict = field(default_factory=dict)

    def sigmas(self) -> dict[str, float]:
        """{release name: noise std}."""
        return {r.name: r.sigma for r in self.releases}

    def to_dict(self) -> dict:
        out = {"epsilon_target": self.epsilon_target, "epsilon_spent": self.epsilon_spent,
               "delta": self.delta}
        if self.noise_multiplier is not None:
            out["noise_multiplier"] = self.noise_multiplier
        out["accountant"] = self.accountant
        out["releases"] = [r.to_dict() for r in self.releases]
        if self.steps is not None:
            out["steps"] = self.steps
        return {**out, **self.details}


def report(releases, *, epsilon_target: float, delta: float, accountant: str = "exact",
           private: bool = True, **extra) -> PrivacyReport:
    """The report of releases whose noise is fixed (e.g. DataLens's σ): ε composed by
    `releases_epsilon`; ∞ for a non-private run. `extra`: PrivacyReport's optional fields."""
    releases = tuple(releases)
    if not private:
        return PrivacyReport(epsilon_target, math.inf, delta, NON_PRIVATE, releases, **extra)
    spent = releases_epsilon(releases, delta=delta, accountant=accountant)
    return PrivacyReport(epsilon_target, spent, delta, ACCOUNTANTS[accountant], releases, **extra)


def calibrate_releases(*, epsilon: float, delta: float, releases: list[Release],
                       accountant: str = "exact") -> PrivacyReport:
    """Noise for a fixed set of releases so that their composition meets (ε, δ).

    Gaussian mechanisms compose additively in 1/z² (exactly for GDP, and for RDP too),
    so we calibrate one equivalent multiplier z* and give release i the multiplier
    z_i = z*·√(count_i / share_i). The composed ε is then recomputed by autodp and
    nudged up if rounding put it a hair over the target.
    """
    if not releases:
        raise InputError("calibrate_releases needs at least one release.")
    total_share = sum(r.share for r in releases)

    def noisy(multipliers: list[float]) -> tuple[NoisyRelease, ...]:
        return tuple(NoisyRelease(r.name, r.sensitivity, r.count, z * r.sensitivity, z)
                     for r, z in zip(releases, multipliers))

    if math.isinf(epsilon):
        return report(noisy([0.0] * len(releases)), epsilon_target=epsilon, delta=delta,
                      private=False)
    z_star = calibrate_noise_multiplier(epsilon=epsilon, delta=delta, accountant=accountant)
    zs = [z_star * math.sqrt(r.count * total_share / r.share) for r in releases]
    while (out := report(noisy(zs), epsilon_target=epsilon, delta=delta,
                         accountant=accountant)).epsilon_spent > epsilon:
        zs = [z * (1 + 1e-6) for z in zs]
    return out


# ------------------------------------------------------------ hypothesis testing


def gaussian_mu(releases: list[dict]) -> float:
    """μ of the Gaussian DP curve of a run's composed releases (f-DP, Dong, Roth & Su).

    Each release in a privacy report ({"sensitivity", "count", "sigma"}) is a Gaussian
    mechanism with μᵢ = Δ/σ; `count` of them, and releases of different statistics,
    compose exactly into one Gaussian with μ = √(Σ countᵢ·μᵢ²) — the same composition
    `composed_epsilon` hands to autodp's ComposeGaussian. σ = 0 (a non-private run)
    gives μ = ∞: an attacker can then tell membership apart with certainty.
    """
    total = 0.0
    for r in releases:
        count, sens, sigma = int(r.get("count", 1)), float(r["sensitivity"]), float(r["sigma"])
        if count <= 0 or sens == 0:
            continue
        if sigma <= 0:
            return math.inf
        total += count * (sens / sigma) ** 2
    return math.sqrt(total)

# ------------------------------------------------- private hyperparameter search


TUNING_SHAPES = {"geometric": 1.0, "poisson": math.inf}


def repeat_and_select_epsilon(searches, *, delta: float, others=()) -> float:
    """ε at `delta` of private hyperparameter searches composed with plain Gaussian
    releases, by Rényi DP (dp-accounting's RDP accountant).

    `searches`: ((candidate mechanisms ((multiplier, count), ...), mean K, shape), ...):
    each runs a random number K of candidates (shape 1: geometric, K ≥ 1; inf: Poisson,
    K ≥ 0, mean E[K]) and releases only the best one (Papernot & Steinke 2022, Theorems
    2 and 6, as `RepeatAndSelectDpEvent`). `others`: (multiplier, count) Gaussians.
    Valid whatever K turns out to be; K and the candidates' settings must be drawn
    independently of the data.
    """
    from dp_accounting import dp_event, rdp

    def gaussians(mechs):
        return [dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(float(z)), int(n))
                for z, n in mechs if int(n) > 0]

    if any(float(z) <= 0 for z, n in others if int(n) > 0) or any(
            float(z) <= 0 for mechs, _, _ in searches for z, n in mechs if int(n) > 0):
        return math.inf
    acct = rdp.RdpAccountant()
    for mechs, mean, shape in searches:
        acct.compose(dp_event.RepeatAndSelectDpEvent(
            dp_event.ComposedDpEvent(gaussians(mechs)), float(mean), float(shape)))
    for event in gaussians(others):
        acct.compose(event)
    return float(acct.get_epsilon(delta))


def plain_search_epsilon(multiplier: float, *, runs: int, delta: float) -> float:
    """ε of the same search accounted as `runs` separate Gaussian releases (what an
    ordinary sweep of that many runs spends), exact by Gaussian DP."""
    return epsilon_for(multiplier, delta=delta, compositions=max(1, int(runs)))


@lru_cache(maxsize=256)
def calibrate_search(*, epsilon: float, delta: float, mean: float, shape: float) -> float:
    """Smallest noise multiplier (to 1e-6 relative) of one Gaussian candidate such that
    a private search with E[K] = `mean` of such candidates meets (ε, δ)."""
    _check(delta, "exact")
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise InputError(f"a private search needs a finite epsilon > 0. Got {epsilon!r}.")

    def eps(z: float) -> float:
        return repeat_and_select_epsilon((((((z, 1),), mean, shape)),), delta=delta)

    return _smallest_multiplier(eps, epsilon, lo=0.05, too_small=(
        f"epsilon={epsilon} is too small for a search with E[K]={mean:g}."))

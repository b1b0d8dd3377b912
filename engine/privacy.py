"""Privacy accounting for every method: calibrate noise, report epsilon spent.

All epsilons in DP Synth Lab come from here, computed by autodp. Both methods release
statistics with the Gaussian mechanism, so one vocabulary covers them:

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
to break them) and noise is drawn by `gaussian_noise` (engine/noise.py) — OS entropy,
never a seed.
"""

from __future__ import annotations

import math
import secrets
import warnings
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

from engine.errors import InputError

ACCOUNTANTS = {
    "exact": "autodp ComposeGaussian + ExactGaussianMechanism (analytic Gaussian, tight)",
    "rdp": "autodp GaussianMechanism RDP composition (Renyi DP, optimal RDP->DP conversion)",
    # The conversion eps = RDP(a) + log(1/delta)/(a-1) used by the papers' code; kept so
    # their step counts and sigmas can be reproduced and compared.
    "rdp-classic": "autodp GaussianMechanism RDP composition (classic RDP->DP conversion)",
}

# Calibration stops when the bracket is this tight, relative to z.
_REL_TOL = 1e-6
_Z_MAX = 1e7


# --------------------------------------------------------------------------- noise


def noise_generator(device: torch.device | str = "cpu") -> torch.Generator:
    """A torch generator seeded from OS entropy, for DP noise only.

    Model seeds may be fixed for reproducibility; DP noise must not be predictable, so
    it never shares the model's generator and is never seeded from a config.
    """
    gen = torch.Generator(device=device)
    gen.manual_seed(secrets.randbits(63))  # os.urandom underneath
    return gen


def gaussian_noise(shape, std: float, *, device="cpu", dtype=torch.float32) -> torch.Tensor:
    """N(0, std²) noise rounded to a public power-of-two grid, from OS entropy: DP as
    computed in floating point for statistics on that grid (engine/noise.py says why, and
    what the sampler's own error costs). The one entry every method calls."""
    from engine.noise import gaussian

    return gaussian(shape, std, device=device, dtype=dtype)


# ------------------------------------------------------------------ budget sanity

def delta_warning(delta: float, n: int) -> str | None:
    """A warning when δ ≥ 1/n: an (ε, δ) guarantee then allows a mechanism that publishes
    one whole training record in the clear (each with probability δ, so n·δ ≥ 1 of them
    expected). None when δ < 1/n."""
    if n > 0 and delta >= 1.0 / n:
        return (f"delta={delta:g} is not below 1/n = 1/{n:,} ({1.0 / n:.2g}): at this delta "
                "the guarantee would allow publishing a whole training record; choose a "
                f"delta well below 1/n, e.g. {10 ** math.floor(math.log10(0.1 / n)):g}.")
    return None


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


@dataclass(frozen=True)
class Release:
    """One Gaussian release of a statistic.

    `sensitivity` is its L2 sensitivity under replace-one; `count` how many times it is
    released; `share` its relative part of the budget (in GDP terms, μ² = 1/z²): a
    statistic that tolerates noise well (class counts in the thousands) can take a small
    share so the one that matters (the embedding) gets almost the whole budget.
    """

    name: str
    sensitivity: float
    count: int = 1
    share: float = 1.0


def calibrate_releases(*, epsilon: float, delta: float, releases: list[Release],
                       accountant: str = "exact") -> dict:
    """Noise for a fixed set of releases so that their composition meets (ε, δ).

    Gaussian mechanisms compose additively in 1/z² (exactly for GDP, and for RDP too),
    so we calibrate one equivalent multiplier z* and give release i the multiplier
    z_i = z*·√(count_i / share_i). The composed ε is then recomputed by autodp and
    nudged up if rounding put it a hair over the target. Returns the report that goes
    into metrics.json.
    """
    if not releases:
        raise InputError("calibrate_releases needs at least one release.")
    total_share = sum(r.share for r in releases)
    if math.isinf(epsilon):
        zs = [0.0] * len(releases)
        spent, used = math.inf, "none (non-private run: no noise added)"
    else:
        z_star = calibrate_noise_multiplier(epsilon=epsilon, delta=delta, accountant=accountant)
        zs = [z_star * math.sqrt(r.count * total_share / r.share) for r in releases]

        def spent_for(multipliers: list[float]) -> float:
            return composed_epsilon(tuple((z, r.count) for z, r in zip(multipliers, releases)),
                                    delta=delta, accountant=accountant)

        while (spent := spent_for(zs)) > epsilon:
            zs = [z * (1 + 1e-6) for z in zs]
        used = ACCOUNTANTS[accountant]
    return {
        "epsilon_target": epsilon,
        "epsilon_spent": spent,
        "delta": delta,
        "accountant": used,
        "releases": [
            {"name": r.name, "sensitivity": r.sensitivity, "count": r.count,
             "noise_multiplier": z, "sigma": z * r.sensitivity}
            for r, z in zip(releases, zs)
        ],
    }


def datalens_noise_multiplier(*, sigma: float, top_k: int) -> float:
    """DataLens vote vectors: one record's aggregate changes by at most 2√k in L2
    (one teacher's k-sparse ±1 vector flips), so z = σ / (2√k)."""
    return sigma / (2.0 * math.sqrt(top_k))


def datalens_epsilon(*, steps: int, top_k: int, sigma: float, batch: int, delta: float,
                     accountant: str = "exact") -> float:
    """ε after `steps` iterations, each releasing `batch` noisy vote vectors."""
    z = datalens_noise_multiplier(sigma=sigma, top_k=top_k)
    return epsilon_for(z, delta=delta, compositions=steps * batch, accountant=accountant)


@lru_cache(maxsize=1024)
def datalens_affordable_steps(*, epsilon: float, delta: float, top_k: int, sigma: float,
                              batch: int, accountant: str = "exact",
                              max_steps: int = 10**7) -> int:
    """The largest number of iterations whose ε stays within the budget (0 if none)."""
    if math.isinf(epsilon):
        return max_steps

    def fits(t: int) -> bool:
        return datalens_epsilon(steps=t, top_k=top_k, sigma=sigma, batch=batch, delta=delta,
                                accountant=accountant) <= epsilon

    if not fits(1):
        return 0
    lo, hi = 1, 2
    while hi <= max_steps and fits(hi):
        lo, hi = hi, hi * 2
    if hi > max_steps:
        return max_steps
    while hi - lo > 1:  # invariant: fits(lo), not fits(hi)
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


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

from engine.zcdp import bounded_range_mu, epsilon as zcdp_epsilon, rho_for as zcdp_rho_for  # noqa: E402,F401

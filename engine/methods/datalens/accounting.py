"""DataLens's privacy accounting (pure: no torch): what one vote costs, how many
iterations a budget affords, and the run's privacy report.

Privacy assumption (replace-one neighbours): one private record lives in exactly one
teacher's partition, so changing it changes at most that teacher's k-sparse ±1 vote
vector for each synthetic record: the vote sum moves by at most 2√k in L2. Each
iteration releases `batch` such sums with noise std σ; engine.privacy.accountant composes them
(`NoisyRelease` → ε), like every other method's releases.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache

from engine.privacy import accountant as privacy

VOTES = "teacher votes (one per synthetic record per step)"


def vote_sensitivity(top_k: int) -> float:
    """L2 sensitivity of one aggregated vote vector: one teacher's k-sparse ±1 vote flips."""
    return 2.0 * math.sqrt(top_k)


def noise_multiplier(*, sigma: float, top_k: int) -> float:
    """z = σ / (2√k)."""
    return sigma / vote_sensitivity(top_k)


def votes_release(*, steps: int, top_k: int, sigma: float, batch: int) -> privacy.NoisyRelease:
    """`steps` iterations' vote sums as one NoisyRelease (σ = 0: a non-private run)."""
    return privacy.NoisyRelease(VOTES, vote_sensitivity(top_k), steps * batch, sigma)


def spent_epsilon(*, steps: int, top_k: int, sigma: float, batch: int, delta: float,
            accountant: str = "exact") -> float:
    """ε after `steps` iterations, each releasing `batch` noisy vote vectors."""
    release = votes_release(steps=steps, top_k=top_k, sigma=sigma, batch=batch)
    return privacy.releases_epsilon((release,), delta=delta, accountant=accountant)


@lru_cache(maxsize=1024)
def affordable_steps(*, epsilon: float, delta: float, top_k: int, sigma: float, batch: int,
                     accountant: str = "exact", max_steps: int = 10**7) -> int:
    """The largest number of iterations whose ε stays within the budget (0 if none)."""
    if math.isinf(epsilon):
        return max_steps

    def fits(t: int) -> bool:
        return spent_epsilon(steps=t, top_k=top_k, sigma=sigma, batch=batch, delta=delta,
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


def run_report(config, params, *, steps: int, batch: int) -> privacy.PrivacyReport:
    """The final report of a run that ran `steps` iterations (ε 0 when none ran)."""
    sigma = params.sigma if config.private else 0.0
    release = votes_release(steps=steps, top_k=params.top_k, sigma=sigma, batch=batch)
    z = noise_multiplier(sigma=params.sigma, top_k=params.top_k) if config.private else 0.0
    out = privacy.report((release,), epsilon_target=config.epsilon, delta=config.delta,
                         accountant=params.accountant, private=config.private,
                         noise_multiplier=z, steps=steps)
    # nothing released before the first step: nothing spent, noise or not
    return out if steps else replace(out, epsilon_spent=0.0)


def schedule(config, params, n_train: int) -> tuple[int, int]:
    """(steps to run, records released per step) of a DataLens run: as many steps as the
    budget affords (never more: the run stops before it would exceed ε), at most
    `max_steps`; `max_steps` without noise."""
    batch = params.synthetic_batch(n_train)
    if not config.private:
        return params.max_steps, batch
    steps = affordable_steps(epsilon=config.epsilon, delta=config.delta, top_k=params.top_k,
                             sigma=params.sigma, batch=batch, accountant=params.accountant)
    return min(steps, params.max_steps), batch

"""A private search's plan (engine/runs/private_search.py runs it): the request checked, each
candidate's noise calibrated so the repeat-and-select bound meets the total (ε, δ), and
how the ledger and a queued run record it. Nothing here reads data: the ledger prices a
search from its plan before the search starts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from engine.privacy import accountant as privacy
from engine.core.config import RunConfig
from engine.core.errors import InputError

VALIDATION_SHARE = 0.2
DISTRIBUTIONS = tuple(privacy.TUNING_SHAPES)  # geometric, poisson


@dataclass(frozen=True)
class SearchPlan:
    epsilon: float  # the whole search's ε at `delta` (repeat-and-select bound)
    delta: float
    mean: float  # E[K]
    distribution: str
    grid: dict[str, list]
    multiplier: float  # each candidate: one Gaussian mechanism with this z
    candidate_epsilon: float  # one candidate's ε at `delta`
    plain_epsilon: float  # the same E[K] runs by plain composition

    def words(self) -> str:
        return (f"private search: E[K] = {self.mean:g} candidates ({self.distribution}), each "
                f"ε = {self.candidate_epsilon:.3g}; total ε = {self.epsilon:.3g} by private "
                f"selection vs {self.plain_epsilon:.3g} by plain composition (δ = {self.delta:g})")


def plan_search(*, epsilon: float, delta: float, mean: float, distribution: str,
                grid: dict[str, list]) -> SearchPlan:
    """Check the request and calibrate each candidate's noise; raise InputError."""
    if distribution not in DISTRIBUTIONS:
        raise InputError(f"distribution must be one of {', '.join(DISTRIBUTIONS)}. "
                         f"Got {distribution!r}.")
    if not (isinstance(mean, (int, float)) and 1 <= mean <= 100):
        raise InputError(f"the mean number of candidates E[K] must be between 1 and 100. "
                         f"Got {mean!r}.")
    if not (isinstance(epsilon, (int, float)) and 0 < epsilon < math.inf):
        raise InputError(f"a private search needs a finite epsilon > 0. Got {epsilon!r}.")
    if not grid or any(not isinstance(v, (list, tuple)) or not v for v in grid.values()):
        raise InputError("give at least one knob with one or more values to search over.")
    shape = privacy.TUNING_SHAPES[distribution]
    z = privacy.calibrate_search(epsilon=epsilon, delta=delta, mean=float(mean), shape=shape)
    return SearchPlan(
        epsilon=privacy.repeat_and_select_epsilon((((((z, 1),), mean, shape)),), delta=delta),
        delta=delta, mean=float(mean), distribution=distribution,
        grid={k: list(v) for k, v in grid.items()}, multiplier=z,
        candidate_epsilon=privacy.epsilon_for(z, delta=delta),
        plain_epsilon=privacy.plain_search_epsilon(z, runs=round(mean), delta=delta))


def ledger_search(plan: SearchPlan) -> dict:
    """How the ledger records the search (engine.privacy.ledger.compose_rows reads it)."""
    return {"candidate": [[plan.multiplier, 1]], "mean": plan.mean,
            "shape": privacy.TUNING_SHAPES[plan.distribution]}


SPEC = "private_search"  # a queued run whose params hold this key is a private search


def search_config(base: RunConfig, grid: dict[str, list], *, epsilon: float, mean: float,
                  distribution: str = "geometric") -> RunConfig:
    """The app's job for a private search: `base` at the search's total ε with the search
    in its params under SPEC (runner.execute hands such a run to `run_events`)."""
    plan_search(epsilon=epsilon, delta=base.delta, mean=mean, distribution=distribution,
                grid=grid)
    return replace(base, epsilon=float(epsilon), params={**base.params, SPEC: {
        "grid": {k: list(v) for k, v in grid.items()}, "mean": float(mean),
        "distribution": distribution}})


def spec_plan(config: RunConfig) -> SearchPlan | None:
    """The plan of a search job (None for an ordinary run)."""
    spec = (config.params or {}).get(SPEC)
    if not spec:
        return None
    return plan_search(epsilon=config.epsilon, delta=config.delta, mean=spec["mean"],
                       distribution=spec["distribution"], grid=spec["grid"])


def plan_dict(plan: SearchPlan) -> dict:
    return {"epsilon_total": plan.epsilon, "epsilon_plain_composition": plan.plain_epsilon,
            "epsilon_per_candidate": plan.candidate_epsilon, "noise_multiplier": plan.multiplier,
            "mean_K": plan.mean, "distribution": plan.distribution, "grid": plan.grid,
            "validation_share": VALIDATION_SHARE,
            "accountant": "dp-accounting RDP, RepeatAndSelectDpEvent (Papernot & Steinke 2022)"}

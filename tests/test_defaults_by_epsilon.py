"""Defaults by ε (issue 41, item 3): every method's defaults are those for the (ε, δ) asked,
and DataLens's spend the budget at its step cap instead of stopping with ε left."""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from engine.core.config import RunConfig
from engine.methods import registry
from engine.methods.datalens import accounting
from engine.methods.datalens.params import Params

ROOT = Path(__file__).resolve().parents[1]
FASHION = SimpleNamespace(kind="image", image_shape=(1, 28, 28), n_train=60_000, name="fashion")


def _spent(p: Params, epsilon: float, delta: float, n_train: int) -> tuple[int, float]:
    """(steps the run takes, ε they spend), by the accountant."""
    batch = p.synthetic_batch(n_train)
    steps = min(p.max_steps, accounting.affordable_steps(
        epsilon=epsilon, delta=delta, top_k=p.top_k, sigma=p.sigma, batch=batch))
    return steps, accounting.spent_epsilon(steps=steps, top_k=p.top_k, sigma=p.sigma,
                                           batch=batch, delta=delta)


@pytest.mark.parametrize("epsilon", [3.0, 10.0, 30.0])
def test_datalens_spends_a_large_budget_at_its_step_cap(epsilon):
    p = Params.for_budget(FASHION, epsilon, 1e-5)
    steps, spent = _spent(p, epsilon, 1e-5, FASHION.n_train)
    assert steps == p.max_steps
    assert 0.9 * epsilon <= spent <= epsilon
    # the ε-independent defaults stop early with most of the budget unspent
    _, old = _spent(Params.for_data(FASHION), epsilon, 1e-5, FASHION.n_train)
    assert old < 0.5 * epsilon


def test_datalens_keeps_its_defaults_where_the_budget_ends_the_run():
    """ε = 1 on Fashion (149 steps, docs/datalens.md's measured setting) and ε = ∞."""
    assert Params.for_budget(FASHION, 1.0, 1e-5) == Params.for_data(FASHION)
    assert Params.for_budget(FASHION, math.inf, 1e-5) == Params.for_data(FASHION)
    assert _spent(Params.for_budget(FASHION, 1.0, 1e-5), 1.0, 1e-5, 60_000)[0] == 149


def test_datalens_noise_and_threshold_fall_as_epsilon_grows():
    chosen = [Params.for_budget(FASHION, e, 1e-5) for e in (1, 2, 3, 10, 30, 100)]
    sigmas, betas = [p.sigma for p in chosen], [p.beta for p in chosen]
    assert sigmas == sorted(sigmas, reverse=True) and sigmas[-1] < sigmas[0]
    assert betas == sorted(betas, reverse=True) and 0 < betas[-1] < betas[0]
    # the anchor measured in docs/datalens.md: σ ≈ 450, β ≈ .1 at ε = 10 (LogReg .705)
    at10 = chosen[3]
    assert 400 <= at10.sigma <= 550 and 0.08 <= at10.beta <= 0.12


def test_a_run_gets_the_defaults_for_its_own_epsilon(digits):
    """The one way in (registry.params_for): digits at a huge ε lowers σ; the user's own
    σ still wins."""
    small = registry.params_for(RunConfig(method="datalens", dataset="digits", epsilon=1.0), digits)
    big = registry.params_for(RunConfig(method="datalens", dataset="digits", epsilon=1e4), digits)
    assert big.sigma < small.sigma == registry.default_params("datalens", digits).sigma
    mine = RunConfig(method="datalens", dataset="digits", epsilon=1e4, params={"sigma": 77.0})
    assert registry.params_for(mine, digits).sigma == 77.0


@pytest.mark.parametrize("max_steps", [100, 600])
def test_a_users_max_steps_gets_the_sigma_that_spends_epsilon_in_them(max_steps):
    """σ is calibrated to the steps the user asked for, not the default 300: the ε the
    accountant reports for that σ over max_steps is the target (σ rounded up to 3
    significant digits: within 1 %, never above)."""
    p = Params.for_budget(FASHION, 10.0, 1e-5, {"max_steps": max_steps})
    p = Params(**{**p.__dict__, "max_steps": max_steps})  # the registry lays it on top
    steps, spent = _spent(p, 10.0, 1e-5, FASHION.n_train)
    assert steps == max_steps
    assert 0.99 * 10.0 <= spent <= 10.0
    default = Params.for_budget(FASHION, 10.0, 1e-5)
    assert (p.sigma < default.sigma) == (max_steps < default.max_steps)


@pytest.mark.parametrize("max_steps", [50, 400])
def test_the_registry_passes_the_users_settings_to_the_budget_defaults(digits, max_steps):
    config = RunConfig(method="datalens", dataset="digits", epsilon=100.0,
                       params={"max_steps": max_steps})
    p = registry.params_for(config, digits)
    steps, batch = accounting.schedule(config, p, digits.n_train)
    assert p.max_steps == steps == max_steps
    spent = accounting.spent_epsilon(steps=steps, top_k=p.top_k, sigma=p.sigma, batch=batch,
                                     delta=config.delta)
    assert 0.99 * config.epsilon <= spent <= config.epsilon


def test_no_caller_builds_a_runs_params_without_its_budget():
    """A run's params come from registry.params_for (the defaults for its ε); a call of
    make_params on a config's params outside the registry would get ε-blind defaults."""
    blind = re.compile(r"make_params\([^)]*\bc(?:on)?fg?\.params")
    offenders = [str(f.relative_to(ROOT)) for d in ("engine", "ui", "pages", "bench")
                 for f in (ROOT / d).rglob("*.py") if blind.search(f.read_text())]
    assert offenders == []


def test_the_playground_shows_the_defaults_for_the_epsilon_chosen(runs_root):
    """Knobs left at their default follow ε; a knob the user set stays as set."""
    from apptest import open_app
    from engine.data.catalog import load

    digits = load("digits")
    at = open_app({"method": "datalens"})
    assert not at.exception
    sigma = at.number_input(key="datalens_sigma").value
    assert sigma == registry.default_params("datalens", digits, 1.0, 1e-5).sigma
    at.select_slider(key="eps").set_value("100").run()
    assert not at.exception
    at100 = registry.default_params("datalens", digits, 100.0, 1e-5)
    assert at.number_input(key="datalens_sigma").value == at100.sigma < sigma
    assert at.number_input(key="datalens_beta").value == at100.beta
    at.number_input(key="datalens_teachers").set_value(50).run()
    at.select_slider(key="eps").set_value("50").run()
    assert at.number_input(key="datalens_teachers").value == 50
    assert at.number_input(key="datalens_sigma").value == registry.default_params(
        "datalens", digits, 50.0, 1e-5).sigma

"""Knob importance of a study, by an evaluator the user picks: Optuna's fANOVA or PED-ANOVA
(optuna.importance; PED-ANOVA is Optuna 5's default).

* **fANOVA** (Hutter et al. 2014): a random forest fitted to (knobs → objective) over the
  finished trials, its variance split between the knobs. Sign-blind: maximising or
  minimising gives the same importances. Fitted on a fixed forest seed, so a redraw of
  the board does not move the bars.
* **PED-ANOVA** (Watanabe et al. 2023): how much each knob's distribution among the best
  10 % of trials differs from its distribution over all of them. It ranks trials
  "lower is better", so a maximised objective is negated before it is handed over (Optuna
  does this itself only for a one-objective study without a `target`).

With a second objective, importance is always for the first (the score), never for the
cost. Both want many trials (about 20; a study of 8 gives a rough picture): callers say
how many it rests on.
"""

from __future__ import annotations

import warnings
from typing import Callable

EVALUATORS = ("ped-anova", "fanova")
EVALUATOR_TITLES = {
    "ped-anova": "PED-ANOVA (which knobs set the best 10 % of trials apart)",
    "fanova": "fANOVA (a random forest's split of the objective's variance)",
}
FANOVA_SEED = 0  # the forest's seed: a fitted statistic for a plot, not DP noise


def evaluator(name: str):
    """The Optuna evaluator for `name` (InputError for another name)."""
    from optuna.importance import FanovaImportanceEvaluator, PedAnovaImportanceEvaluator

    from engine.core.errors import InputError

    if name == "fanova":
        return FanovaImportanceEvaluator(seed=FANOVA_SEED)
    if name == "ped-anova":
        return PedAnovaImportanceEvaluator()
    raise InputError(f"importance is one of {', '.join(EVALUATORS)}. Got {name!r}.")


def target(spec, name: str) -> Callable | None:
    """What the evaluator scores: None (Optuna's own handling) for a one-objective study,
    else the first objective, negated for PED-ANOVA when it is maximised."""
    if not spec.second:
        return None
    sign = -1.0 if name == "ped-anova" and spec.direction == "maximize" else 1.0
    return lambda t: sign * t.values[0]


NO_VARIANCE = ("every finished trial has the same {objective}: there is no variance for "
               "fANOVA to split between the knobs")


def importances(study, spec, name: str = "ped-anova") -> dict[str, float]:
    """{knob: importance} (summing to 1) of the study's finished trials; {} with fewer
    than two finished trials or fewer than two knobs, or (fANOVA) when every finished
    trial scored the same."""
    import optuna

    done = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    if len(done) < 2 or len(spec.knobs) < 2:
        return {}
    ev = evaluator(name)
    try:
        with warnings.catch_warnings():  # "lower is better" notes: `target` has seen to it
            warnings.simplefilter("ignore")
            return optuna.importance.get_param_importances(study, evaluator=ev,
                                                           target=target(spec, name))
    except RuntimeError as err:  # fANOVA: "zero total variance in all trees"
        if "variance" not in str(err):
            raise
        return {}


def plot(study, spec, name: str = "ped-anova"):
    """(Optuna's importance bar chart by evaluator `name`, for the first objective, None)
    or (None, why there is none)."""
    from optuna import visualization as vis

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return vis.plot_param_importances(study, evaluator=evaluator(name),
                                              target=target(spec, name),
                                              target_name=spec.objective), None
    except RuntimeError as err:
        if "variance" not in str(err):
            raise
        return None, NO_VARIANCE.format(objective=spec.objective)

"""Tune on public data, spend privacy once: a study's trials run on a public stand-in
(`tune_on`, a built-in dataset whose records are declared public: digits_public,
fashion_public) and its best settings get ONE run on the private dataset at the study's
ε. The ledger (engine/privacy/ledger.dataset_id) neither charges nor caps a public
dataset, so the trials cost the private records nothing; the one private run is charged
like any run. Driving it (the trials, then the private run) is engine/jobs/public_study.py.

The three ways to tune the same knobs at the same ε, side by side (`path_epsilons` before
anything runs; engine/jobs/three_paths.py measures them):

(a) tune on the private data itself: every trial is a run charged in full, and picking
    the best by its real-data score is not a private selection — the ledger's total is
    the composition of every trial;
(b) private repeat-and-select (engine/runs/private_search.py): E[K] = trials candidates
    on the private data, only the best released, charged once by its own bound;
(c) tune on public, one private run: the private records pay for one run.

Settings found on public data transfer only as well as the stand-in resembles the private
data; nothing here claims they do, the measured rows say how well they did.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from engine.core.config import PUBLIC_DATASETS, RunConfig
from engine.core.errors import InputError

PATHS = ("a", "b", "c")
PATH_WORDS = {
    "a": "tune on the private data (every trial charged)",
    "b": "private repeat-and-select (charged once, its own bound)",
    "c": "tune on public, one private run",
}
SEARCH_MAX_MEAN = 100  # the private search's E[K] limit (engine/privacy/search_plan.py)


def check_tune_on(base: RunConfig, tune_on: str) -> None:
    """Refuse (InputError, with the fix) a stand-in that is not public, is the private
    dataset itself, or holds another kind of data than the private dataset."""
    from engine.data.catalog import DATASETS, dataset_kind

    if tune_on not in DATASETS:
        raise InputError(f"unknown dataset {tune_on!r} to tune on; the public stand-ins are "
                         f"{', '.join(PUBLIC_DATASETS)}.")
    if tune_on not in PUBLIC_DATASETS:
        raise InputError(f"{tune_on} is not declared public (its runs are charged), so tuning "
                         f"on it spends privacy; tune on one of {', '.join(PUBLIC_DATASETS)}.")
    if base.dataset in PUBLIC_DATASETS:
        raise InputError(f"{base.dataset} is itself public: tune on it directly (no "
                         "--tune-on), nothing is charged.")
    if dataset_kind(tune_on) != dataset_kind(base.dataset):
        raise InputError(f"{tune_on} holds {dataset_kind(tune_on)} data and {base.dataset} "
                         f"{dataset_kind(base.dataset)} data: settings tuned on one do not "
                         "apply to the other; pick a stand-in of the same kind.")


def trial_config(base: RunConfig, tune_on: str) -> RunConfig:
    """A trial's run on the stand-in: the same method, ε, δ, seed and knobs."""
    return replace(base, dataset=tune_on, data_options={})


@dataclass(frozen=True)
class PathPlan:
    path: str
    words: str
    epsilon: float  # what the private records pay, at the base's δ
    private_runs: str  # how many runs touch the private records


def path_epsilons(base: RunConfig, trials: int, grid: dict[str, list]) -> list[PathPlan]:
    """What each path charges the private records, before anything runs, from the
    accountant: (a) `trials` runs at base.epsilon composed exactly (Gaussian DP); (b) a
    repeat-and-select search of E[K] = trials (geometric) whose total is base.epsilon;
    (c) one run at base.epsilon. Each run is charged as the ledger plans it (one
    Gaussian mechanism meeting its target: engine.privacy.charges.planned)."""
    from engine.privacy.charges import planned, total_epsilon
    from engine.privacy.search_plan import plan_search

    if not base.private:
        raise InputError("the three paths compare what tuning costs at a finite ε; "
                         "at ε = ∞ every path spends everything.")
    one = planned(base)
    a = total_epsilon(one * trials, delta=base.delta)
    mean = float(min(trials, SEARCH_MAX_MEAN))
    b = plan_search(epsilon=base.epsilon, delta=base.delta, mean=mean,
                    distribution="geometric", grid=grid)
    c = total_epsilon(one, delta=base.delta)
    return [PathPlan("a", PATH_WORDS["a"], a, f"{trials}"),
            PathPlan("b", PATH_WORDS["b"], b.epsilon,
                     f"random K, E[K] = {mean:g} (each candidate ε = {b.candidate_epsilon:.3g})"),
            PathPlan("c", PATH_WORDS["c"], c, "1")]

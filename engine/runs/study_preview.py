"""What a tuning study will cost before its first trial: seconds, memory per trial, and
the privacy it spends, beside the private alternative over as many candidates.

* **Seconds.** One trial's whole wait (training + scoring, engine/runs/runner.preview)
  times the rounds the trials take over the free slots (ceil(trials / slots)). A trial's
  settings are the sampler's to pick, so the trial timed is the middle of every range
  (`StudySpec.centre`). It is timed as a trainer slot will run it: in a probe process of
  its own, niced, with a slot's threads (engine/runs/cost_probe.py), never with this
  process's threads (a preview timed with every core's threads said 1.5 s a step where
  a slot took 17 ms).
* **Privacy.** Every trial is an ordinary run on the private records, charged in full:
  the study's total is the ledger's composed total after all of them
  (engine/privacy/ledger.Ledger.forecast with the trials as pending runs, composed by the
  accountant; no ε is added by hand). A trial's charge depends only on its ε and δ
  (engine/privacy/charges.planned), not on the knobs, so the forecast is exact before the
  sampler has picked anything. Queued runs on the same records count too.
* **The private alternative.** Repeat-and-select over as many candidates
  (engine/privacy/search_plan.py, Papernot & Steinke 2022): the same knobs, charged once
  by its own bound at the study's ε.
* **Refusal.** A study whose total would pass the dataset's cap is refused (InputError)
  before any trial is queued.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from engine.core.errors import InputError
from engine.privacy.ledger import Forecast, Ledger, epsilon_words
from engine.methods.preview import Cost, cost_line, duration
from engine.runs.study_space import StudySpec

SEARCH_MAX_MEAN = 100  # the private search's E[K] limit (engine/privacy/search_plan.py)


@dataclass(frozen=True)
class StudyPreview:
    trials: int
    slots: int
    trial_cost: Cost | None  # one trial, at the middle of every range
    seconds: float | None  # the whole study: whole_s × ceil(trials / slots)
    memory_gb: float | None  # per trial
    ledger: Forecast | None  # the dataset's total now and after every trial
    private_epsilon: float | None  # repeat-and-select over as many candidates: its total
    private_candidate_epsilon: float | None  # ... and each candidate's ε
    private_ledger_after: float | None  # the ledger's total after that search instead
    private_mean: float | None  # the E[K] it was planned with
    top_epsilon: float | None = None  # ε searched: the bound's every-trial ε (the range's top)
    # trials on this public stand-in, uncharged; `ledger` is then the one private run's
    tune_on: str | None = None

    @property
    def epsilon_after(self) -> float | None:
        return None if self.ledger is None else self.ledger.after

    def lines(self) -> list[str]:
        """The preview in words, as the CLI prints it and the page shows it."""
        out = []
        if self.seconds is not None:
            out.append(f"time: about {duration(self.seconds)} for {self.trials} trial(s) on "
                       f"{self.slots} slot(s); one trial: {cost_line(self.trial_cost)}")
        else:
            out.append(f"time: not estimated ({cost_line(self.trial_cost) or 'no cost module'})")
        if self.memory_gb is not None:
            out.append(f"memory: ~{self.memory_gb:.1f} GB per trial")
        if self.ledger is not None and self.tune_on:
            f = self.ledger
            out.append(f"privacy: the {self.trials} trial(s) run on {self.tune_on}, public: "
                       f"not charged; then ONE run with the best settings on "
                       f"{f.dataset.label} takes it from ε = {epsilon_words(f.spent)} to "
                       f"ε = {epsilon_words(f.after)} (at δ = {f.delta:g})"
                       + (f", cap {f.cap:g}" if f.cap is not None else ""))
        elif self.ledger is not None:
            f = self.ledger
            top = self.top_epsilon
            out.append(f"privacy: every trial is charged in full"
                       + (" at its own ε" if top else "") + f"; {f.dataset.label} goes from "
                       f"ε = {epsilon_words(f.spent)} to "
                       + ("at most " if top else "") + f"ε = {epsilon_words(f.after)} after "
                       f"{self.trials} trial(s) (composed exactly at δ = {f.delta:g})"
                       + (f", cap {f.cap:g}" if f.cap is not None else "")
                       + (f" — a bound, as if every trial ran at the top of the ε range "
                          f"({top:g}); the ledger charges each its own" if top else ""))
        if self.private_epsilon is not None:
            out.append(f"private alternative: repeat-and-select over E[K] = "
                       f"{self.private_mean:g} candidates releases only the best, total "
                       f"ε = {self.private_epsilon:.3g} (each candidate "
                       f"ε = {self.private_candidate_epsilon:.3g}); the ledger would read "
                       f"ε = {epsilon_words(self.private_ledger_after)} "
                       "(the private search on Runs & Compare; not this study)")
        return out

    def to_dict(self) -> dict:
        f = self.ledger
        return {"trials": self.trials, "slots": self.slots, "seconds": self.seconds,
                "seconds_per_trial": None if self.trial_cost is None else self.trial_cost.whole_s,
                "memory_gb_per_trial": self.memory_gb,
                "ledger_epsilon_now": None if f is None else f.spent,
                "ledger_epsilon_after": None if f is None else f.after,
                "ledger_delta": None if f is None else f.delta,
                "cap": None if f is None else f.cap,
                "private_search_epsilon": self.private_epsilon,
                "private_search_candidate_epsilon": self.private_candidate_epsilon,
                "private_search_ledger_after": self.private_ledger_after,
                "ledger_after_is_bound_at_epsilon": self.top_epsilon}


def timed_trial(config, data, *, wait: bool = True):
    """One trial's preview, timed as a trainer slot runs it (module docstring); with
    `wait=False` (the page) a figure being measured says so instead."""
    from engine.runs import cost_probe
    from engine.runs.runner import preview

    seen = preview(config, data, time_here=False)
    if wait and seen.cost is not None and seen.cost.measuring:
        cost_probe.wait_started(timeout=600)
        seen = preview(config, data, time_here=False)
    return seen


def study_preview(spec: StudySpec, *, root: str | Path, slots: int, pending=(),
                  data=None, wait: bool = True) -> StudyPreview:
    """The preview of `spec` on the store at `root` (its ledger); `pending`: configs
    queued but not started (they count against the cap too). Raises InputError when the
    study would take the dataset past its cap, before anything runs."""
    from engine.data import catalog
    from engine.privacy import search_plan
    from engine.runs.study_objectives import EPSILON_KNOB, searched_epsilon, top_epsilon

    centre = spec.config_for(spec.centre())
    # ε searched: a trial's charge grows with its ε, so every trial at the range's top
    # bounds what the sampler's picks can spend (exact when ε is one value)
    eps_knob = searched_epsilon(spec.knobs)
    top = None if eps_knob is None else top_epsilon(eps_knob)
    charged = centre if top is None else spec.config_for({**spec.centre(), EPSILON_KNOB: top})
    ledger = Ledger(root)
    if spec.tune_on:  # trials on public data cost nothing; the one private run is charged
        forecast = ledger.forecast(spec.final_config(spec.centre()), pending=list(pending))
    else:
        forecast = ledger.forecast(charged, pending=[charged] * (spec.trials - 1) + list(pending))
    if forecast is not None and forecast.refused:
        what = "private run" if spec.tune_on else f"{spec.trials} trial(s)"
        raise InputError(f"Refused before the first trial: the study's {what} "
                         f"{'could' if top else 'would'} bring {forecast.dataset.label} to ε = "
                         f"{epsilon_words(forecast.after)} (at δ = {forecast.delta:g}), past its "
                         f"cap of {forecast.cap:g} (spent so far: "
                         f"ε = {epsilon_words(forecast.spent)}).")
    if data is None:  # only now: a refused study reads no data
        data = catalog.load(centre.dataset, seed=centre.seed, options=centre.data_options)
    seen = timed_trial(centre, data, wait=wait)
    if seen.refuse:
        raise InputError(seen.refuse)
    cost = seen.cost
    whole = None if cost is None else cost.whole_s
    # a tune-on study adds its private run, after the trials, timed as one more trial
    rounds = math.ceil(spec.trials / max(1, slots)) + (1 if spec.tune_on else 0)
    seconds = None if whole is None else whole * rounds
    priv = cand = after = mean = None
    grid = {k.name: k.grid() for k in spec.knobs if k.name != EPSILON_KNOB}
    if charged.private and grid:  # the private search at the (top) ε, over the method's knobs
        mean = float(min(spec.trials, SEARCH_MAX_MEAN))
        plan = search_plan.plan_search(epsilon=charged.epsilon, delta=charged.delta, mean=mean,
                                       distribution="geometric", grid=grid)
        priv, cand = plan.epsilon, plan.candidate_epsilon
        # on the private records (a tune-on study's trials are on public ones)
        job = search_plan.search_config(spec.final_config(spec.centre()) if spec.tune_on
                                        else charged, grid, epsilon=charged.epsilon, mean=mean)
        alt = ledger.forecast(job, pending=list(pending))
        after = None if alt is None else alt.after
    return StudyPreview(trials=spec.trials, slots=slots, trial_cost=cost, seconds=seconds,
                        memory_gb=None if cost is None else cost.memory_gb, ledger=forecast,
                        private_epsilon=priv, private_candidate_epsilon=cand,
                        private_ledger_after=after, private_mean=mean, top_epsilon=top,
                        tune_on=spec.tune_on_words)

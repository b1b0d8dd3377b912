"""Private hyperparameter search (Papernot & Steinke 2022, "Hyperparameter tuning with
Renyi differential privacy"): tune on private data and release only the best candidate.

Picking the best of twenty runs by their real accuracy leaks more than any one run. Here:

1. The number of candidates K is random, drawn from OS entropy (never a config seed):
   geometric (K ≥ 1, the truncated negative binomial with shape 1) or Poisson (K ≥ 0),
   with the mean E[K] the user picks. Each candidate's settings are drawn uniformly from
   the user's grid with the same generator. Neither looks at the data.
2. The training part is cut by record position (`split_indices`, values never read)
   into a candidate part and a private validation part (`VALIDATION_SHARE`). Each
   candidate trains on the candidate part with Gaussian noise of multiplier z, and is
   scored on the validation part by a noisy count of correct predictions of a
   classifier trained on its synthetic data: sensitivity 1 (`SCORE_SENSITIVITY`: one
   replaced validation record changes one prediction's correctness), Gaussian noise of
   the same multiplier z (`engine.privacy.noise.gaussian_noise`).
   The two parts are disjoint, so a replaced record moves either the training or the
   score, never both: one candidate is one Gaussian mechanism of multiplier z
   (parallel composition, Gaussian DP).
3. Only the best candidate by noisy score is released: its synthetic data, its settings
   and its noisy score. Every other candidate's output is dropped from memory as soon as
   it loses and never written anywhere; their scores and settings are not reported.
4. The total ε is the repeat-and-select RDP bound (`privacy.repeat_and_select_epsilon`,
   dp-accounting's `RepeatAndSelectDpEvent`), and z is calibrated so that it meets the
   user's total (ε, δ). The same search accounted by plain composition of E[K] runs is
   reported beside it.
5. The ledger (engine/privacy/ledger.py) is charged before the data is read with the search's
   bound, and each candidate is added as it starts; a killed search stays charged.

Held-out accuracies of the released candidate on the real test part are a non-private
diagnostic, like every run's.

Privacy assumption: the method's releases are Gaussian with their stated sensitivity
(calibrated by the method to the candidate's (ε, δ)), K and the settings are independent
of the data, and no candidate's output but the best one's leaves this module.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from engine.runs import artifacts
from engine.privacy import accountant as privacy
from engine.core.config import RunConfig
from engine.methods.events import Event
from engine.core.jsonsafe import jsonable
from engine.privacy.search_plan import (SPEC, VALIDATION_SHARE, SearchPlan, ledger_search, plan_dict,
                                        plan_search)

SCORE_SENSITIVITY = 1.0  # of the count of correct validation predictions, replace-one
MAX_K = 1000  # a draw beyond this is refused (E[K] is meant to be tens)


# ------------------------------------------------------------- data-independent draws


def os_rng() -> np.random.Generator:
    """A generator seeded from OS entropy: K and the settings are unpredictable and
    independent of the data and of every config seed."""
    return np.random.default_rng(secrets.randbits(128))


def draw_k(plan: SearchPlan, rng: np.random.Generator) -> int:
    """Geometric: P(K = k) = γ(1 − γ)^(k−1), k ≥ 1, γ = 1/E[K] (dp-accounting's shape 1);
    Poisson: P(K = k) = e^(−λ) λ^k / k!, k ≥ 0, λ = E[K]."""
    k = int(rng.geometric(1.0 / plan.mean) if plan.distribution == "geometric"
            else rng.poisson(plan.mean))
    return min(k, MAX_K)


def draw_settings(grid: dict[str, list], rng: np.random.Generator) -> dict[str, Any]:
    """One value per knob, uniformly from its list."""
    return {k: v[int(rng.integers(len(v)))] for k, v in grid.items()}


# ---------------------------------------------------------------------- the score


def correct_count(predictions: np.ndarray, labels: np.ndarray) -> int:
    """Validation records predicted right. Replacing one record (its features, its label
    or both) changes one term, so the count moves by at most 1 (SCORE_SENSITIVITY)."""
    return int(np.sum(np.asarray(predictions) == np.asarray(labels)))


def noisy_accuracy(correct: int, n_validation: int, multiplier: float) -> float:
    """The released score: (count + N(0, (z·Δ)²)) / m; m is public (replace-one)."""
    from engine.privacy.noise import gaussian_noise  # torch: imported where noise is drawn

    noise = float(gaussian_noise((), multiplier * SCORE_SENSITIVITY, dtype=_f64()))
    return (correct + noise) / n_validation


def _f64():
    import torch

    return torch.float64


def _predict(x_syn, y_syn, data, x_val) -> np.ndarray:
    """A classifier trained on the candidate's synthetic data only, applied to the
    validation records: ridge (closed form, so K candidates cost K fits of a second)."""
    from sklearn.linear_model import RidgeClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from engine.evaluation.utility import design_matrix

    if (y_syn < 0).all() or len(np.unique(y_syn)) < 2:
        return np.full(len(x_val), int(y_syn[0]) if (y_syn >= 0).any() else -1)
    model = make_pipeline(StandardScaler(), RidgeClassifier()) if data.kind != "image" \
        else RidgeClassifier()
    model.fit(design_matrix(x_syn, data), y_syn)
    return model.predict(design_matrix(x_val, data))


def split_validation(data, seed: int):
    """(the candidate part as a Dataset, validation x, validation y), cut by position."""
    from engine.data.dataset import split_indices

    cand, val = split_indices(data.n_train, seed + 1, VALIDATION_SHARE)
    view = replace(data, x_train=data.x_train[cand], y_train=data.y_train[cand])
    return view, data.x_train[val], data.y_train[val]


# ------------------------------------------------------------------------- the search


def run_events(config: RunConfig, out_dir: str | Path, *, stop=None, full_eval: bool = True):
    """runner.execute for a search job: the search's Events, into the run's folder."""
    spec = config.params[SPEC]
    base = replace(config, params={k: v for k, v in config.params.items() if k != SPEC})
    return (yield from search_events(base, spec["grid"], epsilon=config.epsilon,
                                     mean=spec["mean"], distribution=spec["distribution"],
                                     out_dir=out_dir, stop=stop, full_eval=full_eval))


def search(base: RunConfig, grid: dict[str, list], *, epsilon: float, mean: float,
           distribution: str = "geometric", out_dir: str | Path,
           ledger_root: str | Path | None = None, stop: threading.Event | None = None,
           full_eval: bool = False, log: Callable[[str], None] = lambda s: None) -> dict:
    """Run a private search into a new folder (the bench, scripts): its metrics."""
    artifacts.claim_out_dir(out_dir, overwrite=False)
    report = {}
    for ev in search_events(base, grid, epsilon=epsilon, mean=mean, distribution=distribution,
                            out_dir=out_dir, ledger_root=ledger_root, stop=stop,
                            full_eval=full_eval):
        if ev.message:
            log(ev.message)
        if ev.phase in ("done", "cancelled"):
            report = json.loads((Path(out_dir) / "metrics.json").read_text())
    return report


def search_events(base: RunConfig, grid: dict[str, list], *, epsilon: float, mean: float,
                  distribution: str = "geometric", out_dir: str | Path,
                  ledger_root: str | Path | None = None, stop: threading.Event | None = None,
                  full_eval: bool = False) -> Iterator[Event]:
    """The search, as Events (one "train" event per candidate, K public), ending with
    "done"; writes the released candidate into `out_dir` (config.json, metrics.json,
    synthetic data, samples.png). `base.delta` is the search's δ, `epsilon` its total ε.
    A folder inside a run store is charged to that store's ledger."""
    from engine.data import catalog as datasets
    from engine.privacy import ledger as ledger
    from engine.evaluation.utility import fit_and_score, full_evaluation
    from engine.methods.registry import get_method, params_for

    base.validate()
    plan = plan_search(epsilon=epsilon, delta=base.delta, mean=mean,
                       distribution=distribution, grid=grid)
    method = get_method(base.method)
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.json").unlink(missing_ok=True)
    root = ledger_root if ledger_root is not None else ledger.root_for(out)
    led = ledger.Ledger(root)
    in_store = ledger_root is None and root is not None
    charge = out.name if in_store else (
        f"search-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}")
    # Before the data is read: refused past the cap, charged with the search's bound.
    led.book(replace(base, epsilon=plan.epsilon), run_id=out.name if in_store else str(out),
             source="private-tuning", charge_id=charge, search=ledger_search(plan),
             sweep=ledger.sweep_of(root, out.name) if in_store else None)
    data = datasets.load(base.dataset, seed=base.seed, options=base.data_options)
    view, x_val, y_val = split_validation(data, base.seed)
    # Each candidate's own target: a hair under z's ε, so its releases' multiplier ≥ z.
    cand_eps = privacy.epsilon_for(plan.multiplier * (1 + 1e-5), delta=base.delta)
    rng = os_rng()
    k = draw_k(plan, rng)
    yield Event("release", 0, k, plan.epsilon, message=f"{plan.words()}; K = {k} drawn")
    t0 = time.perf_counter()
    best: dict | None = None
    started = 0
    for i in range(k):
        if stop is not None and stop.is_set():
            break
        settings = draw_settings(plan.grid, rng)
        config = replace(base, epsilon=cand_eps, params={**base.params, **settings})
        params = params_for(config, view)  # bad grid values: here
        led.add_candidate(charge)
        started += 1
        result = None
        for ev in method.train(config, params, view, "cpu", stop):
            if ev.phase == "done":
                result = ev.result
        if result is None:
            raise RuntimeError("the trainer ended without a result")
        score = noisy_accuracy(correct_count(_predict(result.x, result.y, view, x_val), y_val),
                               len(y_val), plan.multiplier)
        if best is None or score > best["score"]:
            best = {"score": score, "settings": settings, "config": config, "result": result}
        del result  # a losing candidate's output is gone once it has lost
        # Its settings and score stay unreported; only the count of candidates is public.
        yield Event("train", i + 1, k, plan.epsilon, message=f"candidate {i + 1} of {k} done")
    seconds = time.perf_counter() - t0
    stopped = started < k
    report = {"status": "cancelled" if stopped else "finished", "mode": "private tuning",
              "search": {**plan_dict(plan), "K": k, "candidates_run": started,
                         "seconds": round(seconds, 3)},
              "method": base.method, "dataset": base.dataset, "epsilon_spent": plan.epsilon,
              "delta": base.delta, "accuracy": {}}
    if best is None or stopped:
        report["note"] = ("stopped: nothing is released" if stopped else
                          "K = 0 candidates drawn (Poisson): nothing is released.")
        report["ledger"] = led.summary_for(charge)
        artifacts.write_metrics(out, jsonable(report))
        yield Event("cancelled" if stopped else "done", started, k, plan.epsilon,
                    message=report["note"])
        return
    (out / "config.json").write_text(best["config"].to_json())
    result = best["result"]
    artifacts.write_synthetic(out, result, view)
    artifacts.write_samples_png(out / "samples.png", result, view)
    yield Event("evaluate", k, k, plan.epsilon, message="evaluating on the real test split")
    scores = (full_evaluation(result.x, result.y, view, seed=base.seed) if full_eval else
              {"synthetic/logreg": fit_and_score("logreg", result.x, result.y, view)["accuracy"]})
    report.update({
        "released": {"settings": best["settings"], "noisy_validation_accuracy": best["score"],
                     "validation_records": int(len(y_val)),
                     "score_sensitivity": SCORE_SENSITIVITY,
                     "score_noise_std": plan.multiplier * SCORE_SENSITIVITY / len(y_val)},
        "privacy": result.privacy.to_dict(), "accuracy": scores,
        "disclosures": {"not private": {"accuracy": "NOT private: measured on the real test "
                                        "records without noise (a diagnostic)"},
                        "covered by epsilon": "the released candidate's synthetic data, "
                                              "settings and noisy validation score"}})
    best.clear()
    report["ledger"] = led.summary_for(charge)
    artifacts.write_metrics(out, jsonable(report))
    yield Event("done", k, k, plan.epsilon, message="finished",
                metrics={**scores, "private_search/noisy_validation_accuracy":
                         report["released"]["noisy_validation_accuracy"]}, result=result)

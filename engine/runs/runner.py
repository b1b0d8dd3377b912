"""One run from config to files: load data, train, evaluate, write artifacts.

The CLI and the app's job runner both call `execute`, so a run is the same everywhere.
Artifacts in `out_dir`: config.json, metrics.json, synthetic.npz (images) or
synthetic.csv (tabular), samples.png.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator


from engine.data import catalog as datasets
from engine.runs import cost_probe
from engine.privacy import ledger as ledger
from engine.privacy.search_plan import SPEC
from engine.core.config import RunConfig
from engine.core.errors import InputError
from engine.store.eta import PREDICTED_SCORING
from engine.methods.events import Event, TrainResult
from engine.runs.artifacts import write_metrics, write_samples_png, write_synthetic
from engine.core.jsonsafe import jsonable
from engine.methods.preview import Preview, from_method
from engine.methods.registry import estimate_cost, get_method, params_for


@dataclass(frozen=True)
class Prepared:
    """A run checked before training: its method module, data and device, its validated
    params (built once, handed to `train`) and its preview (computed once)."""

    method: ModuleType
    data: datasets.Dataset
    device: Any
    params: Any
    preview: Preview


def preview(config: RunConfig, data: datasets.Dataset, *, params=None,
            time_here: bool = True) -> Preview:
    """What a run of `config` on the loaded `data` will be, before training: the page's
    and the CLI's one engine call for it. Validates (InputError), asks the method for its
    figures and its cost (engine/methods/registry.estimate_cost) and types them (engine/methods/preview.py).
    `time_here=False` (the web server) never times training steps in this process: an
    untimed cost is measured in a process of its own and said to be "measuring…"."""
    config.validate()
    method = get_method(config.method)
    params = params if params is not None else params_for(config, data)
    timing = {} if time_here else cost_probe.away(config)
    raw = {**method.privacy_preview(config, params, data),
           **estimate_cost(config, data, params, **timing)}
    return from_method(raw, config, data.n_train)


def prepare(config: RunConfig, *, ledger_root=None) -> Prepared:
    """Validate everything that can be checked before training; raise InputError.
    A run that would take its dataset past its budget cap (engine/privacy/ledger.py, the store
    at `ledger_root`, else the default one) is refused before the data is read."""
    config.validate()
    method = get_method(config.method)
    ledger.Ledger(ledger_root).check(config)
    data = datasets.load(config.dataset, seed=config.seed, options=config.data_options)
    params = params_for(config, data)
    seen = preview(config, data, params=params)  # the trainer's process: timed here
    if seen.refuse:  # a run that cannot fit in memory ends here with one line
        raise InputError(seen.refuse)
    from engine.core.device import resolve_device  # torch: the page imports this module for `preview`

    return Prepared(method, data, resolve_device(config.device), params, seen)


NEIGHBOURS = ("replace-one: two training sets are neighbours when they differ in one record "
              "(one record replaced by any other); the number of training records n is public")


def execute(config: RunConfig, out_dir: str | Path, *, stop: threading.Event | None = None,
            full_eval: bool = True, prepared: Prepared | None = None) -> Iterator[Event]:
    """Run `config`, yield every trainer Event, write the artifacts, and finish with a
    "done" (or "cancelled") Event whose metrics hold the final evaluation.

    An older metrics.json in `out_dir` is removed before config.json is written, and a run
    that dies (an exception, Ctrl-C, the consumer closing this generator) writes one that
    says "interrupted"; after a hard kill there is none. So a folder never shows metrics
    of a run other than the one that wrote its config.json."""
    if SPEC in config.params:  # a private search job: its own runner
        from engine.runs.private_search import run_events

        return (yield from run_events(config, out_dir, stop=stop, full_eval=full_eval))
    prepared = prepared or prepare(config, ledger_root=ledger.root_for(out_dir))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # Charged from here on, killed or not (engine/privacy/ledger.py); refused past the cap.
    book, charge = ledger.book_run(config, out)
    (out / "metrics.json").unlink(missing_ok=True)
    (out / "attack.json").unlink(missing_ok=True)  # it described the run this replaces
    (out / "config.json").write_text(config.to_json())
    try:
        metrics, last, result = yield from _run(config, prepared, out, stop, full_eval)
    except BaseException as exc:
        write_metrics(out, {"status": "interrupted", "method": config.method,
                             "dataset": config.dataset,
                             "reason": f"{type(exc).__name__}: {exc}".rstrip(": ")})
        raise
    if charge is not None:  # the actual releases replace the planned charge
        book.settle(charge, result.privacy.to_dict())
        metrics["ledger"] = book.summary_for(charge)
        write_metrics(out, metrics)
    yield Event("cancelled" if metrics["status"] == "cancelled" else "done", last.step,
                last.total, result.privacy.epsilon_spent,
                metrics=metrics["accuracy"], result=result, message=metrics["status"])


def _run(config, prepared: Prepared, out: Path, stop, full_eval: bool):
    """execute's body: train, write the artifacts, evaluate, write metrics.json."""
    data, device = prepared.data, prepared.device
    cost = prepared.preview.cost
    t0 = time.perf_counter()
    result: TrainResult | None = None
    last = None
    first = True
    for event in prepared.method.train(config, prepared.params, data, device, stop):
        if event.phase == "done":
            result, last = event.result, event
            break
        if first and cost is not None and cost.scoring_seconds is not None:
            # the live view's scoring estimate until a finished run measured one (engine/store/eta.py)
            event.metrics = {**(event.metrics or {}),
                             PREDICTED_SCORING: cost.scoring_seconds + (cost.cnn_seconds or 0.0)}
        first = False
        yield event
    if result is None:
        raise RuntimeError("the trainer ended without a result")
    train_seconds = time.perf_counter() - t0
    # The evaluation as the user waits for it: from the end of training to metrics.json
    # (files, scoring with the real-data reference, fidelity, disclosures).
    t1 = time.perf_counter()
    cancelled = result.stopped

    write_synthetic(out, result, data)
    write_samples_png(out / "samples.png", result, data)
    scores: dict = {}
    scoring: dict = {}  # seconds of the synthetic fits and of the real reference
    if full_eval and not cancelled:
        from engine.evaluation.utility import full_evaluation

        # Fitting the classifiers takes a while (minutes on 60k images): say so first.
        yield Event("evaluate", last.step, last.total, result.privacy.epsilon_spent,
                    message="evaluating on the real test split")

        scores = full_evaluation(result.x, result.y, data, seed=config.seed, seconds=scoring)
        labelled = "note" not in scores  # unlabelled synthetic data: no classifier at all
        if config.cnn_eval and data.kind == "image" and labelled:
            scores.update((yield from _cnn_events(result, data, config, device, last)))
    measured = None
    if data.kind == "tabular" and not cancelled:
        from engine.evaluation.fidelity import fidelity

        measured = fidelity(data.x_train, data.y_train, result.x, result.y, data.columns,
                            data.class_names, label=data.notes.get("label", "label"),
                            seed=config.seed)
    disclosed = disclosures(data, scores, fidelity=measured is not None)
    evaluate_seconds = time.perf_counter() - t1
    metrics = {
        "status": "cancelled" if cancelled else "finished",
        "method": config.method,
        "dataset": config.dataset,
        "private": config.private,
        "epsilon_target": jsonable(config.epsilon),
        "epsilon_spent": jsonable(result.privacy.epsilon_spent),
        "delta": config.delta,
        "accountant": result.privacy.accountant,
        "privacy": jsonable(result.privacy.to_dict()),
        "accuracy": scores,
        "seconds": {"train": round(train_seconds, 3), "evaluate": round(evaluate_seconds, 3),
                    "total": round(time.perf_counter() - t0, 3),
                    # the preview's training seconds: as timed, and as shown (corrected)
                    "timed": cost.timed_seconds if cost else None,
                    "predicted": cost.seconds if cost else None,
                    # scoring, measured (engine/methods/scoring_cost.py learns from these) and predicted
                    **scoring,
                    "predicted_scoring": cost.scoring_seconds if cost else None,
                    "predicted_whole": cost.whole_s if cost else None},
        "n_train": data.n_train, "n_test": len(data.y_test), "n_synthetic": len(result.y),
        "device": str(device),
        "info": jsonable({**result.info, "stopped": result.stopped}),  # as metrics.json had it
        "disclosures": disclosed,
        "warnings": list(prepared.preview.warnings),
    }
    if measured is not None:
        metrics["fidelity"] = measured
    if not config.private:
        metrics["note"] = "NON-PRIVATE reference run (epsilon = inf, no noise added)."
    write_metrics(out, metrics)
    return metrics, last, result


def _cnn_events(result: TrainResult, data, config, device, last: Event):
    """The CNN's scores (`yield from` gives them), yielding an "evaluate" Event per epoch:
    the CNN is the slow part of scoring images (minutes on 60k), so it shows progress."""
    from engine.evaluation.utility import cnn_scores

    eps = result.privacy.epsilon_spent
    fits = cnn_scores(result.x, result.y, data, seed=config.seed, device=str(device))
    while True:
        try:
            ep = next(fits)
        except StopIteration as done:
            return done.value
        yield Event("evaluate", last.step, last.total, eps,
                    metrics={"eval/cnn_epoch": ep.epoch, "eval/cnn_max_epochs": ep.max_epochs,
                             "eval/cnn_real_fit": float(ep.fit == "real")},
                    message=f"CNN trained on the {ep.fit} data: epoch {ep.epoch} of at most "
                            f"{ep.max_epochs}")


# Every key `disclosures` may write under "not private"; docs/privacy.md ("What is not.") lists
# exactly these (tests/test_disclosures.py checks both ways).
NOT_PRIVATE_KEYS = ("n_train, n_test", "accuracy", "category_domain", "column_kinds",
                    "test_rows_dropped", "training images (Playground)",
                    "real column histograms (Playground)", "attack.json", "fidelity")


def disclosures(data: datasets.Dataset, scores: dict, *, fidelity: bool = False) -> dict:
    """What the ε above covers and what it does not, in plain words for metrics.json."""
    not_private = {
        "n_train, n_test": "public by the neighbouring relation (replace-one keeps n)",
    }
    if scores:
        not_private["accuracy"] = (
            "NOT private: every accuracy is measured on the real test records without noise, "
            "and real/* classifiers are also trained on the real training records; they "
            "describe the data, outside the epsilon above")
    not_private["attack.json"] = (
        "NOT private, not released: membership-attack scores (`python -m engine attack`) "
        "computed from the real training and held-back records, a diagnostic for the data "
        "owner outside the epsilon above; written only when asked for")
    if fidelity:
        not_private["fidelity"] = (
            "NOT private: per-column distances, dependence matrices and real-vs-synthetic "
            "histograms (metrics.json \"fidelity\") are measured on the real training "
            "records without noise; they describe the data, outside the epsilon above")
    for key in ("category_domain", "column_kinds", "test_rows_dropped"):
        if key in data.notes:
            not_private[key] = data.notes[key]
    # What the app shows beside a run (pages/playground.py, ui/live_view.py): real records,
    # without noise, to the person at the screen; never written into the run's files.
    if data.kind == "image":
        not_private["training images (Playground)"] = (
            "NOT private: the Playground's 'Peek at the training data' shows the first 100 "
            "real training images as they are")
    else:
        not_private["real column histograms (Playground)"] = (
            "NOT private: the Playground's live marginal chart draws each column's histogram "
            "of the real training records, without noise, beside the synthetic one")
    public = {k: v for k, v in data.notes.items() if k in ("split", "bounds", "source", "label")}
    return {"neighbouring relation": NEIGHBOURS,
            "covered by epsilon": "the synthetic records, samples and every released statistic "
                                  "listed under privacy.releases",
            "not private": not_private,
            "treated as public": public}

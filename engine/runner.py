"""One run from config to files: load data, train, evaluate, write artifacts.

The CLI and the app's job runner both call `execute`, so a run is the same everywhere.
Artifacts in `out_dir`: config.json, metrics.json, synthetic.npz (images) or
synthetic.csv (tabular), samples.png.
"""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path
from typing import Iterator

import numpy as np

from engine import data as datasets
from engine.config import RunConfig
from engine.device import resolve_device
from engine.errors import InputError
from engine.events import Event, TrainResult
from engine.jsonsafe import jsonable
from engine.registry import get_method, make_params
from engine.render import image_grid, table_image


def prepare(config: RunConfig):
    """Validate everything that can be checked before training; raise InputError."""
    config.validate()
    method = get_method(config.method)
    data = datasets.load(config.dataset, seed=config.seed, options=config.data_options)
    make_params(config.method, data, config.params)
    refuse = estimate(method, config, data).get("refuse")
    if refuse:  # a run that cannot fit in memory ends here with one line, not a traceback
        raise InputError(refuse)
    return method, data, resolve_device(config.device)


def estimate(method, config: RunConfig, data) -> dict:
    """The method's cost estimate before training ("estimated memory (GB)", "estimated
    s / iteration", "estimated seconds", "refuse"), from its preview; {} when it has none."""
    preview = getattr(method, "privacy_preview", None)
    keys = ("estimated memory (GB)", "estimated s / iteration", "estimated seconds", "refuse")
    return {k: v for k, v in (preview(config, data) if preview else {}).items() if k in keys}


def cost_line(config: RunConfig, prepared) -> str:
    """One line for the CLI before training, e.g. "estimated: 4.5 GB, 3.1 s/iteration, ~8 min";
    "" when the method gives no estimate. `prepared` is what `prepare` returned."""
    est = estimate(prepared[0], config, prepared[1])
    if "estimated seconds" not in est:
        return ""
    return (f"estimated: {est['estimated memory (GB)']:.2g} GB, {est['estimated s / iteration']:.2g} "
            f"s/iteration, ~{est['estimated seconds'] / 60:.1f} min of training")


def execute(config: RunConfig, out_dir: str | Path, *, stop: threading.Event | None = None,
            full_eval: bool = True, cnn_eval: bool = False, prepared=None) -> Iterator[Event]:
    """Run `config`, yield every trainer Event, write the artifacts, and finish with a
    "done" (or "cancelled") Event whose metrics hold the final evaluation."""
    method, data, device = prepared or prepare(config)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(config.to_json())
    t0 = time.perf_counter()
    result: TrainResult | None = None
    last = None
    for event in method.train(config, data, device, stop):
        if event.phase == "done":
            result, last = event.result, event
            break
        yield event
    if result is None:
        raise RuntimeError("the trainer ended without a result")
    train_seconds = time.perf_counter() - t0
    cancelled = bool(result.info.get("stopped"))

    write_synthetic(out, result, data)
    write_samples_png(out / "samples.png", result, data)
    scores: dict = {}
    t1 = time.perf_counter()
    if full_eval and not cancelled:
        from engine.evaluate import full_evaluation

        # Fitting the classifiers takes a while (minutes on 60k images): say so first.
        yield Event("evaluate", last.step, last.total, result.privacy.get("epsilon_spent", math.inf),
                    message="evaluating on the real test split")

        scores = full_evaluation(result.x, result.y, data, seed=config.seed, cnn=cnn_eval,
                                 device=str(device))
    metrics = {
        "status": "cancelled" if cancelled else "finished",
        "method": config.method,
        "dataset": config.dataset,
        "private": config.private,
        "epsilon_target": jsonable(config.epsilon),
        "epsilon_spent": jsonable(result.privacy.get("epsilon_spent", math.inf)),
        "delta": config.delta,
        "accountant": result.privacy.get("accountant"),
        "privacy": jsonable(result.privacy),
        "accuracy": scores,
        "seconds": {"train": round(train_seconds, 3), "evaluate": round(time.perf_counter() - t1, 3),
                    "total": round(time.perf_counter() - t0, 3)},
        "n_train": data.n_train, "n_test": len(data.y_test), "n_synthetic": len(result.y),
        "device": str(device),
        "info": jsonable(result.info),
    }
    if not config.private:
        metrics["note"] = "NON-PRIVATE reference run (epsilon = inf, no noise added)."
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2, sort_keys=True))
    yield Event("cancelled" if cancelled else "done", last.step, last.total,
                result.privacy.get("epsilon_spent", math.inf), metrics=scores, result=result,
                message=metrics["status"])


def write_synthetic(out: Path, result: TrainResult, data: datasets.Dataset) -> Path:
    if data.kind == "image":
        path = out / "synthetic.npz"
        np.savez_compressed(path, x=result.x.astype(np.float32), y=result.y)
        return path
    labelled = (result.y >= 0).any()
    frame = datasets.tabular_to_frame(result.x, data.columns,
                                      y=result.y if labelled else None,
                                      class_names=data.class_names,
                                      label=data.notes.get("label", "label"))
    path = out / "synthetic.csv"
    frame.to_csv(path, index=False)
    return path


def write_samples_png(path: Path, result: TrainResult, data: datasets.Dataset) -> None:
    if data.kind == "image":
        labels = result.y if (result.y >= 0).any() else np.zeros(len(result.y), int)
        names = data.class_names if (result.y >= 0).any() else ["samples"]
        image_grid(result.x, labels, names).save(path)
        return
    frame = datasets.tabular_to_frame(result.x[:20], data.columns).round(3)
    header = list(frame.columns) + ["label"]
    rows = [list(map(str, r)) + [data.class_names[lab] if lab >= 0 else ""]
            for r, lab in zip(frame.values.tolist(), result.y[:20])]
    table_image(rows, header).save(path)

"""Runs & Compare's numbers: the runs table and the privacy–utility lines, from run
records (engine/store/records.py) and whichever metrics those runs have.

Every metric is a reading of released synthetic data against real test records, and the
"real/…" references train on the real training records: none of them is private.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from engine.facade import RunRecord, RunStatus, differing_settings, real_key, settings_label
from ui.choices import format_epsilon

_CLASSIFIERS = {"logreg": "LogReg", "mlp": "MLP", "rf": "RF", "cnn": "CNN"}
_SCORES = {"roc_auc": "ROC-AUC", "f1_macro": "F1 (macro)"}
_ORDER = tuple(_CLASSIFIERS)


def metric_label(key: str) -> str:
    """"synthetic/logreg/roc_auc" → "LogReg ROC-AUC"; real/… keys say "(real data)"."""
    source, _, rest = key.partition("/")
    clf, _, score = rest.partition("/")
    text = f"{_CLASSIFIERS.get(clf, clf)} {_SCORES.get(score, score or 'accuracy')}"
    return text + (" (real data)" if source == "real" else "")


def _is_score(key: str) -> bool:
    parts = key.split("/")
    return parts[0] == "synthetic" and (len(parts) == 2 or
                                        (len(parts) == 3 and parts[2] in _SCORES))


def metric_keys(records: list[RunRecord]) -> list[str]:
    """The synthetic-data scores these runs have (classifier accuracies and, for tabular
    data, ROC-AUC and F1), LogReg first: the choices for the chart's y-axis and the
    table's columns. Counts such as the CNN's chosen epochs are no scores and left out."""
    keys = {k for r in records for k in r.metrics if _is_score(k)}

    def order(k: str):
        clf, _, score = k.split("/", 1)[1].partition("/")
        return (_ORDER.index(clf) if clf in _ORDER else len(_ORDER), clf,
                list(_SCORES).index(score) + 1 if score in _SCORES else 0)

    return sorted(keys, key=order)


def runs_rows(records: list[RunRecord], labels: dict[str, dict] | None = None,
              metrics: list[str] = ()) -> list[dict]:
    """Records → flat dicts for a table, with a column per key of `metrics` (empty where
    a run lacks it); `labels` are the runs' names and tags."""
    labels = labels or {}
    out = []
    for r in records:
        lab = labels.get(r.run_id, {})
        row = {"run": r.run_id, "name": lab.get("name", ""),
               "tags": ", ".join(lab.get("tags", [])), "method": r.method,
               "dataset": r.dataset, "epsilon": format_epsilon(r.epsilon), "seed": r.seed,
               "settings": settings_label(differing_settings(r.config.to_dict()))}
        row.update({metric_label(k): r.metrics.get(k) for k in metrics})
        secs = r.seconds
        row.update({"seconds": None if secs is None else round(secs, 1),
                    "status": r.status.value, "sweep": r.sweep or ""})
        out.append(row)
    return out


def privacy_utility(records: list[RunRecord], metric: str = "synthetic/logreg"
                    ) -> dict[str, Any]:
    """Finished runs → `metric` vs ε per configuration: mean, min and max over seeds.

    A configuration is a method plus the settings that differ from its defaults
    (engine.runs.sweeps), so two tunings of one method are two lines, not one averaged blur.
    Non-private runs (ε = ∞) become one reference level per configuration, and the same
    score of the classifier trained on real data (not private) the top reference.
    """
    by: dict[tuple[str, str, float], list[float]] = {}
    nonpriv: dict[tuple[str, str], list[float]] = {}
    real: list[float] = []
    reference = real_key(metric)
    for r in records:
        if r.status != RunStatus.FINISHED or metric not in r.metrics:
            continue
        value = r.metrics[metric]
        if reference in r.metrics:
            real.append(r.metrics[reference])
        group = (r.method, settings_label(differing_settings(r.config.to_dict())))
        if math.isinf(r.epsilon):
            nonpriv.setdefault(group, []).append(value)
        else:
            by.setdefault((*group, float(r.epsilon)), []).append(value)
    lines: dict[tuple[str, str], dict[str, list[float]]] = {}
    for (method, settings, eps), values in sorted(by.items()):
        d = lines.setdefault((method, settings),
                             {"epsilon": [], "mean": [], "lo": [], "hi": [], "n": []})
        d["epsilon"].append(eps)
        d["mean"].append(float(np.mean(values)))
        d["lo"].append(float(np.min(values)))
        d["hi"].append(float(np.max(values)))
        d["n"].append(len(values))
    return {"lines": lines, "metric": metric,
            "nonprivate": {g: float(np.mean(v)) for g, v in nonpriv.items()},
            "real": float(np.mean(real)) if real else None}


def chart_dataset(records: list[RunRecord], *preferred: str | None) -> str | None:
    """The dataset the privacy–utility chart opens on: the first of `preferred` (the
    dataset of the user's own latest run, then the one chosen in the Playground) that has
    finished runs, else the one with the most finished runs (ties: name order). It used
    to open on the first name, breast_cancer."""
    finished = [r.dataset for r in records if r.status == RunStatus.FINISHED]
    for name in preferred:
        if name in finished:
            return name
    if not finished:
        return min((r.dataset for r in records), default=None)
    return min(set(finished), key=lambda d: (-finished.count(d), d))


def grid_columns(n_pictures: int, kind: str) -> int:
    """Pictures per row of "Sample grids across ε": images side by side (at most 6), a
    table's marginal charts at most 2 a row (side by side they were slivers)."""
    return max(1, min(n_pictures, 6 if kind == "image" else 2))

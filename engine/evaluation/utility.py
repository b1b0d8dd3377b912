"""Downstream utility: train classifiers on synthetic data, test them on the real test split.

The same classifiers trained on the real training split give the reference row, so a
user sees how much of the gap is the generator and how much is privacy. Model selection
never looks at the test set.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score, roc_auc_score
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from engine.data.catalog import Dataset

MODELS = ("logreg", "mlp", "rf")


def make_classifier(name: str, seed: int = 0, *, scale: bool = True, hold_out: bool = True):
    """scale=False for pixels already in [0, 1], as the papers' evaluations use them;
    tabular columns come in mixed units and are standardised first. `hold_out=False`:
    the MLP trains without early stopping (`can_hold_out`)."""
    def scaled(model):
        return make_pipeline(StandardScaler(), model) if scale else model

    if name == "logreg":
        return scaled(LogisticRegression(max_iter=1000))
    if name == "mlp":
        # Early stopping holds out part of the *training* (synthetic) data, never the test set.
        return scaled(MLPClassifier((100,), max_iter=200, early_stopping=hold_out,
                                    random_state=seed))
    if name == "rf":
        return RandomForestClassifier(n_estimators=100, n_jobs=-1, random_state=seed)
    raise ValueError(f"unknown classifier {name!r}; choose one of {', '.join(MODELS)}")


def design_matrix(x: np.ndarray, data: Dataset) -> np.ndarray:
    """Classifier inputs: flattened pixels, or numeric columns plus one-hot categories."""
    if data.kind == "image":
        return x.reshape(len(x), -1).astype(np.float32)
    parts = []
    for j, col in enumerate(data.columns):
        if col.kind == "num":
            parts.append(x[:, j:j + 1].astype(np.float64))
        else:
            codes = np.clip(x[:, j].astype(int), 0, len(col.categories) - 1)
            parts.append(np.eye(len(col.categories))[codes])
    return np.hstack(parts)


def _score(model, x_test: np.ndarray, y_test: np.ndarray, n_classes: int, tabular: bool) -> dict:
    pred = model.predict(x_test)
    out = {"accuracy": float(accuracy_score(y_test, pred))}
    if tabular:
        out["f1_macro"] = float(f1_score(y_test, pred, average="macro"))
        proba = np.zeros((len(x_test), n_classes))
        proba[:, model.classes_] = model.predict_proba(x_test)
        try:
            if n_classes == 2:
                out["roc_auc"] = float(roc_auc_score(y_test, proba[:, 1]))
            else:
                out["roc_auc"] = float(roc_auc_score(y_test, proba, multi_class="ovr"))
        except ValueError as exc:  # e.g. a class absent from the test split
            # Undefined, not a number: null with the reason (strict JSON has no NaN).
            out["roc_auc"] = None
            out["roc_auc_undefined"] = f"ROC-AUC is undefined here: {exc}"
    return out


class _Constant:
    """Stands in for a classifier when the synthetic labels hold a single class."""

    def __init__(self, label: int):
        self.classes_ = np.array([label])

    def predict(self, x):
        return np.full(len(x), self.classes_[0])

    def predict_proba(self, x):
        return np.ones((len(x), 1))


def can_hold_out(y: np.ndarray, share: float = 0.1) -> bool:
    """Whether the MLP's early stopping can hold out a stratified `share` of these labels
    (scikit-learn's split needs two records of every class and a record of each on both
    sides). A small synthetic set with one record of a class cannot: a run's scoring
    failed on one (a 96-row upload, 10 epochs)."""
    counts = np.unique(y, return_counts=True)[1]
    held = math.ceil(share * len(y))
    return counts.min() >= 2 and held >= len(counts) and len(y) - held >= len(counts)


def fit_and_score(name: str, x_train, y_train, data: Dataset, *, seed: int = 0,
                  max_test: int | None = None) -> dict:
    x_test, y_test = data.x_test, data.y_test
    if max_test is not None and len(y_test) > max_test:
        idx = np.random.default_rng(seed).choice(len(y_test), max_test, replace=False)
        x_test, y_test = x_test[idx], y_test[idx]
    if len(np.unique(y_train)) < 2:
        model = _Constant(int(y_train[0]))
    else:
        model = make_classifier(name, seed, scale=data.kind != "image",
                                hold_out=can_hold_out(y_train))
        model.fit(design_matrix(x_train, data), y_train)
    return _score(model, design_matrix(x_test, data), y_test, data.n_classes, data.kind == "tabular")


def _subsample(x, y, n: int, seed: int):
    if len(y) <= n:
        return x, y
    idx = np.random.default_rng(seed).choice(len(y), n, replace=False)
    return x[idx], y[idx]


def quick_probe(x_syn: np.ndarray, y_syn: np.ndarray, data: Dataset, *, n: int = 2000,
                seed: int = 0) -> dict:
    """Seconds-scale live signal: logistic regression on ≤ n synthetic records, tested on
    ≤ 2,000 real test records."""
    if (y_syn < 0).all():
        return {}
    x, y = _subsample(x_syn, y_syn, n, seed)
    return {"probe/logreg": fit_and_score("logreg", x, y, data, seed=seed, max_test=2000)["accuracy"]}


_REAL_SCORES: dict[tuple, dict] = {}


def _data_key(data: Dataset) -> tuple:
    """Which split a real-data reference was fitted and tested on (contents, not identity)."""
    return (data.name, data.x_train.shape, hash(data.y_train.tobytes()),
            hash(data.x_train[:64].tobytes()), hash(data.y_test.tobytes()),
            hash(data.x_test[:64].tobytes()))


def _reference_file(data: Dataset, models: tuple[str, ...], seed: int) -> Path:
    """Where the real-data reference is kept on disk: named by the whole split's contents
    (hashed whole, not by `_data_key`'s sample: another test split must miss), the columns,
    the models, the seed and scikit-learn's version (the scores are a deterministic
    function of these)."""
    import hashlib

    import sklearn

    from engine.store.cost_cache import cache_root

    h = hashlib.blake2b(digest_size=16)
    for a in (data.x_train, data.y_train, data.x_test, data.y_test):
        h.update(np.ascontiguousarray(a).tobytes())
    columns = [(c.name, c.kind, c.categories) for c in data.columns or []]
    h.update(repr((data.name, data.kind, columns, models, seed, sklearn.__version__)).encode())
    return cache_root() / "real-references" / f"{h.hexdigest()}.json"


def _saved_reference(path: Path) -> dict | None:
    from engine.core.jsonsafe import strict_loads

    try:
        return strict_loads(path.read_text())
    except (OSError, ValueError):
        return None


def real_reference(data: Dataset, models: tuple[str, ...], seed: int = 0) -> dict:
    """The classifiers trained on the real training split. It does not depend on the run,
    so it is fitted once per (dataset contents, models, seed): kept in this process and in
    a file beside the run store (engine/store/cost_cache.cache_root), which only this
    machine's user reads, as they read the same figures in each run's metrics.json."""
    key = (*_data_key(data), models, seed)
    if key not in _REAL_SCORES:
        path = _reference_file(data, models, seed)  # hashed once: the whole split
        saved = _saved_reference(path)
        if saved is None:
            from engine.core.jsonsafe import write_json

            saved = {m: fit_and_score(m, data.x_train, data.y_train, data, seed=seed)
                     for m in models}
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_json(path, saved, atomic=True)
            except OSError:
                pass  # a read-only store: fitted again next time
        _REAL_SCORES[key] = saved
    return _REAL_SCORES[key]


def real_reference_fitted(data: Dataset, models: tuple[str, ...] = MODELS, seed: int = 0) -> bool:
    """Whether the real-data reference is fitted already, in this process or on disk
    (scoring a run then fits the classifiers on the synthetic data only:
    engine/methods/scoring_cost.py)."""
    models = tuple(models)
    key = (*_data_key(data), models, seed)
    if key not in _REAL_SCORES:
        saved = _saved_reference(_reference_file(data, models, seed))
        if saved is None:
            return False
        _REAL_SCORES[key] = saved  # read (and the split hashed) once: scoring takes it here
    return True


def full_evaluation(x_syn: np.ndarray, y_syn: np.ndarray, data: Dataset, *,
                    models: tuple[str, ...] = MODELS, include_real: bool = True,
                    seed: int = 0, seconds: dict | None = None) -> dict:
    """Train each classifier on the synthetic data and on the real training data, test
    both on the real test split. Keys: "synthetic/<model>[/<score>]", "real/<model>…".
    `seconds`, when given, gets "score_synthetic" and "score_real" (0 when the real
    reference was fitted before: `real_reference`)."""
    if (y_syn < 0).all():
        return {"note": "unlabelled synthetic data: no downstream classifier"}
    out: dict = {}

    def put(prefix: str, scores: dict[str, dict]):
        for model, s in scores.items():
            out[f"{prefix}/{model}"] = s["accuracy"]
            for k, v in s.items():
                if k != "accuracy":
                    out[f"{prefix}/{model}/{k}"] = v

    t0 = time.perf_counter()
    put("synthetic", {m: fit_and_score(m, x_syn, y_syn, data, seed=seed) for m in models})
    t1 = time.perf_counter()
    if include_real:
        put("real", real_reference(data, tuple(models), seed))
    if seconds is not None:  # what the scoring estimate learns from (metrics.json "seconds")
        seconds.update(score_synthetic=round(t1 - t0, 3),
                       score_real=round(time.perf_counter() - t1, 3))
    return out


_REAL_CNN: dict[tuple, dict] = {}


def cnn_scores(x_syn: np.ndarray, y_syn: np.ndarray, data: Dataset, *, include_real: bool = True,
               seed: int = 0, device: str = "cpu"):
    """The small CNN trained on the synthetic data, and (once per process, like
    `real_reference`) on the real training data, both tested on the real test split.

    A generator: yields engine.evaluation.cnn.Epoch progress; `yield from` gives the scores
    {"synthetic/cnn", "synthetic/cnn/epochs_chosen", "real/cnn"}."""
    from engine.evaluation.cnn import scored_epochs

    res = yield from scored_epochs(x_syn, y_syn, data.x_test, data.y_test, device=device, seed=seed,
                                   n_classes=data.n_classes)
    out = {"synthetic/cnn": res["accuracy"], "synthetic/cnn/epochs_chosen": res["epochs_chosen"]}
    if include_real:
        key = (*_data_key(data), seed)
        if key not in _REAL_CNN:
            _REAL_CNN[key] = yield from scored_epochs(
                data.x_train, data.y_train, data.x_test, data.y_test, device=device, seed=seed,
                n_classes=data.n_classes, fit="real")
        out["real/cnn"] = _REAL_CNN[key]["accuracy"]
    return out

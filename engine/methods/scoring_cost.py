"""What scoring a run will cost on this machine, before it runs: the LogReg, MLP and RF
fits on the synthetic data and, once per process, on the real training split (the
reference), plus the tabular fidelity. On Fashion-MNIST that is minutes (223 s of a
4.5-minute run, issue 43) and the preview used to leave it out.

Sources, best first, as for training (engine/store/cost_cache.py):
- measured: the scoring seconds that the newest finished runs in this store recorded
  (metrics.json "seconds": "score_synthetic", "score_real") on the same data shape
  (dataset, n_train, n_synthetic, CNN or not), any method: scoring sees only the
  synthetic data's shape. The real-data reference is counted where this process has
  not fitted it yet (`engine.evaluation.utility.real_reference_fitted`); the web server cannot
  know which trainer will take the run and counts it.
- timed: each classifier fitted here on PROBE_ROWS rows of stand-in data of the run's
  shape (engine/methods/stand_in.py: low-rank class structure like real images, no
  record read, so no privacy cost), grown while cheap (`_calibrate`: ×4 rows while the
  next timing is expected under PROBE_BUDGET_S, up to the run's rows) and scaled from
  the largest timed size to the run's sizes (`scaled`). Cached
  like the training rates (on disk, re-timed when old or when the load moved), and timed
  away from the web server (engine/runs/cost_probe.py) like them. A rough first figure:
  finished runs replace it (bench/preview_error.py prints both errors).
Nothing here reads a record.
"""

from __future__ import annotations

import math
import statistics
import time
import warnings
from typing import Any


from engine.store import cost_cache
from engine.methods.preview import MEASURING
from engine.methods.stand_in import design_matrix

SECONDS_KEY = "estimated scoring seconds"
BASIS_KEY = "scoring basis"
PROBE_ROWS = 4000  # stand-in rows each classifier is timed on first (fewer for a smaller set)
# A timing expected to take under this is made again on 4× the rows (up to the run's):
# scaling a table's 4,000 timed rows to 32,000 predicted 2.2× the fits' seconds (the
# census bench table: stand-in fits grow as rows^0.76 there, not GROWTH), while a
# Fashion-MNIST timing (~5 s at 4,000 rows) stays one timing.
PROBE_BUDGET_S = 5.0
RF_SHARE = 5  # the forest is timed on 1/RF_SHARE of its trees (the probe's slowest fit)
GROWTH = 1.15  # fit seconds grow as rows ** GROWTH (see `scaled`)
NEWEST = 5  # finished runs a measured figure is the median of
_RATES = cost_cache.TimedCache("scoring")


def _layout(data) -> int | tuple[int, ...]:
    """The classifiers' design matrix (engine/evaluation/utility.design_matrix): an
    image's width in pixels, or a table's blocks (1 per numeric column, k per column of
    k categories, one-hot)."""
    if data.kind == "image":
        return int(math.prod(data.x_train.shape[1:]))
    return tuple(1 if c.kind == "num" else len(c.categories) for c in data.columns)


def _calibrate(layout: int | tuple[int, ...], classes: int, tabular: bool,
               models: tuple[str, ...], rows: int, target: int | None = None) -> dict:
    """{model: seconds of a fit + predict on "rows" stand-in rows of `layout`, "rows": that
    count}: timed on `rows`, then on 4× as many (at most `target`, the run's rows) while
    that timing is expected to take under PROBE_BUDGET_S."""
    out = {**_time_fits(layout, classes, tabular, models, rows), "rows": rows}
    while target is not None and rows < target:
        bigger = min(4 * rows, target)
        if scaled(sum(out[m] for m in models), rows, bigger) > PROBE_BUDGET_S:
            break
        rows = bigger
        out = {**_time_fits(layout, classes, tabular, models, rows), "rows": rows}
    return out


def _time_fits(layout, classes: int, tabular: bool, models: tuple[str, ...],
               rows: int) -> dict[str, float]:
    """{model: seconds of a fit + predict on `rows` stand-in rows of `layout`}."""
    from engine.evaluation.utility import make_classifier

    out: dict[str, float] = {}
    blocks = layout if isinstance(layout, tuple) else None
    x, y = design_matrix(rows, sum(blocks) if blocks else layout, classes, blocks=blocks)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings on noise: timing only
        for model in models:
            clf, share = make_classifier(model, scale=tabular), 1.0
            if model == "rf":  # its trees cost alike: time a few, count them all
                trees = clf.get_params()["n_estimators"]
                clf.set_params(n_estimators=max(1, trees // RF_SHARE))
                share = clf.get_params()["n_estimators"] / trees
            t = time.perf_counter()
            clf.fit(x, y).predict(x[:200])
            out[model] = (time.perf_counter() - t) / share
    return out


def scaled(seconds: float, rows: int, n: int) -> float:
    """Seconds of a fit on `n` rows from one on `rows` stand-in rows. The fits grow a
    little faster than the rows (more LBFGS iterations, deeper trees): GROWTH is the
    exponent the real Fashion-MNIST records showed from 4,000 to 12,000 rows
    (5.7 s to 20.2 s for the three fits: 3^1.15). Finished runs' measured seconds
    replace it as soon as there are any."""
    return seconds * (max(n, 1) / max(rows, 1)) ** GROWTH


def _same_shape(metrics: dict, config, data, n_syn: int) -> bool:
    return (metrics.get("n_train") == data.n_train and metrics.get("n_synthetic") == n_syn
            and bool(config.cnn_eval) == any(k.startswith("synthetic/cnn")
                                             for k in metrics.get("accuracy") or {}))


def finished_scoring(config, data, store=None) -> list[dict[str, float]]:
    """Scoring seconds that the newest finished runs here measured on this data shape:
    [{"synthetic": s, "real": s or None}] (None: that run's reference was fitted before)."""
    n_syn = config.n_synthetic or data.n_train
    try:
        out = []
        for rec, m in cost_cache.finished_on(config.dataset, config.data_options, store):
            if rec.sweep == "gallery":  # measured on another machine
                continue
            secs = m.get("seconds") or {}
            syn = secs.get("score_synthetic")
            if isinstance(syn, (int, float)) and _same_shape(m, config, data, n_syn):
                real = secs.get("score_real")
                out.append({"synthetic": float(syn),
                            "real": float(real) if isinstance(real, (int, float)) and real > 0
                            else None})
            if len(out) >= NEWEST:
                break
        return out
    except Exception:  # a store we cannot read: no measured figure, the basis says so
        return []


def estimate(config, data, *, threads: int | None = None, away=None, store=None,
             real_fitted: bool = False) -> dict[str, Any]:
    """The preview's scoring keys: SECONDS_KEY and BASIS_KEY (the CNN, when asked for,
    is engine/methods/registry's "estimated CNN seconds (at most)", on top).
    `real_fitted`: this process has the real-data reference already (it is not fitted again)."""
    from engine.evaluation.utility import MODELS

    n_syn = config.n_synthetic or data.n_train
    seen = finished_scoring(config, data, store)
    if seen:
        syn = statistics.median(s["synthetic"] for s in seen)
        reals = [s["real"] for s in seen if s["real"] is not None]
        real = 0.0 if real_fitted else (statistics.median(reals) if reals else syn * data.n_train / n_syn)
        n = len(seen)
        return {SECONDS_KEY: syn + real,
                BASIS_KEY: f"measured by {cost_cache.finished_runs(n)} on this data"
                           + ("" if real_fitted else ", real-data reference included")}
    if threads is None:  # this process times: its own threads (the web server passes them)
        import torch

        threads = torch.get_num_threads()
    target = max(n_syn, data.n_train)
    rows = min(PROBE_ROWS, target)
    # the stand-in's name in the key: timings on an older stand-in are not reused
    key = ("scoring", "low-rank stand-in, one-hot categories, grown while cheap",
           _layout(data), data.n_classes, data.kind, MODELS, rows, target, threads)
    compute = lambda: _calibrate(_layout(data), data.n_classes, data.kind != "image", MODELS,  # noqa: E731
                                 rows, target)
    timed = away(_RATES, key) if away is not None else _RATES.get(key, compute)
    if timed is None:
        return {BASIS_KEY: MEASURING}
    rows = timed.get("rows", rows)
    seconds = sum(scaled(timed[m], rows, n_syn) for m in MODELS)
    if not real_fitted:
        seconds += sum(scaled(timed[m], rows, data.n_train) for m in MODELS)
    return {SECONDS_KEY: float(seconds),
            BASIS_KEY: "timed now on stand-in data, no finished run yet"
                       + ("" if real_fitted else ", real-data reference included")}

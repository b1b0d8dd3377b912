"""Independent marginals: a DP baseline that keeps each column's distribution and nothing
else. Every column (every pixel, for images) gets a histogram over public bins — one per
class when `conditional`, i.e. a naive-Bayes generator — released once with Gaussian
noise together with the class counts; synthetic records draw each column independently
from the noisy histograms of their class. Any generator that models how columns relate
should beat it; when one does not, the chart says so.

Privacy (replace-one neighbours, n public). The statistics released are, for every
column j, the histogram H_j over its public bins (H_j[c, b] = #{i : y_i = c, x_ij in bin
b} when conditional, else a single row) and the class counts. One record adds 1 to at
most one cell of each H_j and 1 to one class count, whatever its values (out-of-range
values are clipped into the end bins, record by record; a zero-inflated column's value
adds nothing where the record sits at the mass, which its flag column records).
Replacing it removes at most 1 from one cell and adds at most 1 to one cell of each
histogram, possibly in another class's row: the L2 change is at most √2 per histogram and
per class-count vector (0 when the cell is the same), √(2(d+1)) for all of them together.
Each histogram is one Gaussian release with sensitivity √2; engine.privacy.accountant composes the
d column releases and the counts release exactly (ComposeGaussian), the counts taking
`counts_share` of the budget. Noise comes from engine.privacy.noise.gaussian_noise (OS entropy).
The bins are public: equal-width on the column's public bounds; the public category list
for categoricals; [0, 1] for pixels; for a numeric column without public bounds,
engine.privacy.dp_bounds' signed geometric grid, 1, 2 or 4 cells per doubling as the public n and
σ allow. That histogram is the column's range release too, so no budget goes to a
separate bounds release. In every numeric column of a table, cells under dp_bounds' noise
floor are dropped before sampling, so noise does not invent values far out and no
synthetic value lies more than one cell beyond the data (an age column with 4 cells per
doubling is drawn up to 90.5, not up to the 128 its power-of-two bucket reached).
Clamping, thresholding, normalising and sampling are post-processing.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, replace
from typing import Iterator

import numpy as np
import torch

from engine.data import column_kinds
from engine.privacy import dp_bounds
from engine.data.dataset import Dataset
from engine.methods.events import Event, TrainResult
from engine.methods.tabular_bins import Column, bin_codes, n_columns, public_columns  # noqa: F401
from engine.methods.knobs import check_knobs, knob
from engine.privacy.noise import gaussian_noise
from engine.privacy.accountant import ACCOUNTANTS, PrivacyReport, Release, calibrate_releases

TITLE = "Independent marginals"
# The method's other parts, found through engine/methods/registry.py (its checklist).
AUDIT = "engine.methods.marginals.audit"
COST = "engine.methods.marginals.cost"

HISTOGRAM_SENSITIVITY = math.sqrt(2.0)  # one record moves one count per histogram


@dataclass(frozen=True)
class Params:
    bins: int = knob(8, lo=2, main=True,
                     help="Equal-width bins per numeric column (or pixel) on its public "
                          "bounds. More bins = finer shape, fewer records per bin against "
                          "the same noise.")
    conditional: bool = knob(True, main=True,
                             help="One histogram per class and column (naive Bayes); off: "
                                  "columns and label all drawn independently.")
    counts_share: float = knob(0.05, lo=0.0, hi=1.0, lo_open=True, hi_open=True,
                               help="Budget share for the class counts.")
    accountant: str = knob("exact", choices=tuple(ACCOUNTANTS),
                           help="How the histogram releases are composed.")

    @classmethod
    def for_data(cls, data: Dataset) -> "Params":
        """Bins grow as the cube root of the records per class (half the Rice rule,
        2·n^⅓: noise makes fine bins costly), between 4 and 32; n and the number of
        classes are public."""
        per_class = data.n_train / max(1, data.n_classes)
        return cls(bins=int(min(32, max(4, round(per_class ** (1 / 3))))))

    def validate(self, data: Dataset) -> "Params":
        check_knobs(self, TITLE, data)
        return self


# ------------------------------------------------------------------- public bins


def grid_resolution(data: Dataset, params: Params, sigma_hist: float) -> int:
    """dp_bounds' cells per doubling for the columns without public bounds, from public
    figures only: the records per histogram row (n / classes when conditional) and σ."""
    rows = data.n_classes if params.conditional else 1
    return dp_bounds.steps_per_octave(data.n_train // rows, sigma_hist)


def date_resolution(data: Dataset, params: Params, sigma_hist: float) -> int:
    """dp_bounds' days per cell for date columns without public bounds, from the same
    public figures as `grid_resolution`."""
    rows = data.n_classes if params.conditional else 1
    return dp_bounds.day_width(data.n_train // rows, sigma_hist)


def record_codes(x: np.ndarray, columns: list[Column], data: Dataset) -> np.ndarray:
    """`bin_codes` of the model view's records, with -1 (no cell) for the value of a
    zero-inflated column where the record sits at the mass: its flag column carries that
    fact, and the value's histogram describes the continuous part only (else, drawn
    independently of the flag, the mass would be drawn twice). Row i still depends on
    record i only."""
    codes = bin_codes(x, columns)
    if data.kind == "tabular":
        for j, flag in column_kinds.mass_flags(data):
            codes[x[:, flag] >= 1, j] = -1
    return codes


def column_counts(codes: np.ndarray, y: np.ndarray, sizes: list[int], n_classes: int,
                  conditional: bool) -> np.ndarray:
    """(rows, Σ sizes) counts, rows = n_classes if conditional else 1: column j's
    histogram is the block [offset_j, offset_j + size_j). Each record adds 1 to one cell
    of every block, in its class's row, or nothing to a block where its code is -1."""
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    rows = n_classes if conditional else 1
    row = y if conditional else np.zeros(len(y), np.int64)
    flat = (row[:, None] * int(sum(sizes)) + offsets[None, :] + codes)[codes >= 0]
    return np.bincount(flat, minlength=rows * int(sum(sizes))).reshape(rows, -1).astype(np.float64)


# ------------------------------------------------------------------- accounting


def _calibrate(config, params: Params, data: Dataset) -> PrivacyReport:
    releases = [Release("class counts", HISTOGRAM_SENSITIVITY, share=params.counts_share),
                Release("column histograms", HISTOGRAM_SENSITIVITY, count=n_columns(data),
                        share=1.0 - params.counts_share)]
    return calibrate_releases(epsilon=config.epsilon, delta=config.delta, releases=releases,
                              accountant=params.accountant)


def privacy_preview(config, params: Params, data: Dataset) -> dict:
    """The noise per count and what it meets: records per histogram cell on average."""
    data = column_kinds.model_view(data)
    report = _calibrate(config, params, data)
    hist = report.releases[1]
    rows = data.n_classes if params.conditional else 1
    out = {"histograms": n_columns(data),
           "noise multiplier per histogram": hist.noise_multiplier,
           "noise std per count": hist.sigma,
           "records per numeric bin (mean)": data.n_train / (rows * params.bins),
           "accountant": report.accountant,
           **({"cells per doubling (columns without public bounds)":
               grid_resolution(data, params, hist.sigma)}
              if dp_bounds.columns_without_bounds(data) else {}),
           "hint": "Independent marginals keep each column's distribution"
                   f"{' within each class' if params.conditional else ''} and nothing else "
                   "(no relations between columns): a baseline for the other methods."}
    return out  # the δ warning is engine/methods/preview.py's, for every method


# --------------------------------------------------------------------- release


def train(config, params: Params, data: Dataset, device, stop) -> Iterator[Event]:
    """Release the histograms once, then sample records from them (post-processing).
    One release and one sampling pass; `stop` set before the release ends the run with
    nothing released (no records, ε 0)."""
    t0 = time.perf_counter()
    data = column_kinds.model_view(data)  # + point-mass flags (engine/data/column_kinds.py)
    report = _calibrate(config, params, data)
    sigma_counts, sigma_hist = (r.sigma for r in report.releases)
    columns = public_columns(data, params.bins,
                             steps_per_octave=grid_resolution(data, params, sigma_hist),
                             day_width=date_resolution(data, params, sigma_hist))
    sizes = [c.size for c in columns]
    if stop is not None and stop.is_set():
        nothing = replace(report, epsilon_spent=0.0,
                          releases=tuple(replace(r, count=0) for r in report.releases))
        info = {"method": TITLE, "params": asdict(params), "steps": 0}
        result = TrainResult(np.zeros((0, *data.x_train.shape[1:])), np.zeros(0, np.int64), nothing, info,
                             seconds=time.perf_counter() - t0, stopped=True)
        yield Event("done", 0, 1, 0.0, result=result, message="stopped before the release")
        return
    # The only code that reads private records: two Gaussian releases.
    counts = np.bincount(data.y_train, minlength=data.n_classes).astype(np.float64)
    counts = counts + _noise(counts.shape, sigma_counts)
    codes = record_codes(data.x_train, columns, data)
    hist = column_counts(codes, data.y_train, sizes, data.n_classes, params.conditional)
    hist = hist + _noise(hist.shape, sigma_hist)
    del codes
    spent = report.epsilon_spent
    yield Event("release", 0, 1, spent, message=f"released {len(columns)} column histograms and "
                                                 f"class counts ({report.accountant})")

    # Post-processing from here: the noisy statistics only.
    rng = np.random.default_rng(config.seed)  # sampling randomness, not DP noise
    label_p = _probabilities(counts[None, :], [data.n_classes], [False], sigma_counts)[0][0]
    cdf = _probabilities(hist, sizes, [c.floor for c in columns], sigma_hist)
    n_out = config.n_synthetic or data.n_train
    y = rng.choice(data.n_classes, size=n_out, p=label_p)
    x = _draw(rng, y if params.conditional else np.zeros_like(y), cdf, columns, data)
    x = column_kinds.restore(x, data)  # kinds enforced (tables; images pass through)
    show = slice(0, min(100, n_out))
    yield Event("train", 1, 1, spent, samples=(x[show], y[show]))
    info = {"method": TITLE, "params": asdict(params), "steps": 1,
            "histograms": len(columns), "bins": sizes,
            "released_label_distribution": label_p.tolist()}
    result = TrainResult(x, y.astype(np.int64), report, info, seconds=time.perf_counter() - t0,
                         stopped=False)
    yield Event("done", 1, 1, spent, result=result)


def _noise(shape, std: float) -> np.ndarray:
    return gaussian_noise(shape, std, dtype=torch.float64).numpy()


def _probabilities(noisy: np.ndarray, sizes: list[int], floor: list[bool],
                   sigma: float) -> list[np.ndarray]:
    """Per column, (rows, size) sampling probabilities from noisy counts: negative counts
    clamped to 0; where `floor`, counts under dp_bounds' noise floor dropped too. Clamping
    alone leaves every empty cell about 0.4σ of mass: summed over a column's empty tail
    cells that invents values far out (dp_bounds' wide grid) or fattens a sparse tail (a
    capital gain's continuous part: 15 % of the synthetic gains above 20,000 against 6 %
    real, before the floor). A row with no mass left keeps its largest cell."""
    out, start = [], 0
    for size, drop in zip(sizes, floor):
        block = noisy[:, start:start + size]
        start += size
        p = np.clip(block, 0.0, None)
        if drop:
            p = np.where(block > dp_bounds.noise_floor(size, sigma), p, 0.0)
        empty = p.sum(1) <= 0
        p[empty] = 0.0
        p[empty, block[empty].argmax(1)] = 1.0
        out.append(p / p.sum(1, keepdims=True))
    return out


def _draw(rng, rows: np.ndarray, probs: list[np.ndarray], columns: list[Column],
          data: Dataset) -> np.ndarray:
    """Each column independently: a bin from its row's probabilities, then a value
    uniform within the bin (numeric) or the category code."""
    n = len(rows)
    x = np.empty((n, len(columns)), dtype=np.float64)
    for j, (p, col) in enumerate(zip(probs, columns)):
        cdf = np.cumsum(p, axis=1)
        u = rng.random(n)
        b = np.minimum((u[:, None] > cdf[rows]).sum(1), col.size - 1)
        if col.edges is None:
            x[:, j] = b
        else:
            lo, hi = col.edges[b], col.edges[b + 1]
            x[:, j] = lo + rng.random(n) * (hi - lo)
    if data.kind == "image":
        return x.reshape(n, *data.image_shape).astype(np.float32)
    return x

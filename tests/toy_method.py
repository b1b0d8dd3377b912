"""A toy method that lives only under tests/: noisy class means of images. It proves that
a method is one module plus one registry line (engine/methods/registry.py's checklist):
tests/test_method_contract.py and tests/test_audit.py register it and run the whole
contract and its own audit on it, with nothing in engine/ naming it.

Privacy (replace-one neighbours, n public): pixels clipped to [0, 1] record by record;
the statistic is S[c] = (1/n)·Σ_{i: y_i = c} x_i, a (classes × pixels) table. Replacing
one record takes its pixels out of one row and puts the new record's into one row: L2
change at most √(2·d)/n. One Gaussian release (engine.privacy.noise.gaussian_noise, the
statistic snapped to the noise's grid), σ calibrated by engine.privacy.accountant for the
target (ε, δ). The samples are post-processing: a class's noisy row times the number of
classes (its mean, for balanced classes) plus a little jitter.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import asdict, dataclass, replace

import numpy as np
import torch

from engine.core.errors import InputError
from engine.methods.audit_harness import audit_config, audit_pair, target_multiplier
from engine.methods.events import Event, TrainResult
from engine.methods.knobs import check_knobs, knob
from engine.privacy.accountant import Release, calibrate_releases
from engine.privacy.noise import gaussian_noise, snap

NAME = "toy"  # the name the tests register it under
TITLE = "Noisy class means (toy)"
DATA_KINDS = ("image",)
AUDIT = __name__  # its audit is RELEASES below
RELEASE = "class pixel sums / n"


@dataclass(frozen=True)
class Params:
    jitter: float = knob(0.05, lo=0.0, hi=1.0, help="Std of the pixel jitter of a sample.")

    @classmethod
    def for_data(cls, data) -> "Params":
        return cls()

    def validate(self, data) -> "Params":
        check_knobs(self, TITLE, data)
        if data.kind != "image":
            raise InputError(f"{TITLE} models images only.")
        return self


def _calibrate(config, data):
    d = int(np.prod(data.x_train.shape[1:]))
    return calibrate_releases(epsilon=config.epsilon, delta=config.delta,
                              releases=[Release(RELEASE, math.sqrt(2 * d) / data.n_train)])


def privacy_preview(config, params: Params, data) -> dict:
    r = (report := _calibrate(config, data)).releases[0]
    return {"noise multiplier": r.noise_multiplier, "noise std": r.sigma,
            "accountant": report.accountant}


def release(data, sigma: float) -> torch.Tensor:
    """The only read of the records: S (module docstring) plus N(0, σ²) per cell."""
    x = np.clip(data.x_train.reshape(data.n_train, -1), 0.0, 1.0).astype(np.float64)
    sums = np.zeros((data.n_classes, x.shape[1]))
    np.add.at(sums, data.y_train, x)
    stat = torch.from_numpy(sums / data.n_train)
    return snap(stat, sigma) + gaussian_noise(stat.shape, sigma, dtype=torch.float64)


def train(config, params: Params, data, device, stop):
    t0 = time.perf_counter()
    report = _calibrate(config, data)
    if stop is not None and stop.is_set():  # nothing released: no records, ε 0
        nothing = replace(report, epsilon_spent=0.0,
                          releases=tuple(replace(r, count=0) for r in report.releases))
        empty = TrainResult(np.zeros((0, *data.x_train.shape[1:]), np.float32),
                            np.zeros(0, np.int64), nothing, stopped=True)
        yield Event("done", 0, 1, 0.0, result=empty)
        return
    noisy = release(data, report.releases[0].sigma).numpy()
    yield Event("release", 0, 1, report.epsilon_spent)
    rng = np.random.default_rng(config.seed)  # sampling randomness, not DP noise
    n = config.n_synthetic or data.n_train
    y = rng.integers(data.n_classes, size=n)
    x = noisy[y] * data.n_classes + params.jitter * rng.standard_normal((n, noisy.shape[1]))
    x = np.clip(x, 0.0, 1.0).reshape(n, *data.x_train.shape[1:]).astype(np.float32)
    result = TrainResult(x, y.astype(np.int64), report, {"method": TITLE, "params": asdict(params)},
                         seconds=time.perf_counter() - t0)
    yield Event("done", 1, 1, report.epsilon_spent, result=result)


def release_scores(trials: int, *, epsilon: float, delta: float, m: int = 20, d: int = 4):
    """The audit: `release` with σ from `_calibrate`, on a pair where record 0 (all ones)
    moves from class 0 to class 1 — the change √(2d)/n, the stated sensitivity."""
    from engine.data.dataset import Dataset

    x = np.zeros((m, 1, 1, d), np.float32)
    x[0] = 1.0
    y0 = np.arange(m) % 2
    y1 = y0.copy()
    y1[0] = 1
    d0, d1 = (Dataset("audit", "image", x, y, x[:2], y[:2], ["0", "1"], (1, 1, d))
              for y in (y0, y1))
    config = audit_config(NAME, epsilon, delta)
    s0, s1 = audit_pair(lambda data: release(data, _calibrate(config, data).releases[0].sigma),
                        sys.modules[__name__], d0, d1, trials)  # its gaussian_noise
    return s0, s1, target_multiplier(epsilon, delta)


RELEASES = {"toy class means": release_scores}

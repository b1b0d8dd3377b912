"""DP-MERF's audits (engine/audit/lower_bound.py runs them; engine/methods/audit_harness.py
is the harness): its releases as `train` makes them, through `_release` — the smallest
function `train` calls that holds the whole release (image and mixed tabular
embeddings, class counts) — with σ from `_calibrate`, and the numeric-bounds histogram
(engine/methods/bounds_audit.py).

Privacy assumptions under test: the embedding moves by at most 2/m (images) or 2√2/m
(mixed tabular) when one record is replaced, the class counts by √2, and each release
gets its planned share of the target budget; the generator sees only `_post_process`
of the releases. Each audit returns (scores on D0, scores on D1, claimed multiplier).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from engine.methods.audit_harness import (DELTA, EPSILON, audit_config, audit_pair, draws,
                                          target_multiplier, twice)
from engine.methods.bounds_audit import bounds_draws, bounds_histogram_scores
from engine.methods.dpmerf import method as dpmerf
from engine.methods.dpmerf.plan import make_plan


def _odd_pi_frequencies(n_features: int, seed: int) -> torch.Tensor:
    """(1, D/2) frequencies that are odd multiples of π, so φ(1) = −φ(0) exactly: the
    worst case for a unit-norm feature map (public frequencies may be anything)."""
    gen = torch.Generator().manual_seed(seed)
    return math.pi * (2 * torch.randint(-3, 4, (1, n_features // 2), generator=gen) + 1).float()


def _image_pair(m: int, n_classes: int, *, move_label: bool = False):
    """Two 1-pixel image datasets: record 0 (class 0) is 0 in D0; in D1 it is 1, or, with
    `move_label`, it keeps its pixel and moves to class 1."""
    from engine.data.dataset import Dataset

    y0 = np.arange(m) % n_classes
    x0 = np.zeros((m, 1, 1, 1), np.float32)
    x1, y1 = x0.copy(), y0.copy()
    if move_label:
        y1[0] = 1
    else:
        x1[0] = 1.0
    names = [str(c) for c in range(n_classes)]
    return tuple(Dataset("audit", "image", x, y, x[:2], y[:2], names, (1, 1, 1))
                 for x, y in ((x0, y0), (x1, y1)))


def _release(config, params, w: torch.Tensor, name: str = "mean embedding"):
    """dpmerf's own release path: `make_plan` (frequencies swapped for `w`), σ from
    `_calibrate`, then `_release`; returns the statistic `name` as `_release` released it,
    after checking that what the generator gets is `_post_process` of the releases alone."""

    def release(data):
        plan = make_plan(data, params, torch.Generator().manual_seed(0))
        plan.w = w
        sigma = dpmerf._calibrate(config, data, params)[1]
        emb, probs, released = dpmerf._release(plan, data, params, sigma, "cpu",
                                               params.labels != "none")
        again = dpmerf._post_process(released, data.n_train, data.n_classes)
        if not (torch.equal(emb, again[0]) and torch.equal(probs, again[1])):
            raise AssertionError("dpmerf._release hands the generator more than its releases.")
        return released[name]
    return release


def _scores(d0, d1, trials: int, *, epsilon: float, delta: float, n_features: int, seed: int):
    """Audit dpmerf's embedding release on the pair (d0, d1): (scores on d0, scores on d1,
    claimed noise multiplier). Labels "balanced": the embedding is the only release."""
    params = dpmerf.Params(n_features=n_features, labels="balanced")
    config = audit_config("dpmerf", epsilon, delta)
    release = _release(config, params, _odd_pi_frequencies(n_features, seed))
    s0, s1 = audit_pair(release, dpmerf, d0, d1, trials)
    return s0, s1, target_multiplier(epsilon, delta)


def embedding_scores(trials: int, *, epsilon: float, delta: float, m: int = 20,
                     n_features: int = 16, n_classes: int = 2, seed: int = 0):
    """DP-MERF's image release (`dpmerf._release`, σ from `dpmerf._calibrate`) on a pair
    where one record's features flip sign: the embedding moves by exactly 2/m, the stated
    sensitivity. Returns (scores on D0, scores on D1, claimed noise multiplier)."""
    d0, d1 = _image_pair(m, n_classes)
    return _scores(d0, d1, trials, epsilon=epsilon, delta=delta, n_features=n_features,
                   seed=seed)


def tabular_scores(trials: int, *, epsilon: float, delta: float, m: int = 20,
                   n_features: int = 16, seed: int = 0):
    """DP-MERF's mixed tabular release (one numeric column with public bounds, one
    categorical): record 0's number flips its φ and its category changes. Claimed
    sensitivity 2√2/m; the change here is √5/m, the most these columns allow."""
    from engine.data.dataset import Column, Dataset

    cols = [Column("v", "num", bounds=(0.0, 1.0), bounds_source="public"),
            Column("c", "cat", categories=["a", "b"], bounds_source="public")]
    y = np.arange(m) % 2
    x0 = np.zeros((m, 2))
    x1 = x0.copy()
    x1[0] = [1.0, 1.0]
    d0, d1 = (Dataset("audit", "tabular", x, y, x[:2], y[:2], ["0", "1"], columns=cols)
              for x in (x0, x1))
    return _scores(d0, d1, trials, epsilon=epsilon, delta=delta, n_features=n_features,
                   seed=seed)


def class_counts_scores(trials: int, *, epsilon: float, delta: float, m: int = 30,
                        n_classes: int = 3, n_features: int = 16):
    """DP-MERF's class-counts release as `dpmerf._release` makes it (labels="counts"), on a
    pair that moves one record from class 0 to class 1 (change √2, the stated
    sensitivity), against that release's share of the target budget."""
    params = dpmerf.Params(n_features=n_features, labels="counts", counts_share=0.9)
    d0, d1 = _image_pair(m, n_classes, move_label=True)
    config = audit_config("dpmerf", epsilon, delta)
    release = _release(config, params, _odd_pi_frequencies(n_features, 0), "class counts")
    s0, s1 = audit_pair(release, dpmerf, d0, d1, trials)
    plan = dpmerf._release_plan(d0, params)
    return s0, s1, target_multiplier(epsilon, delta, plan, "class counts")


def release_draws(trials: int) -> list:
    """The mean embedding and the class counts, as `dpmerf._release` released them. The
    pixels are tiny (< 1e-5), so the sine features are far below σ/512, where a float32
    value has bits finer than the grid (larger ones lie on it anyway): a missing `snap`
    then leaves them in the release."""
    from engine.data.dataset import Dataset

    params = dpmerf.Params(n_features=16, labels="counts")
    config = audit_config("dpmerf", EPSILON, DELTA)
    gen = torch.Generator().manual_seed(0)
    x = 1e-5 * torch.rand((20, 1, 1, 1), generator=gen).numpy()
    y = np.arange(20) % 3
    d0 = Dataset("audit", "image", x, y, x[:2], y[:2], ["0", "1", "2"], (1, 1, 1))
    w = 3 * torch.randn((1, 8), generator=gen)
    sigmas = dpmerf._calibrate(config, d0, params)[1]
    out = []
    for name in ("mean embedding", "class counts"):
        release = _release(config, params, w, name)
        out.append(draws(f"DP-MERF {name}", *twice(release, dpmerf, d0, trials),
                         sigmas[name], torch.float64))
    return out


# The audits engine/audit/lower_bound.py runs for DP-MERF (claims from the target (ε, δ)),
# and the noise checks engine/audit/noise.py runs.
RELEASES = {
    "DP-MERF mean embedding": embedding_scores,
    "DP-MERF mixed tabular": tabular_scores,
    "class counts": class_counts_scores,
    "numeric bounds histogram": bounds_histogram_scores,
}
DRAWS = {"dpmerf": release_draws, "numeric bounds": bounds_draws}

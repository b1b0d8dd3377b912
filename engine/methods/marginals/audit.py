"""The marginals baseline's audit (engine/audit/lower_bound.py runs it;
engine/methods/audit_harness.py is the harness): `train` runs up to its "release" event
and the two noisy statistics it released there are read from the run itself.

Privacy assumptions under test: one replaced record moves one cell of every column's
histogram and one class count (√2 each), and every cell gets its planned Gaussian noise.
Only the noise call is changed (batched trials, or none), so a bug planted anywhere on
the path shows up. Returns (scores on D0, scores on D1, claimed noise multiplier z).
"""

from __future__ import annotations

import numpy as np
import torch

from engine.methods.audit_harness import (DELTA, EPSILON, audit_config, batched_noise, draws,
                                          no_noise, project, tabular_pair, target_multiplier,
                                          twice)
from engine.methods.marginals import method as marginals


def _release(config, params, data) -> torch.Tensor:
    """Drive `marginals.train` to its "release" event and read what it released there
    (its noisy class counts and histograms, from the generator's frame): the release as
    the run computed it, not a copy. Sampling after it is post-processing."""
    run = marginals.train(config, params, data, "cpu", None)
    try:
        event = next(run)
        if event.phase != "release":
            raise AssertionError(f"marginals.train's first event is {event.phase!r}, "
                                 "not the release.")
        local = run.gi_frame.f_locals
        counts, hist = torch.as_tensor(local["counts"]), torch.as_tensor(local["hist"])
    finally:
        run.close()
    lead = counts.shape[:-1]  # the trials axis, if any
    return torch.cat([counts.reshape(*lead, -1), hist.reshape(*lead, -1)], -1)


def train_scores(trials: int, *, epsilon: float, delta: float, m: int = 20, d: int = 3,
                 bins: int = 4):
    """The marginals baseline through `train` on the worst-case pair. The counts take the
    share 1/(d+1), so every histogram and the counts get the same σ and the projection on
    the mean difference is the optimal test. Claimed: the composed plan's multiplier."""
    params = marginals.Params(bins=bins, conditional=True, counts_share=1.0 / (d + 1))
    config = audit_config("marginals", epsilon, delta)
    d0, d1 = tabular_pair(m, d)
    with no_noise(marginals):
        mean0 = _release(config, params, d0)
        mean1 = _release(config, params, d1)
    with batched_noise(marginals, trials):
        out0, out1 = _release(config, params, d0), _release(config, params, d1)
    return (project(out0, mean0, mean1), project(out1, mean0, mean1),
            target_multiplier(epsilon, delta))


def release_draws(trials: int) -> list:
    """The class counts and every class's column histograms, from `marginals.train`."""
    params = marginals.Params(bins=4, conditional=True)
    config = audit_config("marginals", EPSILON, DELTA)
    d0, _ = tabular_pair(20, 3)
    s_counts, s_hist = (r.sigma for r in marginals._calibrate(config, params, d0).releases)

    def release(data):
        return _release(config, params, data)
    out, exact = twice(release, marginals, d0, trials)
    std = np.where(np.arange(exact.shape[-1]) < d0.n_classes, s_counts, s_hist)
    return [draws("marginals counts and histograms", out, exact, std, torch.float64)]


# The audit engine/audit/lower_bound.py runs for the baseline, and its noise checks
# (engine/audit/noise.py).
RELEASES = {"marginals train": train_scores}
DRAWS = {"marginals": release_draws}

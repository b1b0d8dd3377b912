"""The empirical audit of AIM through its own `train` (engine/audit.py states the
statistics; engine/audit_train.py audits the other methods the same way).

`aim.train` runs on a worst-case pair with the noise off, recording every count vector
`_measure` is handed and its σ; on D1 it replays D0's released outputs and selections,
so both runs follow one transcript (adaptive composition: what is compared at round t
is the two datasets' statistics given the same released past). The trials then release
every recorded statistic through the module's `gaussian_noise` (batched), and score each
by the likelihood-ratio statistic Σ_i (y_i − x0_i)·(x1_i − x0_i)/σ_i². The claim is the
run's whole Gaussian-DP μ (measurements and selections, its privacy report), so the
audit, which sees the measurements only, is conservative; a bug in σ or in the stated
sensitivity of the measurements shows up.
"""

from __future__ import annotations

import numpy as np
import torch

from engine.audit_releases import _config, _equivalent_multiplier, _no_noise
from engine.audit_train import _marginals_pair as _pair  # the same worst-case tables


def _record(config, params, data, replay=None):
    """Run `aim.train` with the noise off; return ([(counts, σ, output)], [selection],
    privacy report). With `replay` = (outputs, selections) of another run, each call
    returns the replayed value, so this run follows that run's transcript."""
    from engine import aim

    calls, picks = [], []
    measure, select = aim._measure, aim._select

    def recording_measure(x, sigma):
        out = measure(x, sigma)
        if replay is not None:
            out = replay[0][len(calls)][2]
        calls.append((np.array(x, np.float64), sigma, out))
        return out

    def recording_select(quality, eps, sensitivity):
        i = select(quality, eps, sensitivity) if replay is None else replay[1][len(picks)]
        picks.append(i)
        return i

    aim._measure, aim._select = recording_measure, recording_select
    try:
        with _no_noise(aim):
            *_, last = aim.train(config, params, data, "cpu", None)
    finally:
        aim._measure, aim._select = measure, select
    return calls, picks, last.result.privacy


def aim_train_scores(trials: int, *, epsilon: float, delta: float, m: int = 20, d: int = 2):
    """AIM through `train` on the worst-case pair (module docstring)."""
    from engine import aim

    params = aim.Params(degree=2, bins=2, rounds=2 * (d + 1), iters=5, final_iters=5)
    config = _config("aim", epsilon, delta)
    d0, d1 = _pair(m, d)
    calls0, picks0, report = _record(config, params, d0)
    calls1, _, _ = _record(config, params, d1, replay=(calls0, picks0))
    if len(calls0) != len(calls1):
        raise AssertionError("the two runs released a different number of times.")
    s0, s1 = np.zeros(trials), np.zeros(trials)
    for (x0, sigma, _), (x1, _, _) in zip(calls0, calls1):
        diff = x1 - x0
        if not diff.any():
            continue  # this release does not tell the two apart
        for x, s in ((x0, s0), (x1, s1)):
            noise = aim.gaussian_noise((trials, len(x)), sigma, dtype=torch.float64).numpy()
            s += (x + noise - x0) @ diff / sigma ** 2
    return s0, s1, _equivalent_multiplier(report)


RELEASES = {"AIM train": aim_train_scores}

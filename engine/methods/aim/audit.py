"""AIM's audits (engine/audit/lower_bound.py runs them and states the statistics;
engine/methods/audit_harness.py is the harness), through its own `train`, and the
numeric-bounds histogram (engine/methods/bounds_audit.py).

`aim.train` runs on a worst-case pair with the noise off, recording every count vector
`_measure` is handed with its σ, and every quality vector `_select` is handed with its ε
and stated sensitivity; on D1 it replays D0's released outputs and selections, so both
runs follow one transcript (adaptive composition: what is compared at round t is the
two datasets' statistics given the same released past). The trials then release every
recorded statistic again through the module's own `_measure` and `_select` (a leading
trials axis), and score each trial by the likelihood-ratio statistic of the whole
transcript: Σ (y − x0)·(x1 − x0)/σ² over the measurements plus Σ ε/(2Δ)·(q1 − q0)[pick]
over the selections. The claim is the target's one Gaussian mechanism.

What this black-box bound cannot see: an exponential mechanism whose quality moves in
one direction reveals at most half its ε, so a selection sensitivity understated by 2
stays inside the claim here. `selection_sensitivity_ratio` therefore attacks the stated
sensitivity itself, on a pair built so that one 2-way quality moves by exactly it.

Privacy assumptions under test: one replaced record moves one cell of every marginal
(√2), every measurement gets its stated σ, every selection runs at the ε it is charged
with a quality sensitivity that holds.
"""

from __future__ import annotations

import numpy as np
import torch

from engine.methods.aim import method as aim
from engine.methods.audit_harness import (DELTA, EPSILON, audit_config, draws, no_noise,
                                          tabular_pair, target_multiplier)
from engine.methods.bounds_audit import bounds_draws, bounds_histogram_scores


def _record(config, params, data, replay=None, report: list | None = None):
    """Run `aim.train` with the noise off — the measurements' Gaussian and the selections'
    Gumbel: each pick is the best candidate — and return ([(counts, σ, output)],
    [(quality, ε, sensitivity, pick)]). Any fixed transcript is a valid one to compare
    the pair on; a noisy one made the bound differ from audit to audit (AIM with noise
    only on non-zero cells was caught by 0.25 in 3 audits of 12, by 1.9–2.4 in 7). With
    `replay` (another run's record), each call returns the replayed value, so this run
    follows that run's transcript. `report`, a list, receives the run's PrivacyReport."""
    calls, picks = [], []
    measure, select = aim._measure, aim._select

    def recording_measure(x, sigma):
        out = measure(x, sigma) if replay is None else replay[0][len(calls)][2]
        calls.append((np.array(x, np.float64), sigma, out))
        return out

    def recording_select(quality, eps, sensitivity):
        i = int(np.argmax(quality)) if replay is None else replay[1][len(picks)][3]
        picks.append((np.array(quality, np.float64), eps, sensitivity, i))
        return i

    aim._measure, aim._select = recording_measure, recording_select
    try:
        with no_noise(aim):
            for event in aim.train(config, params, data, "cpu", None):
                if event.result is not None and report is not None:
                    report.append(event.result.privacy)
    finally:
        aim._measure, aim._select = measure, select
    return calls, picks


def _transcripts(epsilon: float, delta: float, d0, d1, params):
    config = audit_config("aim", epsilon, delta)
    rec0 = _record(config, params, d0)
    rec1 = _record(config, params, d1, replay=rec0)
    if len(rec0[0]) != len(rec1[0]) or len(rec0[1]) != len(rec1[1]):
        raise AssertionError("the two runs released a different number of times.")
    return rec0, rec1


# other_weight = 1: every pair and every label pair in the workload at one weight, so the
# selections range over every candidate a run can pick, the pairs without the label too
# (with the default 0.1 they would be picked rarely, and their path audited less).
WORKLOAD = {"degree": 2, "other_weight": 1.0}


def _params(d: int):
    return aim.Params(**WORKLOAD, bins=2, rounds=2 * (d + 1), iters=5, final_iters=5)


def train_scores(trials: int, *, epsilon: float, delta: float, m: int = 20, d: int = 2):
    """AIM through `train` on the worst-case pair (module docstring)."""
    (calls0, picks0), (calls1, picks1) = _transcripts(epsilon, delta, *tabular_pair(m, d),
                                                      _params(d))
    s0, s1 = np.zeros(trials), np.zeros(trials)
    for (x0, sigma, _), (x1, _, _) in zip(calls0, calls1):
        diff = x1 - x0
        if not diff.any():
            continue  # this release does not tell the two apart
        for x, s in ((x0, s0), (x1, s1)):
            y = aim._measure(np.tile(x, (trials, 1)), sigma)
            s += (y - x0) @ diff / sigma ** 2
    for (q0, eps, sens, _), (q1, _, _, _) in zip(picks0, picks1):
        gain = q1 - q0
        if not gain.any():
            continue
        for q, s in ((q0, s0), (q1, s1)):
            s += eps / (2 * sens) * gain[aim._select(np.tile(q, (trials, 1)), eps, sens)]
    return s0, s1, target_multiplier(epsilon, delta)


def selection_pair(m: int = 20):
    """Two numeric columns on 3 bins, one class per parity. Record 0 sits at (0, 0) in
    D0, a cell rarer than independence predicts, and at (2, 2) in D1, one more common:
    after the exact one-way fits, its move raises the L1 error of the (A, B) marginal in
    both cells, so that 2-way quality moves by exactly 2·w, the stated sensitivity."""
    from engine.data.dataset import Column, Dataset

    cols = [Column(c, "num", bounds=(0.0, 1.0), bounds_source="public") for c in "AB"]
    third = (m - 1) // 3
    rows = [(0.0, 0.5)] * third + [(0.5, 0.0)] * third + [(1.0, 1.0)] * (m - 1 - 2 * third)
    x0 = np.array([(0.0, 0.0), *rows])
    x1 = x0.copy()
    x1[0] = (1.0, 1.0)
    y = np.arange(m) % 2
    return tuple(Dataset("audit", "tabular", x, y, x[:2], y[:2], ["0", "1"], columns=cols)
                 for x in (x0, x1))


def selection_sensitivity_ratio(epsilon: float = 3.0, delta: float = 1e-5) -> float:
    """max over `train`'s selections of |q1 − q0|∞ / (the sensitivity `train` handed
    `_select`) on `selection_pair`: ≤ 1 if the stated sensitivity holds, and 1 exactly
    on this pair (the bound is attained, so an understated one shows)."""
    params = aim.Params(**WORKLOAD, bins=3, rounds=4, iters=5, final_iters=5)
    (_, picks0), (_, picks1) = _transcripts(epsilon, delta, *selection_pair(), params)
    return max(float(np.abs(q1 - q0).max()) / sens
               for (q0, _, sens, _), (q1, _, _, _) in zip(picks0, picks1))


def selections_as_reported(epsilon: float = 3.0, delta: float = 1e-5) -> tuple[list, list]:
    """([(ε, sensitivity)] of every `_select` call `train` made, [(ε, sensitivity)] of
    every selection its privacy report lists): equal when what is charged is what ran."""
    d = 2
    report = []
    _, picks = _record(audit_config("aim", epsilon, delta), _params(d), tabular_pair(20, d)[0],
                       report=report)
    ran = [(eps, sens) for _, eps, sens, _ in picks]
    charged = [(r.details["epsilon"], r.details["quality_sensitivity"])
               for r in report[0].releases if r.name == aim.RELEASE_NAMES[2]]
    return ran, charged


def release_draws(trials: int) -> list:
    """Every count vector `aim.train` measured, measured again through `aim._measure`."""
    d = 2
    calls, _ = _record(audit_config("aim", EPSILON, DELTA), _params(d), tabular_pair(20, d)[0])
    out = np.concatenate([aim._measure(np.tile(x, (trials, 1)), s) for x, s, _ in calls], 1)
    exact = np.concatenate([x for x, _, _ in calls])
    std = np.concatenate([np.full(len(x), s) for x, s, _ in calls])
    return [draws("AIM measurements", out, exact, std, torch.float64)]


# The audits engine/audit/lower_bound.py runs for AIM, and its noise checks
# (engine/audit/noise.py).
RELEASES = {"AIM train": train_scores, "numeric bounds histogram": bounds_histogram_scores}
DRAWS = {"aim": release_draws, "numeric bounds": bounds_draws}

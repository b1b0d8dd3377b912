"""Audits that drive a method's own `train` (engine/audit/lower_bound.py states the statistics).

`datalens_train_scores` runs `datalens.train` with a tiny configuration on a worst-case
pair and records every vote matrix `top_agg` is handed — so `partition`, the real teacher
nets, `teacher_update`, `teacher_votes` (and `topk_sto_sign` inside it) and the stopping
rule `datalens_accounting.schedule` are all on the audited path. `marginals_scores` runs `marginals.train`
up to its "release" event and reads the two noisy statistics it released. As in
engine/audit/releases.py, only the noise call is changed (batched trials, or none), so a
bug planted anywhere on the path shows up. Each returns (scores on D0, scores on D1,
claimed noise multiplier z).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from engine.audit.releases import (_batched_noise, _config, _no_noise, _noisy_vote_sum, _project,
                                   target_multiplier)

# ---------------------------------------------------------------------- DataLens


def _datalens_pair(n: int, target: int, shape=(1, 4, 4)):
    """One-class images at the centre value 0.5 (the teachers' centred input is 0), except
    record `target`: all 1 in D0, all 0 in D1. One class, so every synthetic record asks
    the head each teacher trained on its own record."""
    from engine.data.dataset import Dataset

    x0 = np.full((n, *shape), 0.5, np.float32)
    x1 = x0.copy()
    x0[target], x1[target] = 1.0, 0.0
    y = np.zeros(n, np.int64)
    return tuple(Dataset("audit", "image", x, y, x[:2], y[:2], ["0"], shape) for x in (x0, x1))


def _datalens_params(epsilon: float, delta: float, teachers: int, top_k: int):
    """A tiny DataLens whose budget affords exactly one vote release (batch 1): σ from the
    budget's one-release multiplier. A clip far below every gradient makes each vote the
    sign of its gradient (no stochastic sign), and one teacher step on one record each
    makes the target teacher's vote the mirror image between D0 and D1 (measured and
    checked: the change is 2√k, the stated sensitivity)."""
    from engine.methods.datalens import method as datalens

    z = target_multiplier(epsilon, delta)
    return datalens.Params(
        teachers=teachers, top_k=top_k, sigma=z * 2 * math.sqrt(top_k), clip=1e-9, beta=0.5,
        vote_pool=1, records_per_teacher=1, batch=1, max_steps=50, first_teacher_steps=1,
        teacher_steps=1, lr_teacher=0.01, student_steps=1, probe_every=0, sample_every=1000,
        teacher_hidden=8, student_widths=(16, 4), latent=4, blur=0.0), z


def _record_votes(config, params, data, replay: list | None = None) -> list:
    """Run `datalens.train` with the noise off; return [(votes, sigma, beta, output)] for
    every `top_agg` call. With `replay`, each call returns the replayed output instead, so
    this run follows the other dataset's transcript: what the audit compares at step t is
    the votes on the two datasets given the same released past (adaptive composition)."""
    from engine.methods.datalens import method as datalens
    from engine.methods.datalens import votes as datalens_votes

    calls, current = [], datalens.top_agg

    def recording(votes, sigma, beta):
        out = current(votes, sigma, beta)
        if replay is not None and len(calls) < len(replay):
            out = replay[len(calls)][3]
        calls.append((votes.clone(), sigma, beta, out))
        return out

    datalens.top_agg = recording
    try:
        with _no_noise(datalens_votes):
            for _ in datalens.train(config, params, data, "cpu", None):
                pass
    finally:
        datalens.top_agg = current
    return calls


def datalens_train_scores(trials: int, *, epsilon: float, delta: float, teachers: int = 4,
                          top_k: int = 16, seed: int = 0):
    """DataLens through `train`: every vote matrix `top_agg` is handed on D0 and on D1,
    released `trials` times by the real `top_agg` with batched noise; the score sums each
    release's projection. Claimed: the user's budget (one Gaussian of multiplier z)."""
    from engine.methods.datalens import method as datalens
    from engine.core.config import RunConfig

    params, z = _datalens_params(epsilon, delta, teachers, top_k)  # z: the target's
    # The worst-case target: the record held by the most teachers (one, if disjoint).
    parts = datalens.partition(teachers, teachers, seed, 1)
    target = int(np.bincount(parts.ravel(), minlength=teachers).argmax())
    d0, d1 = _datalens_pair(teachers, target)
    config = RunConfig(method="datalens", dataset="audit", epsilon=epsilon, delta=delta,
                       seed=seed, n_synthetic=4)
    calls0 = _record_votes(config, params, d0)
    calls1 = _record_votes(config, params, d1, replay=calls0)
    if len(calls0) != len(calls1):
        raise AssertionError("the two runs released a different number of times.")
    s0, s1 = np.zeros(trials), np.zeros(trials)
    for (v0, sigma, beta, _), (v1, _, _, _) in zip(calls0, calls1):
        mean0, mean1 = v0.sum(0, dtype=torch.float32), v1.sum(0, dtype=torch.float32)
        if torch.equal(mean0, mean1):
            continue  # this release does not tell the two apart: no score to add
        s0 += _project(_noisy_vote_sum(v0, sigma, beta, trials), mean0, mean1)
        s1 += _project(_noisy_vote_sum(v1, sigma, beta, trials), mean0, mean1)
    return s0, s1, z


def vote_change(epsilon: float = 3.0, delta: float = 1e-5, teachers: int = 4,
                top_k: int = 16, seed: int = 0) -> float:
    """||Σ votes(D0) − Σ votes(D1)|| / 2√k at the first release: 1 for a worst-case pair."""
    from engine.core.config import RunConfig

    params, _ = _datalens_params(epsilon, delta, teachers, top_k)
    config = RunConfig(method="datalens", dataset="audit", epsilon=epsilon, delta=delta,
                       seed=seed, n_synthetic=4)
    d0, d1 = _datalens_pair(teachers, 0)
    calls0 = _record_votes(config, params, d0)
    calls1 = _record_votes(config, params, d1, replay=calls0)
    diff = calls0[0][0].float().sum(0) - calls1[0][0].float().sum(0)
    return float(diff.norm()) / (2 * math.sqrt(top_k))


# --------------------------------------------------------------------- marginals


def _marginals_pair(m: int, d: int):
    """d numeric columns with public bounds [0, 1], 2 classes. Record 0 is class 0 with
    every value 0 in D0, class 1 with every value 1 in D1: it moves one cell of every
    column's histogram (and across rows) and one class count, the stated √2 each (and
    one cell of every AIM marginal: engine/audit/aim.py audits on the same pair)."""
    from engine.data.dataset import Column, Dataset

    cols = [Column(f"v{j}", "num", bounds=(0.0, 1.0), bounds_source="public") for j in range(d)]
    x0 = np.full((m, d), 0.5)
    y0 = np.arange(m) % 2
    x1, y1 = x0.copy(), y0.copy()
    x0[0], y0[0] = 0.0, 0
    x1[0], y1[0] = 1.0, 1
    return tuple(Dataset("audit", "tabular", x, y, x[:2], y[:2], ["0", "1"], columns=cols)
                 for x, y in ((x0, y0), (x1, y1)))


def _marginals_release(config, params, data) -> torch.Tensor:
    """Drive `marginals.train` to its "release" event and read what it released there
    (its noisy class counts and histograms, from the generator's frame): the release as
    the run computed it, not a copy. Sampling after it is post-processing."""
    from engine.methods.marginals import method as marginals

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


def marginals_scores(trials: int, *, epsilon: float, delta: float, m: int = 20, d: int = 3,
                     bins: int = 4):
    """The marginals baseline through `train` on the worst-case pair. The counts take the
    share 1/(d+1), so every histogram and the counts get the same σ and the projection on
    the mean difference is the optimal test. Claimed: the composed plan's multiplier."""
    from engine.methods.marginals import method as marginals

    params = marginals.Params(bins=bins, conditional=True, counts_share=1.0 / (d + 1))
    config = _config("marginals", epsilon, delta)
    d0, d1 = _marginals_pair(m, d)
    with _no_noise(marginals):
        mean0 = _marginals_release(config, params, d0)
        mean1 = _marginals_release(config, params, d1)
    with _batched_noise(marginals, trials):
        out0, out1 = _marginals_release(config, params, d0), _marginals_release(config, params, d1)
    return (_project(out0, mean0, mean1), _project(out1, mean0, mean1),
            target_multiplier(epsilon, delta))


RELEASES = {
    "DataLens train": datalens_train_scores,
    "marginals train": marginals_scores,
}

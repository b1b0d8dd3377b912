"""DataLens's audits (engine/audit/lower_bound.py runs them; engine/methods/audit_harness.py
is the harness).

`train_scores` runs `train` with a tiny configuration on a worst-case pair and records
every vote matrix `top_agg` is handed — so `partition`, the real teacher nets,
`teacher_update`, `teacher_votes` (and `topk_sto_sign` inside it) and the stopping rule
`accounting.schedule` are all on the audited path. `votes_scores` drives the real
`partition`, `topk_sto_sign`, `top_agg` and `accounting.schedule` at the vote level.

Privacy assumptions under test: partitions are disjoint, one record's teacher vote moves
the vote sum by at most 2√k, every vote sum gets N(0, σ²) noise, and the stopping rule
never passes the budget. Only the noise call is changed (batched trials, or none), so a
bug planted anywhere on the path shows up. Each audit returns (scores on D0, scores on
D1, claimed noise multiplier z): the user's budget, one Gaussian of multiplier z.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from engine.methods.audit_harness import (DELTA, EPSILON, audit_config, draws, no_noise,
                                          project, target_multiplier)
from engine.methods.datalens import accounting
from engine.methods.datalens import method as datalens
from engine.methods.datalens import votes as datalens_votes

# ---------------------------------------------------------------- the votes alone


def _votes(records: torch.Tensor, parts: np.ndarray, top_k: int) -> torch.Tensor:
    """Each teacher's vote through the real `topk_sto_sign`, on the sum of its partition's
    records as its "gradient" (c = 1 and |g| ≥ 1 make every vote deterministic). DP must
    hold for any per-teacher gradient, so any stand-in that reads only the partition works."""
    grads = records[torch.as_tensor(parts)].sum(1)  # (teachers, d)
    return datalens_votes.topk_sto_sign(grads, top_k, 1.0)


def votes_scores(trials: int, *, epsilon: float, delta: float, teachers: int = 10,
                 per_teacher: int = 3, top_k: int = 16, beta: float = 0.5, seed: int = 0):
    """DataLens end to end at the vote level: the real `partition`, `topk_sto_sign`,
    `top_agg` and stopping rule `accounting.schedule` on a worst-case pair.

    Records live in d = 2k dims. Every record is 1 on the last k coordinates; the target
    record is instead +M on the first k (D0) or −M (D1), so its teacher's k votes flip
    sign (change 2√k, the stated sensitivity). σ is set so that the budget affords exactly
    one release (batch 1): `accounting.schedule` must stop after one step. Every step the
    schedule runs releases the target's votes again; the score sums the projections.
    """
    n = teachers * per_teacher
    z = target_multiplier(epsilon, delta)
    params = datalens.Params(teachers=teachers, top_k=top_k, sigma=z * 2 * math.sqrt(top_k),
                             beta=beta, batch=1, records_per_teacher=per_teacher, max_steps=50)
    steps, batch = accounting.schedule(audit_config("datalens", epsilon, delta), params, n)
    parts = datalens.partition(n, teachers, seed, per_teacher)
    d = 2 * top_k
    base = torch.zeros(n, d)
    base[:, top_k:] = 1.0
    # The worst-case target: the record held by the most teachers (one, if disjoint).
    target = int(np.bincount(parts.ravel(), minlength=n).argmax())
    big = float(n + 1)  # larger than any teacher's sum elsewhere, so top-k picks these
    r0, r1 = base.clone(), base.clone()
    r0[target, :top_k], r0[target, top_k:] = big, 0.0
    r1[target, :top_k], r1[target, top_k:] = -big, 0.0
    v0, v1 = _votes(r0, parts, top_k), _votes(r1, parts, top_k)
    mean0, mean1 = v0.sum(0, dtype=torch.float32), v1.sum(0, dtype=torch.float32)
    s0, s1 = np.zeros(trials), np.zeros(trials)
    for _ in range(steps * batch):  # one release of the target's votes per record per step
        s0 += project(noisy_vote_sum(v0, params.sigma, params.beta, trials), mean0, mean1)
        s1 += project(noisy_vote_sum(v1, params.sigma, params.beta, trials), mean0, mean1)
    return s0, s1, z


def noisy_vote_sum(votes: torch.Tensor, sigma: float, beta: float, trials: int) -> torch.Tensor:
    """`trials` runs of the real `top_agg`, returning the noisy vote sum it thresholded.

    The threshold is post-processing and throws most of the signal away, so the audit
    scores the release underneath: the votes' sum plus the noise `top_agg` drew. The noise
    is recorded as drawn, and the output is checked to be exactly that sum thresholded —
    so the score is what `top_agg` released, not a rebuilt copy.
    """
    drawn = []
    current = datalens_votes.gaussian_noise

    def recording(shape, std, **kw):
        noise = current(shape, std, **kw)
        drawn.append(noise)
        return noise

    datalens_votes.gaussian_noise = recording
    try:  # the trials are a batch axis of the votes, so one draw covers them all
        out = datalens.top_agg(votes.reshape(len(votes), 1, -1).expand(-1, trials, -1), sigma,
                               beta)
    finally:
        datalens_votes.gaussian_noise = current
    if len(drawn) != 1:
        raise AssertionError(f"top_agg drew noise {len(drawn)} times; the audit expects once.")
    noisy = votes.reshape(len(votes), -1).sum(0, dtype=torch.float32) + drawn[0]
    expected = torch.where(noisy.abs() >= beta * len(votes), torch.sign(noisy),
                           torch.zeros_like(noisy))
    if not torch.equal(out, expected):
        raise AssertionError("top_agg's output is not its vote sum plus the noise it drew, "
                             "thresholded; the audit cannot read its release.")
    return noisy


# ---------------------------------------------------------------- through `train`


def _pair(n: int, target: int, shape=(1, 4, 4)):
    """One-class images at the centre value 0.5 (the teachers' centred input is 0), except
    record `target`: all 1 in D0, all 0 in D1. One class, so every synthetic record asks
    the head each teacher trained on its own record."""
    from engine.data.dataset import Dataset

    x0 = np.full((n, *shape), 0.5, np.float32)
    x1 = x0.copy()
    x0[target], x1[target] = 1.0, 0.0
    y = np.zeros(n, np.int64)
    return tuple(Dataset("audit", "image", x, y, x[:2], y[:2], ["0"], shape) for x in (x0, x1))


def _params(epsilon: float, delta: float, teachers: int, top_k: int):
    """A tiny DataLens whose budget affords exactly one vote release (batch 1): σ from the
    budget's one-release multiplier. A clip far below every gradient makes each vote the
    sign of its gradient (no stochastic sign), and one teacher step on one record each
    makes the target teacher's vote the mirror image between D0 and D1 (measured and
    checked: the change is 2√k, the stated sensitivity)."""
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
    calls, current = [], datalens.top_agg

    def recording(votes, sigma, beta):
        out = current(votes, sigma, beta)
        if replay is not None and len(calls) < len(replay):
            out = replay[len(calls)][3]
        calls.append((votes.clone(), sigma, beta, out))
        return out

    datalens.top_agg = recording
    try:
        with no_noise(datalens_votes):
            for _ in datalens.train(config, params, data, "cpu", None):
                pass
    finally:
        datalens.top_agg = current
    return calls


def _transcripts(epsilon: float, delta: float, teachers: int, top_k: int, seed: int,
                 target: int):
    """The recorded `top_agg` calls on D0, and on D1 replaying D0's outputs."""
    params, _ = _params(epsilon, delta, teachers, top_k)
    config = audit_config("datalens", epsilon, delta, seed=seed, n_synthetic=4)
    d0, d1 = _pair(teachers, target)
    calls0 = _record_votes(config, params, d0)
    return calls0, _record_votes(config, params, d1, replay=calls0)


def train_scores(trials: int, *, epsilon: float, delta: float, teachers: int = 4,
                 top_k: int = 16, seed: int = 0):
    """DataLens through `train`: every vote matrix `top_agg` is handed on D0 and on D1,
    released `trials` times by the real `top_agg` with batched noise; the score sums each
    release's projection. Claimed: the user's budget (one Gaussian of multiplier z)."""
    z = target_multiplier(epsilon, delta)
    # The worst-case target: the record held by the most teachers (one, if disjoint).
    parts = datalens.partition(teachers, teachers, seed, 1)
    target = int(np.bincount(parts.ravel(), minlength=teachers).argmax())
    calls0, calls1 = _transcripts(epsilon, delta, teachers, top_k, seed, target)
    if len(calls0) != len(calls1):
        raise AssertionError("the two runs released a different number of times.")
    s0, s1 = np.zeros(trials), np.zeros(trials)
    for (v0, sigma, beta, _), (v1, _, _, _) in zip(calls0, calls1):
        mean0, mean1 = v0.sum(0, dtype=torch.float32), v1.sum(0, dtype=torch.float32)
        if torch.equal(mean0, mean1):
            continue  # this release does not tell the two apart: no score to add
        s0 += project(noisy_vote_sum(v0, sigma, beta, trials), mean0, mean1)
        s1 += project(noisy_vote_sum(v1, sigma, beta, trials), mean0, mean1)
    return s0, s1, z


def vote_change(epsilon: float = 3.0, delta: float = 1e-5, teachers: int = 4,
                top_k: int = 16, seed: int = 0) -> float:
    """||Σ votes(D0) − Σ votes(D1)|| / 2√k at the first release: 1 for a worst-case pair."""
    calls0, calls1 = _transcripts(epsilon, delta, teachers, top_k, seed, 0)
    diff = calls0[0][0].float().sum(0) - calls1[0][0].float().sum(0)
    return float(diff.norm()) / (2 * math.sqrt(top_k))


def release_draws(trials: int) -> list:
    """The noisy vote sums `top_agg` released under `datalens.train` (first release)."""
    params, _ = _params(EPSILON, DELTA, 4, 16)
    config = audit_config("datalens", EPSILON, DELTA, n_synthetic=4)
    votes, sigma, beta, _ = _record_votes(config, params, _pair(4, 0)[0])[0]
    out = noisy_vote_sum(votes, sigma, beta, trials)
    exact = votes.reshape(len(votes), -1).sum(0, dtype=torch.float32)
    return [draws("DataLens vote sums", out, exact, sigma, torch.float32)]


# The audits engine/audit/lower_bound.py runs for DataLens, and the noise checks
# engine/audit/noise.py runs.
RELEASES = {
    "DataLens train": train_scores,
    "DataLens votes + stopping rule": votes_scores,
}
DRAWS = {"datalens": release_draws}

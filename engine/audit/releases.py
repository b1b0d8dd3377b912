"""The releases engine/audit/lower_bound.py audits, each run through the engine's own code.

`dpmerf._release` (image and mixed tabular embeddings, class counts: the statistics it
hands back as released) with σ from `dpmerf._calibrate`, `dp_bounds.noisy_histogram`,
and DataLens's `partition`,
`topk_sto_sign`, `top_agg` under its stopping rule `datalens_accounting.schedule`. Only the noise call is
wrapped, to draw all trials at once (a leading axis) or none (the exact mean) — through
whatever function the module holds, so a bug planted anywhere on the path (σ,
sensitivity, partition, step count, feature map) shows up in the audit. Each release
returns (scores on D0, scores on D1, claimed noise multiplier z): the one Gaussian
mechanism the code must be no more revealing than. The claim comes from the (ε, δ) the
run *targets* (`target_multiplier`), never from the σ or multiplier a run reports: a run
that calibrates for the wrong δ reports a consistent but wrong multiplier.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import numpy as np
import torch

from engine.privacy import noise
from engine.privacy import accountant as privacy

# ------------------------------------------------------------------ the harness


@contextmanager
def _batched_noise(module, trials: int):
    """Inside the block, `module.gaussian_noise(shape, std)` draws `trials` independent
    copies at once (a new leading axis), through whatever function the module holds — so
    a bug planted there stays in the audit. Not thread-safe: for tests and benchmarks."""
    current = module.gaussian_noise

    def batched(shape, std, **kw):
        return current((trials, *tuple(shape)), std, **kw)

    module.gaussian_noise = batched
    try:
        yield
    finally:
        module.gaussian_noise = current


@contextmanager
def _no_noise(module):
    """Inside the block, `module.gaussian_noise` returns zeros: the release's exact mean."""
    current = module.gaussian_noise

    def zeros(shape, std, *, device="cpu", dtype=torch.float32):
        return torch.zeros(tuple(shape), device=device, dtype=dtype)

    module.gaussian_noise = zeros
    try:
        yield
    finally:
        module.gaussian_noise = current


@contextmanager
def fast_sampler():
    """Inside the block the sampler under `engine.privacy.noise.gaussian_noise` is float64 `torch.randn`·std cast to the dtype: the same distribution to the audit's
    resolution, 10–50× faster on millions of trials. Everything above it — each module's
    `gaussian_noise`, σ, sensitivity — stays on the audited path; the sampler itself is
    checked by tests/test_noise.py (its distribution, grid and exactness)."""
    current = noise.gaussian

    def fast(shape, std, *, device="cpu", dtype=torch.float32):
        gen = noise.noise_generator("cpu")
        out = torch.randn(tuple(shape), generator=gen, dtype=torch.float64) * std
        return out.to(device=device, dtype=dtype)

    noise.gaussian = fast
    try:
        yield
    finally:
        noise.gaussian = current


def _audit_pair(release, module, d0, d1, trials: int):
    """Scores of `trials` runs of the real `release(data)` on each dataset of the pair,
    projected on the direction between its exact (noise-free) outputs."""
    with _no_noise(module):
        mean0, mean1 = release(d0), release(d1)
    with _batched_noise(module, trials):
        out0, out1 = release(d0), release(d1)
    return _project(torch.as_tensor(out0), torch.as_tensor(mean0), torch.as_tensor(mean1)), \
        _project(torch.as_tensor(out1), torch.as_tensor(mean0), torch.as_tensor(mean1))


def _project(out: torch.Tensor, mean0: torch.Tensor, mean1: torch.Tensor) -> np.ndarray:
    """Score = projection of each trial's output on the unit direction mean1 − mean0."""
    u = (mean1 - mean0).double().flatten()
    u = u / u.norm()
    return ((out.double().flatten(1) - mean0.double().flatten()) @ u).numpy()


def _odd_pi_frequencies(n_features: int, seed: int) -> torch.Tensor:
    """(1, D/2) frequencies that are odd multiples of π, so φ(1) = −φ(0) exactly: the
    worst case for a unit-norm feature map (public frequencies may be anything)."""
    gen = torch.Generator().manual_seed(seed)
    return math.pi * (2 * torch.randint(-3, 4, (1, n_features // 2), generator=gen) + 1).float()


def _config(method: str, epsilon: float, delta: float):
    from engine.core.config import RunConfig

    return RunConfig(method=method, dataset="audit", epsilon=epsilon, delta=delta)


def target_multiplier(epsilon: float, delta: float, plan=(), name: str | None = None) -> float:
    """The claim, from the target (ε, δ) alone: the one Gaussian mechanism (multiplier z*)
    that spends exactly the target, whole runs must be no more revealing than it. For one
    release of a composed plan audited on its own, its public share of z*'s μ² (a
    `privacy.Release`'s share, over its count): z = z*·√(count·Σshares/share)."""
    z = privacy.calibrate_noise_multiplier(epsilon=epsilon, delta=delta)
    if name is None:
        return z
    rel = next(r for r in plan if r.name == name)
    return z * math.sqrt(rel.count * sum(r.share for r in plan) / rel.share)


# --------------------------------------------------------------- the audited releases


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


def _dpmerf_release(config, params, w: torch.Tensor, name: str = "mean embedding"):
    """dpmerf's own release path: `_plan` (frequencies swapped for `w`), σ from
    `_calibrate`, then `_release`; returns the statistic `name` as `_release` released it,
    after checking that what the generator gets is `_post_process` of the releases alone."""
    from engine.methods.dpmerf import method as dpmerf

    def release(data):
        plan = dpmerf._plan(data, params, torch.Generator().manual_seed(0))
        plan.w = w
        sigma = dpmerf._calibrate(config, data, params)[1]
        emb, probs, released = dpmerf._release(plan, data, params, sigma, "cpu",
                                               params.labels != "none")
        again = dpmerf._post_process(released, data.n_train, data.n_classes)
        if not (torch.equal(emb, again[0]) and torch.equal(probs, again[1])):
            raise AssertionError("dpmerf._release hands the generator more than its releases.")
        return released[name]
    return release


def _dpmerf_scores(d0, d1, trials: int, *, epsilon: float, delta: float, n_features: int,
                   seed: int):
    """Audit dpmerf's embedding release on the pair (d0, d1): (scores on d0, scores on d1,
    claimed noise multiplier). Labels "balanced": the embedding is the only release."""
    from engine.methods.dpmerf import method as dpmerf

    params = dpmerf.Params(n_features=n_features, labels="balanced")
    config = _config("dpmerf", epsilon, delta)
    release = _dpmerf_release(config, params, _odd_pi_frequencies(n_features, seed))
    s0, s1 = _audit_pair(release, dpmerf, d0, d1, trials)
    return s0, s1, target_multiplier(epsilon, delta)


def dpmerf_embedding_scores(trials: int, *, epsilon: float, delta: float, m: int = 20,
                            n_features: int = 16, n_classes: int = 2, seed: int = 0):
    """DP-MERF's image release (`dpmerf._release`, σ from `dpmerf._calibrate`) on a pair
    where one record's features flip sign: the embedding moves by exactly 2/m, the stated
    sensitivity. Returns (scores on D0, scores on D1, claimed noise multiplier)."""

    d0, d1 = _image_pair(m, n_classes)
    return _dpmerf_scores(d0, d1, trials, epsilon=epsilon, delta=delta,
                          n_features=n_features, seed=seed)


def dpmerf_tabular_scores(trials: int, *, epsilon: float, delta: float, m: int = 20,
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
    return _dpmerf_scores(d0, d1, trials, epsilon=epsilon, delta=delta,
                          n_features=n_features, seed=seed)


def class_counts_scores(trials: int, *, epsilon: float, delta: float, m: int = 30,
                        n_classes: int = 3, n_features: int = 16):
    """DP-MERF's class-counts release as `dpmerf._release` makes it (labels="counts"), on a
    pair that moves one record from class 0 to class 1 (change √2, the stated
    sensitivity), against that release's share of the target budget."""
    from engine.methods.dpmerf import method as dpmerf

    params = dpmerf.Params(n_features=n_features, labels="counts", counts_share=0.9)
    d0, d1 = _image_pair(m, n_classes, move_label=True)
    config = _config("dpmerf", epsilon, delta)
    release = _dpmerf_release(config, params, _odd_pi_frequencies(n_features, 0), "class counts")
    s0, s1 = _audit_pair(release, dpmerf, d0, d1, trials)
    plan = dpmerf._release_plan(d0, params)
    return s0, s1, target_multiplier(epsilon, delta, plan, "class counts")


def bounds_pair(m: int):
    """One numeric column without public bounds, all 0.5; record 0 is 1000 in D1."""
    from engine.data.dataset import Column, Dataset

    x0 = np.full((m, 1), 0.5)
    x1 = x0.copy()
    x1[0] = 1000.0
    cols = [Column("v", "num")]  # bounds=None: released privately
    y = np.arange(m) % 2
    return tuple(Dataset("audit", "tabular", x, y, x[:2], y[:2], ["0", "1"], columns=cols)
                 for x in (x0, x1))


def bounds_histogram_scores(trials: int, *, epsilon: float, delta: float, m: int = 30):
    """The numeric-bounds histogram (`dp_bounds.noisy_histogram`, σ from DP-MERF's plan
    for a column without public bounds): record 0 moves from the bucket of 0.5 to that of
    1000, two counts change by one (√2 = the stated `dp_bounds.sensitivity(1)`)."""
    from engine.privacy import dp_bounds
    from engine.methods.dpmerf import method as dpmerf

    d0, d1 = bounds_pair(m)
    params = dpmerf.Params(bounds_share=0.9)  # most of the budget here: a sharp claim
    _, sigmas = dpmerf._calibrate(_config("dpmerf", epsilon, delta), d0, params)
    sigma = sigmas["numeric bounds histogram"]

    def release(data):
        return dp_bounds.noisy_histogram(data.x_train, noise_std=sigma)
    s0, s1 = _audit_pair(release, dp_bounds, d0, d1, trials)
    plan = dpmerf._release_plan(d0, params)
    return s0, s1, target_multiplier(epsilon, delta, plan, "numeric bounds histogram")


def datalens_votes(records: torch.Tensor, parts: np.ndarray, top_k: int) -> torch.Tensor:
    """Each teacher's vote through the real `topk_sto_sign`, on the sum of its partition's
    records as its "gradient" (c = 1 and |g| ≥ 1 make every vote deterministic). DP must
    hold for any per-teacher gradient, so any stand-in that reads only the partition works."""
    from engine.methods.datalens.votes import topk_sto_sign

    grads = records[torch.as_tensor(parts)].sum(1)  # (teachers, d)
    return topk_sto_sign(grads, top_k, 1.0)


def datalens_scores(trials: int, *, epsilon: float, delta: float, teachers: int = 10,
                    per_teacher: int = 3, top_k: int = 16, beta: float = 0.5, seed: int = 0):
    """DataLens end to end at the vote level: the real `partition`, `topk_sto_sign`,
    `top_agg` and stopping rule `datalens_accounting.schedule` on a worst-case pair.

    Records live in d = 2k dims. Every record is 1 on the last k coordinates; the target
    record is instead +M on the first k (D0) or −M (D1), so its teacher's k votes flip
    sign (change 2√k, the stated sensitivity). σ is set so that the budget affords exactly
    one release (batch 1): `datalens_accounting.schedule` must stop after one step. Every step the schedule
    runs releases the target's votes again; the score sums the projections. The claim is
    the user's budget (the one Gaussian mechanism of multiplier z that spends it), which
    the stopping rule promises not to exceed.
    """
    from engine.methods.datalens import method as datalens
    from engine.methods.datalens import accounting as datalens_accounting

    n = teachers * per_teacher
    z = target_multiplier(epsilon, delta)
    params = datalens.Params(teachers=teachers, top_k=top_k, sigma=z * 2 * math.sqrt(top_k),
                             beta=beta, batch=1, records_per_teacher=per_teacher, max_steps=50)
    steps, batch = datalens_accounting.schedule(_config("datalens", epsilon, delta), params, n)
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
    v0, v1 = datalens_votes(r0, parts, top_k), datalens_votes(r1, parts, top_k)
    mean0, mean1 = v0.sum(0, dtype=torch.float32), v1.sum(0, dtype=torch.float32)
    s0, s1 = np.zeros(trials), np.zeros(trials)
    for _ in range(steps * batch):  # one release of the target's votes per record per step
        s0 += _project(_noisy_vote_sum(v0, params.sigma, params.beta, trials), mean0, mean1)
        s1 += _project(_noisy_vote_sum(v1, params.sigma, params.beta, trials), mean0, mean1)
    return s0, s1, z


def _noisy_vote_sum(votes: torch.Tensor, sigma: float, beta: float, trials: int) -> torch.Tensor:
    """`trials` runs of the real `top_agg`, returning the noisy vote sum it thresholded.

    The threshold is post-processing and throws most of the signal away, so the audit
    scores the release underneath: the votes' sum plus the noise `top_agg` drew. The noise
    is recorded as drawn, and the output is checked to be exactly that sum thresholded —
    so the score is what `top_agg` released, not a rebuilt copy.
    """
    from engine.methods.datalens import method as datalens
    from engine.methods.datalens import votes as datalens_votes

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


RELEASES = {
    "DP-MERF mean embedding": dpmerf_embedding_scores,
    "DP-MERF mixed tabular": dpmerf_tabular_scores,
    "class counts": class_counts_scores,
    "numeric bounds histogram": bounds_histogram_scores,
    "DataLens votes + stopping rule": datalens_scores,
}
